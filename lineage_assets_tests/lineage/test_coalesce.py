"""coalesce_run: all events of one runId -> one run; coalesce_range: the same over a fold's days (DESIGN.md section 4, "Runs" and code_version)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json

import pytest

from lineage_assets.lineage.coalesce import coalesce_range, coalesce_run

RUN = "6a1d7e0c-2f53-4b8e-9a43-0c1f1b7d2e01"
UTC = dt.timezone.utc


def _t(day: int, hour: int = 12, minute: int = 0, tz: dt.tzinfo = UTC) -> dt.datetime:
    return dt.datetime(2024, 3, day, hour, minute, tzinfo=tz)


def _ds(name: str, namespace: str = "ds", facets: dict | None = None, io_facets: dict | None = None) -> dict:
    return {
        "namespace": namespace,
        "name": name,
        "facets": json.dumps(facets or {}),
        "io_facets": json.dumps(io_facets or {}),
    }


def _event(
    event_id: str,
    when: dt.datetime,
    event_type: str | None,
    *,
    inputs=(),
    outputs=(),
    run_facets: dict | None = None,
    job_facets: dict | None = None,
    job: str = "job",
    job_namespace: str = "ns",
    run_id: str = RUN,
) -> dict:
    return {
        "event_id": event_id,
        "event_time": when,
        "event_type": event_type,
        "run_id": run_id,
        "job_namespace": job_namespace,
        "job_name": job,
        "inputs": [i if isinstance(i, dict) else _ds(i) for i in inputs],
        "outputs": [o if isinstance(o, dict) else _ds(o) for o in outputs],
        "run_facets": json.dumps(run_facets or {}),
        "job_facets": json.dumps(job_facets or {}),
    }


def _names(datasets: list[dict]) -> list[tuple[str, str]]:
    return [(d["namespace"], d["name"]) for d in datasets]


# --------------------------------------------------------------------------- union, times, count


def test_run_over_three_days_is_one_run_with_the_union_of_its_datasets():
    start = _event("e1", _t(1, 23, 50), "START", inputs=["in_a"], outputs=["out_a"])
    running = _event("e2", _t(2, 9), "RUNNING", inputs=["in_b", "in_a"], outputs=[_ds("out_b", "other")])
    complete = _event("e3", _t(3, 0, 10), "COMPLETE", inputs=["in_c"], outputs=["out_a"])

    run, mismatched = coalesce_run([complete, start, running])

    assert mismatched == []
    assert run["run_id"] == RUN
    assert (run["job_namespace"], run["job_name"]) == ("ns", "job")
    assert run["state"] == "COMPLETE"
    assert run["started_at"] == _t(1, 23, 50)
    assert run["ended_at"] == _t(3, 0, 10)
    assert run["event_count"] == 3
    # union, unique, sorted by (namespace, name)
    assert _names(run["inputs"]) == [("ds", "in_a"), ("ds", "in_b"), ("ds", "in_c")]
    assert _names(run["outputs"]) == [("ds", "out_a"), ("other", "out_b")]


def test_no_start_event_started_at_is_the_earliest_event():
    running = _event("e1", _t(5, 10), "RUNNING")
    other = _event("e2", _t(5, 8), None)  # eventType absent
    complete = _event("e3", _t(5, 11), "COMPLETE")
    run, _ = coalesce_run([running, complete, other])
    assert run["started_at"] == _t(5, 8)
    assert run["ended_at"] == _t(5, 11)
    assert run["event_count"] == 3


def test_started_at_is_the_start_event_even_when_another_event_is_earlier():
    early = _event("e1", _t(5, 7), "RUNNING")
    start = _event("e2", _t(5, 8), "START")
    complete = _event("e3", _t(5, 9), "COMPLETE")
    run, _ = coalesce_run([complete, start, early])
    assert run["started_at"] == _t(5, 8)


def test_no_terminal_event_leaves_state_none():
    run, mismatched = coalesce_run([_event("e1", _t(1), "START", inputs=["a"]), _event("e2", _t(2), "RUNNING", outputs=["b"])])
    assert mismatched == []
    assert run["state"] is None
    assert run["ended_at"] is None
    assert _names(run["inputs"]) == [("ds", "a")]
    assert _names(run["outputs"]) == [("ds", "b")]


def test_several_terminal_events_the_last_by_event_time_gives_state_and_ended_at():
    start = _event("e1", _t(1, 8), "START")
    complete = _event("e2", _t(1, 9), "COMPLETE")
    fail = _event("e3", _t(1, 10), "FAIL")
    abort = _event("e4", _t(1, 9, 30), "ABORT")
    run, _ = coalesce_run([fail, complete, start, abort])
    assert run["state"] == "FAIL"
    assert run["ended_at"] == _t(1, 10)

    run, _ = coalesce_run([start, complete, abort])
    assert run["state"] == "ABORT"
    assert run["ended_at"] == _t(1, 9, 30)


def test_terminal_order_uses_the_instant_not_the_clock_reading():
    """10:30+02:00 is 08:30 UTC: earlier than a 09:00 UTC COMPLETE."""
    plus2 = dt.timezone(dt.timedelta(hours=2))
    fail = _event("e1", dt.datetime(2024, 3, 1, 10, 30, tzinfo=plus2), "FAIL")
    complete = _event("e2", _t(1, 9), "COMPLETE")
    run, _ = coalesce_run([complete, fail])
    assert run["state"] == "COMPLETE"
    assert run["ended_at"] == _t(1, 9)
    assert run["started_at"] == _t(1, 8, 30)


# --------------------------------------------------------------------------- facets


def test_run_and_job_facets_merge_by_name_last_by_event_time_wins_given_out_of_order():
    first = _event(
        "e1", _t(1, 8), "START",
        run_facets={"nominalTime": {"n": 1}, "spark_version": {"v": "3.5"}},
        job_facets={"jobType": {"jobType": "DAG"}, "documentation": {"description": "old"}},
    )
    second = _event(
        "e2", _t(1, 9), "RUNNING",
        run_facets={"nominalTime": {"n": 2}},
        job_facets={"documentation": {"description": "mid"}},
    )
    third = _event(
        "e3", _t(1, 10), "COMPLETE",
        run_facets={"errorMessage": {"message": "none"}},
        job_facets={"documentation": {"description": "new"}, "ownership": {"owners": []}},
    )
    run, _ = coalesce_run([third, first, second])
    assert run["run_facets"] == {"nominalTime": {"n": 2}, "spark_version": {"v": "3.5"}, "errorMessage": {"message": "none"}}
    assert run["job_facets"] == {
        "jobType": {"jobType": "DAG"},
        "documentation": {"description": "new"},
        "ownership": {"owners": []},
    }


def test_a_later_event_wins_even_when_it_comes_first_in_the_list():
    late = _event("e1", _t(2), "COMPLETE", run_facets={"f": {"v": "late"}}, job_facets={"g": {"v": "late"}})
    early = _event("e2", _t(1), "START", run_facets={"f": {"v": "early"}}, job_facets={"g": {"v": "early"}})
    run, _ = coalesce_run([late, early])
    assert run["run_facets"] == {"f": {"v": "late"}}
    assert run["job_facets"] == {"g": {"v": "late"}}


def test_dataset_facets_merge_per_dataset_last_by_event_time_wins():
    start = _event(
        "e1", _t(1, 8), "START",
        inputs=[_ds("src", facets={"schema": {"fields": [{"name": "a"}]}, "dataSource": {"name": "pg"}},
                    io_facets={"dataQualityMetrics": {"rowCount": 1}})],
        outputs=[_ds("dst", facets={"schema": {"fields": [{"name": "x"}]}}),
                 _ds("dst2", facets={"schema": {"fields": [{"name": "other"}]}})],
    )
    complete = _event(
        "e2", _t(1, 10), "COMPLETE",
        inputs=[_ds("src", facets={"schema": {"fields": [{"name": "b"}]}}, io_facets={})],
        outputs=[_ds("dst", facets={"columnLineage": {"fields": {}}}, io_facets={"outputStatistics": {"rowCount": 7}})],
    )
    running = _event(
        "e3", _t(1, 9), "RUNNING",
        outputs=[_ds("dst", facets={"schema": {"fields": [{"name": "y"}]}}, io_facets={"outputStatistics": {"rowCount": 3}})],
    )
    run, _ = coalesce_run([complete, running, start])
    inputs = {d["name"]: d for d in run["inputs"]}
    outputs = {d["name"]: d for d in run["outputs"]}
    assert inputs["src"]["facets"] == {"schema": {"fields": [{"name": "b"}]}, "dataSource": {"name": "pg"}}
    assert inputs["src"]["io_facets"] == {"dataQualityMetrics": {"rowCount": 1}}
    assert outputs["dst"]["facets"] == {"schema": {"fields": [{"name": "y"}]}, "columnLineage": {"fields": {}}}
    assert outputs["dst"]["io_facets"] == {"outputStatistics": {"rowCount": 7}}
    # the other dataset's facets are not touched by dst's
    assert outputs["dst2"]["facets"] == {"schema": {"fields": [{"name": "other"}]}}


def test_same_name_in_two_namespaces_are_two_datasets():
    event = _event(
        "e1", _t(1), "COMPLETE",
        inputs=[_ds("t", "a", facets={"f": {"v": 1}}), _ds("t", "b", facets={"f": {"v": 2}})],
    )
    run, _ = coalesce_run([event])
    assert [(d["namespace"], d["name"], d["facets"]) for d in run["inputs"]] == [
        ("a", "t", {"f": {"v": 1}}),
        ("b", "t", {"f": {"v": 2}}),
    ]


# --------------------------------------------------------------------------- job mismatch


def test_event_naming_another_job_is_mismatched_and_run_keeps_the_earliest_job():
    start = _event("e1", _t(1, 8), "START", job="first", inputs=["a"])
    intruder = _event("e2", _t(1, 7), "RUNNING", job="first", job_namespace="other_ns")  # same name, other namespace
    other = _event("e3", _t(1, 9), "COMPLETE", job="second", outputs=["z"], run_facets={"f": {"v": "other"}})
    complete = _event("e4", _t(1, 10), "COMPLETE", job="first", outputs=["b"])

    # the earliest event is the intruder (other_ns/first): the run keeps that job
    run, mismatched = coalesce_run([complete, other, start, intruder])
    assert (run["job_namespace"], run["job_name"]) == ("other_ns", "first")
    assert sorted(e["event_id"] for e in mismatched) == ["e1", "e3", "e4"]

    # without it, ns/first is the earliest job; the other job's event is set aside entirely
    run, mismatched = coalesce_run([complete, other, start])
    assert (run["job_namespace"], run["job_name"]) == ("ns", "first")
    assert [e["event_id"] for e in mismatched] == ["e3"]
    assert mismatched[0] is other
    assert run["event_count"] == 2
    assert _names(run["inputs"]) == [("ds", "a")]
    assert _names(run["outputs"]) == [("ds", "b")]  # z from the mismatched event is not unioned in
    assert run["run_facets"] == {}  # nor are its facets merged
    assert run["state"] == "COMPLETE"
    assert run["ended_at"] == _t(1, 10)


def test_mismatched_terminal_event_does_not_end_the_run():
    start = _event("e1", _t(1, 8), "START", job="first")
    other = _event("e2", _t(1, 9), "COMPLETE", job="second")
    run, mismatched = coalesce_run([start, other])
    assert run["state"] is None
    assert run["ended_at"] is None
    assert [e["event_id"] for e in mismatched] == ["e2"]


# --------------------------------------------------------------------------- code_version


def _code_version(job_facets: dict) -> str | None:
    run, _ = coalesce_run([_event("e1", _t(1), "COMPLETE", job_facets=job_facets)])
    return run["code_version"]


def test_code_version_prefers_source_code_location_version():
    facets = {
        "sourceCodeLocation": {"type": "git", "url": "https://github.com/o/r", "version": "abc123"},
        "sourceCode": {"language": "python", "sourceCode": "print(1)"},
    }
    assert _code_version(facets) == "abc123"


def test_code_version_falls_back_to_the_url():
    facets = {
        "sourceCodeLocation": {"type": "git", "url": "https://github.com/o/r/blob/main/x.py"},
        "sourceCode": {"language": "python", "sourceCode": "print(1)"},
    }
    assert _code_version(facets) == "https://github.com/o/r/blob/main/x.py"


def test_code_version_falls_back_to_sha256_of_the_source_code():
    code = "SELECT * FROM t -- é"
    facets = {"sourceCode": {"language": "sql", "sourceCode": code}}
    assert _code_version(facets) == hashlib.sha256(code.encode("utf-8")).hexdigest()


def test_code_version_is_none_without_code_facets():
    assert _code_version({}) is None
    assert _code_version({"documentation": {"description": "d"}}) is None


def test_code_version_comes_from_the_merged_job_facets():
    early = _event("e1", _t(1, 8), "START", job_facets={"sourceCodeLocation": {"type": "git", "url": "u", "version": "v1"}})
    late = _event("e2", _t(1, 9), "COMPLETE", job_facets={"sourceCodeLocation": {"type": "git", "url": "u", "version": "v2"}})
    run, _ = coalesce_run([late, early])
    assert run["code_version"] == "v2"


# --------------------------------------------------------------------------- parent / root / streaming


def test_parent_and_root_run_ids_from_the_parent_facet():
    parent = "0d9f4a5e-1111-4c4c-8a8a-000000000001"
    root = "0d9f4a5e-2222-4c4c-8a8a-000000000002"
    facets = {
        "parent": {
            "run": {"runId": parent},
            "job": {"namespace": "airflow", "name": "dag.task"},
            "root": {"run": {"runId": root}, "job": {"namespace": "airflow", "name": "dag"}},
        }
    }
    run, _ = coalesce_run([_event("e1", _t(1), "COMPLETE", run_facets=facets)])
    assert run["parent_run_id"] == parent
    assert run["root_run_id"] == root


def test_parent_without_root_the_parent_is_the_root():
    parent = "0d9f4a5e-1111-4c4c-8a8a-000000000001"
    facets = {"parent": {"run": {"runId": parent}, "job": {"namespace": "airflow", "name": "dag"}}}
    run, _ = coalesce_run([_event("e1", _t(1), "COMPLETE", run_facets=facets)])
    assert run["parent_run_id"] == parent
    assert run["root_run_id"] == parent


def test_parent_and_root_run_ids_in_capitals_are_stored_as_run_ids_are():
    parent = "0D9F4A5E-1111-4C4C-8A8A-00000000000A"
    root = "0D9F4A5E-2222-4C4C-8A8A-00000000000B"
    facets = {"parent": {"run": {"runId": parent}, "job": {"namespace": "a", "name": "b"},
                         "root": {"run": {"runId": root}, "job": {"namespace": "a", "name": "c"}}}}
    run, _ = coalesce_run([_event("e1", _t(1), "COMPLETE", run_facets=facets)])
    assert (run["parent_run_id"], run["root_run_id"]) == (parent.lower(), root.lower())
    only_parent = {"parent": {"run": {"runId": parent}, "job": {"namespace": "a", "name": "b"}}}
    run, _ = coalesce_run([_event("e2", _t(1), "COMPLETE", run_facets=only_parent)])
    assert run["root_run_id"] == parent.lower()


def test_no_parent_facet_gives_no_parent_or_root():
    run, _ = coalesce_run([_event("e1", _t(1), "COMPLETE")])
    assert run["parent_run_id"] is None
    assert run["root_run_id"] is None


def test_streaming_detected_from_job_type_processing_type():
    streaming = {"jobType": {"processingType": "STREAMING", "integration": "FLINK", "jobType": "JOB"}}
    batch = {"jobType": {"processingType": "BATCH", "integration": "SPARK", "jobType": "JOB"}}
    run, _ = coalesce_run([_event("e1", _t(1), "RUNNING", job_facets=streaming)])
    assert run["streaming"] is True
    run, _ = coalesce_run([_event("e1", _t(1), "COMPLETE", job_facets=batch)])
    assert run["streaming"] is False
    run, _ = coalesce_run([_event("e1", _t(1), "COMPLETE")])
    assert run["streaming"] is False


# --------------------------------------------------------------------------- coalesce_range: a run over days


def _dated(event: dict) -> dict:
    return {**event, "event_date": event["event_time"].astimezone(UTC).date()}


def _range(events: list[dict], first_day: int) -> dict[str, list[dict]]:
    rows = coalesce_range([_dated(e) for e in events], dt.date(2024, 3, first_day))
    kinds: dict[str, list[dict]] = {}
    for row in rows:
        kinds.setdefault(row["kind"], []).append(row)
    return kinds


def test_a_terminal_event_on_a_later_day_ends_the_one_run_with_its_state():
    """COMPLETE at 23:50, FAIL ten minutes later on the next UTC day: one run, the FAIL's state
    and time (the last terminal event by eventTime), its events carried until that day."""
    events = [
        _event("a", _t(1, 23, 0), "START", outputs=["x"]),
        _event("b", _t(1, 23, 50), "COMPLETE"),
        _event("c", _t(2, 0, 10), "FAIL", outputs=["y"]),
    ]
    kinds = _range(events, 1)
    [run] = kinds["run"]
    assert (run["state"], run["ended_at"], run["end_date"]) == ("FAIL", _t(2, 0, 10), dt.date(2024, 3, 2))
    assert run["started_at"] == _t(1, 23, 0) and run["event_count"] == 3
    assert _names(run["outputs"]) == [("ds", "x"), ("ds", "y")]
    assert {r["event_id"]: r["valid_to"] for r in kinds["open"]} == dict.fromkeys("abc", dt.date(2024, 3, 2))
    assert "mismatch" not in kinds


def test_an_event_after_the_run_ended_joins_it_and_keeps_its_end():
    """A RUNNING event the day after the COMPLETE: its output joins the run's union; the run
    keeps the COMPLETE's state, time and day."""
    kinds = _range([_event("a", _t(1, 10), "START"), _event("b", _t(1, 23, 59), "COMPLETE"), _event("c", _t(2, 0, 1), "RUNNING", outputs=["late"])], 1)
    [run] = kinds["run"]
    assert (run["state"], run["ended_at"], run["end_date"]) == ("COMPLETE", _t(1, 23, 59), dt.date(2024, 3, 1))
    assert _names(run["outputs"]) == [("ds", "late")] and run["event_count"] == 3


def test_an_event_naming_another_job_on_a_later_day_is_a_mismatch():
    """The same rule on every day: the run keeps the job of its earliest event, and a next-day
    event naming another job is a job_mismatch, not a run of that job."""
    events = [_event("a", _t(1, 10), "START"), _event("b", _t(1, 11), "COMPLETE", outputs=["x"]),
              _event("c", _t(2, 9), "COMPLETE", job="other", outputs=["z"])]
    kinds = _range(events, 1)
    [run] = kinds["run"]
    assert (run["job_name"], _names(run["outputs"]), run["end_date"]) == ("job", [("ds", "x")], dt.date(2024, 3, 1))
    assert [m["event_id"] for m in kinds["mismatch"]] == ["c"]
    assert sorted(r["event_id"] for r in kinds["open"]) == ["a", "b"]  # the mismatch is not carried


def test_a_later_days_fold_sees_the_carried_events_and_reports_only_its_own_mismatches():
    """A fold from day 2 gets the run's day-1 events from the state: the same run as a fold
    from day 1, and mismatches only for events of its own days."""
    events = [_event("m", _t(1, 9), "RUNNING", job="other"), _event("a", _t(1, 8), "START", outputs=["x"]),
              _event("b", _t(2, 1), "COMPLETE"), _event("n", _t(2, 2), "RUNNING", job="other")]
    whole, later = _range(events, 1), _range([e for e in events if e["event_id"] != "m"], 2)
    assert whole["run"] == later["run"]
    assert [m["event_id"] for m in whole["mismatch"]] == ["m", "n"] and [m["event_id"] for m in later["mismatch"]] == ["n"]


def test_a_run_that_ended_before_the_range_is_refused_not_dropped():
    """Events of a run that ended before the fold's first day cannot be written by that fold
    (the run's row is before it): a clear error, where `pipeline.fold.fold_start` starts the
    fold earlier, never a silent loss."""
    with pytest.raises(ValueError, match="ended on 2024-03-01, before the fold's first day 2024-03-02"):
        _range([_event("a", _t(1, 10), "COMPLETE"), _event("b", _t(2, 10), "RUNNING", outputs=["y"])], 2)


def test_a_run_without_a_terminal_event_stays_open():
    kinds = _range([_event("a", _t(1, 10), "START"), _event("b", _t(3, 10), "RUNNING")], 1)
    assert "run" not in kinds and {r["valid_to"] for r in kinds["open"]} == {None}


def _carried(event: dict, kept_events: int) -> dict:
    """An event as the state carries it: with the number of events its run kept when its row was written."""
    return {**_dated(event), "kept_events": kept_events}


def test_an_ended_runs_events_are_carried_until_its_last_event():
    kinds = _range([_event("a", _t(1, 10), "START"), _event("b", _t(1, 23, 59), "COMPLETE"), _event("c", _t(3, 0, 1), "RUNNING")], 1)
    assert kinds["run"][0]["end_date"] == dt.date(2024, 3, 1)
    assert {(r["event_id"], r["valid_to"], r["kept_events"]) for r in kinds["open"]} == {(e, dt.date(2024, 3, 3), 3) for e in "abc"}


def test_a_carried_run_whose_later_events_were_already_folded_changes_nothing():
    """A fold from day 2 carries the run that ended on day 1 (its RUNNING event of day 2 was
    folded with it): the same number of kept events, so no run row (it is before the range),
    no reopening, and its events carried as before."""
    events = [_carried(_event("a", _t(1, 10), "START"), 3), _carried(_event("b", _t(1, 23, 59), "COMPLETE"), 3),
              _dated(_event("c", _t(2, 0, 1), "RUNNING", outputs=["late"])), _dated(_event("x", _t(2, 5), "RUNNING", job="other"))]
    rows = coalesce_range(events, dt.date(2024, 3, 2))
    assert sorted((r["kind"], r["event_id"], r.get("valid_to")) for r in rows) == [
        ("mismatch", "x", None), ("open", "a", dt.date(2024, 3, 2)), ("open", "b", dt.date(2024, 3, 2)), ("open", "c", dt.date(2024, 3, 2)),
    ]


def test_a_carried_run_with_a_new_event_after_its_end_asks_the_fold_to_start_at_its_end():
    events = [_carried(_event("a", _t(1, 10), "START"), 3), _carried(_event("b", _t(1, 23, 59), "COMPLETE"), 3),
              _dated(_event("c", _t(2, 0, 1), "RUNNING")), _dated(_event("d", _t(2, 6), "RUNNING", outputs=["new"]))]
    assert coalesce_range(events, dt.date(2024, 3, 2)) == [{"kind": "reopen", "run_id": RUN, "valid_to": dt.date(2024, 3, 1)}]


def test_a_mismatched_event_after_the_end_carries_the_run_until_its_day():
    """A later fold reads the mismatched event again: it must carry the run to see that nothing
    is new, so the run's events stay until that day."""
    kinds = _range([_event("a", _t(1, 10), "COMPLETE"), _event("b", _t(3, 9), "RUNNING", job="other")], 1)
    assert [(r["event_id"], r["valid_to"]) for r in kinds["open"]] == [("a", dt.date(2024, 3, 3))]
    assert [m["event_id"] for m in kinds["mismatch"]] == ["b"]


def test_a_carried_run_with_a_later_terminal_event_asks_the_fold_to_start_at_its_first_end():
    """The run was folded ended on day 1 (COMPLETE) and carried; a FAIL of day 2 lands late. Its
    new end is in the range, but its row is on day 1, which this fold cannot replace: it asks to
    start there (from day 1 the run is one row, FAIL, on day 2)."""
    events = [_carried(_event("a", _t(1, 10), "START"), 3), _carried(_event("b", _t(1, 23, 59), "COMPLETE"), 3),
              _dated(_event("c", _t(2, 0, 5), "RUNNING")), _dated(_event("d", _t(2, 0, 20), "FAIL"))]
    assert coalesce_range(events, dt.date(2024, 3, 2)) == [{"kind": "reopen", "run_id": RUN, "valid_to": dt.date(2024, 3, 1)}]
    [run] = _range([{k: v for k, v in e.items() if k != "kept_events"} for e in events], 1)["run"]
    assert (run["state"], run["end_date"]) == ("FAIL", dt.date(2024, 3, 2))


def test_a_run_that_ended_twice_around_midnight_and_was_folded_whole_changes_nothing():
    """Both ends were folded (carried with all four events): the row is on day 2, in the range,
    so a fold from day 2 writes it again and asks for nothing earlier."""
    events = [_carried(_event("a", _t(1, 10), "START"), 3), _carried(_event("b", _t(1, 23, 59), "COMPLETE"), 3),
              _dated(_event("d", _t(2, 0, 20), "FAIL"))]
    [run] = _range(events, 2)["run"]
    assert (run["state"], run["end_date"]) == ("FAIL", dt.date(2024, 3, 2))


STREAMING = {"jobType": {"processingType": "STREAMING"}}


def _items(events: list[dict], first_day: int) -> list[tuple[str, str | None]]:
    return [(r["event_id"], r["code_version"]) for r in _range(events, first_day).get("item", [])]


@pytest.mark.parametrize("late_hour", [(1, 23, 50), (2, 0, 10)])
def test_a_streaming_item_is_decided_and_versioned_as_of_its_own_event(late_hour):
    """An event is an item when the job facets as of it (merged through it) say STREAMING, with
    the code version as of it: a later event's code version or jobType changes no earlier item,
    whether it comes before or after midnight; so folds of day 1 then 2 agree with one of both."""
    code = lambda v: {**STREAMING, "sourceCodeLocation": {"type": "git", "url": "u", "version": v}}  # noqa: E731
    events = [
        _event("io-without-type", _t(1, 8), "START", inputs=["k"], outputs=["s"]),
        _event("io-v1", _t(1, 10), "RUNNING", inputs=["k"], outputs=["s"], job_facets=code("v1")),
        _event("v2-no-io", _t(*late_hour), "RUNNING", job_facets=code("v2")),
        _event("io-v2", _t(2, 9), "RUNNING", inputs=["k"], outputs=["s2"]),
    ]
    assert _items(events, 1) == [("io-v1", "v1"), ("io-v2", "v2")]
    day1 = [e for e in events if e["event_time"].date() == dt.date(2024, 3, 1)]
    assert _items(day1, 1) + _items(events, 2) == _items(events, 1)


def test_a_streaming_runs_terminal_event_is_an_item_even_without_inputs_or_outputs():
    """A streaming run that ends before naming a dataset (a Flink job failing at its start) or
    whose jobType comes only with its io-less terminal event: the terminal event is an item that
    reported none, so the run's job is versioned (before: no item, no version, and the fold's
    blocking key check failed on the run's missing job version). Non-terminal io-less events
    stay no items, and a batch run's terminal event is no item."""
    failed_at_start = [_event("start", _t(1, 8), "START", job_facets=STREAMING), _event("fail", _t(1, 9), "FAIL")]
    assert _items(failed_at_start, 1) == [("fail", None)]
    [item] = _range(failed_at_start, 1)["item"]
    assert (item["state"], item["ended_at"]) == ("FAIL", _t(1, 9))
    type_at_the_end = [_event("io", _t(1, 8), "START", inputs=["k"], outputs=["s"]),
                       _event("idle", _t(1, 9), "RUNNING", job_facets=STREAMING), _event("done", _t(1, 10), "COMPLETE")]
    assert _items(type_at_the_end, 1) == [("done", None)]
    batch = [_event("start", _t(1, 8), "START"), _event("fail", _t(1, 9), "FAIL")]
    assert _items(batch, 1) == []


def test_a_null_facet_is_absent_and_replaces_no_earlier_instance():
    """README (Intake): a `null` facet counts as absent. A COMPLETE sending the code location,
    schema and version facets as null keeps those of the START, and no null is stored."""
    schema = {"schema": {"fields": [{"name": "a", "type": "int"}]}, "version": {"datasetVersion": "7"}}
    run, _ = coalesce_run([
        _event("a", _t(1, 10), "START", outputs=[_ds("x", facets=schema)],
               job_facets={"sourceCodeLocation": {"type": "git", "url": "u", "version": "v2"}}),
        _event("b", _t(1, 11), "COMPLETE", outputs=[_ds("x", facets={"schema": None, "version": None})],
               job_facets={"sourceCodeLocation": None}),
    ], as_text=True)
    assert run["code_version"] == "v2"
    assert json.loads(run["outputs"][0]["facets"]) == schema
    only_null, _ = coalesce_run([_event("a", _t(1, 10), "COMPLETE", outputs=[_ds("x", facets={"schema": None})])], as_text=True)
    assert only_null["outputs"][0]["facets"] == "{}"


# --------------------------------------------------------------------------- ties in eventTime


def _same_whatever_the_order(events: list[dict]) -> tuple[dict, list[dict]]:
    """coalesce_run and coalesce_range of `events` as given and reversed: the same results (ties
    in eventTime are broken by event_id, not by the order the events came in); the first run."""
    forward, backward = coalesce_run(events), coalesce_run(events[::-1])
    assert forward == backward
    assert _range(events, 1) == _range(events[::-1], 1)
    return forward


def test_a_complete_and_a_fail_at_one_event_time_give_one_state_whatever_their_order():
    run, _ = _same_whatever_the_order([
        _event("e1", _t(1, 8), "START"), _event("e2", _t(1, 9), "COMPLETE", outputs=["x"]), _event("e3", _t(1, 9), "FAIL", outputs=["y"]),
    ])
    assert run["state"] in ("COMPLETE", "FAIL") and run["ended_at"] == _t(1, 9)


def test_the_two_earliest_events_naming_two_jobs_at_one_event_time_give_one_job_whatever_their_order():
    run, mismatched = _same_whatever_the_order([
        _event("e1", _t(1, 8), "START", job="first", inputs=["a"]), _event("e2", _t(1, 8), "START", job="second", inputs=["b"]),
        _event("e3", _t(1, 9), "COMPLETE", job="first"), _event("e4", _t(1, 9), "COMPLETE", job="second"),
    ])
    assert len(mismatched) == 2 and {run["job_name"]} | {e["job_name"] for e in mismatched} == {"first", "second"}


def test_two_instances_of_a_facet_at_one_event_time_merge_to_one_whatever_their_order():
    facet = lambda v: {"f": {"v": v}}  # noqa: E731
    run, _ = _same_whatever_the_order([
        _event("e1", _t(1, 9), "RUNNING", run_facets=facet("one"), job_facets=facet("one"), outputs=[_ds("x", facets=facet("one"))]),
        _event("e2", _t(1, 9), "COMPLETE", run_facets=facet("two"), job_facets=facet("two"), outputs=[_ds("x", facets=facet("two"))]),
    ])
    assert run["run_facets"] in (facet("one"), facet("two"))
