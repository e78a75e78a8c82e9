"""Queries that stay bounded (issue 12, point 8): every walk converges, depth and ids are capped
with a clear ValueError, a read error does not outlive the call that met it, and every bad
argument is a ValueError or NodeNotFound. On snapshots written with pyarrow (no Spark)."""

from __future__ import annotations

import datetime as dt
import shutil
import time

import pyarrow as pa
import pytest

from lineage_assets import LineageQuery
from lineage_assets.query.lineage_query import WarehouseReadError
from lineage_assets.query.node_ids import MAX_ID_LENGTH, NodeNotFound
from lineage_assets.query.traversal import MAX_DEPTH
from lineage_assets.warehouse import commits
from lineage_assets.warehouse import tables as t
from lineage_assets.warehouse.schemas import arrow_schema

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
    with commits.Transaction(root, "test_snapshot") as txn:
        for table, rows in ((t.CURRENT_JOBS, job_rows), (t.CURRENT_LINEAGE, edges)):
            txn.stage_arrow(pa.Table.from_pylist(rows, schema=arrow_schema(table.schema)), table)
        txn.commit()


@pytest.fixture
def cycle(tmp_path):
    root = str(tmp_path / "wh")
    _snapshot(root)
    with LineageQuery(root) as query:
        yield query


def test_a_huge_depth_on_a_cycle_converges_to_the_default_answer(cycle):
    default = cycle.lineage(f"job:{NS}:job0").model_dump()
    began = time.perf_counter()
    huge = cycle.lineage(f"job:{NS}:job0", depth=MAX_DEPTH).model_dump()
    assert time.perf_counter() - began < 1.0
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
