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

from pyspark import StorageLevel
from pyspark.sql import DataFrame

from lineage_assets.warehouse.single_partition import single


def checkpoint(df: DataFrame) -> DataFrame:
    """`df` computed now and kept on local disk, its lineage cut (a local checkpoint); in one
    partition when the session works in one (`single_partition`)."""
    return single(df).localCheckpoint(eager=True, storageLevel=StorageLevel.DISK_ONLY)


def keep(df: DataFrame) -> DataFrame:
    """`df` kept on local disk once computed (persist; `unpersist()` releases it)."""
    return df.persist(StorageLevel.DISK_ONLY)
