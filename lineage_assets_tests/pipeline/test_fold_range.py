"""The fold of a range of days (pipeline.fold.run_fold): cost follows events, not days; a late
day reads nothing before it; blocking checks fail on a non-deterministic step and on a wrong
component id, and then nothing is committed (DESIGN.md sections 7 and 11)."""

from __future__ import annotations

import datetime as dt
import uuid

from pyspark.sql import functions as F

from lineage_assets import LineageQuery
from lineage_assets.lineage import current as current_module
from lineage_assets.lineage import fold as fold_module
from lineage_assets.pipeline.fold import DETERMINISM, run_fold
from lineage_assets.pipeline.snapshot import publish_current_graph
from lineage_assets.warehouse import commits
from lineage_assets_tests.support import commit_events, run_event


def _chain(days: list[str]) -> list[dict]:
    """src -> A -> X -> B -> Y, one run of each job per given day (same events whatever the days)."""
    events = []
    for i, day in enumerate(days):
        events += [
            run_event(f"{day}T01:00:00Z", "START", f"a{i}", "A", ["src"]),
            run_event(f"{day}T01:10:00Z", "COMPLETE", f"a{i}", "A", ["src"], ["X"]),
            run_event(f"{day}T02:00:00Z", "START", f"b{i}", "B", ["X"]),
            run_event(f"{day}T02:10:00Z", "COMPLETE", f"b{i}", "B", ["X"], ["Y"]),
        ]
    return events


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
        for e in _chain([day]):
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


def test_the_determinism_check_fails_on_a_non_deterministic_step_whole_or_sampled(spark, tmp_path, monkeypatch):
    """A step that is not deterministic (a random dataset version id where a content uuid
    belongs) fails the check when everything is recomputed and when a sample of jobs is; then
    nothing is committed. Without it the sampled check passes and compares only some rows."""
    root = str(tmp_path / "wh")
    events = []
    for j in range(12):  # twelve independent two-job chains: some jobs in the sample, some not
        events += [run_event("2024-05-01T01:00:00Z", "COMPLETE", f"w{j}", f"writer{j}", ["src"], [f"t{j}"]),
                   run_event("2024-05-01T02:00:00Z", "COMPLETE", f"r{j}", f"reader{j}", [f"t{j}"], [f"u{j}"])]
    commit_events(spark, root, events)
    before = commits.latest(root).seq
    day = dt.date(2024, 5, 1)
    real = fold_module.dataset_version_id
    monkeypatch.setattr(fold_module, "dataset_version_id", lambda *a: F.lit(str(uuid.uuid4())))
    for rate in (1.0, 0.5):
        bad = run_fold(spark, root, day, day, sample_rate=rate, log=lambda _m: None)
        check = bad.check(DETERMINISM)
        assert not check.passed and any("dataset_versions" in p for p in check.problems), rate
        assert bad.commit_seq is None and commits.latest(root).seq == before
    monkeypatch.setattr(fold_module, "dataset_version_id", real)
    ok = run_fold(spark, root, day, day, sample_rate=0.5, log=lambda _m: None)
    assert ok.passed and ok.commit_seq == before + 1
    assert 0 < ok.check(DETERMINISM).details["compared_rows"]["runs"] < 24


def test_a_wrong_component_id_blocks_the_snapshot_and_readers_stay_on_the_previous_one(spark, tmp_path, monkeypatch):
    root = str(tmp_path / "wh")
    commit_events(spark, root, _chain(_days("2024-06-01", 1, 1)))
    assert run_fold(spark, root, dt.date(2024, 6, 1), dt.date(2024, 6, 1), log=lambda _m: None).passed
    first = publish_current_graph(spark, root, log=lambda _m: None)
    assert first.passed and first.components == 1
    with LineageQuery(root) as query:
        before = query.lineage("job:ns:B").model_dump()
    real = current_module.component_ids

    def corrupt(nodes, edges):
        ids = real(nodes, edges)
        ids["job:ns:B"] = "job:ns:B"  # one node's component id is wrong
        return ids

    monkeypatch.setattr(current_module, "component_ids", corrupt)
    second = publish_current_graph(spark, root, log=lambda _m: None)
    assert not second.passed and second.commit_seq is None
    assert any("job:ns:B" in p for p in second.check.problems)
    with LineageQuery(root) as query:
        assert query.lineage("job:ns:B").model_dump() == before
    assert commits.latest(root).seq == first.commit_seq
