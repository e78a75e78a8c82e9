"""Table locations and partition-level writes that work on any Hadoop filesystem.

Partitioned tables are written with Spark's dynamic partition overwrite, so a write replaces
exactly the partitions it holds rows for and leaves every other partition alone.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

LANDED_EVENTS = "landed_events"
EVENTS = "events"
REJECTED_EVENTS = "rejected_events"


def table_path(warehouse: str, table: str) -> str:
    return warehouse.rstrip("/") + "/" + table


def _fs_and_path(spark: SparkSession, path: str):
    jvm = spark._jvm  # noqa: SLF001 - the Hadoop FileSystem API is only reachable through py4j
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    return hpath.getFileSystem(spark._jsc.hadoopConfiguration()), hpath  # noqa: SLF001


def path_exists(spark: SparkSession, path: str) -> bool:
    fs, hpath = _fs_and_path(spark, path)
    return bool(fs.exists(hpath))


def delete_glob(spark: SparkSession, pattern: str) -> int:
    """Delete every path matching a Hadoop glob; returns how many were deleted."""
    fs, hpath = _fs_and_path(spark, pattern)
    statuses = fs.globStatus(hpath) or []
    for status in statuses:
        fs.delete(status.getPath(), True)
    return len(statuses)


def write_partitions(df: DataFrame, path: str, partition_by: list[str]) -> None:
    """Replace exactly the partitions present in df (dynamic partition overwrite)."""
    (
        df.write.mode("overwrite")
        .option("partitionOverwriteMode", "dynamic")
        .partitionBy(*partition_by)
        .parquet(path)
    )


def write_table(df: DataFrame, path: str) -> None:
    """Replace a whole (unpartitioned, or single-partition) folder."""
    df.write.mode("overwrite").parquet(path)


def read_existing(spark: SparkSession, schema: T.StructType, paths: list[str], base_path: str) -> DataFrame:
    """Read the given partition folders of a table (those that exist), or an empty frame."""
    present = [p for p in paths if path_exists(spark, p)]
    if not present:
        return spark.createDataFrame([], schema)
    return spark.read.schema(schema).option("basePath", base_path).parquet(*present)


def glob_paths(spark: SparkSession, pattern: str) -> list[str]:
    """The paths matching a Hadoop glob (sorted)."""
    fs, hpath = _fs_and_path(spark, pattern)
    return sorted(str(status.getPath().toString()) for status in (fs.globStatus(hpath) or []))


def read_glob(spark: SparkSession, schema: T.StructType, pattern: str, base_path: str) -> DataFrame:
    """Read the partition folders matching a glob, or an empty frame when none match."""
    paths = glob_paths(spark, pattern)
    if not paths:
        return spark.createDataFrame([], schema)
    return spark.read.schema(schema).option("basePath", base_path).parquet(*paths)


DATASET_VERSIONS = "dataset_versions"
STATE = "_state"


def partition_values(spark: SparkSession, table_root: str, column: str) -> list[str]:
    """The values of a table's top-level partition column that have a folder (sorted)."""
    prefix = f"{column}="
    return sorted(p.rsplit("/", 1)[-1][len(prefix):] for p in glob_paths(spark, f"{table_root}/{prefix}*"))


def write_day(df: DataFrame, table_root: str, column: str, day: str) -> None:
    """Replace one day partition of a table (the partition column itself is the folder name)."""
    write_table(df.drop(column).coalesce(1), f"{table_root}/{column}={day}")


def read_day(spark: SparkSession, schema: T.StructType, table_root: str, column: str, day: str) -> DataFrame:
    return read_existing(spark, schema, [f"{table_root}/{column}={day}"], table_root)
