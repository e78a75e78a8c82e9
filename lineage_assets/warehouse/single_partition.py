"""Small work in one Spark partition.

A range of a few thousand events is folded with one shuffle partition (`pipeline.small_data`),
but a scan of its files or a kept intermediate still reports an unknown partitioning, so Spark
shuffled every join, aggregation and window input into that one partition again: a stage, its
tasks and shuffle files each time. Read and kept in one partition (`coalesce(1)`: no shuffle),
a frame reports a single partition, which satisfies every distribution, and the joins and
windows over it run in the stage that reads it. `benchmarks/fold_jobs.py` on a 300-event range
with the tests' settings, a fold with its check and its snapshot, warm passes in one JVM: 299
stages and 422 tasks -> 184 and 258 (with `SMALL_SETTINGS`' Bloom filters off: 71 -> 60 jobs),
the fold 24.6 / 21.5 s -> 23.1 / 19.0 s.

Set by `pipeline.small_data.SMALL_SETTINGS` in the session's settings (seen by every thread that
uses the session; the determinism check's recompute has a session of its own, sized for its
sample: `pipeline.fold.Recompute`), read where frames are read or kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # no Spark import for readers that only use DuckDB
    from pyspark.sql import DataFrame

SETTING = "spark.lineage.singlePartition"


def enabled(df: DataFrame) -> bool:
    return df.sparkSession.conf.get(SETTING, "false") == "true"


def single(df: DataFrame) -> DataFrame:
    """`df` in one partition when the session works in one (`SETTING`), else as it is."""
    return df.coalesce(1) if enabled(df) else df


def by_column(df: DataFrame, column: str) -> DataFrame:
    """`df` with each value of `column` in one partition: one partition in all when the session
    works in one (no shuffle), else hash-partitioned by `column`."""
    return df.coalesce(1) if enabled(df) else df.repartition(column)
