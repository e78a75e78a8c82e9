"""PySpark transformations of the intake: DataFrames in, DataFrames out, no Dagster.

`read_drop` has Spark read a drop file (binaryFile source, so gzip and multi-line documents
are handled the same way as NDJSON) and parse it in Python workers through Arrow batches.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from lineage_assets.intake.decode import GZIP_MAGIC, decode_ndjson_chunk
from lineage_assets.intake.parse import parse_drop_bytes, parse_records
from lineage_assets.warehouse import schemas
from lineage_assets.warehouse import tables as t

_GLOB_CHARS = re.compile(r"([\\\[\]{}*?])")


def hadoop_literal_path(path: str) -> str:
    """Escape Hadoop glob characters so a file name like `a[1].json` is read literally."""
    return _GLOB_CHARS.sub(r"\\\1", path)


SPLIT_BYTES = 32 << 20  # plain NDJSON files larger than this are parsed in chunks, in parallel


def ndjson_chunks(path: str, target: int = SPLIT_BYTES) -> list[tuple[int, int, int]] | None:
    """(start, end, first line) of chunks of whole lines of a plain NDJSON file larger than
    `target`, or None for anything else (gzip, a JSON document or array, a small file), which
    is read whole. One pass over the bytes counts the lines before each chunk."""
    size = os.path.getsize(path)
    if size <= target:
        return None
    with open(path, "rb") as handle:
        head = handle.read(1 << 16)
        if head.startswith(GZIP_MAGIC):
            return None
        first = head.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0].strip()
        if not first.startswith(b"{") or first == b"{":
            return None  # an array, or a pretty-printed document
        bounds = [0]
        while bounds[-1] + target < size:
            handle.seek(bounds[-1] + target)
            rest = handle.readline()
            if handle.tell() >= size:
                break
            bounds.append(handle.tell() if rest.endswith(b"\n") else size)
        bounds.append(size)
        chunks, line = [], 1
        handle.seek(0)
        for start, end in zip(bounds, bounds[1:]):
            chunks.append((start, end, line))
            remaining = end - start
            while remaining:
                block = handle.read(min(remaining, 16 << 20))
                line += block.count(b"\n")
                remaining -= len(block)
    return chunks


def read_drop(spark: SparkSession, path: str, source_file: str, start_date: dt.date | None) -> DataFrame:
    """Every record of one drop file as a PARSED row (accepted or rejected)."""
    arrow = schemas.arrow_schema(schemas.PARSED)
    chunks = ndjson_chunks(path)
    if chunks is not None:
        def parse_chunks(batches):
            for batch in batches:
                for start, end, first_line in zip(*(batch.column(c).to_pylist() for c in ("start", "end", "first_line"))):
                    with open(path, "rb") as handle:
                        handle.seek(start)
                        data = handle.read(end - start)
                    rows = parse_records(decode_ndjson_chunk(data, first_line), source_file, start_date)
                    for i in range(0, len(rows), 2000):
                        yield pa.RecordBatch.from_pylist(rows[i:i + 2000], schema=arrow)

        ranges = spark.sparkContext.parallelize(chunks, len(chunks)).toDF("start long, end long, first_line long")
        return ranges.mapInArrow(parse_chunks, schemas.PARSED)

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
