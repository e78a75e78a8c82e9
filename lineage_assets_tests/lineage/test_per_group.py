"""map_groups: each group reaches the rule whole and once, whatever the Arrow batching."""

from __future__ import annotations

from pyspark.sql import types as T

from lineage_assets.lineage import per_group

OUT = T.StructType([T.StructField("key", T.StringType()), T.StructField("rows", T.IntegerType()), T.StructField("total", T.LongType())])


def _summary(rows: list[dict]) -> list[dict]:
    keys = {r["key"] for r in rows}
    assert len(keys) == 1, f"one call got rows of several groups: {keys}"
    return [{"key": rows[0]["key"], "rows": len(rows), "total": sum(r["value"] for r in rows)}]


def test_groups_are_never_split_or_merged_across_batches_and_calls(spark, monkeypatch):
    # group i has i % 7 + 1 rows; 3 groups per Arrow batch and 2 per Python slice force every boundary
    data = [(f"g{i:03d}", v) for i in range(200) for v in range(i % 7 + 1)]
    df = spark.createDataFrame(data, "key string, value long").repartition(3)
    monkeypatch.setattr(per_group, "GROUPS_PER_CALL", 2)
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "3")
    try:
        got = {r["key"]: (r["rows"], r["total"]) for r in per_group.map_groups(df, ["key"], _summary, OUT).collect()}
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    expected = {f"g{i:03d}": (i % 7 + 1, sum(range(i % 7 + 1))) for i in range(200)}
    assert got == expected


def test_a_rule_may_return_no_rows_or_many(spark):
    df = spark.createDataFrame([("a", 1), ("a", 2), ("b", 3)], "key string, value long")

    def explode_a(rows: list[dict]) -> list[dict]:
        return [{"key": r["key"], "rows": 1, "total": r["value"]} for r in rows if r["key"] == "a"]

    got = sorted((r["key"], r["total"]) for r in per_group.map_groups(df, ["key"], explode_a, OUT).collect())
    assert got == [("a", 1), ("a", 2)]


def test_a_rule_runs_with_python_s_cycle_collector_paused_in_the_worker(spark):
    """The rule's rows and the groups' are trees of new objects: the collector's walks over them
    were CPU for nothing (`lineage_assets.cycle_collection`)."""
    import gc

    state = T.StructType([T.StructField("key", T.StringType()), T.StructField("collector_on", T.BooleanType())])
    df = spark.createDataFrame([(f"g{i}", i) for i in range(20)], "key string, value long")
    got = per_group.map_groups(df, ["key"], lambda rows: [{"key": rows[0]["key"], "collector_on": gc.isenabled()}], state).collect()
    assert sorted(r["key"] for r in got) == sorted(f"g{i}" for i in range(20))
    assert {r["collector_on"] for r in got} == {False}
