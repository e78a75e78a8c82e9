"""`column_lineage()`: the reference server's column scenarios, re-expressed on our tables.

One stream holds every scenario, each in its own namespace, folded once and published (current
snapshot + history), so each test asks its own question of the same warehouse.
"""

from __future__ import annotations

import datetime as dt

import pytest

from lineage_assets import LineageQuery, NodeNotFound
from lineage_assets.ids import content_uuid
from lineage_assets_tests.support import ds, fold_stream, publish_current, run_event, run_uuid

SCHEDULE_SECONDS = 30  # measured (--durations); conftest runs long files first

DAY = "2024-06-01"
ODD = "we'ird\"; DROP TABLE cedges; --%"


def _t(hour: int, minute: int = 0) -> str:
    return f"{DAY}T{hour:02d}:{minute:02d}:00Z"


def _schema(*names) -> dict:
    return {"fields": [{"name": n, "type": "int" if n.endswith("_a") else "string"} for n in names]}


def _cll(mapping: dict[str, list[tuple[str, str, str]]], ns: str) -> dict:
    """{output_field: [(input dataset, input field, type), ...]}"""
    return {"fields": {
        out: {"inputFields": [
            {"namespace": ns, "name": d, "field": f, "transformations": [{"type": t, "subtype": "IDENTITY" if t == "DIRECT" else "FILTER", "description": "", "masking": False}]}
            for d, f, t in inputs
        ]}
        for out, inputs in mapping.items()
    }}


def _write(ns, hour, run, job, inputs, output, fields, mapping, minute=0, state="COMPLETE"):
    return run_event(
        _t(hour, minute), state, run, job,
        [ds(i, namespace=ns, schema=_schema(*f)) for i, f in inputs],
        [ds(output, namespace=ns, schema=_schema(*fields), columnLineage=_cll(mapping, ns))],
        job_namespace=ns,
    )


def _stream() -> list[dict]:
    m, cyc, two, rep, odd = "m", "cyc", "two", "rep", "postgres://db.example.com:5432"
    return [
        # A(col_a, col_b) -> B(col_c <- col_a, col_b) -> C(col_d <- col_c) -> D(col_e <- col_d)
        _write(m, 1, "m1", "job_b", [("A", ["col_a", "col_b"])], "B", ["col_c"], {"col_c": [("A", "col_a", "DIRECT"), ("A", "col_b", "INDIRECT")]}),
        _write(m, 2, "m2", "job_c", [("B", ["col_c"])], "C", ["col_d"], {"col_d": [("B", "col_c", "DIRECT")]}),
        _write(m, 3, "m3", "job_d", [("C", ["col_d"])], "D", ["col_e"], {"col_e": [("C", "col_d", "DIRECT")]}),
        # a cycle A.col_a <- C.col_d
        _write(cyc, 1, "c1", "jb", [("A", ["col_a"])], "B", ["col_c"], {"col_c": [("A", "col_a", "DIRECT")]}),
        _write(cyc, 2, "c2", "jc", [("B", ["col_c"])], "C", ["col_d"], {"col_d": [("B", "col_c", "DIRECT")]}),
        _write(cyc, 3, "c3", "ja", [("C", ["col_d"])], "A", ["col_a"], {"col_a": [("C", "col_d", "DIRECT")]}),
        # two jobs write B.col_c from different inputs
        _write(two, 1, "t1", "x", [("S1", ["a"])], "B", ["col_c"], {"col_c": [("S1", "a", "DIRECT")]}),
        _write(two, 2, "t2", "y", [("S2", ["b"])], "B", ["col_c"], {"col_c": [("S2", "b", "DIRECT")]}),
        # A is written once; A -> B runs three times, each from another field of A
        _write(rep, 1, "wa", "write_a", [("Z", ["z"])], "A", ["a1", "a2", "a3"], {"a1": [("Z", "z", "DIRECT")], "a2": [("Z", "z", "DIRECT")], "a3": [("Z", "z", "DIRECT")]}),
        _write(rep, 2, "r1", "ab", [("A", ["a1", "a2", "a3"])], "B", ["col_c"], {"col_c": [("A", "a1", "DIRECT")]}),
        _write(rep, 3, "r2", "ab", [("A", ["a1", "a2", "a3"])], "B", ["col_c"], {"col_c": [("A", "a2", "DIRECT")]}),
        _write(rep, 4, "r3", "ab", [("A", ["a1", "a2", "a3"])], "B", ["col_c"], {"col_c": [("A", "a3", "DIRECT")]}),
        # a field without lineage; names that look like SQL
        run_event(_t(5), "COMPLETE", "l1", "lonely", [], [ds("L", namespace=rep, schema=_schema("f"))], job_namespace=rep),
        _write(odd, 6, "o1", ODD, [(ODD, ["c'o%l", "x"])], "out;put", ["o%"], {"o%": [(ODD, "c'o%l", "DIRECT")]}),
    ]


@pytest.fixture(scope="module")
def query(spark, tmp_path_factory):
    folded = fold_stream(spark, _stream())
    warehouse = tmp_path_factory.mktemp("column_wh")
    publish_current(spark, folded.state, str(warehouse), folded=folded)
    with LineageQuery(str(warehouse)) as q:
        yield q, folded


def _nodes(graph) -> set[str]:
    return {n.id for n in graph.graph}


def _f(ns, ds_name, field) -> str:
    return f"datasetField:{ns}:{ds_name}:{field}"


def test_from_a_field_upstream_gives_its_inputs_and_not_its_readers(query):
    q, _ = query
    graph = q.column_lineage(_f("m", "B", "col_c"))
    assert _nodes(graph) == {_f("m", "A", "col_a"), _f("m", "A", "col_b"), _f("m", "B", "col_c")}
    col_c = graph.node(_f("m", "B", "col_c"))
    assert sorted(i["field"] for i in col_c.data["inputFields"]) == ["col_a", "col_b"]
    assert sorted(e.origin for e in col_c.inEdges) == [_f("m", "A", "col_a"), _f("m", "A", "col_b")]
    assert col_c.data["fieldType"] == "string" and graph.node(_f("m", "A", "col_a")).data["fieldType"] == "int"
    direct = next(i for i in col_c.data["inputFields"] if i["field"] == "col_a")
    assert direct["transformations"] == [{"type": "DIRECT", "subtype": "IDENTITY", "description": "", "masking": False}]
    # the reference shape
    dumped = graph.model_dump()
    assert set(dumped) == {"graph"} and set(dumped["graph"][0]) == {"id", "type", "data", "inEdges", "outEdges"}
    assert all(n["type"] == "DATASET_FIELD" for n in dumped["graph"])


def test_a_dataset_starts_from_all_its_fields(query):
    q, _ = query
    assert _nodes(q.column_lineage("dataset:m:B")) == _nodes(q.column_lineage(_f("m", "B", "col_c")))
    assert _nodes(q.column_lineage(node_type="dataset", namespace="m", name="B")) == _nodes(q.column_lineage("dataset:m:B"))


def test_a_job_starts_from_the_fields_of_what_it_writes(query):
    q, _ = query
    assert _nodes(q.column_lineage("job:m:job_b")) == _nodes(q.column_lineage("dataset:m:B"))


def test_downstream_on_request(query):
    q, _ = query
    graph = q.column_lineage(_f("m", "B", "col_c"), with_downstream=True)
    assert _f("m", "C", "col_d") in _nodes(graph) and _f("m", "A", "col_a") in _nodes(graph)
    assert _nodes(q.column_lineage(_f("m", "B", "col_c"), depth=1, with_downstream=True)) == {
        _f("m", "A", "col_a"), _f("m", "A", "col_b"), _f("m", "B", "col_c"), _f("m", "C", "col_d"),
    }


def test_depth_counts_field_hops(query):
    q, _ = query
    assert _nodes(q.column_lineage(_f("m", "C", "col_d"), depth=1)) == {_f("m", "C", "col_d"), _f("m", "B", "col_c")}
    everything = {_f("m", d, f) for d, f in (("A", "col_a"), ("A", "col_b"), ("B", "col_c"), ("C", "col_d"), ("D", "col_e"))}
    assert _nodes(q.column_lineage(_f("m", "D", "col_e"), depth=20)) == everything
    assert _nodes(q.column_lineage(_f("m", "D", "col_e"), depth=1)) == {_f("m", "D", "col_e"), _f("m", "C", "col_d")}
    assert _nodes(q.column_lineage(_f("m", "D", "col_e"), depth=0)) == set()


def test_a_cycle_terminates(query):
    q, _ = query
    nodes = {_f("cyc", "A", "col_a"), _f("cyc", "B", "col_c"), _f("cyc", "C", "col_d")}
    assert _nodes(q.column_lineage(_f("cyc", "B", "col_c"))) == nodes
    assert _nodes(q.column_lineage(_f("cyc", "B", "col_c"), with_downstream=True)) == nodes


def test_two_writers_of_one_field_give_both_inputs(query):
    q, _ = query
    graph = q.column_lineage(_f("two", "B", "col_c"))
    assert _nodes(graph) == {_f("two", "S1", "a"), _f("two", "S2", "b"), _f("two", "B", "col_c")}


def test_three_runs_give_one_node_at_the_latest_version(query):
    q, folded = query
    graph = q.column_lineage(_f("rep", "B", "col_c"), depth=1)
    assert _nodes(graph) == {_f("rep", "B", "col_c"), _f("rep", "A", "a3")}
    latest = content_uuid({"dataset": ["rep", "B"], "run_id": run_uuid("r3")})
    assert graph.node(_f("rep", "B", "col_c")).data["datasetVersion"] == latest


def test_point_in_time_by_version_and_by_timestamp(query):
    q, _ = query
    v2 = content_uuid({"dataset": ["rep", "B"], "run_id": run_uuid("r2")})
    a_version = content_uuid({"dataset": ["rep", "A"], "run_id": run_uuid("wa")})
    z_source = content_uuid({"dataset": ["rep", "Z"], "source": None})
    expected = {
        f"{_f('rep', 'B', 'col_c')}#{v2}", f"{_f('rep', 'A', 'a2')}#{a_version}", f"{_f('rep', 'Z', 'z')}#{z_source}",
    }
    assert _nodes(q.column_lineage(_f("rep", "B", "col_c"), dataset_version=v2)) == expected
    assert _nodes(q.column_lineage(f"{_f('rep', 'B', 'col_c')}#{v2}")) == expected
    # B's version current between the second and the third run is v2
    assert _nodes(q.column_lineage(_f("rep", "B", "col_c"), lineage_at=f"{DAY}T03:30:00Z")) == expected
    assert _nodes(q.column_lineage("dataset:rep:B", lineage_at=dt.datetime(2024, 6, 1, 3, 30))) == expected
    # downstream in time: A's version was read by three runs; field a2 fed only the second
    down = q.column_lineage(_f("rep", "A", "a2"), dataset_version=a_version, with_downstream=True, depth=1)
    assert f"{_f('rep', 'B', 'col_c')}#{v2}" in _nodes(down)
    assert not any(n.endswith(content_uuid({"dataset": ["rep", "B"], "run_id": run_uuid("r3")})) for n in _nodes(down))
    # a job at a time: what its latest run by then wrote
    assert _nodes(q.column_lineage("job:rep:ab", lineage_at=f"{DAY}T03:30:00Z", depth=1)) == {
        f"{_f('rep', 'B', 'col_c')}#{v2}", f"{_f('rep', 'A', 'a2')}#{a_version}",
    }


def test_point_in_time_errors(query):
    q, _ = query
    with pytest.raises(NodeNotFound):
        q.column_lineage(_f("rep", "B", "col_c"), lineage_at=f"{DAY}T00:00:00Z")  # before B existed
    with pytest.raises(NodeNotFound):
        q.column_lineage(_f("rep", "B", "col_c"), dataset_version="no-such-version")
    with pytest.raises(ValueError):
        q.column_lineage(_f("rep", "B", "col_c"), dataset_version="x", lineage_at=f"{DAY}T03:00:00Z")
    with pytest.raises(ValueError):
        q.column_lineage(_f("rep", "B", "col_c"), lineage_at="yesterday")
    with pytest.raises(ValueError):
        q.column_lineage("job:rep:ab", dataset_version="x")


def test_no_lineage_is_an_empty_graph_and_unknown_nodes_raise(query):
    q, _ = query
    assert q.column_lineage(_f("rep", "L", "f")).graph == []
    with pytest.raises(NodeNotFound):
        q.column_lineage(_f("rep", "L", "missing"))
    with pytest.raises(NodeNotFound):
        q.column_lineage("dataset:rep:nothing")
    for bad in ("datasetField:rep:L", "field:rep:L:f", "", "datasetField::L:f"):
        with pytest.raises(ValueError):
            q.column_lineage(bad)
    with pytest.raises(ValueError):
        q.column_lineage(_f("rep", "L", "f"), depth=-1)


def test_names_with_quotes_semicolons_and_percent_cannot_change_a_query(query):
    q, _ = query
    ns = "postgres://db.example.com:5432"
    graph = q.column_lineage(namespace=ns, name="out;put", field="o%", node_type="datasetField")
    assert {(n.data["dataset"], n.data["field"]) for n in graph.graph} == {("out;put", "o%"), (ODD, "c'o%l")}
    # a pattern character is literal: "o%" does not match other fields
    with pytest.raises(NodeNotFound):
        q.column_lineage(namespace=ns, name="out;put", field="o_", node_type="datasetField")
    # and the tables are intact
    assert _nodes(q.column_lineage(_f("m", "B", "col_c")))
