"""The fold of a range of days (pipeline.fold.run_fold): cost follows events, not days; a late
day reads nothing before it (DESIGN.md section 7)."""

from __future__ import annotations

import datetime as dt
import json
import uuid


from lineage_assets.ids import content_uuid
from lineage_assets.pipeline.fold import run_fold
from lineage_assets.warehouse import commits
from lineage_assets_tests.support import chain_events, commit_events, ds, fold_stream, folded_from, run_event, run_uuid

SCHEDULE_SECONDS = 120  # measured (--durations); conftest runs long files first


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
    recompute reads no event and no state from before that day, and Spark reads no history
    table (`fold_start` reads the run ids of `runs` on the driver: the next test)."""
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


STREAMING = {"jobType": {"processingType": "STREAMING", "integration": "FLINK", "jobType": "JOB"}}


def _schema(*names: str) -> dict:
    return {"schema": {"fields": [{"name": n, "type": "string"} for n in names]}}


def _cll(dataset: str, field: str) -> dict:
    """A columnLineage facet: output field c from `field` of `dataset`."""
    return {"columnLineage": {"fields": {"c": {"inputFields": [
        {"namespace": "ds", "name": dataset, "field": field, "transformations": [{"type": "DIRECT", "subtype": "IDENTITY"}]}]}}}}


def _sorted_rows(rows: list[dict]) -> list[str]:
    return sorted(json.dumps(r, default=str, sort_keys=True) for r in rows)


def test_a_runs_events_after_it_ended_reopen_it_by_day_as_in_one_range(spark, tmp_path):
    """DESIGN.md section 4: all events of a runId are one run, whatever UTC day they fall on. A
    FAIL ten minutes after a COMPLETE but past midnight gives the run its state; a RUNNING event
    the next day adds its output; a next-day event naming another job is a job_mismatch; a FAIL the
    next morning ends its run then, which changes what a run later that day read (its input was a
    COMPLETE write, then a FAIL's). Folded day by day, a fold holding new events of a run that
    ended before it starts at that run's end, and no earlier: the 3rd starts at the 2nd, since the
    events of the 2nd after the runs of the 1st ended were folded with them and are carried. A
    late event of a carried run (a RUNNING of the 2nd, landed after the 3rd was folded) makes the
    fold of the 2nd start again at that run's end (`Reopened`); so does a late FAIL of a carried
    run that ended on the 1st, though its new end is the 2nd (its row is on the 1st). A streaming
    run with inputs and outputs on the 1st that completes on the 2nd, after a batch run of its
    job changed the job's version, has the job's version of the 2nd however the days are folded.
    Each start is said in the log; the tables equal those of one fold of everything, with one row
    per run. So do the column and field tables (columnLineage and schema facets, a JobEvent and a
    DatasetEvent in the stream: rows of the 1st move to the 2nd with their runs' FAILs, and a late
    event brings an edge)."""
    events = [
        run_event("2024-03-01T23:00:00Z", "START", "fail-after", "A", ["in"], [ds("x", **_schema("c"), **_cll("in", "a"))]),
        run_event("2024-03-01T23:50:00Z", "COMPLETE", "fail-after", "A"),
        run_event("2024-03-02T00:10:00Z", "FAIL", "fail-after", "A", [], ["y"]),
        run_event("2024-03-01T10:00:00Z", "START", "late-output", "B", ["x"]),
        run_event("2024-03-01T23:59:00Z", "COMPLETE", "late-output", "B", [], ["z"]),
        run_event("2024-03-02T00:01:00Z", "RUNNING", "late-output", "B", [], ["late"]),
        run_event("2024-03-01T11:00:00Z", "COMPLETE", "other-job", "C", [], ["w"]),
        run_event("2024-03-02T09:00:00Z", "COMPLETE", "other-job", "D", [], ["v"]),
        run_event("2024-03-01T12:00:00Z", "COMPLETE", "fails-later", "E", ["in"], [ds("u", **_schema("a", "b"))]),
        run_event("2024-03-02T08:00:00Z", "FAIL", "fails-later", "E"),
        run_event("2024-03-02T12:00:00Z", "COMPLETE", "reads-u", "F", ["u"], [ds("t", **_schema("c"), **_cll("u", "b"))]),
        {"eventTime": "2024-03-02T13:00:00Z", "eventType": "COMPLETE", "job": {"namespace": "ns", "name": "static"}, "producer": "p",
         "inputs": [{"namespace": "ds", "name": "t"}], "outputs": [{"namespace": "ds", "name": "s_out"}]},  # a JobEvent
        {"eventTime": "2024-03-02T07:00:00Z", "producer": "p", "dataset": {"namespace": "ds", "name": "declared", "facets": _schema("d")}},
        run_event("2024-03-02T23:59:00Z", "COMPLETE", "tail", "G", [], ["g"]),
        run_event("2024-03-03T00:01:00Z", "RUNNING", "tail", "G", [], ["g2"]),
        run_event("2024-03-01T10:00:00Z", "RUNNING", "stream", "S", ["k"], ["sink"], job_facets=STREAMING),
        run_event("2024-03-02T11:00:00Z", "COMPLETE", "batch-of-S", "S", ["k"], ["other"]),
        run_event("2024-03-02T12:00:00Z", "COMPLETE", "stream", "S", job_facets=STREAMING),
    ]
    late = run_event("2024-03-02T06:00:00Z", "RUNNING", "late-output", "B", [], ["later"])
    late_fail = run_event("2024-03-02T10:00:00Z", "FAIL", "other-job", "C", [], [ds("w", **_cll("x", "c"))])  # carried until the 2nd by D's event
    root = str(tmp_path / "by_day")
    days = commit_events(spark, root, events)
    said: list[str] = []
    starts = []
    for day in days:
        report = run_fold(spark, root, day, day, log=said.append)
        assert report.passed, [c.problems for c in report.checks]
        starts.append(str(report.first))
    assert starts == ["2024-03-01", "2024-03-01", "2024-03-02"]
    commit_events(spark, root, [*events, late, late_fail])  # both carried runs' late events land together
    report = run_fold(spark, root, dt.date(2024, 3, 2), dt.date(2024, 3, 2), log=said.append)
    assert report.passed and (str(report.first), str(report.last)) == ("2024-03-01", "2024-03-03")
    reopened = [line for line in said if "ended on 2024-03-01 and has new events" in line]
    assert any(run_uuid("late-output") in line and run_uuid("other-job") in line for line in reopened), said
    assert any(run_uuid("fail-after") in line and "ended by then" in line and "starting at 2024-03-01, not 2024-03-02" in line
               for line in said), said
    by_day = folded_from(spark, root)
    whole = fold_stream(spark, [*events, late, late_fail], str(tmp_path / "whole"))
    for name in ("runs", "job_versions", "dataset_versions", "run_lineage", "column_lineage", "dataset_fields", "job_mismatch", "jobs_state"):
        assert _sorted_rows(getattr(by_day, name)) == _sorted_rows(getattr(whole, name)), name
    # not vacuous: the three facets' edges, the fields of u, x, t and the DatasetEvent's, all on the 2nd
    # (u's and x's were on the 1st until their runs' FAILs were folded)
    assert sorted((e["output_name"], e["input_name"], e["input_field"], str(e["created_date"])) for e in whole.column_lineage) == [
        ("t", "u", "b", "2024-03-02"), ("w", "x", "c", "2024-03-02"), ("x", "in", "a", "2024-03-02")]
    assert sorted({(f["name"], str(f["created_date"])) for f in whole.dataset_fields}) == [
        ("declared", "2024-03-02"), ("t", "2024-03-02"), ("u", "2024-03-02"), ("x", "2024-03-02")]

    runs = {r["run_id"]: r for r in whole.runs}
    assert len(whole.runs) == len(runs) == 8
    run = lambda label: runs[run_uuid(label)]  # noqa: E731
    assert (run("fail-after")["state"], str(run("fail-after")["ended_at"])[:16]) == ("FAIL", "2024-03-02 00:10")
    assert sorted(o["name"] for o in run("fail-after")["outputs"]) == ["x", "y"]
    assert run("late-output")["state"] == "COMPLETE" and sorted(o["name"] for o in run("late-output")["outputs"]) == ["late", "later", "z"]
    assert run("other-job")["job_name"] == "C" and [o["name"] for o in run("other-job")["outputs"]] == ["w"]
    assert (run("other-job")["state"], str(run("other-job")["ended_at"])[:10]) == ("FAIL", "2024-03-02")
    lineage = {r["run_id"]: r for r in whole.run_lineage}
    s_versions = {v["version_id"]: v for v in whole.job_versions if v["job_name"] == "S"}
    # the streaming run's version: the job's at the end of the 2nd (the batch run's), not its own item's of the 1st
    assert [o["name"] for o in s_versions[lineage[run_uuid("stream")]["job_version_id"]]["outputs"]] == ["other"]
    assert [(m["job_name"], m["event_type"]) for m in whole.job_mismatch] == [("D", "COMPLETE")]
    assert (run("fails-later")["state"], str(run("fails-later")["ended_at"])[:10]) == ("FAIL", "2024-03-02")
    reads = next(r for r in whole.run_lineage if r["run_id"] == run_uuid("reads-u"))
    # u's only write ended in a FAIL: not a version a reader resolves to, so F read u's source version
    assert [i["version_id"] for i in reads["input_versions"]] == [content_uuid({"dataset": ["ds", "u"], "source": None})]
