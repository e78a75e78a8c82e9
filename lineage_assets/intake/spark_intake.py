"""PySpark transformations of the intake: DataFrames in, DataFrames out, no Dagster.

`read_units` has Spark read the byte ranges a landing batch planned (`intake.read_plan`) and
parse them in Python workers through Arrow batches; `stage_drop` splits what was parsed into new
events, new rejects and duplicates; `consolidate` makes the daily `events` rows.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lineage_assets.cycle_collection import no_cycle_collection
from lineage_assets.intake.decode import decode_ndjson_chunk
from lineage_assets.intake.ledger import WHOLE
from lineage_assets.intake.parse import parse_drop_bytes, parse_records
from lineage_assets.intake.read_plan import ReadUnit
from lineage_assets.warehouse import schemas
from lineage_assets.warehouse import tables as t

PARSED_UNITS = T.StructType([*schemas.PARSED.fields, T.StructField("file_id", T.StringType())])
PARSED_BATCH_ROWS = 2000  # rows per Arrow batch a worker sends back
UNIT_COLUMNS = "path string, file_id string, form string, start long, end long, first_line long"


def parse_unit(drop_dir: str, unit: ReadUnit, start_date: dt.date | None) -> list[dict]:
    """Every record of one read unit as a PARSED row with its `file_id` (NDJSON ranges as
    whole lines, WHOLE forms as whole files). A file gone since the read plan (removed, or
    renamed away) yields nothing: the landing batch finds it no longer as planned and leaves it
    out, unrecorded in the ledger, as a file changed while read (`landing._still_as_read`),
    instead of failing the whole batch. Any other error reading it fails the batch (retried)."""
    try:
        handle = open(os.path.join(drop_dir, unit.path), "rb")
    except (FileNotFoundError, NotADirectoryError):
        return []
    with handle:
        handle.seek(unit.start)
        data = handle.read(unit.end - unit.start)
    with no_cycle_collection():  # the parsed events are trees of new dicts and lists
        if unit.form == WHOLE:
            parsed = parse_drop_bytes(data, unit.path, start_date)
        else:
            parsed = parse_records(decode_ndjson_chunk(data, unit.first_line), unit.path, start_date)
        for row in parsed:
            row["file_id"] = unit.file_id
    return parsed


def parsed_batches(rows: list[dict], arrow: pa.Schema) -> Iterator[pa.RecordBatch]:
    """`parse_unit`'s rows as the Arrow batches a worker sends (`arrow`: PARSED_UNITS')."""
    for i in range(0, len(rows), PARSED_BATCH_ROWS):
        yield pa.RecordBatch.from_pylist(rows[i:i + PARSED_BATCH_ROWS], schema=arrow)


def read_units(spark: SparkSession, drop_dir: str, units: list[ReadUnit], start_date: dt.date | None) -> DataFrame:
    """Every record of the given byte ranges as a PARSED row (accepted or rejected) with its
    `file_id`, in one Spark job: the units are spread over the session's cores and each task
    reads its ranges itself (`parse_unit`)."""
    arrow = schemas.arrow_schema(PARSED_UNITS)
    rows = [(u.path, u.file_id, u.form, u.start, u.end, u.first_line) for u in units]
    slices = max(1, min(len(rows), spark.sparkContext.defaultParallelism * 4))

    def parse(batches):
        for batch in batches:
            for unit in zip(*(batch.column(i).to_pylist() for i in range(6))):
                yield from parsed_batches(parse_unit(drop_dir, ReadUnit(*unit), start_date), arrow)

    ranges = spark.createDataFrame(rows, UNIT_COLUMNS) if rows else spark.createDataFrame([], UNIT_COLUMNS)
    return ranges.repartition(slices).mapInArrow(parse, PARSED_UNITS)


@dataclass
class StagedDrop:
    events: DataFrame  # new accepted events, LANDED_EVENTS columns
    rejected: DataFrame  # new rejected records, REJECTED_EVENTS columns
    duplicate_events: DataFrame  # accepted records already known (in this drop or elsewhere)
    duplicate_rejects: DataFrame  # rejected records already stored from an earlier read of the file


def first_per_event(accepted: DataFrame) -> DataFrame:
    """One row per event_id: the earliest by (source_file, source_line)."""
    w = Window.partitionBy("event_id").orderBy("source_file", "source_line")
    return accepted.withColumn("_n", F.row_number().over(w)).filter("_n = 1").drop("_n")


def shuffle_slots(df: DataFrame) -> int:
    """The session's `spark.sql.shuffle.partitions`: the partitions `spread_by_day` spreads into."""
    return int(df.sparkSession.conf.get("spark.sql.shuffle.partitions"))


def day_parts(rows_by_day: dict[str, int], slots: int) -> dict[str, int]:
    """How many of `slots` partitions (so files) `spread_by_day` gives each day: its share of the
    rows, rounded up, at least one."""
    total = sum(rows_by_day.values()) or 1
    return {day: max(1, min(slots, -(-rows * slots // total))) for day, rows in rows_by_day.items()}


def spread_by_day(df: DataFrame, rows_by_day: dict[str, int], slots: int) -> DataFrame:
    """`df` (with `event_date` and `event_id`) in `slots` Spark partitions (one shuffle), each
    day's rows in as few of them as the day's size allows: a day holding at most 1/slots of
    the rows in one, a larger day in up to `slots` (by a hash of event_id, so a big day is
    still written by every core). Written per day, that is one file for a small day: the
    files follow the events, not the number of days times the number of tasks."""
    big = {day: parts for day, parts in day_parts(rows_by_day, slots).items() if parts > 1}
    bucket = F.lit(0)
    if big:
        parts = F.create_map(*[F.lit(v) for day, n in sorted(big.items()) for v in (day, n)])
        bucket = F.pmod(F.xxhash64("event_id"), F.coalesce(F.element_at(parts, F.col("event_date").cast("string")), F.lit(1)))
    return df.repartition(slots, F.col("event_date"), bucket)


def stage_drop(
    parsed: DataFrame,
    batch_id: str,
    read_date: dt.date,
    known_event_ids: DataFrame,
    known_rejects: DataFrame | None,
    accepted_by_day: dict[str, int] | None = None,
) -> StagedDrop:
    """Split a batch's parsed records into new events, new rejects and duplicates of what is
    known (`known_rejects`: rejects stored from an earlier read of a file read again from its
    first byte, which are not stored twice). Whether any event is repeated (in the batch, or
    already known) is asked of the event ids first: when none is (the usual case) the events
    are only spread by day (`spread_by_day` with `accepted_by_day`), not also shuffled by
    event_id to keep each one's first record. Nor are they spread when writing them as they were
    read would make no more files than spreading them (a batch of one or a few days: each read
    partition holds rows of at most every day), which saves shuffling the whole rows once."""
    accepted = parsed.filter("accepted")
    ids = accepted.select("event_id")
    known = known_event_ids.select("event_id").distinct()
    repeated = (
        ids.groupBy("event_id").count().filter("count > 1").limit(1).count() > 0
        or ids.join(known, "event_id", "left_semi").limit(1).count() > 0
    )
    new_events = first_per_event(accepted).join(known, "event_id", "left_anti") if repeated else accepted
    events = new_events.select(
        *[c.name for c in schemas.EVENT_FIELDS], "file_id",
        F.to_date("event_date").alias("event_date"), F.lit(batch_id).alias("batch_id"),
    )
    if accepted_by_day and not as_read(parsed, accepted_by_day):
        events = spread_by_day(events, accepted_by_day, shuffle_slots(parsed))
    duplicate_events = (
        accepted.join(new_events.select("event_id", "source_file", "source_line"), ["event_id", "source_file", "source_line"], "left_anti")
        if repeated else accepted.limit(0)
    )
    rejected = parsed.filter("not accepted").select(
        *[f.name for f in schemas.REJECTED_FIELDS], F.lit(read_date).cast("date").alias("read_date"), F.lit(batch_id).alias("batch_id"),
    )
    if known_rejects is None:
        return StagedDrop(events, rejected, duplicate_events, rejected.limit(0))
    reject_key = ["source_file", "source_line", "raw"]
    known = known_rejects.select(*reject_key).distinct()
    return StagedDrop(events, rejected.join(known, reject_key, "left_anti"), duplicate_events, rejected.join(known, reject_key, "left_semi"))


EVENTS_ORDER = ("event_time", "event_id")  # the order of an `events` day file's rows (Transaction.stage(order=...))


def consolidate(landed: DataFrame, rows_by_day: dict[str, int]) -> DataFrame:
    """The `events` rows of the days `landed` holds (every drop's staging of them, about
    `rows_by_day` rows), each event once, spread by day (`spread_by_day`: one file for a small
    day, staged sorted by `EVENTS_ORDER`). Whether any event was staged twice is asked of the
    event_id column alone first: without duplicates (the usual case) the wide rows are not
    shuffled by event_id at all, and when reading them as they lie would make no more files than
    spreading them (`as_read`: one or a few days), not shuffled at all."""
    repeated = landed.groupBy("event_id").count().filter("count > 1").limit(1).count() > 0
    if not repeated and as_read(landed, rows_by_day):
        return landed.select(*t.EVENTS.column_names)
    firsts = first_per_event(landed) if repeated else landed
    return spread_by_day(firsts.select(*t.EVENTS.column_names), rows_by_day, shuffle_slots(landed))


def as_read(df: DataFrame, rows_by_day: dict[str, int]) -> bool:
    """Whether writing `df`'s partitions as they are, each cut by day, makes no more files than
    `spread_by_day` would (each partition may hold rows of every day): then the rows need no
    shuffle. A batch or range of one day, read as a few partitions, is the usual case."""
    return df.rdd.getNumPartitions() * len(rows_by_day) <= sum(day_parts(rows_by_day, shuffle_slots(df)).values())
