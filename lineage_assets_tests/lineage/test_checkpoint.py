"""Intermediates kept on local disk, and kept in a thread of their own beside the caller's jobs."""

from __future__ import annotations

import threading
import warnings

import pytest
from pyspark.sql import functions as F

from lineage_assets.lineage.checkpoint import checkpoint_beside

pytestmark = pytest.mark.spark


def test_a_frame_kept_beside_comes_back_computed_and_its_jobs_keep_the_callers_job_group(spark):
    """The determinism check's recompute is cancelled by its job group: a frame its fold keeps
    in a thread of its own must run in that group too."""
    group = "test-checkpoint-beside"
    found = {}

    def recompute() -> None:
        spark.sparkContext.setJobGroup(group, "a recompute")
        try:
            kept = checkpoint_beside(spark.range(1000).withColumn("twice", F.col("id") * 2)).result()
            found["jobs"] = list(spark.sparkContext.statusTracker().getJobIdsForGroup(group))  # the checkpoint's only
            found["rows"] = sorted((r["id"], r["twice"]) for r in kept.filter("id < 3").collect())
        finally:
            spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)

    thread = threading.Thread(target=recompute)
    thread.start()
    thread.join()
    assert found["rows"] == [(0, 0), (1, 2), (2, 4)]
    assert found["jobs"], "the checkpoint's job ran outside the caller's job group"


def test_what_keeping_a_frame_beside_raised_is_raised_by_its_result(spark):
    broken = spark.range(3).select(F.raise_error(F.lit("no such value")).alias("x"))
    with pytest.raises(Exception, match="no such value"):
        checkpoint_beside(broken).result()


def test_a_frame_kept_beside_carries_the_sessions_tags_and_warns_of_nothing(spark):
    """The thread is given the frame's session, so the session's tags go with its jobs (PySpark
    warns "Spark session is not provided. Tags will not be inherited." otherwise)."""
    tag = "lineage-test-checkpoint-beside"
    store = spark.sparkContext._jsc.sc().statusStore()
    before = max((job.jobId() for job in _jobs(store)), default=-1)
    spark.addTag(tag)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kept = checkpoint_beside(spark.range(10)).result()
    finally:
        spark.removeTag(tag)
    assert kept.count() == 10
    assert [str(w.message) for w in caught] == []
    tagged = [job for job in _jobs(store) if job.jobId() > before and any(tag in t for t in _seq(job.jobTags()))]
    assert tagged, "the checkpoint's job ran without the session's tag"


def _jobs(store) -> list:
    listed = store.jobsList(None)
    return [listed.apply(i) for i in range(listed.size())]


def _seq(seq) -> list[str]:
    return [seq.apply(i) for i in range(seq.size())]
