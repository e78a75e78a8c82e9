"""Where a run keeps the intermediates it computes once and reads several times: on local disk.

Spark keeps a cached or locally checkpointed DataFrame in its unified memory by default, and up
to half of that pool (`spark.memory.storageFraction`) is then protected from eviction: with the
default 2g driver, the sorts and aggregations of a large range (1,000,000 events) could no
longer get memory ("UNABLE_TO_ACQUIRE_MEMORY ... got 0") while intermediates of the same run, or
of an earlier run in the same JVM (`lineage-assets ingest`), held it. On disk they leave every
byte of that pool to execution; reading them back is a sequential read (mostly from the page
cache).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.util import inheritable_thread_target

from lineage_assets.warehouse.single_partition import single


def checkpoint(df: DataFrame) -> DataFrame:
    """`df` computed now and kept on local disk, its lineage cut (a local checkpoint); in one
    partition when the session works in one (`single_partition`)."""
    return single(df).localCheckpoint(eager=True, storageLevel=StorageLevel.DISK_ONLY)


def keep(df: DataFrame) -> DataFrame:
    """`df` kept on local disk once computed (persist; `unpersist()` releases it)."""
    return df.persist(StorageLevel.DISK_ONLY)


def checkpoint_beside(df: DataFrame) -> Future[DataFrame]:
    """`checkpoint(df)` started in a thread of its own, so that the caller's next Spark jobs run
    beside it: a small range's stages are one task each (`single_partition`), which leaves the
    second core to whatever runs beside. Its jobs keep the calling thread's job group (the
    determinism check's recompute is cancelled by its group) and its session's tags. `.result()`
    waits for the kept frame and raises what computing it raised."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lineage-checkpoint")
    try:
        return pool.submit(inheritable_thread_target(df.sparkSession)(checkpoint), df)
    finally:
        pool.shutdown(wait=False)  # the thread ends once the frame is kept
