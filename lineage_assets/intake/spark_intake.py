"""PySpark transformations of the intake: DataFrames in, DataFrames out, no Dagster.

`read_drop` has Spark read a drop file (binaryFile source, so gzip and multi-line documents
are handled the same way as NDJSON) and parse it in Python workers through Arrow batches.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from lineage_assets.intake.parse import parse_drop_bytes
from lineage_assets.warehouse import schemas
from lineage_assets.warehouse import tables as t

_GLOB_CHARS = re.compile(r"([\\\[\]{}*?])")


def hadoop_literal_path(path: str) -> str:
    """Escape Hadoop glob characters so a file name like `a[1].json` is read literally."""
    return _GLOB_CHARS.sub(r"\\\1", path)


def read_drop(spark: SparkSession, path: str, source_file: str, start_date: dt.date | None) -> DataFrame:
    """Every record of one drop file as a PARSED row (accepted or rejected)."""
    arrow = schemas.arrow_schema(schemas.PARSED)

    def parse(batches):
        for batch in batches:
            for content in batch.column("content").to_pylist():
                rows = parse_drop_bytes(content, source_file, start_date)
                if rows:
                    yield pa.RecordBatch.from_pylist(rows, schema=arrow)

    raw = spark.read.format("binaryFile").load(hadoop_literal_path(path)).select("content")
    return raw.mapInArrow(parse, schemas.PARSED)


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


def stage_drop(
    parsed: DataFrame,
    drop_key: str,
    drop_id: str,
    read_date: dt.date,
    known_event_ids: DataFrame,
    known_rejects: DataFrame,
) -> StagedDrop:
    """Split parsed records into new events, new rejects and duplicates of what is known."""
    accepted = parsed.filter("accepted")
    firsts = first_per_event(accepted)
    new_events = firsts.join(known_event_ids.select("event_id").distinct(), "event_id", "left_anti")
    events = new_events.select(
        *[c.name for c in schemas.EVENT_FIELDS],
        F.lit(drop_key).alias("drop_key"),
        F.to_date("event_date").alias("event_date"),
        F.lit(drop_id).alias("drop_id"),
    )
    duplicate_events = accepted.join(new_events.select("event_id", "source_line"), ["event_id", "source_line"], "left_anti")

    rejected = parsed.filter("not accepted").select(
        *[f.name for f in schemas.REJECTED_FIELDS if f.name != "drop_key"],
        F.lit(drop_key).alias("drop_key"),
        F.lit(read_date).cast("date").alias("read_date"),
        F.lit(drop_id).alias("drop_id"),
    )
    # A rejected line re-read from a file that grew (append mode) is not stored twice.
    reject_key = ["source_file", "source_line", "raw"]
    duplicate_rejects = rejected.join(known_rejects.select(*reject_key).distinct(), reject_key, "left_semi")
    new_rejects = rejected.join(known_rejects.select(*reject_key).distinct(), reject_key, "left_anti")
    return StagedDrop(events, new_rejects, duplicate_events, duplicate_rejects)


def consolidate(landed: DataFrame) -> DataFrame:
    """The `events` rows of the days `landed` holds (every drop's staging of them), each event
    once, one file per day sorted by time."""
    firsts = first_per_event(landed)
    return (
        firsts.select(*t.EVENTS.column_names)
        .repartition("event_date")
        .sortWithinPartitions("event_date", "event_time", "event_id")
    )
