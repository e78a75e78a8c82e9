"""Content hashes of DataFrames: per day, order-independent, and a marked subset in the same scan."""

from __future__ import annotations

import datetime as dt
import warnings

import pytest
from pyspark.sql import functions as F

from lineage_assets.pipeline.checks import SAMPLED, Sample, mark_sample, restrict
from lineage_assets.warehouse.content_hash import EMPTY, WHOLE, _balanced, fingerprints, fingerprints_and_marked

pytestmark = pytest.mark.spark

D1, D2 = dt.date(2024, 1, 1), dt.date(2024, 1, 2)
ROWS = [("a", 1, D1), ("b", 2, D1), ("c,()\"é", 3, D2), ("d", None, D2)]


def _frame(spark, rows=ROWS):
    return spark.createDataFrame(rows, "name string, n int, day date")


def test_fingerprints_are_per_day_order_free_and_see_every_change(spark):
    base = fingerprints({"f": (_frame(spark), "day")})["f"]
    assert set(base) == {WHOLE, str(D1), str(D2)}
    assert (base[str(D1)].rows, base[str(D2)].rows, base[WHOLE].rows) == (2, 2, 4)
    shuffled = fingerprints({"f": (_frame(spark, list(reversed(ROWS))).repartition(3).select("day", "n", "name"), "day")})["f"]
    assert shuffled == base  # row order, partitioning and column order do not matter
    changed = fingerprints({"f": (_frame(spark, [*ROWS[:3], ("d", 4, D2)]), "day")})["f"]
    assert changed[str(D1)] == base[str(D1)] and changed[str(D2)] != base[str(D2)] and changed[WHOLE] != base[WHOLE]
    moved = fingerprints({"f": (_frame(spark, [("a", 1, D2), *ROWS[1:]]), "day")})["f"]
    assert moved[WHOLE].rows == 4 and moved[str(D1)].rows == 1  # the day is the key, not part of the row hash


def test_a_row_hash_sees_where_the_nulls_are_and_how_long_an_array_is(spark):
    """xxhash64 skips nulls: a value moved to the neighbouring column, a null array and an
    empty one, `[x]` and `[x, null]` hashed alike, and the check could not tell them apart."""
    def whole(rows, schema):
        return fingerprints({"f": (spark.createDataFrame(rows, schema), None)})["f"][WHOLE]

    assert whole([("IDENTITY", None)], "subtype string, type string") != whole([(None, "IDENTITY")], "subtype string, type string")
    arrays = [whole([(v,)], "p array<string>") for v in (None, [], [None], ["p=1"], ["p=1", None])]
    assert len(set(arrays)) == 5, arrays


def test_the_marked_subset_hashes_as_the_filtered_rows_and_the_mark_is_not_hashed(spark):
    marked = _frame(spark).withColumn("_m", F.col("n") >= 2)  # null n: not marked
    plain = _frame(spark)
    other = _frame(spark, ROWS[:1])  # no mark column: nothing of it is marked
    every, subset = fingerprints_and_marked({"f": (marked, "day"), "g": (other, None)}, "_m")
    assert every["f"] == fingerprints({"f": (plain, "day")})["f"]
    assert subset["f"] == fingerprints({"f": (plain.filter("n >= 2"), "day")})["f"]
    assert subset["f"][WHOLE].rows == 2 and subset["f"][str(D1)].rows == 1
    assert every["g"][WHOLE].rows == 1 and subset["g"] == {WHOLE: EMPTY}


def test_frames_shared_among_jobs_side_by_side_hash_as_in_one_job(spark):
    """`jobs` > 1 runs a Spark job per group of frames at the same time: each frame's
    fingerprints, marked ones included, come back under its own name, in the frames' order."""
    frames = {
        "f": (_frame(spark).withColumn("_m", F.col("n") >= 2), "day"),
        "g": (_frame(spark, ROWS[:1]), None),
        "h": (_frame(spark, ROWS[2:]).withColumn("_m", F.lit(True)), "day"),
    }
    one = fingerprints_and_marked(frames, "_m")
    for jobs, weights in ((2, {"f": 4, "g": 1, "h": 2}), (3, None), (5, {"g": 9})):
        with warnings.catch_warnings(record=True) as caught:  # the threads are given the session (its tags)
            warnings.simplefilter("always")
            shared = fingerprints_and_marked(frames, "_m", jobs, weights)
        assert [str(w.message) for w in caught] == []
        assert shared == one and [list(side) for side in shared] == [["f", "g", "h"]] * 2
    assert one[0]["f"] != one[0]["h"] and one[1]["h"] == one[0]["h"]  # the frames are told apart


def test_frames_are_shared_among_jobs_by_weight():
    assert _balanced(["a", "b", "c", "d"], {"a": 5, "b": 4, "c": 3, "d": 1}, 2) == [["a", "d"], ["b", "c"]]
    assert _balanced(["a", "b"], {}, 5) == [["a"], ["b"]]  # no more jobs than frames
    assert _balanced(["a", "b", "c"], {"a": 1}, 1) == [["a", "b", "c"]]


def test_marking_a_sample_by_a_join_keeps_every_row_once(spark):
    """Marks that need a join (column edges by sampled run) neither repeat a row whose key the
    sample holds twice nor drop a row whose key is null; the marked rows are `restrict`'s."""
    edges = spark.createDataFrame(
        [("r1", "x"), ("r1", "y"), ("r2", "x"), (None, "z")], "run_id string, output_field string"
    ).withColumn("job_namespace", F.lit("ns")).withColumn("job_name", F.lit("j"))
    sample = Sample(0.1, runs=spark.createDataFrame([("r1",), ("r1",), ("r3",)], "run_id string"))
    marked = mark_sample("column_lineage", edges, sample, dataset_versions=edges.limit(0))
    assert sorted(((r["run_id"], r["output_field"], r[SAMPLED]) for r in marked.collect()), key=str) == sorted(
        [("r1", "x", True), ("r1", "y", True), ("r2", "x", False), (None, "z", False)], key=str)
    kept = restrict("column_lineage", edges, sample, dataset_versions=edges.limit(0))
    assert sorted(r["output_field"] for r in kept.collect()) == ["x", "y"]
