"""LineageQuery.lineage() over a published current graph (DESIGN.md section 5)."""

from __future__ import annotations

import datetime as dt
import json

import pytest

import lineage_assets
from lineage_assets import LineageQuery, NodeNotFound
from lineage_assets.pipeline.snapshot import CurrentState, stage_current_graph
from lineage_assets.warehouse import commits
from lineage_assets_tests import support
from lineage_assets_tests.support import commit_rows, ds, run_event

SCHEDULE_SECONDS = 45  # measured (--durations); conftest runs long files first

AIRFLOW = "airflow://scheduler.example.com:8080"
POSTGRES = "postgres://db.example.com:5432"
S3 = "s3://lake.example.com:9000"
EVIL_JOB = "x'; DROP TABLE edges; --"
EVIL_DATASET = "100%_sales\"'; DELETE FROM jobs; --"

DAY = "2024-03-01"


def _at(hour: int, minute: int = 0) -> str:
    return f"{DAY}T{hour:02d}:{minute:02d}:00Z"


MAIN_EVENTS = [
    # a chain: raw -> P -> d1 -> Q -> d2 -> R -> d3 -> S
    run_event(_at(1), "START", "p1", "P", inputs=["raw"]),
    run_event(_at(1, 5), "COMPLETE", "p1", "P", outputs=["d1"]),
    run_event(_at(2), "COMPLETE", "q1", "Q", inputs=["d1"], outputs=["d2"]),
    run_event(_at(3), "COMPLETE", "r1", "R", inputs=["d2"], outputs=["d3"]),
    run_event(_at(4), "COMPLETE", "s1", "S", inputs=["d3"]),
    # namespaces with '://' and ports, a dataset name holding ':'
    run_event(
        _at(5), "COMPLETE", "load1", "dag.load_orders", job_namespace=AIRFLOW,
        inputs=[ds("public.orders", POSTGRES)],
        outputs=[ds("warehouse/orders:clean", S3)],
    ),
    # names that would break a query built as text
    run_event(_at(6), "COMPLETE", "evil1", EVIL_JOB, inputs=[ds(EVIL_DATASET)], outputs=[ds("o'k")]),
    # two datasets whose string ids are both 'dataset:a:b:c'
    run_event(_at(7), "COMPLETE", "amb1", "amb", inputs=[ds("b:c", "a"), ds("c", "a:b")]),
    # a job that moves its output: M writes X, N reads X, M writes Y instead
    run_event(_at(8), "COMPLETE", "m1", "M", outputs=["X"]),
    run_event(_at(9), "COMPLETE", "n1", "N", inputs=["X"]),
    run_event(_at(10), "COMPLETE", "m2", "M", outputs=["Y"]),
    # a job that never reported inputs or outputs
    run_event(_at(11), "START", "e1", "Empty"),
    run_event(_at(11, 30), "FAIL", "e1", "Empty"),
    # a cycle: C1 reads cy2 and writes cy1, C2 reads cy1 and writes cy2
    run_event(_at(12), "COMPLETE", "c1", "C1", inputs=["cy2"], outputs=["cy1"]),
    run_event(_at(13), "COMPLETE", "c2", "C2", inputs=["cy1"], outputs=["cy2"]),
]


def _fanout_events() -> list[dict]:
    events = [run_event(_at(1), "COMPLETE", "writer", "writer", outputs=["common"])]
    for i in range(20):
        events.append(run_event(_at(2, i), "COMPLETE", f"read{i}", f"readJob{i}", inputs=["common"], outputs=[f"out{i}"]))
        events.append(run_event(_at(3, i), "COMPLETE", f"down{i}", f"downJob{i}", inputs=[f"out{i}"]))
    return events


@pytest.fixture(scope="module")
def main_graph(spark, tmp_path_factory):
    """The main stream and the fan-out (a separate component, no name in common) in one fold."""
    folded = support.fold_stream(spark, MAIN_EVENTS + _fanout_events())
    warehouse = tmp_path_factory.mktemp("main_warehouse")
    support.publish_current(spark, folded.state, str(warehouse))
    return folded, str(warehouse)


@pytest.fixture(scope="module")
def fanout_graph(main_graph):
    return main_graph


@pytest.fixture
def query(main_graph):
    with LineageQuery(main_graph[1]) as q:
        yield q


def _ids(graph) -> set[str]:
    return {n["id"] for n in graph.model_dump()["graph"]}


def _jobs(graph) -> set[str]:
    return {n["id"] for n in graph.model_dump()["graph"] if n["type"] == "JOB"}


def _node(graph, node_id: str) -> dict:
    return next(n for n in graph.model_dump()["graph"] if n["id"] == node_id)


def _edges(node: dict, key: str) -> list[tuple[str, str]]:
    return [(e["origin"], e["destination"]) for e in node[key]]


def _assert_closed(graph) -> None:
    """Every edge joins two nodes of the answer, and appears on both of its ends."""
    nodes = {n["id"]: n for n in graph.model_dump()["graph"]}
    for node in nodes.values():
        for key, other_key, end in (("inEdges", "outEdges", "origin"), ("outEdges", "inEdges", "destination")):
            for edge in node[key]:
                assert node["id"] in (edge["origin"], edge["destination"])
                assert edge[end] in nodes, (node["id"], edge)
                assert edge in nodes[edge[end]][other_key]


# --------------------------------------------------------------------------- shape and direction


def test_response_is_the_reference_server_shape(query, main_graph):
    folded, _ = main_graph
    dumped = query.lineage("job:ns:Q", depth=0).model_dump()
    assert set(dumped) == {"graph"}
    assert [n["id"] for n in dumped["graph"]] == ["dataset:ds:d1", "dataset:ds:d2", "job:ns:Q"]
    for node in dumped["graph"]:
        assert set(node) == {"id", "type", "data", "inEdges", "outEdges"}
        for edge in node["inEdges"] + node["outEdges"]:
            assert set(edge) == {"origin", "destination"}
    job = dumped["graph"][2]
    assert job["type"] == "JOB"
    assert job["data"]["namespace"] == "ns" and job["data"]["name"] == "Q"
    q_version = next(v for v in folded.job_versions if v["job_name"] == "Q")["version_id"]
    assert job["data"]["currentVersion"] == q_version
    assert job["data"]["latestRunId"] == support.run_uuid("q1")
    assert job["data"]["latestRunState"] == "COMPLETE"
    ended = dt.datetime.fromisoformat(job["data"]["latestRunEndedAt"])
    assert ended.replace(tzinfo=ended.tzinfo or dt.timezone.utc) == dt.datetime(2024, 3, 1, 2, tzinfo=dt.timezone.utc)
    assert job["data"]["lineageUnknown"] is False
    assert job["data"]["componentId"] == "dataset:ds:d1"
    assert dumped["graph"][0]["type"] == "DATASET"
    assert dumped["graph"][0]["data"]["namespace"] == "ds" and dumped["graph"][0]["data"]["name"] == "d1"
    json.dumps(dumped)  # plain JSON, as the server would send it


def test_edges_run_dataset_to_job_for_inputs_and_job_to_dataset_for_outputs(query):
    graph = query.lineage("job:ns:Q", depth=0)
    q, d1, d2 = _node(graph, "job:ns:Q"), _node(graph, "dataset:ds:d1"), _node(graph, "dataset:ds:d2")
    assert _edges(q, "inEdges") == [("dataset:ds:d1", "job:ns:Q")]
    assert _edges(q, "outEdges") == [("job:ns:Q", "dataset:ds:d2")]
    assert _edges(d1, "outEdges") == [("dataset:ds:d1", "job:ns:Q")]
    assert _edges(d2, "inEdges") == [("job:ns:Q", "dataset:ds:d2")]
    _assert_closed(graph)


# --------------------------------------------------------------------------- depth


def test_depth_zero_from_a_job_gives_the_job_and_its_datasets(query):
    assert _ids(query.lineage("job:ns:Q", depth=0)) == {"job:ns:Q", "dataset:ds:d1", "dataset:ds:d2"}


def test_depth_counts_job_hops(query):
    one = query.lineage("job:ns:Q", depth=1)
    assert _jobs(one) == {"job:ns:P", "job:ns:Q", "job:ns:R"}
    assert _ids(one) - _jobs(one) == {"dataset:ds:raw", "dataset:ds:d1", "dataset:ds:d2", "dataset:ds:d3"}
    _assert_closed(one)
    two = query.lineage("job:ns:Q", depth=2)
    assert _jobs(two) == {"job:ns:P", "job:ns:Q", "job:ns:R", "job:ns:S"}
    assert _edges(_node(two, "dataset:ds:d3"), "outEdges") == [("dataset:ds:d3", "job:ns:S")]
    _assert_closed(two)


def test_default_depth_covers_the_component_and_nothing_else(query):
    graph = query.lineage("job:ns:P")
    assert _ids(graph) == {
        "job:ns:P", "job:ns:Q", "job:ns:R", "job:ns:S",
        "dataset:ds:raw", "dataset:ds:d1", "dataset:ds:d2", "dataset:ds:d3",
    }
    assert {n["data"]["componentId"] for n in graph.model_dump()["graph"]} == {"dataset:ds:d1"}


def test_starting_from_a_dataset(query):
    zero = query.lineage("dataset:ds:d2", depth=0)
    assert _jobs(zero) == {"job:ns:Q", "job:ns:R"}
    assert _ids(zero) - _jobs(zero) == {"dataset:ds:d1", "dataset:ds:d2", "dataset:ds:d3"}
    d2 = _node(zero, "dataset:ds:d2")
    assert d2["type"] == "DATASET"
    assert _edges(d2, "inEdges") == [("job:ns:Q", "dataset:ds:d2")]
    assert _edges(d2, "outEdges") == [("dataset:ds:d2", "job:ns:R")]
    assert _jobs(query.lineage("dataset:ds:d2", depth=1)) == {"job:ns:P", "job:ns:Q", "job:ns:R", "job:ns:S"}
    # a source dataset nobody writes
    assert _jobs(query.lineage("dataset:ds:raw", depth=0)) == {"job:ns:P"}


# --------------------------------------------------------------------------- errors


def test_unknown_node_raises_node_not_found(query):
    assert lineage_assets.NodeNotFound is NodeNotFound
    with pytest.raises(NodeNotFound):
        query.lineage("job:ns:nope")
    with pytest.raises(NodeNotFound):
        query.lineage("dataset:ds:nope")
    with pytest.raises(NodeNotFound):
        query.lineage("dataset:ns:Q")  # a job's name is not a dataset
    with pytest.raises(NodeNotFound):
        query.lineage(node_type="job", namespace="ns", name="nope")


@pytest.mark.parametrize("bad", ["", "jobs:ns:Q", "job:ns", "job::Q", "Q"])
def test_malformed_id_raises_value_error(query, bad):
    with pytest.raises(ValueError):
        query.lineage(bad)


def test_field_id_is_not_a_lineage_node(query):
    with pytest.raises(ValueError, match="job or dataset"):
        query.lineage("datasetField:ds:d1:col")


@pytest.mark.parametrize("depth", [-1, -20])
def test_negative_depth_raises_value_error(query, depth):
    with pytest.raises(ValueError, match="depth"):
        query.lineage("job:ns:Q", depth=depth)


@pytest.mark.parametrize("depth", [1.5, "2", None, True])
def test_non_integer_depth_raises_value_error(query, depth):
    with pytest.raises(ValueError, match="depth"):
        query.lineage("job:ns:Q", depth=depth)


def test_warehouse_without_a_published_graph_knows_no_node(tmp_path):
    with LineageQuery(str(tmp_path)) as q:
        with pytest.raises(NodeNotFound):
            q.lineage("job:ns:Q")
        with pytest.raises(NodeNotFound):
            q.lineage(node_type="dataset", namespace=POSTGRES, name="public.orders")


# --------------------------------------------------------------------------- namespaces and names


def test_namespaces_with_scheme_and_port_through_string_ids(query):
    job_id = f"job:{AIRFLOW}:dag.load_orders"
    source_id = f"dataset:{POSTGRES}:public.orders"
    target_id = f"dataset:{S3}:warehouse/orders:clean"
    expected = {job_id, source_id, target_id}
    assert _ids(query.lineage(job_id)) == expected
    assert _ids(query.lineage(source_id)) == expected
    assert _ids(query.lineage(target_id)) == expected
    graph = query.lineage(source_id, depth=0)
    source = _node(graph, source_id)
    assert (source["data"]["namespace"], source["data"]["name"]) == (POSTGRES, "public.orders")
    assert _edges(source, "outEdges") == [(source_id, job_id)]
    job = _node(graph, job_id)
    assert (job["data"]["namespace"], job["data"]["name"]) == (AIRFLOW, "dag.load_orders")


def test_namespaces_with_scheme_and_port_through_structured_args(query):
    job_id = f"job:{AIRFLOW}:dag.load_orders"
    by_job = query.lineage(node_type="job", namespace=AIRFLOW, name="dag.load_orders")
    by_dataset = query.lineage(node_type="dataset", namespace=POSTGRES, name="public.orders")
    assert by_job.model_dump() == query.lineage(job_id).model_dump()
    assert _ids(by_dataset) == _ids(by_job)
    with pytest.raises(NodeNotFound):
        query.lineage(node_type="dataset", namespace="postgres://db.example.com", name="5432:public.orders")


def test_ambiguous_string_id_asks_for_structured_args(query):
    with pytest.raises(ValueError, match="ambiguous"):
        query.lineage("dataset:a:b:c")
    first = query.lineage(node_type="dataset", namespace="a", name="b:c", depth=0)
    second = query.lineage(node_type="dataset", namespace="a:b", name="c", depth=0)
    assert _jobs(first) == _jobs(second) == {"job:ns:amb"}


def test_two_datasets_with_the_same_string_id_are_both_in_the_answer(query):
    """(a, b:c) and (a:b, c) are two datasets: an answer around their reader must not merge them into one."""
    graph = query.lineage("job:ns:amb", depth=0).model_dump()["graph"]
    datasets = {(n["data"]["namespace"], n["data"]["name"]) for n in graph if n["type"] == "DATASET"}
    assert datasets == {("a", "b:c"), ("a:b", "c")}


def test_names_with_quotes_semicolons_and_percent_are_plain_values(query):
    evil_id = f"job:ns:{EVIL_JOB}"
    graph = query.lineage(evil_id)
    assert _ids(graph) == {evil_id, f"dataset:ds:{EVIL_DATASET}", "dataset:ds:o'k"}
    assert _node(graph, evil_id)["data"]["name"] == EVIL_JOB
    by_dataset = query.lineage(node_type="dataset", namespace="ds", name=EVIL_DATASET)
    assert _ids(by_dataset) == _ids(graph)
    assert _ids(query.lineage("dataset:ds:o'k")) == _ids(graph)
    # '%' and '_' are not wildcards
    for pattern in ("job:ns:%", "job:ns:_", "dataset:ds:100%", "job:%:Q"):
        with pytest.raises(NodeNotFound):
            query.lineage(pattern)
    # the tables survived: other answers are unchanged
    assert _ids(query.lineage("job:ns:Q", depth=0)) == {"job:ns:Q", "dataset:ds:d1", "dataset:ds:d2"}
    with LineageQuery(query.warehouse) as fresh:
        assert _jobs(fresh.lineage("job:ns:P")) == {"job:ns:P", "job:ns:Q", "job:ns:R", "job:ns:S"}


def test_current_graph_comes_from_the_latest_runs_only(query):
    """M wrote X, N reads X, then M wrote Y instead: the answer shows M->Y only, and X->N apart."""
    assert _ids(query.lineage("job:ns:M")) == {"job:ns:M", "dataset:ds:Y"}
    assert _ids(query.lineage("dataset:ds:X")) == {"job:ns:N", "dataset:ds:X"}
    assert _node(query.lineage("job:ns:N"), "job:ns:N")["data"]["componentId"] == "dataset:ds:X"
    assert _node(query.lineage("job:ns:M"), "job:ns:M")["data"]["componentId"] == "dataset:ds:Y"


def test_a_cycle_is_walked_once_and_ends(query):
    expected = {"job:ns:C1", "job:ns:C2", "dataset:ds:cy1", "dataset:ds:cy2"}
    for depth in (1, 20, 500):
        graph = query.lineage("job:ns:C1", depth=depth)
        assert _ids(graph) == expected
        _assert_closed(graph)
    c1 = _node(query.lineage("dataset:ds:cy1"), "job:ns:C1")
    assert _edges(c1, "inEdges") == [("dataset:ds:cy2", "job:ns:C1")]
    assert _edges(c1, "outEdges") == [("job:ns:C1", "dataset:ds:cy1")]


def test_job_without_lineage_is_a_lone_node(query):
    graph = query.lineage("job:ns:Empty").model_dump()["graph"]
    assert len(graph) == 1
    node = graph[0]
    assert node["id"] == "job:ns:Empty" and node["type"] == "JOB"
    assert node["inEdges"] == [] and node["outEdges"] == []
    assert node["data"]["lineageUnknown"] is True
    assert node["data"]["latestRunState"] == "FAIL"
    assert node["data"]["componentId"] == "job:ns:Empty"


# --------------------------------------------------------------------------- fan-out


def test_fan_out_depth_two_from_one_reader(fanout_graph):
    _, warehouse = fanout_graph
    with LineageQuery(warehouse) as q:
        graph = q.lineage("job:ns:readJob0", depth=2)
        jobs = _jobs(graph)
        assert len(jobs) == 41
        assert jobs == (
            {"job:ns:writer"}
            | {f"job:ns:readJob{i}" for i in range(20)}
            | {f"job:ns:downJob{i}" for i in range(20)}
        )
        assert len(_ids(graph) - jobs) == 21  # common + out0..out19
        _assert_closed(graph)
        common = _node(graph, "dataset:ds:common")
        assert len(common["outEdges"]) == 20 and _edges(common, "inEdges") == [("job:ns:writer", "dataset:ds:common")]

        one = _jobs(q.lineage("job:ns:readJob0", depth=1))
        assert one == {"job:ns:writer", "job:ns:downJob0"} | {f"job:ns:readJob{i}" for i in range(20)}
        assert _jobs(q.lineage("job:ns:downJob7", depth=1)) == {"job:ns:downJob7", "job:ns:readJob7"}
        assert len(_jobs(q.lineage("job:ns:writer"))) == 41
        assert len(_jobs(q.lineage("dataset:ds:common", depth=0))) == 21


# --------------------------------------------------------------------------- snapshots


def _part(state, fanout: bool):
    """The fold state of the main stream's jobs only, or of the fan-out's."""
    from pyspark.sql import functions as F

    fan = F.col("job_name").rlike("^(writer|readJob[0-9]+|downJob[0-9]+)$")
    return support.FoldState(state.open_events, state.jobs.filter(fan if fanout else ~fan),
                             state.datasets, state.storage_versions, state.columns.filter(fan if fanout else ~fan),
                             state.fields, state.aliases, state.warehouse)


def test_answers_come_from_the_committed_snapshot_until_the_next_commit(spark, main_graph, tmp_path):
    main_state, fanout_state = _part(main_graph[0].state, False), _part(main_graph[0].state, True)
    warehouse = str(tmp_path)
    support.publish_current(spark, main_state, warehouse)
    q = LineageQuery(warehouse)
    before = q.lineage("job:ns:Q", depth=1).model_dump()
    assert _jobs(q.lineage("job:ns:Q", depth=1)) == {"job:ns:P", "job:ns:Q", "job:ns:R"}

    # the next snapshot is written, but not yet committed
    txn = commits.Transaction(warehouse, "test_snapshot")
    stage_current_graph(spark, txn, CurrentState(fanout_state.jobs, fanout_state.columns, fanout_state.fields, fanout_state.aliases))

    assert q.lineage("job:ns:Q", depth=1).model_dump() == before
    with LineageQuery(warehouse) as other:
        assert other.lineage("job:ns:Q", depth=1).model_dump() == before
        with pytest.raises(NodeNotFound):
            other.lineage("job:ns:readJob0")
    with pytest.raises(NodeNotFound):
        q.lineage("job:ns:readJob0")

    txn.commit()

    assert len(_jobs(q.lineage("job:ns:readJob0", depth=2))) == 41
    with pytest.raises(NodeNotFound):
        q.lineage("job:ns:Q")
    with LineageQuery(warehouse) as other:
        assert len(_jobs(other.lineage("job:ns:readJob0", depth=2))) == 41
        with pytest.raises(NodeNotFound):
            other.lineage("job:ns:Q")
    q.close()


def test_a_hash_in_a_dataset_name_is_part_of_its_id_not_a_version(tmp_path):
    """`dataset:hdfs://nn:8020:/landing/file#1` is the id the helper itself gives a dataset named
    `/landing/file#1`: passed back, it names that dataset (the query keeps the reading that
    exists), while `#<version>` after a dataset's id still names a version."""
    from lineage_assets.query.node_ids import dataset_node, field_node
    from lineage_assets.warehouse import tables as t

    ns, name, now = "hdfs://nn:8020", "/landing/file#1", dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc)
    rows = {
        t.CURRENT_JOBS: [{"job_namespace": "j", "job_name": "load", "version_id": "v", "latest_state": "COMPLETE",
                          "latest_ended_at": now, "component_id": "job:j:load", "lineage_unknown": False}],
        t.CURRENT_LINEAGE: [{"job_namespace": "j", "job_name": "load", "version_id": "v", "dataset_namespace": ns, "dataset_name": n,
                             "direction": d, "component_id": "job:j:load", "temporary": False} for n, d in ((name, "INPUT"), ("/out", "OUTPUT"))],
        t.CURRENT_COLUMN_LINEAGE: [{"job_namespace": "j", "job_name": "load", "output_version_id": "dv-out", "output_namespace": ns,
                                    "output_name": "/out", "output_field": "c", "input_namespace": ns, "input_name": name, "input_field": "c",
                                    "input_version_id": "dv-in", "transformation_type": "DIRECT", "transformation_subtype": "IDENTITY",
                                    "run_id": "r", "created_at": now, "input_declared": True, "output_field_known": True, "input_field_known": True}],
        t.CURRENT_DATASET_FIELDS: [{"namespace": ns, "name": n, "version_id": v, "field_path": "c", "type": "string", "ordinal": 0}
                                   for n, v in ((name, "dv-in"), ("/out", "dv-out"))],
    }
    root = str(tmp_path / "wh")
    commit_rows(root, rows)
    with LineageQuery(root) as query:
        by_id = query.lineage(dataset_node(ns, name), depth=1)
        assert by_id.model_dump() == query.lineage(node_type="dataset", namespace=ns, name=name, depth=1).model_dump()
        assert dataset_node(ns, name) in by_id.ids and "job:j:load" in by_id.ids
        columns = query.column_lineage(dataset_node(ns, name), with_downstream=True)
        assert {field_node(ns, name, "c"), field_node(ns, "/out", "c")} <= set(columns.ids)
        with pytest.raises(ValueError, match="names a version"):
            query.lineage(dataset_node(ns, "/out") + "#dv-out")


def test_two_fields_whose_ids_read_the_same_are_both_kept_and_flagged_in_a_column_answer(tmp_path):
    """(postgres://h, "5432:t", id) and (postgres://h:5432, "t", id) both have the id
    `datasetField:postgres://h:5432:t:id`: a column answer keeps both nodes and both edges into
    the field they feed, and flags them `ambiguousId`, as lineage() flags such datasets."""
    from lineage_assets.query.node_ids import field_node
    from lineage_assets.warehouse import tables as t

    a, c, out, now = ("postgres://h:5432", "t"), ("postgres://h", "5432:t"), ("postgres://h:5433", "out"), dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc)
    edge = {"job_namespace": "j", "job_name": "merge", "output_version_id": "dv-out", "output_namespace": out[0], "output_name": out[1],
            "output_field": "id", "input_field": "id", "input_version_id": "dv-in", "transformation_type": "DIRECT",
            "transformation_subtype": "IDENTITY", "run_id": "r", "created_at": now, "input_declared": True,
            "output_field_known": True, "input_field_known": True}
    rows = {
        t.CURRENT_JOBS: [{"job_namespace": "j", "job_name": "merge", "version_id": "v", "latest_state": "COMPLETE",
                          "latest_ended_at": now, "component_id": "job:j:merge", "lineage_unknown": False}],
        t.CURRENT_LINEAGE: [{"job_namespace": "j", "job_name": "merge", "version_id": "v", "dataset_namespace": ns, "dataset_name": n,
                             "direction": d, "component_id": "job:j:merge", "temporary": False} for (ns, n), d in ((a, "INPUT"), (c, "INPUT"), (out, "OUTPUT"))],
        t.CURRENT_COLUMN_LINEAGE: [{**edge, "input_namespace": ns, "input_name": n} for ns, n in (a, c)],
    }
    root = str(tmp_path / "wh")
    commit_rows(root, rows)
    shared = field_node(*a, "id")
    assert shared == field_node(*c, "id")
    with LineageQuery(root) as query:
        answer = query.column_lineage(field_node(*out, "id"))
    by_dataset = {(n.data["namespace"], n.data["dataset"]): n for n in answer.graph}
    assert set(by_dataset) == {a, c, out}
    assert by_dataset[a].data.get("ambiguousId") and by_dataset[c].data.get("ambiguousId")
    assert not by_dataset[out].data.get("ambiguousId")
    assert [e.origin for e in by_dataset[out].inEdges] == [shared, shared]


def test_a_source_dataset_asked_at_a_time_starts_from_the_version_its_readers_had_read(tmp_path):
    """A dataset that runs read and no known run wrote has versions only as its readers recorded
    them: asked at a time, its answer starts from the version the latest run by then read (as it
    does when asked by that version's id); before any run read it, there is none."""
    from lineage_assets.warehouse import tables as t

    ns, at = "postgres://db:5432", dt.datetime(2024, 6, 1, 1, tzinfo=dt.timezone.utc)
    rows = {
        t.CURRENT_JOBS: [{"job_namespace": "j", "job_name": "J", "version_id": "jv", "latest_state": "COMPLETE", "latest_ended_at": at,
                          "component_id": "job:j:J", "lineage_unknown": False}],
        t.CURRENT_LINEAGE: [{"job_namespace": "j", "job_name": "J", "version_id": "jv", "dataset_namespace": ns, "dataset_name": n,
                             "direction": d, "component_id": "job:j:J", "temporary": False} for n, d in (("S", "INPUT"), ("O", "OUTPUT"))],
        t.DATASET_VERSIONS: [{"version_id": "v1", "namespace": ns, "name": "O", "run_id": "r1", "run_state": "COMPLETE",
                              "job_namespace": "j", "job_name": "J", "created_at": at, "created_date": at.date()}],
        t.RUN_LINEAGE: [{"run_id": "r1", "job_namespace": "j", "job_name": "J", "state": "COMPLETE", "ended_at": at, "end_date": at.date(),
                         "input_versions": [{"namespace": ns, "name": "S", "version_id": "sv"}],
                         "output_versions": [{"namespace": ns, "name": "O", "version_id": "v1"}]}],
        t.COLUMN_LINEAGE: [{"output_version_id": "v1", "output_namespace": ns, "output_name": "O", "output_field": "x", "input_namespace": ns,
                            "input_name": "S", "input_field": "a", "input_version_id": "sv", "transformation_type": "DIRECT",
                            "run_id": "r1", "created_at": at, "created_date": at.date()}],
        t.DATASET_FIELDS: [{"version_id": "v1", "namespace": ns, "name": "O", "field_path": "x", "type": "int", "created_date": at.date()}],
    }
    root = str(tmp_path / "wh")
    commit_rows(root, rows)
    source = f"datasetField:{ns}:S:a"
    with LineageQuery(root) as query:
        by_version = query.column_lineage(source + "#sv", with_downstream=True, depth=1)
        by_time = query.column_lineage(source, lineage_at="2024-06-01T01:30:00Z", with_downstream=True, depth=1)
        assert by_time.model_dump() == by_version.model_dump()
        assert set(by_time.ids) == {source + "#sv", f"datasetField:{ns}:O:x#v1"}
        with pytest.raises(NodeNotFound):
            query.column_lineage(source, lineage_at="2024-06-01T00:30:00Z", with_downstream=True)


def test_a_urn_naming_a_partition_answers_what_its_dataset_answers(tmp_path):
    """Every query accepts any partition's name (README, Dataset identity), a DataHub URN too: the
    URN of a partition of an alias path (`bench-lake/warehouse/p0/table1/date=2024-01-01` on s3)
    and of a decorated table (`p0.table1$20240101`) resolve as the node ids of those names do, by
    the partition rules on the URN's name (a file platform's as a path). A synthetic snapshot
    (pyarrow, no Spark)."""
    from lineage_assets.identity.datahub import dataset_urn
    from lineage_assets.query import synthetic

    warehouse = str(tmp_path / "wh")
    synthetic.build(warehouse, jobs=3, chain=3, fields=2)
    canonical, path = "p0.table1", synthetic.alias_of("p0.table1")
    with LineageQuery(warehouse) as query:
        expected = query.lineage(f"dataset:{synthetic.NS}:{canonical}", depth=1).model_dump()
        names = [
            f"dataset:{synthetic.ALIAS_NS}:{path}/date=2024-01-01/",
            dataset_urn(synthetic.ALIAS_NS, path),
            dataset_urn(synthetic.ALIAS_NS, path + "/date=2024-01-01"),
            f"dataset:{synthetic.NS}:{canonical}$20240101",
            dataset_urn(synthetic.NS, canonical + "$20240101"),
        ]
        for name in names:
            assert query.lineage(name, depth=1).model_dump() == expected, name
        with pytest.raises(NodeNotFound):  # a partition of a dataset nobody knows is still unknown
            query.lineage(dataset_urn(synthetic.ALIAS_NS, "/warehouse/p9/nothing/date=2024-01-01"))


def test_a_partition_named_by_a_configured_rule_answers_what_its_dataset_answers(tmp_path, monkeypatch):
    """DESIGN.md section 10: the partition rules are configurable (LINEAGE_PARTITION_RULES). Under
    a rule of its own (a `.runN` suffix, which no default rule strips), the query helper answers a
    partition's name, as an id, as structured arguments and as a field's dataset, with its dataset;
    without the rule the same name is unknown (pyarrow, no Spark)."""
    from lineage_assets.identity.partitions import ENV
    from lineage_assets.warehouse import tables as t

    ns, now = "postgres://orders:5432", dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc)
    rows = {
        t.CURRENT_JOBS: [{"job_namespace": "j", "job_name": "load", "version_id": "v", "latest_state": "COMPLETE",
                          "latest_ended_at": now, "component_id": "job:j:load", "lineage_unknown": False}],
        t.CURRENT_LINEAGE: [{"job_namespace": "j", "job_name": "load", "version_id": "v", "dataset_namespace": ns, "dataset_name": n,
                             "direction": d, "component_id": "job:j:load", "temporary": False}
                            for n, d in (("public.src", "INPUT"), ("public.orders", "OUTPUT"))],
        t.CURRENT_COLUMN_LINEAGE: [{"job_namespace": "j", "job_name": "load", "output_version_id": "dv-out", "output_namespace": ns,
                                    "output_name": "public.orders", "output_field": "c", "input_namespace": ns, "input_name": "public.src",
                                    "input_field": "c", "input_version_id": "dv-in", "transformation_type": "DIRECT",
                                    "transformation_subtype": "IDENTITY", "run_id": "r", "created_at": now, "input_declared": True}],
    }
    root = commit_rows(str(tmp_path / "wh"), rows)
    partition = f"dataset:{ns}:public.orders.run7"
    with LineageQuery(root) as query:  # the default rules: `.run7` is part of the name, a dataset nobody knows
        with pytest.raises(NodeNotFound):
            query.lineage(partition)
    (tmp_path / "rules.json").write_text(json.dumps({"rules": [{"name": "run_suffix", "pattern": r"^(.*)\.(run\d+)$", "scope": "any"}]}))
    monkeypatch.setenv(ENV, str(tmp_path / "rules.json"))
    with LineageQuery(root) as query:
        expected = query.lineage(f"dataset:{ns}:public.orders", depth=1).model_dump()
        assert query.lineage(partition, depth=1).model_dump() == expected
        assert query.lineage(node_type="dataset", namespace=ns, name="public.orders.run7", depth=1).model_dump() == expected
        field = query.column_lineage(f"datasetField:{ns}:public.orders.run7:c")
        assert set(field.ids) == {f"datasetField:{ns}:public.orders:c", f"datasetField:{ns}:public.src:c"}


def test_column_lineage_is_bridged_through_a_chain_of_temporary_datasets(tmp_path):
    """DESIGN.md section 10, as `test_children_of_one_parent_bridge_their_temporary_dataset_in_jobs_and_columns`
    (test_identity_fold.py) for one hop: A.x -> tmp1.y -> tmp2.w -> B.z answers A.x for B.z, through
    both hidden fields (nearest first), with the transformations of the three hops, at any depth;
    shown on request; downstream from A.x reaches B.z (pyarrow, no Spark)."""
    from lineage_assets.warehouse import tables as t

    ns, now = "t", dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc)
    hops = [("app.a", "A", "x", "tmp1", "y", "IDENTITY"), ("app.b", "tmp1", "y", "tmp2", "w", "TRANSFORMATION"),
            ("app.c", "tmp2", "w", "B", "z", "AGGREGATION")]
    rows = {
        t.CURRENT_JOBS: [{"job_namespace": "ns", "job_name": job, "version_id": "v", "latest_state": "COMPLETE", "latest_ended_at": now,
                          "component_id": "job:ns:app.a", "lineage_unknown": False, "latest_parent_run_id": "parent",
                          "temporary_datasets": [{"namespace": ns, "name": n} for n in ("tmp1", "tmp2") if n in (src, out)]}
                         for job, src, _f, out, _g, _s in hops],
        t.CURRENT_LINEAGE: [{"job_namespace": "ns", "job_name": job, "version_id": "v", "dataset_namespace": ns, "dataset_name": n,
                             "direction": d, "component_id": "job:ns:app.a", "temporary": n.startswith("tmp")}
                            for job, src, _f, out, _g, _s in hops for n, d in ((src, "INPUT"), (out, "OUTPUT"))],
        t.CURRENT_COLUMN_LINEAGE: [{"job_namespace": "ns", "job_name": job, "output_version_id": f"{out}@1", "output_namespace": ns,
                                    "output_name": out, "output_field": g, "input_namespace": ns, "input_name": src, "input_field": f,
                                    "input_version_id": f"{src}@1", "transformation_type": "DIRECT", "transformation_subtype": sub,
                                    "run_id": job, "created_at": now, "input_declared": True}
                                   for job, src, f, out, g, sub in hops],
    }
    root = commit_rows(str(tmp_path / "wh"), rows)
    z, x, y, w = "datasetField:t:B:z", "datasetField:t:A:x", "datasetField:t:tmp1:y", "datasetField:t:tmp2:w"
    with LineageQuery(root) as query:
        graph = query.lineage("job:ns:app.a", depth=1)
        assert [e.destination for e in graph.node("job:ns:app.a").outEdges] == ["job:ns:app.b"]
        for depth in (1, 20):  # the hidden hops cost nothing
            answer = query.column_lineage(z, depth=depth)
            assert answer.ids == {z, x}, depth
            [source] = answer.node(z).data["inputFields"]
            assert (source["dataset"], source["field"], source["through"]) == ("A", "x", [w, y])
            assert sorted(t["subtype"] for t in source["transformations"]) == ["AGGREGATION", "IDENTITY", "TRANSFORMATION"]
        assert query.column_lineage(z, include_temporary=True).ids == {z, w, y, x}
        down = query.column_lineage(x, depth=1, with_downstream=True)
        assert z in down.ids and not {y, w} & set(down.ids)


def _two_fields_one_id(root: str) -> str:
    """Fields (a, b:c, x) and (a:b, c, x), both `datasetField:a:b:c:x`, written by J0 from
    src.s0.a and by J1 from src.s1.a (pyarrow, no Spark)."""
    from lineage_assets.warehouse import tables as t

    now, datasets = dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc), [("a", "b:c"), ("a:b", "c")]
    rows = {
        t.CURRENT_JOBS: [{"job_namespace": "j", "job_name": f"J{i}", "version_id": "v", "latest_state": "COMPLETE", "latest_ended_at": now,
                          "component_id": f"job:j:J{i}", "lineage_unknown": False} for i in range(2)],
        t.CURRENT_LINEAGE: [{"job_namespace": "j", "job_name": f"J{i}", "version_id": "v", "dataset_namespace": ns, "dataset_name": n,
                             "direction": "OUTPUT", "component_id": f"job:j:J{i}", "temporary": False} for i, (ns, n) in enumerate(datasets)],
        t.CURRENT_COLUMN_LINEAGE: [{"job_namespace": "j", "job_name": f"J{i}", "output_version_id": f"v{i}", "output_namespace": ns,
                                    "output_name": n, "output_field": "x", "input_namespace": "src", "input_name": f"s{i}", "input_field": "a",
                                    "input_version_id": "sv", "transformation_type": "DIRECT", "transformation_subtype": "IDENTITY",
                                    "run_id": f"r{i}", "created_at": now, "input_declared": True} for i, (ns, n) in enumerate(datasets)],
    }
    return commit_rows(root, rows)


def test_column_history_and_impact_take_the_structured_arguments_their_ambiguity_error_asks_for(tmp_path):
    """DESIGN.md section 5: every call takes namespace=, name=, field=. The id
    `datasetField:a:b:c:x` names two fields, and the error says to pass them; they then name
    either field, as they do for column_lineage()."""
    with LineageQuery(_two_fields_one_id(str(tmp_path / "wh"))) as query:
        with pytest.raises(ValueError, match="ambiguous.*pass namespace=, name= and field="):
            query.column_history("datasetField:a:b:c:x")
        for i, (ns, name) in enumerate([("a", "b:c"), ("a:b", "c")]):
            history = query.column_history(namespace=ns, name=name, field="x", depth=1)
            assert (history.root.namespace, history.root.name, history.root.field) == (ns, name, "x")
            assert [(s.job.name, s.node.name, s.node.field) for s in history.root.steps] == [(f"J{i}", f"s{i}", "a")]
            typed = query.column_history(node_type="datasetField", namespace=ns, name=name, field="x", depth=1)
            assert typed.model_dump() == history.model_dump()
            impact = query.column_impact(namespace="src", name=f"s{i}", field="a")
            assert [(s.node.namespace, s.node.name, s.node.field) for s in impact.root.steps] == [(ns, name, "x")]
        with pytest.raises(ValueError, match="takes a field"):
            query.column_impact(namespace="a", name="b:c")
        with pytest.raises(NodeNotFound):
            query.column_history(namespace="a", name="b:c", field="nothing")


def _versions_over_time(root: str, writes: list[tuple[str, str, str]]) -> str:
    """Dataset pg://h:5432 O written by job J's runs `writes` [(run id, state, ended at)]: run r
    writes version O@r, whose field x comes from S.a_r (pyarrow, no Spark)."""
    from lineage_assets.warehouse import tables as t

    ns = "pg://h:5432"
    when = {run: dt.datetime.fromisoformat(at.replace("Z", "+00:00")) for run, _state, at in writes}
    rows = {
        t.CURRENT_JOBS: [{"job_namespace": ns, "job_name": "J", "version_id": "jv", "latest_state": writes[-1][1],
                          "latest_ended_at": when[writes[-1][0]], "component_id": f"job:{ns}:J", "lineage_unknown": False}],
        t.CURRENT_LINEAGE: [{"job_namespace": ns, "job_name": "J", "version_id": "jv", "dataset_namespace": ns, "dataset_name": d,
                             "direction": way, "component_id": f"job:{ns}:J", "temporary": False} for d, way in (("S", "INPUT"), ("O", "OUTPUT"))],
        t.RUN_LINEAGE: [{"run_id": run, "job_namespace": ns, "job_name": "J", "state": state, "started_at": when[run], "ended_at": when[run],
                         "input_versions": [], "output_versions": [{"namespace": ns, "name": "O", "version_id": f"O@{run}"}],
                         "end_date": when[run].date()} for run, state, _at in writes],
        t.DATASET_VERSIONS: [{"version_id": f"O@{run}", "namespace": ns, "name": "O", "run_id": run, "run_state": state, "job_namespace": ns,
                              "job_name": "J", "created_at": when[run], "created_date": when[run].date()} for run, state, _at in writes],
        t.COLUMN_LINEAGE: [{"output_version_id": f"O@{run}", "output_namespace": ns, "output_name": "O", "output_field": "x",
                            "input_namespace": ns, "input_name": "S", "input_field": f"a_{run}", "input_version_id": "S@src",
                            "transformation_type": "DIRECT", "transformation_subtype": "IDENTITY", "run_id": run, "created_at": when[run],
                            "created_date": when[run].date(), "input_declared": True} for run, _state, _at in writes],
    }
    return commit_rows(root, rows)


WRITES = [("r0", "COMPLETE", "2024-05-31T12:00:00Z"), ("r1", "COMPLETE", "2024-06-01T03:00:00Z"),
          ("r2", "COMPLETE", "2024-06-02T01:00:00Z"), ("r3", "FAIL", "2024-06-02T05:00:00Z")]


def test_a_date_alone_means_the_end_of_that_day_as_a_date_object_and_as_text(tmp_path):
    """lineage_at reads a date one way: `datetime.date(2024, 6, 1)` and "2024-06-01" both mean
    the end of that day (UTC), so the answer is the version written during the day (r1 at
    03:00), not the one current at midnight (r0); a datetime at midnight stays midnight."""
    field = "datasetField:pg://h:5432:O:x"
    with LineageQuery(_versions_over_time(str(tmp_path / "wh"), WRITES)) as query:
        during_the_day = query.column_lineage(field, dataset_version="O@r1").model_dump()
        at_midnight = query.column_lineage(field, dataset_version="O@r0").model_dump()
        assert during_the_day != at_midnight
        for day in (dt.date(2024, 6, 1), "2024-06-01", "20240601"):
            assert query.column_lineage(field, lineage_at=day).model_dump() == during_the_day, day
        for midnight in (dt.datetime(2024, 6, 1), "2024-06-01T00:00:00Z", "2024-06-01T00:00"):
            assert query.column_lineage(field, lineage_at=midnight).model_dump() == at_midnight, midnight
        for day in (dt.date(2024, 5, 30), "2024-05-30"):  # before the first version, either way
            with pytest.raises(NodeNotFound, match="23:59:59.999999"):
                query.column_lineage(field, lineage_at=day)


def test_lineage_at_a_versions_created_at_is_inclusive_and_a_later_fail_write_is_not_the_answer(tmp_path):
    """The version current at a time is the latest written by a COMPLETE run at or before it
    (README): exactly at r1's created_at it is r1's, a microsecond before r0's; after r3, which
    FAILed, it is still r2's, also exactly at r3's time."""
    field = "datasetField:pg://h:5432:O:x"
    by_version = {}
    with LineageQuery(_versions_over_time(str(tmp_path / "wh"), WRITES)) as query:
        for run, _state, _at in WRITES:
            by_version[run] = query.column_lineage(field, dataset_version=f"O@{run}").model_dump()
        assert len({json.dumps(answer, sort_keys=True) for answer in by_version.values()}) == len(WRITES)
        at = {run: dt.datetime.fromisoformat(when.replace("Z", "+00:00")) for run, _state, when in WRITES}
        asks = [
            (at["r1"], "r1"), (at["r1"].isoformat(), "r1"), (at["r1"] - dt.timedelta(microseconds=1), "r0"),
            (at["r3"], "r2"), (at["r3"] + dt.timedelta(days=1), "r2"), ("9999-12-31T00:00:00Z", "r2"),
        ]
        for when, run in asks:
            assert query.column_lineage(field, lineage_at=when).model_dump() == by_version[run], (when, run)
