"""The day fold in PySpark (no Dagster): input resolution and the run/dataset-version rules.

One stream with independent scenarios (distinct jobs and datasets) is folded once for the module.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

from lineage_assets.ids import content_uuid, event_id
from lineage_assets_tests.support import ds, fold_stream, run_event, run_uuid

SCHEDULE_SECONDS = 50  # measured (--durations); conftest runs long files first

D1, D2, D3 = "2024-03-01", "2024-03-02", "2024-03-03"


def t(day: str, hhmm: str) -> str:
    return f"{day}T{hhmm}:00Z"


def version_of(dataset: str, run_label: str) -> str:
    return content_uuid({"dataset": ["ds", dataset], "run_id": run_uuid(run_label)})


STREAMING = {"jobType": {"_producer": "p", "_schemaURL": "s", "processingType": "STREAMING", "integration": "FLINK", "jobType": "JOB"}}
PARENT = {"parent": {"_producer": "p", "_schemaURL": "s", "run": {"runId": run_uuid("dag-run")}, "job": {"namespace": "af", "name": "dag"},
                     "root": {"run": {"runId": run_uuid("root-run")}, "job": {"namespace": "af", "name": "root"}}}}
JOB_EVENT = {
    "eventTime": t(D1, "07:00"), "eventType": "COMPLETE", "job": {"namespace": "ns", "name": "static"},
    "inputs": [{"namespace": "ds", "name": "s_in"}], "outputs": [{"namespace": "ds", "name": "s_out"}], "producer": "p",
}
DATASET_EVENT = {
    "eventTime": t(D1, "08:00"), "producer": "p",
    "dataset": {"namespace": "ds", "name": "declared", "facets": {"schema": {"_producer": "p", "_schemaURL": "s", "fields": [{"name": "a", "type": "int"}]}}},
}


DATASET_EVENT_V = {  # a DatasetEvent with a DatasetVersion facet
    "eventTime": t(D1, "08:30"), "producer": "p",
    "dataset": {"namespace": "ds", "name": "declared_v", "facets": {"version": {"_producer": "p", "_schemaURL": "s", "datasetVersion": "d1"}}},
}


def stream() -> list[dict]:
    ev = []
    # 1. three writes, two reads: the reads see writes 1 and 3
    for i, hh in ((1, "01"), (2, "03"), (3, "05")):
        ev += [run_event(t(D1, f"{hh}:00"), "START", f"w{i}", "writer"), run_event(t(D1, f"{hh}:30"), "COMPLETE", f"w{i}", "writer", [], ["shared"])]
    ev += [run_event(t(D1, "02:00"), "START", "rd1", "reader", ["shared"]), run_event(t(D1, "02:10"), "COMPLETE", "rd1", "reader", ["shared"], ["r_out"])]
    ev += [run_event(t(D1, "06:00"), "START", "rd2", "reader", ["shared"]), run_event(t(D1, "06:10"), "COMPLETE", "rd2", "reader", ["shared"], ["r_out"])]
    # 2. a RUNNING write does not advance the dataset's version
    ev += [run_event(t(D1, "01:00"), "COMPLETE", "ok-write", "w2", [], ["running_ds"])]
    ev += [run_event(t(D1, "02:00"), "START", "open-write", "w2"), run_event(t(D1, "02:30"), "RUNNING", "open-write", "w2", [], ["running_ds"])]
    ev += [run_event(t(D1, "03:00"), "START", "r3", "r3job", ["running_ds"]), run_event(t(D1, "03:05"), "COMPLETE", "r3", "r3job", ["running_ds"])]
    # 3. FAIL and ABORT create versions that are never read as latest
    ev += [run_event(t(D1, "01:00"), "COMPLETE", "f-ok", "w3", [], ["failing_ds"])]
    ev += [run_event(t(D1, "02:00"), "FAIL", "f-fail", "w3", [], ["failing_ds", "extra"])]
    ev += [run_event(t(D1, "02:30"), "ABORT", "f-abort", "w3", [], ["failing_ds"])]
    ev += [run_event(t(D1, "03:00"), "START", "r4", "r4job", ["failing_ds"]), run_event(t(D1, "03:05"), "COMPLETE", "r4", "r4job", ["failing_ds"])]
    # 4. the DatasetVersion facet picks the version with that storage version
    v = lambda n: {"version": {"_producer": "p", "_schemaURL": "s", "datasetVersion": n}}  # noqa: E731
    ev += [run_event(t(D1, "01:00"), "COMPLETE", "sv42", "w5", [], [ds("versioned", **v("42"))])]
    ev += [run_event(t(D1, "02:00"), "COMPLETE", "sv43", "w5", [], [ds("versioned", **v("43"))])]
    ev += [run_event(t(D1, "03:00"), "START", "r5", "r5job", [ds("versioned", **v("42"))]), run_event(t(D1, "03:01"), "COMPLETE", "r5", "r5job", [ds("versioned", **v("42"))])]
    # 4b. the latest of two writes with one storage version; a storage version nothing wrote; a DatasetEvent's
    ev += [run_event(t(D1, "01:00"), "COMPLETE", "sv7a", "w7", [], [ds("twice_7", **v("7"))]),
           run_event(t(D1, "02:00"), "COMPLETE", "sv7b", "w7", [], [ds("twice_7", **v("7"))]),
           run_event(t(D1, "02:30"), "COMPLETE", "sv8", "w7", [], [ds("twice_7", **v("8"))])]
    ev += [run_event(t(D1, "03:00"), "COMPLETE", "r7", "r7job", [ds("twice_7", **v("7")), ds("unwritten", **v("9"))])]
    ev += [DATASET_EVENT_V]
    ev += [run_event(t(D1, "09:00"), "COMPLETE", "r8", "r8job", [ds("declared_v", **v("d1"))])]
    # 5. never written: a source version
    ev += [run_event(t(D1, "04:00"), "COMPLETE", "r6", "r6job", ["nowhere"])]
    # 6. an event naming another job for an existing runId
    ev += [run_event(t(D1, "05:00"), "START", "mix", "mixjob"), run_event(t(D1, "05:10"), "RUNNING", "mix", "intruder", ["x"]),
           run_event(t(D1, "05:20"), "COMPLETE", "mix", "mixjob", [], ["mix_out"])]
    # 7. a runless JobEvent, 8. a streaming job, 9. parent facets, 10. a DatasetEvent
    ev += [JOB_EVENT, DATASET_EVENT]
    ev += [run_event(t(D1, "09:00"), "START", "stream", "streamer", ["topic"], ["sink1"], job_facets=STREAMING),
           run_event(t(D1, "10:00"), "RUNNING", "stream", "streamer", ["topic"], ["sink2"], job_facets=STREAMING)]
    ev += [run_event(t(D1, "11:00"), "COMPLETE", "child", "task", [], ["child_out"], run_facets=PARENT)]
    # 8b. a streaming run that fails before naming any dataset
    ev += [run_event(t(D1, "13:00"), "START", "flink-fail", "flinkjob", job_facets=STREAMING),
           run_event(t(D1, "13:01"), "FAIL", "flink-fail", "flinkjob")]
    # 11. a run spanning three days, its inputs/outputs differing between events
    ev += [run_event(t(D1, "23:00"), "START", "long", "longjob", ["shared"]), run_event(t(D2, "12:00"), "RUNNING", "long", "longjob", ["other"], ["long_a"]),
           run_event(t(D3, "01:00"), "COMPLETE", "long", "longjob", [], ["long_b"])]
    ev += [run_event(t(D2, "01:00"), "START", "w4", "writer"), run_event(t(D2, "01:30"), "COMPLETE", "w4", "writer", [], ["shared"])]
    # 12. the same run sent twice: its COMPLETE again, a minute later, with the same inputs/outputs
    ev += [run_event(t(D1, "12:00"), "START", "twice", "twicejob", ["tw_in"]),
           run_event(t(D1, "12:05"), "COMPLETE", "twice", "twicejob", ["tw_in"], ["tw_out"]),
           run_event(t(D1, "12:06"), "COMPLETE", "twice", "twicejob", ["tw_in"], ["tw_out"])]
    # 13. runs that read and write one dataset, each sent as its COMPLETE alone (started_at = ended_at:
    # its own write is at its started_at, so only "written by another run" keeps it out)
    ev += [run_event(t(D1, "01:00"), "COMPLETE", "ap1", "appender", ["app_ds"], ["app_ds"]),
           run_event(t(D1, "02:00"), "COMPLETE", "ap2", "appender", ["app_ds"], ["app_ds"])]
    # 14. a write that COMPLETEs at the reader's started_at exactly, after an earlier one
    ev += [run_event(t(D1, "01:00"), "COMPLETE", "eq-w0", "eqwriter", [], ["edge_ds"]),
           run_event(t(D1, "02:30"), "START", "eq-w1", "eqwriter"), run_event(t(D1, "03:00"), "COMPLETE", "eq-w1", "eqwriter", [], ["edge_ds"]),
           run_event(t(D1, "03:00"), "START", "eq-r", "eqreader", ["edge_ds"]), run_event(t(D1, "03:10"), "COMPLETE", "eq-r", "eqreader", ["edge_ds"])]
    # 15. a reader started at 01:00 of a dataset first written at 02:00 (before the reader ends)
    ev += [run_event(t(D1, "01:00"), "START", "early-r", "earlyreader", ["later_ds"]),
           run_event(t(D1, "01:30"), "START", "late-w", "latewriter"), run_event(t(D1, "02:00"), "COMPLETE", "late-w", "latewriter", [], ["later_ds"]),
           run_event(t(D1, "03:00"), "COMPLETE", "early-r", "earlyreader", ["later_ds"])]
    return ev


@pytest.fixture(scope="module")
def folded(spark):
    return fold_stream(spark, stream())


def _lineage(folded, label):
    return next(r for r in folded.run_lineage if r["run_id"] == run_uuid(label))


def _inputs(folded, label):
    return {(i["name"], i["version_id"]) for i in _lineage(folded, label)["input_versions"]}


def test_a_reader_reads_the_latest_completed_write(folded):
    assert _inputs(folded, "rd1") == {("shared", version_of("shared", "w1"))}
    assert _inputs(folded, "rd2") == {("shared", version_of("shared", "w3"))}


def test_a_running_write_does_not_advance_the_version(folded):
    assert _inputs(folded, "r3") == {("running_ds", version_of("running_ds", "ok-write"))}
    assert not any(r["run_id"] == run_uuid("open-write") for r in folded.runs)
    assert run_uuid("open-write") in {r.run_id for r in folded.state.open_events.collect()}


def test_failed_and_aborted_runs_version_the_job_but_their_outputs_never_become_current(folded):
    assert _inputs(folded, "r4") == {("failing_ds", version_of("failing_ds", "f-ok"))}
    states = {v["run_state"] for v in folded.dataset_versions if v["name"] == "failing_ds"}
    assert states == {"COMPLETE", "FAIL", "ABORT"}
    latest = {(d.name, d.version_id) for d in folded.state.datasets.collect()}
    assert ("failing_ds", version_of("failing_ds", "f-ok")) in latest
    w3 = [v for v in folded.job_versions if v["job_name"] == "w3"]
    assert len(w3) == 2  # the FAIL run's outputs (failing_ds + extra) made a version; ABORT's equals the first
    state = next(j for j in folded.jobs_state if j["job_name"] == "w3")
    assert state["latest_state"] == "ABORT" and state["latest_run_id"] == run_uuid("f-abort")


def test_the_dataset_version_facet_resolves_to_that_storage_version(folded):
    assert _inputs(folded, "r5") == {("versioned", version_of("versioned", "sv42"))}
    stored = {v["version_id"]: v["storage_version"] for v in folded.dataset_versions if v["name"] == "versioned"}
    assert stored == {version_of("versioned", "sv42"): "42", version_of("versioned", "sv43"): "43"}


def test_a_storage_version_resolves_to_the_latest_version_with_it(folded):
    """DESIGN.md section 4: "the version whose storage_version equals the input's DatasetVersion
    facet, if there is one (the latest such)"; else, with no such version and nothing written
    before, the source version of that storage version; a DatasetEvent's version is such a
    version too (before, only runs' outputs were matched, and the reader got a source version)."""
    assert _inputs(folded, "r7") == {
        ("twice_7", version_of("twice_7", "sv7b")),
        ("unwritten", content_uuid({"dataset": ["ds", "unwritten"], "source": "9"})),
    }
    declared = content_uuid({"dataset": ["ds", "declared_v"], "event_id": event_id(DATASET_EVENT_V)})
    assert _inputs(folded, "r8") == {("declared_v", declared)}
    stored = {(r.name, r.storage_version): r.version_id for r in folded.state.storage_versions.collect()}
    assert stored[("declared_v", "d1")] == declared and stored[("twice_7", "7")] == version_of("twice_7", "sv7b")


def test_an_input_never_written_resolves_to_a_source_version(folded):
    assert _inputs(folded, "r6") == {("nowhere", content_uuid({"dataset": ["ds", "nowhere"], "source": None}))}


def test_an_event_naming_another_job_is_rejected_as_job_mismatch(folded):
    assert [(e["job_name"], e["event_type"]) for e in folded.job_mismatch] == [("intruder", "RUNNING")]
    run = next(r for r in folded.runs if r["run_id"] == run_uuid("mix"))
    assert run["job_name"] == "mixjob" and [i["name"] for i in run["inputs"]] == [] and run["event_count"] == 2


def test_a_runless_job_event_versions_its_job_at_its_event_time(folded):
    versions = [v for v in folded.job_versions if v["job_name"] == "static"]
    assert len(versions) == 1
    assert versions[0]["created_by_run_id"] == event_id(JOB_EVENT)
    assert versions[0]["created_at"] == dt.datetime(2024, 3, 1, 7, 0)
    assert [o["name"] for o in versions[0]["outputs"]] == ["s_out"]
    assert not any(v["name"] == "s_out" for v in folded.dataset_versions)  # no dataset version


def test_a_streaming_job_is_versioned_at_each_event_reporting_io(folded):
    versions = sorted((v["created_at"], [o["name"] for o in v["outputs"]]) for v in folded.job_versions if v["job_name"] == "streamer")
    assert versions == [(dt.datetime(2024, 3, 1, 9), ["sink1"]), (dt.datetime(2024, 3, 1, 10), ["sink2"])]
    assert not any(r["job_name"] == "streamer" for r in folded.runs)  # never terminal


def test_a_streaming_run_that_ends_before_naming_a_dataset_versions_its_job(folded):
    """Rule 1 at its terminal event (DESIGN.md section 4), as for a batch run that reported
    nothing. Before, the run had no job version and the fold's blocking key check failed, so
    nothing of the range could be committed."""
    [version] = [v for v in folded.job_versions if v["job_name"] == "flinkjob"]
    content = {"job": [version["job_namespace"], "flinkjob"], "inputs": [], "outputs": [], "code_version": None, "lineage_unknown": True}
    assert (version["inputs"], version["outputs"], version["lineage_unknown"]) == ([], [], True)
    assert version["version_id"] == content_uuid(content)
    assert _lineage(folded, "flink-fail")["job_version_id"] == version["version_id"]
    state = next(j for j in folded.jobs_state if j["job_name"] == "flinkjob")
    assert (state["latest_state"], state["latest_run_id"]) == ("FAIL", run_uuid("flink-fail"))


def test_parent_and_root_run_ids_come_from_the_parent_facet(folded):
    run = next(r for r in folded.runs if r["run_id"] == run_uuid("child"))
    assert (run["parent_run_id"], run["root_run_id"]) == (run_uuid("dag-run"), run_uuid("root-run"))


def test_a_dataset_event_records_fields_as_a_runless_version(folded):
    [version] = [v for v in folded.dataset_versions if v["name"] == "declared"]
    assert version["run_id"] is None
    assert version["version_id"] == content_uuid({"dataset": ["ds", "declared"], "event_id": event_id(DATASET_EVENT)})
    assert json.loads(version["fields"]) == [{"name": "a", "type": "int"}]


def test_a_run_spanning_three_days_is_one_run_with_the_union(folded):
    [run] = [r for r in folded.runs if r["run_id"] == run_uuid("long")]
    assert run["end_date"] == dt.date(2024, 3, 3)
    assert (run["started_at"], run["ended_at"], run["event_count"]) == (dt.datetime(2024, 3, 1, 23), dt.datetime(2024, 3, 3, 1), 3)
    assert [i["name"] for i in run["inputs"]] == ["other", "shared"]
    assert [o["name"] for o in run["outputs"]] == ["long_a", "long_b"]
    # it read `shared` as it was when it started (w3's write), not w4's write of day 2
    assert ("shared", version_of("shared", "w3")) in _inputs(folded, "long")


def test_ids_follow_the_design_formulas(folded):
    for version in folded.dataset_versions:
        if version["run_id"]:
            assert version["version_id"] == content_uuid({"dataset": [version["namespace"], version["name"]], "run_id": version["run_id"]})
    for version in folded.job_versions:
        content = {
            "job": [version["job_namespace"], version["job_name"]],
            "inputs": [[i["namespace"], i["name"]] for i in version["inputs"]],
            "outputs": [[o["namespace"], o["name"]] for o in version["outputs"]],
            "code_version": version["code_version"],
            "lineage_unknown": version["lineage_unknown"],
        }
        assert version["version_id"] == content_uuid(content)


def test_the_same_run_sent_twice_gives_one_run_one_version_one_output_version(folded):
    runs = [r for r in folded.runs if r["run_id"] == run_uuid("twice")]
    assert len(runs) == 1 and runs[0]["ended_at"] == dt.datetime(2024, 3, 1, 12, 6) and runs[0]["event_count"] == 3
    assert len([v for v in folded.job_versions if v["job_name"] == "twicejob"]) == 1
    assert [v["version_id"] for v in folded.dataset_versions if v["name"] == "tw_out"] == [version_of("tw_out", "twice")]


def test_a_run_reading_and_writing_a_dataset_reads_the_earlier_writers_version_not_its_own(folded):
    """DESIGN.md section 4: "the latest version written by another run that COMPLETEd at or
    before the reading run's started_at". A run sent as its COMPLETE alone starts when it ends, so
    its own write is at its started_at: the first reads the source version, the second the first's."""
    assert _inputs(folded, "ap1") == {("app_ds", content_uuid({"dataset": ["ds", "app_ds"], "source": None}))}
    assert _inputs(folded, "ap2") == {("app_ds", version_of("app_ds", "ap1"))}


def test_a_write_completing_at_the_readers_started_at_is_read(folded):
    """"COMPLETEd at or before the reading run's started_at": at is inclusive."""
    assert _inputs(folded, "eq-r") == {("edge_ds", version_of("edge_ds", "eq-w1"))}


def test_a_dataset_first_written_after_the_reader_started_reads_as_its_source_version(folded):
    """Written at 02:00 by a run that started after the reader (01:00) and ended before it
    (03:00): not the reader's input version; nothing was written before, so the source version."""
    assert _inputs(folded, "early-r") == {("later_ds", content_uuid({"dataset": ["ds", "later_ds"], "source": None}))}
