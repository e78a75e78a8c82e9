"""fold_job: the job-versioning rules of DESIGN.md section 4, one job at a time, no Spark."""

from __future__ import annotations

import datetime as dt
import json
import uuid

from lineage_assets.lineage.versioning import FoldItem, JobState, fold_job

JOB = ("ns", "job")
LINEAGE_NS = uuid.uuid5(uuid.NAMESPACE_URL, "lineage_assets")
UTC = dt.timezone.utc


def expected_id(inputs, outputs, code_version, lineage_unknown, job=JOB) -> str:
    """The id DESIGN.md section 4 prescribes, computed here independently of the implementation."""
    content = {
        "job": [job[0], job[1]],
        "inputs": [[ns, name] for ns, name in sorted(set(inputs))],
        "outputs": [[ns, name] for ns, name in sorted(set(outputs))],
        "code_version": code_version,
        "lineage_unknown": lineage_unknown,
    }
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return str(uuid.uuid5(LINEAGE_NS, text))


def _at(minute: int) -> dt.datetime:
    return dt.datetime(2024, 3, 1, 10, minute, tzinfo=UTC)


def item(run_id: str, minute: int, inputs=(), outputs=(), code=None, state="COMPLETE") -> FoldItem:
    return FoldItem(
        run_id=run_id,
        ended_at=_at(minute),
        state=state,
        inputs=[d if isinstance(d, tuple) else ("ds", d) for d in inputs],
        outputs=[d if isinstance(d, tuple) else ("ds", d) for d in outputs],
        code_version=code,
    )


def fresh() -> JobState:
    return JobState(*JOB)


def _io(row: dict) -> tuple[list, list]:
    return row["inputs"], row["outputs"]


# --------------------------------------------------------------------------- rule 1


def test_first_run_with_io_creates_the_first_version():
    versions, assignment, state = fold_job(fresh(), [item("r1", 1, ["a"], ["b"], code="c1")])
    vid = expected_id([("ds", "a")], [("ds", "b")], "c1", False)
    assert len(versions) == 1
    row = versions[0]
    assert row["version_id"] == vid
    assert (row["job_namespace"], row["job_name"]) == JOB
    assert _io(row) == ([["ds", "a"]], [["ds", "b"]])
    assert row["code_version"] == "c1"
    assert row["lineage_unknown"] is False
    assert row["created_by_run_id"] == "r1"
    assert row["created_at"] == _at(1)
    assert assignment == {"r1": vid}
    assert state.version_id == vid
    assert state.known_versions == [vid]
    assert (state.latest_run_id, state.latest_state, state.latest_ended_at) == ("r1", "COMPLETE", _at(1))


def test_first_run_without_io_is_a_version_with_lineage_unknown():
    versions, assignment, state = fold_job(fresh(), [item("r1", 1, code="c1")])
    vid = expected_id([], [], "c1", True)
    assert [v["version_id"] for v in versions] == [vid]
    assert versions[0]["lineage_unknown"] is True
    assert _io(versions[0]) == ([], [])
    assert assignment == {"r1": vid}
    assert state.version_id == vid


def test_first_run_without_io_or_code_version():
    versions, _, _ = fold_job(fresh(), [item("r1", 1)])
    assert [v["version_id"] for v in versions] == [expected_id([], [], None, True)]


# --------------------------------------------------------------------------- rule 2


def test_new_io_gives_a_new_version():
    versions, assignment, state = fold_job(fresh(), [item("r1", 1, ["a"], ["b"]), item("r2", 2, ["a", "c"], ["b"])])
    v1 = expected_id([("ds", "a")], [("ds", "b")], None, False)
    v2 = expected_id([("ds", "a"), ("ds", "c")], [("ds", "b")], None, False)
    assert [v["version_id"] for v in versions] == [v1, v2]
    assert versions[1]["created_by_run_id"] == "r2"
    assert assignment == {"r1": v1, "r2": v2}
    assert state.version_id == v2


def test_same_io_gives_no_new_row():
    versions, assignment, state = fold_job(
        fresh(),
        [item("r1", 1, ["a"], ["b"], code="c"), item("r2", 2, ["a"], ["b"], code="c"), item("r3", 3, ["a"], ["b", "b"], code="c")],
    )
    vid = expected_id([("ds", "a")], [("ds", "b")], "c", False)
    assert [v["version_id"] for v in versions] == [vid]
    assert assignment == {"r1": vid, "r2": vid, "r3": vid}
    assert state.latest_run_id == "r3"


def test_io_order_and_duplicates_do_not_change_the_version():
    first = [item("r1", 1, [("x", "b"), ("x", "a"), ("x", "a")], [("y", "o")])]
    versions, _, _ = fold_job(fresh(), first)
    vid = expected_id([("x", "a"), ("x", "b")], [("y", "o")], None, False)
    assert [v["version_id"] for v in versions] == [vid]
    assert versions[0]["inputs"] == [["x", "a"], ["x", "b"]]
    versions, assignment, _ = fold_job(fresh(), [item("r2", 1, [("x", "a"), ("x", "b")], [("y", "o")])])
    assert assignment == {"r2": vid}


def test_reported_io_without_code_version_keeps_the_current_code_version():
    versions, assignment, state = fold_job(
        fresh(), [item("r1", 1, ["a"], ["b"], code="c1"), item("r2", 2, ["a"], ["z"], code=None)]
    )
    v2 = expected_id([("ds", "a")], [("ds", "z")], "c1", False)
    assert [v["version_id"] for v in versions][1] == v2
    assert versions[1]["code_version"] == "c1"
    assert assignment["r2"] == v2
    assert state.content["code_version"] == "c1"


def test_same_io_new_code_version_is_a_new_version():
    versions, _, _ = fold_job(fresh(), [item("r1", 1, ["a"], ["b"], code="c1"), item("r2", 2, ["a"], ["b"], code="c2")])
    assert [v["version_id"] for v in versions] == [
        expected_id([("ds", "a")], [("ds", "b")], "c1", False),
        expected_id([("ds", "a")], [("ds", "b")], "c2", False),
    ]


def test_io_after_an_unknown_first_version_clears_lineage_unknown():
    versions, _, state = fold_job(fresh(), [item("r1", 1, code="c1"), item("r2", 2, ["a"], [])])
    assert [v["version_id"] for v in versions] == [
        expected_id([], [], "c1", True),
        expected_id([("ds", "a")], [], "c1", False),
    ]
    assert state.content["lineage_unknown"] is False


def test_job_writes_x_then_y_instead():
    """The current version follows the latest run: A writes X, then Y instead -> outputs [Y], not [X, Y]."""
    versions, assignment, state = fold_job(fresh(), [item("r1", 1, [], ["X"]), item("r2", 2, [], ["Y"])])
    vx = expected_id([], [("ds", "X")], None, False)
    vy = expected_id([], [("ds", "Y")], None, False)
    assert [v["version_id"] for v in versions] == [vx, vy]
    assert versions[1]["outputs"] == [["ds", "Y"]]
    assert assignment == {"r1": vx, "r2": vy}
    assert state.version_id == vy
    assert state.content["outputs"] == [["ds", "Y"]]


# --------------------------------------------------------------------------- rules 3 and 4


def test_no_io_and_new_code_version_copies_the_previous_io_with_lineage_unknown():
    versions, assignment, state = fold_job(fresh(), [item("r1", 1, ["a"], ["b"], code="c1"), item("r2", 2, code="c2")])
    v1 = expected_id([("ds", "a")], [("ds", "b")], "c1", False)
    v2 = expected_id([("ds", "a")], [("ds", "b")], "c2", True)
    assert [v["version_id"] for v in versions] == [v1, v2]
    row = versions[1]
    assert _io(row) == ([["ds", "a"]], [["ds", "b"]])
    assert row["code_version"] == "c2"
    assert row["lineage_unknown"] is True
    assert row["created_by_run_id"] == "r2"
    assert assignment == {"r1": v1, "r2": v2}
    assert state.version_id == v2


def test_no_io_and_new_code_version_when_the_current_has_none():
    versions, _, _ = fold_job(fresh(), [item("r1", 1, ["a"], ["b"]), item("r2", 2, code="c1")])
    assert [v["version_id"] for v in versions][1] == expected_id([("ds", "a")], [("ds", "b")], "c1", True)


def test_no_io_and_same_code_version_belongs_to_the_current_version():
    versions, assignment, state = fold_job(fresh(), [item("r1", 1, ["a"], ["b"], code="c1"), item("r2", 2, code="c1")])
    v1 = expected_id([("ds", "a")], [("ds", "b")], "c1", False)
    assert [v["version_id"] for v in versions] == [v1]
    assert assignment == {"r1": v1, "r2": v1}
    assert state.version_id == v1
    assert state.content["lineage_unknown"] is False
    assert (state.latest_run_id, state.latest_ended_at) == ("r2", _at(2))


def test_no_io_and_no_code_version_belongs_to_the_current_version():
    versions, assignment, state = fold_job(fresh(), [item("r1", 1, ["a"], ["b"], code="c1"), item("r2", 2)])
    v1 = expected_id([("ds", "a")], [("ds", "b")], "c1", False)
    assert [v["version_id"] for v in versions] == [v1]
    assert assignment["r2"] == v1
    assert state.content["code_version"] == "c1"


def test_an_empty_run_never_erases_io():
    runs = [item("r1", 1, ["a"], ["b"]), item("r2", 2), item("r3", 3), item("r4", 4, state="FAIL")]
    versions, assignment, state = fold_job(fresh(), runs)
    v1 = expected_id([("ds", "a")], [("ds", "b")], None, False)
    assert [v["version_id"] for v in versions] == [v1]
    assert set(assignment.values()) == {v1}
    assert state.content["inputs"] == [["ds", "a"]]
    assert state.content["outputs"] == [["ds", "b"]]
    assert state.latest_state == "FAIL"


def test_a_second_empty_run_with_the_same_new_code_stays_on_the_unknown_version():
    versions, assignment, _ = fold_job(
        fresh(), [item("r1", 1, ["a"], ["b"], code="c1"), item("r2", 2, code="c2"), item("r3", 3, code="c2")]
    )
    v2 = expected_id([("ds", "a")], [("ds", "b")], "c2", True)
    assert len(versions) == 2
    assert assignment["r3"] == v2


def test_fail_and_abort_version_like_complete():
    for state_name in ("FAIL", "ABORT"):
        versions, assignment, state = fold_job(
            fresh(), [item("r1", 1, ["a"], ["b"], state=state_name), item("r2", 2, ["a"], ["c"], state=state_name)]
        )
        v1 = expected_id([("ds", "a")], [("ds", "b")], None, False)
        v2 = expected_id([("ds", "a")], [("ds", "c")], None, False)
        assert [v["version_id"] for v in versions] == [v1, v2], state_name
        assert assignment == {"r1": v1, "r2": v2}
        assert state.latest_state == state_name
        assert state.version_id == v2


# --------------------------------------------------------------------------- A, B, A and ordering


def test_a_b_a_gives_two_rows_and_a_is_current_again():
    runs = [item("r1", 1, ["a"], ["A"]), item("r2", 2, ["a"], ["B"]), item("r3", 3, ["a"], ["A"])]
    versions, assignment, state = fold_job(fresh(), runs)
    va = expected_id([("ds", "a")], [("ds", "A")], None, False)
    vb = expected_id([("ds", "a")], [("ds", "B")], None, False)
    assert [v["version_id"] for v in versions] == [va, vb]
    assert assignment == {"r1": va, "r2": vb, "r3": va}
    assert state.version_id == va
    assert state.content["outputs"] == [["ds", "A"]]
    assert sorted(state.known_versions) == sorted([va, vb])


def test_a_b_a_across_separate_folds_carries_the_known_versions():
    state = fresh()
    seen = []
    for run_id, minute, out in (("r1", 1, "A"), ("r2", 2, "B"), ("r3", 3, "A")):
        # the state goes through to_dict/from_dict as it does between days
        state = JobState.from_dict(state.to_dict())
        versions, assignment, state = fold_job(state, [item(run_id, minute, ["a"], [out])])
        seen.append((len(versions), assignment[run_id]))
    va = expected_id([("ds", "a")], [("ds", "A")], None, False)
    vb = expected_id([("ds", "a")], [("ds", "B")], None, False)
    assert seen == [(1, va), (1, vb), (0, va)]
    assert state.version_id == va


def test_items_fold_in_order_of_ended_at_then_run_id_whatever_the_list_order():
    runs = [
        item("r3", 3, ["a"], ["C"]),
        item("r1", 1, ["a"], ["A"]),
        item("r2b", 2, ["a"], ["B2"]),
        item("r2a", 2, ["a"], ["B1"]),
    ]
    versions, assignment, state = fold_job(fresh(), runs)
    assert [v["created_by_run_id"] for v in versions] == ["r1", "r2a", "r2b", "r3"]
    assert [v["outputs"] for v in versions] == [[["ds", "A"]], [["ds", "B1"]], [["ds", "B2"]], [["ds", "C"]]]
    assert state.latest_run_id == "r3"
    assert state.version_id == expected_id([("ds", "a")], [("ds", "C")], None, False)
    assert list(assignment) == ["r1", "r2a", "r2b", "r3"]

    reversed_result = fold_job(fresh(), list(reversed(runs)))
    assert reversed_result[0] == versions
    assert reversed_result[1] == assignment


def test_a_streaming_runs_items_at_one_time_fold_in_order_of_their_event_ids():
    """A streaming run's items share its run id; two of them at the same time are ordered by
    their events' ids, so the job's versions and its current one do not depend on the rows'
    order (Spark hands a group's rows over in no particular order)."""
    a = FoldItem("s", _at(5), "RUNNING", [("ds", "k")], [("ds", "sink_a")], None, event_id="e1")
    b = FoldItem("s", _at(5), "RUNNING", [("ds", "k")], [("ds", "sink_b")], None, event_id="e2")
    forward, backward = fold_job(fresh(), [a, b]), fold_job(fresh(), [b, a])
    assert forward[0] == backward[0] and forward[1] == backward[1] and forward[2].version_id == backward[2].version_id
    assert [v["outputs"] for v in forward[0]] == [[["ds", "sink_a"]], [["ds", "sink_b"]]]
    assert forward[2].version_id == expected_id([("ds", "k")], [("ds", "sink_b")], None, False)


def test_an_empty_run_that_ended_before_the_first_io_run_is_rule_1_not_rule_4():
    """Ordering decides which rule applies: the empty run ended first, so it creates the first version."""
    versions, assignment, state = fold_job(fresh(), [item("r2", 2, ["a"], ["b"]), item("r1", 1)])
    v0 = expected_id([], [], None, True)
    v1 = expected_id([("ds", "a")], [("ds", "b")], None, False)
    assert [v["version_id"] for v in versions] == [v0, v1]
    assert assignment == {"r1": v0, "r2": v1}
    assert state.version_id == v1


def test_version_ids_depend_on_the_job():
    other = ("other_ns", "job")
    versions, _, _ = fold_job(JobState(*other), [item("r1", 1, ["a"], ["b"])])
    assert versions[0]["version_id"] == expected_id([("ds", "a")], [("ds", "b")], None, False, job=other)
    assert versions[0]["version_id"] != expected_id([("ds", "a")], [("ds", "b")], None, False)


def test_unicode_names_hash_as_utf8_text_not_escapes():
    versions, _, _ = fold_job(fresh(), [item("r1", 1, ["données"], ["résumé"], code="vé")])
    assert versions[0]["version_id"] == expected_id([("ds", "données")], [("ds", "résumé")], "vé", False)
