"""Queries that stay bounded (issue 12, point 8): every walk converges, depth and ids are capped
with a clear ValueError, a read error does not outlive the call that met it, and every bad
argument is a ValueError or NodeNotFound. On snapshots written with pyarrow (no Spark)."""

from __future__ import annotations

import datetime as dt
import shutil
import time

import pytest

from lineage_assets import LineageQuery
from lineage_assets.query.lineage_query import WarehouseReadError
from lineage_assets.query.node_ids import MAX_ID_LENGTH, NodeNotFound
from lineage_assets.query.traversal import MAX_DEPTH
from lineage_assets.warehouse import commits
from lineage_assets.warehouse import tables as t
from lineage_assets_tests.support import commit_rows

NS = "postgres://db.example.com:5432"
JOBS = 6  # job i reads table i and writes table i+1 (mod 6): a 12-node cycle, plus a lone job


def _snapshot(root: str, jobs: int = JOBS) -> None:
    now = dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc)
    job_rows = [{"job_namespace": NS, "job_name": f"job{i}", "version_id": f"v{i}", "latest_state": "COMPLETE",
                 "latest_ended_at": now, "component_id": f"job:{NS}:job0", "lineage_unknown": False} for i in range(jobs)]
    job_rows.append({"job_namespace": NS, "job_name": "lone", "version_id": "v-lone", "component_id": f"job:{NS}:lone"})
    edges = []
    for i in range(jobs):
        for table, direction in ((f"table{i}", "INPUT"), (f"table{(i + 1) % jobs}", "OUTPUT")):
            edges.append({"job_namespace": NS, "job_name": f"job{i}", "version_id": f"v{i}", "dataset_namespace": NS,
                          "dataset_name": table, "direction": direction, "component_id": f"job:{NS}:job0", "temporary": False})
    commit_rows(root, {t.CURRENT_JOBS: job_rows, t.CURRENT_LINEAGE: edges})


def _best_time(call, tries: int = 3) -> tuple[float, object]:
    """(the fastest of `tries` calls in seconds, the last call's answer): the time least disturbed
    by other work on the machine, and the answer, so a test need not ask once more for it."""
    best, answer = float("inf"), None
    for _ in range(tries):
        began = time.perf_counter()
        answer = call()
        best = min(best, time.perf_counter() - began)
    return best, answer


@pytest.fixture
def cycle(tmp_path):
    root = str(tmp_path / "wh")
    _snapshot(root)
    with LineageQuery(root) as query:
        yield query


def test_a_huge_depth_on_a_cycle_converges_to_the_default_answer(cycle):
    # Against the default depth's walk in the same process, not a fixed bound (a loaded machine).
    at_default, default = _best_time(lambda: cycle.lineage(f"job:{NS}:job0").model_dump())
    at_cap, huge = _best_time(lambda: cycle.lineage(f"job:{NS}:job0", depth=MAX_DEPTH).model_dump())
    assert at_cap < 3 * at_default + 0.05
    assert huge == default
    assert len(default["graph"]) == 2 * JOBS  # the whole cycle, not the lone job


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 2**31, -1, 2.5, "20", True])
def test_a_depth_beyond_the_cap_or_not_an_integer_is_a_value_error(cycle, depth):
    with pytest.raises(ValueError, match="depth"):
        cycle.lineage(f"job:{NS}:job0", depth=depth)
    with pytest.raises(ValueError, match="depth"):
        cycle.column_lineage(f"dataset:{NS}:table1", depth=depth)


def test_an_id_of_many_colons_answers_or_is_refused_at_once(cycle):
    began = time.perf_counter()
    for kind in ("job", "dataset"):  # 300 readings: each one dictionary lookup
        with pytest.raises(NodeNotFound):
            cycle.column_lineage(f"{kind}:" + ":".join("x" * 301))
    with pytest.raises(ValueError, match="colons"):  # 44,850 readings of a field id
        cycle.column_lineage("datasetField:" + ":".join("x" * 301))
    with pytest.raises(ValueError, match="longer than"):
        cycle.lineage(f"job:{NS}:" + "y" * MAX_ID_LENGTH)
    assert time.perf_counter() - began < 1.0


def test_a_version_on_a_lineage_id_is_a_value_error_not_the_current_job(cycle):
    with pytest.raises(ValueError, match="names a version"):
        cycle.lineage(f"job:{NS}:job0#abc")
    assert cycle.lineage(f"job:{NS}:job0").node(f"job:{NS}:job0")  # the plain id still answers


@pytest.mark.parametrize("when", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00"])
def test_a_timestamp_that_leaves_the_utc_range_is_a_value_error(cycle, when):
    with pytest.raises(ValueError, match="out of the range"):
        cycle.column_lineage(f"dataset:{NS}:table1", lineage_at=when)


def test_a_truncated_file_fails_that_call_and_the_next_call_reads_again(tmp_path):
    root = str(tmp_path / "wh")
    _snapshot(root)
    path = commits.latest(root).files("current_lineage")[0]
    good = tmp_path / "good.parquet"
    shutil.copyfile(path, good)
    with LineageQuery(root) as query:
        with open(path, "r+b") as handle:
            handle.truncate(40)
        for _ in range(2):  # the same clear error each time, not a stuck connection
            with pytest.raises(WarehouseReadError, match="cannot read commit"):
                query.lineage(f"job:{NS}:job0")
        shutil.copyfile(good, path)
        assert len(query.lineage(f"job:{NS}:job0").graph) == 2 * JOBS
        _snapshot(root, jobs=3)  # and a later commit is read as usual
        assert len(query.lineage(f"job:{NS}:job0").graph) == 2 * 3


BAD_CALLS = {
    "no id": lambda q: q.lineage(),
    "id not a string": lambda q: q.lineage(42),
    "empty id": lambda q: q.lineage(""),
    "unknown kind": lambda q: q.lineage("task:ns:x"),
    "field to lineage": lambda q: q.lineage(f"datasetField:{NS}:table1:a"),
    "no name": lambda q: q.lineage("job:ns"),
    "unknown job": lambda q: q.lineage(f"job:{NS}:nobody"),
    "structured without kind": lambda q: q.lineage(namespace=NS, name="job0"),
    "structured kind unknown": lambda q: q.lineage(node_type="task", namespace=NS, name="job0"),
    "namespace not a string": lambda q: q.lineage(node_type="job", namespace=5, name="job0"),
    "name not a string": lambda q: q.column_lineage(node_type="dataset", namespace=NS, name=["table1"]),
    "field not a string": lambda q: q.column_lineage(namespace=NS, name="table1", field=3),
    "downstream not a bool": lambda q: q.column_lineage(f"dataset:{NS}:table1", with_downstream="yes"),
    "temporary not a bool": lambda q: q.lineage(f"job:{NS}:job0", include_temporary=1),
    "version not a string": lambda q: q.column_lineage(f"dataset:{NS}:table1", dataset_version=7),
    "version and time": lambda q: q.column_lineage(f"dataset:{NS}:table1", dataset_version="v", lineage_at="2024-01-01"),
    "time not a time": lambda q: q.column_lineage(f"dataset:{NS}:table1", lineage_at="yesterday"),
    "time of a wrong type": lambda q: q.column_lineage(f"dataset:{NS}:table1", lineage_at=3.5),
    "unknown field": lambda q: q.column_lineage(f"datasetField:{NS}:table1:nothing"),
}


@pytest.mark.parametrize("call", BAD_CALLS.values(), ids=BAD_CALLS.keys())
def test_every_bad_argument_is_a_value_error_or_node_not_found(cycle, call):
    with pytest.raises((ValueError, NodeNotFound)) as caught:
        call(cycle)
    assert type(caught.value) in (ValueError, NodeNotFound)  # not a TypeError, KeyError or a DuckDB error
    assert str(caught.value)


MORE_BAD_CALLS = {
    "id of a wrong type with structured arguments": lambda q: q.lineage(5, namespace=NS, name="job0"),
    "node_type of a wrong type": lambda q: q.column_lineage(node_type=["dataset"], namespace=NS, name="table1"),
    "a lone surrogate in an id": lambda q: q.column_lineage(f"dataset:{NS}:\ud800", lineage_at="2024-05-01"),
    "a lone surrogate in a dataset question": lambda q: q.dataset("\udcff", "x"),
    "a lone surrogate in a field question": lambda q: q.column_history(f"datasetField:{NS}:table1:\ud800"),
    "a URN longer than an id may be": lambda q: q.lineage("urn:li:dataset:(urn:li:dataPlatform:s3," + "x" * MAX_ID_LENGTH + ",PROD)"),
    "a field URN longer than an id may be": lambda q: q.column_lineage("urn:li:schemaField:(urn:li:dataset:(" + "x" * MAX_ID_LENGTH + "),f)"),
}


@pytest.mark.parametrize("call", MORE_BAD_CALLS.values(), ids=MORE_BAD_CALLS.keys())
def test_ids_of_a_wrong_type_surrogates_and_long_urns_are_value_errors(cycle, call):
    """The id and node_type are checked like every other argument; a lone surrogate (no stored
    name holds one) is refused before DuckDB sees it; a URN is capped like an id (its message
    does not echo a megabyte back)."""
    with pytest.raises(ValueError) as caught:
        call(cycle)
    assert type(caught.value) is ValueError and 0 < len(str(caught.value)) < 300


NOW = dt.datetime(2024, 6, 1, tzinfo=dt.timezone.utc)


def _cedge(output: str, field: str, input_: str, input_field: str, output_version: str, input_version: str, at=NOW) -> dict:
    return {"output_version_id": output_version, "output_namespace": NS, "output_name": output, "output_field": field,
            "input_namespace": NS, "input_name": input_, "input_field": input_field, "input_version_id": input_version,
            "transformation_type": "DIRECT", "transformation_subtype": "IDENTITY", "run_id": "r1", "created_at": at,
            "created_date": at.date()}


def test_a_point_in_time_walk_around_a_cycle_of_versions_stops_when_it_finds_nothing_new(tmp_path):
    """Version v1 of X whose 300 fields each come from itself and the next one (a run that read
    the version it wrote): the whole cycle is the answer at any depth beyond it, and a depth of
    100,000 costs what 300 does (the walk went on to the depth before: 15 s)."""
    fields = 300
    root = str(tmp_path / "wh")
    commit_rows(root, {
        t.CURRENT_JOBS: [{"job_namespace": "j", "job_name": "J", "version_id": "jv", "latest_state": "COMPLETE", "latest_ended_at": NOW,
                          "component_id": "job:j:J", "lineage_unknown": False}],
        t.CURRENT_LINEAGE: [{"job_namespace": "j", "job_name": "J", "version_id": "jv", "dataset_namespace": NS, "dataset_name": "X",
                             "direction": d, "component_id": "job:j:J", "temporary": False} for d in ("INPUT", "OUTPUT")],
        t.DATASET_VERSIONS: [{"version_id": "v1", "namespace": NS, "name": "X", "run_id": "r1", "run_state": "COMPLETE",
                              "job_namespace": "j", "job_name": "J", "created_at": NOW, "created_date": NOW.date()}],
        t.COLUMN_LINEAGE: [_cedge("X", f"f{i}", "X", f"f{(i + k) % fields}", "v1", "v1") for i in range(fields) for k in (0, 1)],
    })
    start = f"datasetField:{NS}:X:f0#v1"
    with LineageQuery(root) as query:
        assert len(query.column_lineage(start, depth=2).graph) == 3  # f0, f1, f2: the depth still bounds the walk
        whole = query.column_lineage(start, depth=fields).model_dump()
        bounded, _ = _best_time(lambda: query.column_lineage(start, depth=fields, with_downstream=True).model_dump())
        unbounded, deep = _best_time(lambda: query.column_lineage(start, depth=MAX_DEPTH, with_downstream=True).model_dump())
        # Measured against the depth-300 walk in the same process (a fixed bound failed on a loaded
        # CI machine: 4.9 s for what takes 0.2 s alone); the walk on to the depth took 36 s against 0.09 s.
        assert unbounded < 3 * bounded + 0.1, (unbounded, bounded)
    assert len(whole["graph"]) == fields and {n["id"] for n in deep["graph"]} == {n["id"] for n in whole["graph"]}


def test_history_that_cannot_be_read_is_a_warehouse_read_error_and_dataset_answers_a_completed_write(tmp_path):
    """A truncated history file fails a point-in-time question and a dataset question with
    WarehouseReadError (an OSError, the HTTP routes' 503), as a truncated snapshot file does; the
    next call reads again. The dataset's current version is the latest written by a COMPLETE run
    (DESIGN.md section 4), not a later DatasetEvent's (a tag set on it), which is what a
    point-in-time question starts from too. And answers hand out copies of the aliases: a caller
    changing its answer changes no later one."""
    root = str(tmp_path / "wh")
    later = NOW + dt.timedelta(hours=1)
    commit_rows(root, {
        t.CURRENT_JOBS: [{"job_namespace": "j", "job_name": "J", "version_id": "jv", "latest_state": "COMPLETE", "latest_ended_at": NOW,
                          "component_id": "job:j:J", "lineage_unknown": False}],
        t.CURRENT_LINEAGE: [{"job_namespace": "j", "job_name": "J", "version_id": "jv", "dataset_namespace": NS, "dataset_name": n,
                             "direction": d, "component_id": "job:j:J", "temporary": False} for n, d in (("S", "INPUT"), ("O", "OUTPUT"))],
        t.CURRENT_COLUMN_LINEAGE: [{**_cedge("O", "x", "S", "a", "v-run", "sv"), "job_namespace": "j", "job_name": "J", "input_declared": True}],
        t.CURRENT_ALIASES: [{"alias_namespace": "s3://lake", "alias_name": "/warehouse/O", "namespace": NS, "name": "O"}],
        t.DATASET_VERSIONS: [
            {"version_id": "v-run", "namespace": NS, "name": "O", "run_id": "r1", "run_state": "COMPLETE", "job_namespace": "j",
             "job_name": "J", "created_at": NOW, "created_date": NOW.date()},
            {"version_id": "v-tag-event", "namespace": NS, "name": "O", "created_at": later, "created_date": later.date()},
        ],
        t.COLUMN_LINEAGE: [_cedge("O", "x", "S", "a", "v-run", "sv")],
    })
    field = f"datasetField:{NS}:O:x"
    with LineageQuery(root) as query:
        resource = query.dataset(NS, "O")
        assert (resource.currentVersion, resource.lastModifiedAt) == ("v-run", "2024-06-01T00:00:00Z")
        at = query.column_lineage(field, lineage_at=later + dt.timedelta(hours=1))
        assert {n.id for n in at.graph} == {f"{field}#v-run", f"datasetField:{NS}:S:a#sv"}
        answer = query.column_lineage(field).node(field)
        assert answer.data["aliases"] == [{"namespace": "s3://lake", "name": "/warehouse/O"}]
        answer.data["aliases"].clear()
        assert query.column_lineage(field).node(field).data["aliases"] == query.aliases_of(NS, "O") != []
        assert [a.name for a in query.dataset(NS, "O").aliases] == ["/warehouse/O"]

    path = commits.latest(root).files("column_lineage")[0]
    good = tmp_path / "good.parquet"
    shutil.copyfile(path, good)
    with open(path, "r+b") as handle:
        handle.truncate(40)
    with LineageQuery(root) as query:
        assert len(query.column_lineage(field).graph) == 2  # the current answer reads no history
        for call in (lambda: query.column_lineage(field, lineage_at=later), lambda: query.dataset(NS, "O")):
            with pytest.raises(WarehouseReadError, match="cannot read the history"):
                call()
        shutil.copyfile(good, path)
        assert query.dataset(NS, "O").currentVersion == "v-run"
