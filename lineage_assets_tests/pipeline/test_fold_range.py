"""The fold of a range of days (pipeline.fold.run_fold): cost follows events, not days; a late
day reads nothing before it (DESIGN.md section 7)."""

from __future__ import annotations

import datetime as dt
import uuid


from lineage_assets.pipeline.fold import run_fold
from lineage_assets.warehouse import commits
from lineage_assets_tests.support import chain_events, commit_events, run_event

SCHEDULE_SECONDS = 80  # measured (--durations); conftest runs long files first


def _days(first: str, count: int, step: int) -> list[str]:
    start = dt.date.fromisoformat(first)
    return [(start + dt.timedelta(days=i * step)).isoformat() for i in range(count)]


def _spark_jobs(spark, action) -> int:
    group = f"count-{uuid.uuid4().hex}"
    spark.sparkContext.setJobGroup(group, group)
    try:
        action()
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def _twelve_runs(days: list[str]) -> list[dict]:
    events = []
    for i, day in enumerate(days):
        for e in chain_events([day]):
            e["run"]["runId"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{e['run']['runId']}/{i}"))
            events.append(e)
    return events


def test_a_year_of_days_costs_the_jobs_of_one_day_and_a_late_day_reads_nothing_before_it(spark, tmp_path, monkeypatch):
    """Twelve runs of each job on one day, or each on its own day spread over a year: the fold
    runs about the same number of Spark jobs (not a number per day), writes a partition only for
    days with rows, and skips the days between. Then a late event for a day in the middle: the
    recompute reads no event and no state from before that day, and no history table."""
    counts = {}
    for label, days in (("day", ["2024-01-01"] * 12), ("year", _days("2024-01-01", 12, 30))):
        root = str(tmp_path / label)
        events = _twelve_runs(days)
        commit_events(spark, root, events)
        first, last = dt.date.fromisoformat(days[0]), dt.date.fromisoformat(days[-1])
        counts[label] = _spark_jobs(spark, lambda: run_fold(spark, root, first, last, log=lambda _m: None))
        assert commits.latest(root).partition_values("runs", "end_date") == sorted(set(days))
    assert (last - first).days == 330
    # the same jobs up to Spark's own planning: not one more per day
    assert abs(counts["day"] - counts["year"]) <= 4, counts

    # a late event for day 7 of the year's twelve (2024-07-19): the sensor asks for it through the last day
    late = dt.date.fromisoformat(days[6])
    # (commit_events replaces the days it writes: the day's own events go with the late one)
    commit_events(spark, root, events + [run_event(f"{late}T05:00:00Z", "COMPLETE", "late", "C", ["Y"], ["Z"])])
    read: list[str] = []
    real = commits.read_files

    def spy(spark_, table, paths, base):
        read.extend(f"{table.name}:{p}" for p in paths if "/_staging/" not in p)  # not the checks reading back what is written
        return real(spark_, table, paths, base)

    monkeypatch.setattr(commits, "read_files", spy)
    report = run_fold(spark, root, late, last, log=lambda _m: None)
    assert report.passed and report.rows("runs", str(late)) == 3
    events = [p for p in read if p.startswith("events:")]
    assert events and all(p.split("event_date=")[1][:10] >= str(late) for p in events)
    state = [p for p in read if p.startswith("state_")]
    assert state and all(p.split("valid_to=")[1][:10] >= str(late) for p in state)
    history = [p for p in read if p.split(":")[0] in ("runs", "job_versions", "dataset_versions", "run_lineage", "column_lineage")]
    assert history == []
