"""`single_partition`: in a session that works in one partition (`SETTING`, which
`small_data.SMALL_SETTINGS` sets), frames read from files or kept (`checkpoint`) report one
partition, so joins, windows and aggregations over them plan no shuffle, and give the same rows
as with the session's own partitioning; without the setting nothing changes."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from lineage_assets.lineage.checkpoint import checkpoint
from lineage_assets.pipeline.small_data import SMALL_SETTINGS, applied
from lineage_assets.warehouse import commits, single_partition
from lineage_assets.warehouse import tables as t

ON = {single_partition.SETTING: "true"}


def _exchanges(df: DataFrame) -> int:
    return df._jdf.queryExecution().executedPlan().toString().count("Exchange")


def _frames(spark) -> tuple[DataFrame, DataFrame]:
    left = spark.range(0, 40, numPartitions=4).select((F.col("id") % 7).alias("k"), F.col("id").alias("a"))
    right = spark.range(0, 20, numPartitions=3).select((F.col("id") % 5).alias("k"), (F.col("id") * 10).alias("b"))
    return left, right


def _query(left: DataFrame, right: DataFrame) -> DataFrame:
    ranked = left.join(right, "k").withColumn("n", F.row_number().over(Window.partitionBy("k").orderBy("a", "b")))
    return ranked.groupBy("k").agg(F.count(F.lit(1)).alias("rows"), F.max("n").alias("last"), F.sum("b").alias("b"))


def test_the_small_settings_work_in_one_partition():
    assert SMALL_SETTINGS[single_partition.SETTING] == "true"


def test_kept_frames_report_one_partition_and_plan_no_shuffle(spark):
    left, right = _frames(spark)
    with applied(spark, ON):
        kept = checkpoint(left), checkpoint(right)
        assert [df.rdd.getNumPartitions() for df in kept] == [1, 1]
        single = _query(*kept)
        assert _exchanges(single) == 0
        rows = sorted(single.collect())
    usual = _query(checkpoint(left), checkpoint(right))
    assert checkpoint(left).rdd.getNumPartitions() == 4
    assert _exchanges(usual) >= 2  # both sides of the join
    assert sorted(usual.collect()) == rows
    expected = {k: (sum(1 for a in range(40) if a % 7 == k), sum(1 for b in range(20) if b % 5 == k)) for k in range(5)}
    assert [(r["k"], r["rows"], r["last"]) for r in rows] == [(k, n * m, n * m) for k, (n, m) in expected.items()]


def test_committed_files_are_read_in_one_partition(spark, tmp_path):
    root = str(tmp_path / "wh")
    with commits.Transaction(root, "test") as txn:
        days = [dt.date(2024, 1, d) for d in (1, 2, 3) for _ in range(10)]
        txn.stage_arrow(pa.table({
            "run_id": [f"r{i}" for i in range(30)], "job_name": [f"job-{i % 4}" for i in range(30)], "end_date": days,
        }), t.RUNS)
        txn.commit()
    commit = commits.latest(root)
    assert len(commit.files(t.RUNS.name)) == 3

    def per_job(runs: DataFrame) -> DataFrame:
        return runs.groupBy("job_name").agg(F.count(F.lit(1)).alias("runs"), F.countDistinct("end_date").alias("days"))

    usual = commits.read_table(spark, root, t.RUNS.name, commit=commit)
    with applied(spark, ON):
        read = commits.read_table(spark, root, t.RUNS.name, commit=commit)
        assert read.rdd.getNumPartitions() == 1 and _exchanges(per_job(read)) == 0
        rows = sorted(per_job(read).collect())
    assert _exchanges(per_job(usual)) >= 1
    assert rows == sorted(per_job(usual).collect())
    assert [(r["job_name"], r["runs"], r["days"]) for r in rows] == [(f"job-{j}", len(range(j, 30, 4)), 3) for j in range(4)]


def test_a_table_without_files_is_read_empty_and_in_one_partition(spark, tmp_path):
    """A new warehouse's state has no files: its empty frame (a local relation of unknown
    partitioning, which every aggregation shuffles) is taken into one partition too."""
    root = str(tmp_path / "wh")
    commit = commits.latest(root)
    assert commit.files(t.STATE_COLUMNS.name) == []

    def per_job(df: DataFrame) -> DataFrame:
        return df.groupBy("job_namespace", "job_name").agg(F.count(F.lit(1)).alias("edges"))

    usual = commits.read_table(spark, root, t.STATE_COLUMNS.name, commit=commit)
    assert _exchanges(per_job(usual)) >= 1
    with applied(spark, ON):
        empty = commits.read_table(spark, root, t.STATE_COLUMNS.name, commit=commit)
        assert empty.rdd.getNumPartitions() == 1 and _exchanges(per_job(empty)) == 0
        assert per_job(empty).collect() == []
    assert empty.schema.fieldNames() == t.STATE_COLUMNS.schema.fieldNames()


def test_by_column_shuffles_by_the_column_unless_the_session_works_in_one_partition(spark):
    df = spark.range(0, 30, numPartitions=3).select((F.col("id") % 4).alias("day"), "id")
    assert _exchanges(df) == 0
    shuffled = single_partition.by_column(df, "day")._jdf.queryExecution().executedPlan().toString()
    assert "Exchange" in shuffled and "REPARTITION_BY_COL" in shuffled  # one partition in the tests' session: no hash shown
    with applied(spark, ON):
        one = single_partition.by_column(df, "day")
        assert _exchanges(one) == 0 and one.rdd.getNumPartitions() == 1
        assert sorted(one.collect()) == sorted(df.collect())
