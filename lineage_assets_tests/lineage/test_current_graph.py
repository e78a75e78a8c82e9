"""The current lineage graph and its components (DESIGN.md sections 3 and 4, "Current lineage")."""

from __future__ import annotations

import pytest

import tempfile
from types import SimpleNamespace

import pyarrow as pa

from lineage_assets.lineage.current import component_ids, current_alias_rows, current_tables, node_key
from lineage_assets.pipeline.checks import component_problems as check_components
from lineage_assets.warehouse import commits, tables
from lineage_assets_tests import support
from lineage_assets_tests.support import run_event

SCHEDULE_SECONDS = 30  # measured (--durations); conftest runs long files first

# --------------------------------------------------------------------------- union-find, no Spark


def test_component_ids_use_the_smallest_node_id_of_each_component():
    nodes = ["job:ns:z", "job:ns:m", "job:ns:b"]
    edges = [("job:ns:z", "dataset:ds:y"), ("job:ns:m", "dataset:ds:y"), ("job:ns:m", "dataset:ds:c")]
    result = component_ids(nodes, edges)
    assert result == {
        "job:ns:z": "dataset:ds:c",
        "job:ns:m": "dataset:ds:c",
        "dataset:ds:y": "dataset:ds:c",
        "dataset:ds:c": "dataset:ds:c",
        "job:ns:b": "job:ns:b",  # a job with no edges is its own component
    }


def test_component_ids_independent_of_edge_order():
    edges = [("job:ns:d", "dataset:ds:x"), ("job:ns:c", "dataset:ds:x"), ("job:ns:c", "dataset:ds:a"), ("job:ns:e", "dataset:ds:a")]
    nodes = ["job:ns:d", "job:ns:c", "job:ns:e"]
    expected = component_ids(nodes, edges)
    assert set(expected.values()) == {"dataset:ds:a"}
    assert component_ids(list(reversed(nodes)), list(reversed(edges))) == expected
    assert component_ids(nodes, [(b, a) for a, b in edges]) == expected


def test_two_components_stay_apart():
    edges = [("job:ns:A", "dataset:ds:X"), ("job:ns:B", "dataset:ds:Y"), ("job:ns:C", "dataset:ds:Y")]
    result = component_ids(["job:ns:A", "job:ns:B", "job:ns:C"], edges)
    assert result["job:ns:A"] == result["dataset:ds:X"] == "dataset:ds:X"
    assert result["job:ns:B"] == result["job:ns:C"] == result["dataset:ds:Y"] == "dataset:ds:Y"


def test_component_ids_on_a_cycle_terminate():
    edges = [
        ("job:ns:A", "dataset:ds:a"), ("job:ns:B", "dataset:ds:a"), ("job:ns:B", "dataset:ds:b"),
        ("job:ns:C", "dataset:ds:b"), ("job:ns:C", "dataset:ds:c"), ("job:ns:A", "dataset:ds:c"),
        ("job:ns:A", "dataset:ds:a"),  # repeated edge
    ]
    result = component_ids(["job:ns:A", "job:ns:B", "job:ns:C"], edges)
    assert set(result) == {"job:ns:A", "job:ns:B", "job:ns:C", "dataset:ds:a", "dataset:ds:b", "dataset:ds:c"}
    assert set(result.values()) == {"dataset:ds:a"}


def test_component_ids_on_a_long_chain():
    n = 3000
    edges = [(f"job:ns:j{i:05d}", f"dataset:ds:d{i:05d}") for i in range(n)]
    edges += [(f"job:ns:j{i + 1:05d}", f"dataset:ds:d{i:05d}") for i in range(n - 1)]
    result = component_ids([f"job:ns:j{i:05d}" for i in range(n)], list(reversed(edges)))
    assert set(result.values()) == {"dataset:ds:d00000"}


def test_two_nodes_with_one_id_string_stay_two_nodes():
    """`job:coll:b:c` is both the job (coll:b, c) and the job (coll, b:c): nodes are their parts,
    so two unconnected jobs are two components, each named by its smallest node's id (before,
    the union-find ran on id strings and merged them into one)."""
    one, two = node_key("job", "coll:b", "c"), node_key("job", "coll", "b:c")
    assert one[0] == two[0] == "job:coll:b:c" and one != two
    x, y = node_key("dataset", "zz", "x"), node_key("dataset", "bb", "y")
    for edges in ([(one, x), (two, y)], [(two, y), (one, x)]):
        result = component_ids([one, two], edges)
        assert result == {one: "dataset:zz:x", x: "dataset:zz:x", two: "dataset:bb:y", y: "dataset:bb:y"}
    # joined, the component is named by the smallest id, whichever order the edges come in
    assert set(component_ids([two, one], [(one, x), (two, x), (two, y)]).values()) == {"dataset:bb:y"}


# --------------------------------------------------------------------------- component_problems


def _job(name: str, component: str, ns: str = "ns") -> dict:
    return {"job_namespace": ns, "job_name": name, "component_id": component}


def _edge(job: str, dataset: str, component: str, direction: str = "OUTPUT") -> dict:
    return {"job_namespace": "ns", "job_name": job, "dataset_namespace": "ds", "dataset_name": dataset,
            "direction": direction, "component_id": component}


def component_problems(jobs: list[dict], edges: list[dict]) -> list[str]:
    """The blocking check (DuckDB label propagation) over these rows, committed as files (in a
    folder removed afterwards)."""
    with tempfile.TemporaryDirectory(prefix="components_") as root:
        with commits.Transaction(root, "test") as txn:
            txn.stage_arrow(pa.Table.from_pylist(jobs), "current_jobs")
            txn.stage_arrow(pa.Table.from_pylist(edges), "current_lineage")
            commit = txn.commit()
        return check_components({name: commit.files(name) for name in ("current_jobs", "current_lineage")})


def test_stored_components_counts_the_distinct_component_ids_of_the_written_jobs(tmp_path):
    from lineage_assets.pipeline.checks import stored_components

    jobs = [_job("A", "dataset:ds:X"), _job("B", "dataset:ds:X"), _job("C", "dataset:ds:Z"), _job("lonely", "job:ns:lonely")]
    with commits.Transaction(str(tmp_path), "test") as txn:
        txn.stage_arrow(pa.Table.from_pylist(jobs), "current_jobs")
        assert txn.staged_rows("current_jobs") == 4
        assert stored_components(txn.staged_paths("current_jobs")) == 3
    assert stored_components([]) == 0


def test_component_problems_passes_on_a_consistent_graph():
    jobs = [_job("A", "dataset:ds:X"), _job("B", "dataset:ds:X"), _job("C", "dataset:ds:Z"), _job("lonely", "job:ns:lonely")]
    edges = [_edge("A", "X", "dataset:ds:X"), _edge("B", "X", "dataset:ds:X", "INPUT"), _edge("C", "Z", "dataset:ds:Z")]
    assert component_problems(jobs, edges) == []


def test_component_problems_reports_a_wrong_component_id():
    jobs = [_job("A", "dataset:ds:X"), _job("B", "job:ns:B")]  # B is connected to X: its id should be dataset:ds:X
    edges = [_edge("A", "X", "dataset:ds:X"), _edge("B", "X", "dataset:ds:X", "INPUT")]
    problems = component_problems(jobs, edges)
    assert len(problems) == 1
    assert "dataset:ds:X" in problems[0] and "job:ns:B" in problems[0]


def test_component_problems_reports_an_edge_whose_component_id_differs_from_its_job():
    jobs = [_job("A", "dataset:ds:X"), _job("B", "dataset:ds:X")]
    edges = [_edge("A", "X", "dataset:ds:X"), _edge("B", "X", "job:ns:A", "INPUT")]
    problems = component_problems(jobs, edges)
    assert len(problems) == 1 and "edge job:ns:B INPUT dataset:ds:X" in problems[0] and "'dataset:ds:X'" in problems[0]


def test_component_problems_finds_one_corrupted_id_among_a_long_chain():
    n = 400
    jobs = [_job(f"j{i:04d}", "dataset:ds:d0000") for i in range(n)]
    edges = [_edge(f"j{i:04d}", f"d{i:04d}", "dataset:ds:d0000") for i in range(n)]
    edges += [_edge(f"j{i + 1:04d}", f"d{i:04d}", "dataset:ds:d0000", "INPUT") for i in range(n - 1)]
    assert component_problems(jobs, edges) == []
    jobs[n // 2] = _job(f"j{n // 2:04d}", "job:ns:j0200")
    problems = component_problems(jobs, edges)
    assert len(problems) == 1 and "job:ns:j0200" in problems[0]


def test_component_problems_keeps_two_nodes_with_one_id_string_apart():
    jobs = [_job("c", "dataset:zz:x", ns="coll:b"), _job("b:c", "dataset:bb:y", ns="coll")]
    edges = [
        {**_edge("c", "x", "dataset:zz:x"), "job_namespace": "coll:b", "dataset_namespace": "zz"},
        {**_edge("b:c", "y", "dataset:bb:y"), "job_namespace": "coll", "dataset_namespace": "bb"},
    ]
    assert component_problems(jobs, edges) == []
    merged = [{**jobs[0], "component_id": "dataset:bb:y"}, jobs[1]]  # what a union-find on id strings stored
    problems = component_problems(merged, edges)
    assert len(problems) == 1 and "stored component_id 'dataset:bb:y', computed 'dataset:zz:x'" in problems[0]


def test_component_problems_does_not_take_a_round_per_hop_of_a_long_chain():
    """Labels jump along chains (pointer jumping), so the rounds follow the log of the graph's
    diameter: a chain of 8,000 jobs (16,000 nodes) is checked in about 0.3 s. Label propagation
    that moves a label one hop per round took 48.6 s here (benchmarks/PIPELINE_HISTORY.md,
    thirty-third session)."""
    import time

    n = 8000
    jobs = [_job(f"j{i:05d}", "dataset:ds:d00000") for i in range(n)]
    edges = [_edge(f"j{i:05d}", f"d{i:05d}", "dataset:ds:d00000") for i in range(n)]
    edges += [_edge(f"j{i + 1:05d}", f"d{i:05d}", "dataset:ds:d00000", "INPUT") for i in range(n - 1)]
    began = time.perf_counter()
    assert component_problems(jobs, edges) == []
    assert time.perf_counter() - began < 10


# --------------------------------------------------------------------------- with Spark


def _current(spark, events):
    folded = support.fold_stream(spark, events)
    aliases = spark.createDataFrame(current_alias_rows(folded.state.aliases), tables.CURRENT_ALIASES.columns)
    jobs_df, lineage_df = current_tables(folded.state.jobs, aliases)
    jobs = [r.asDict() for r in jobs_df.collect()]
    edges = [r.asDict() for r in lineage_df.collect()]
    return folded, jobs, edges


def _edge_set(edges):
    return {(e["job_name"], e["direction"], e["dataset_namespace"], e["dataset_name"]) for e in edges}


CYCLE = "cyc"  # the cycle's jobs and datasets live in their own namespaces, folded with the rest


@pytest.fixture(scope="module")
def folded_graphs(spark):
    """One fold of three independent graphs:
    - moved output: A writes X (day 1), B reads X (day 1), A writes Y instead (day 2);
    - a cycle: A -> a -> B -> b -> C -> c -> A (namespaces `cyc`);
    - two jobs whose node ids are one string, (coll:b, c) writing zz:x and (coll, b:c) writing bb:y."""
    events = [
        run_event("2024-03-01T10:00:00Z", "START", "a1", "A"),
        run_event("2024-03-01T10:05:00Z", "COMPLETE", "a1", "A", outputs=["X"]),
        run_event("2024-03-01T11:00:00Z", "COMPLETE", "b1", "B", inputs=["X"], outputs=["Z"]),
        run_event("2024-03-02T10:00:00Z", "START", "a2", "A"),
        run_event("2024-03-02T10:05:00Z", "COMPLETE", "a2", "A", outputs=["Y"]),
    ]
    cyc = lambda name: support.ds(name, namespace=CYCLE)  # noqa: E731
    events += [
        run_event("2024-03-01T10:00:00Z", "COMPLETE", "ca1", "A", outputs=[cyc("a")], job_namespace=CYCLE),
        run_event("2024-03-01T11:00:00Z", "COMPLETE", "cb1", "B", inputs=[cyc("a")], outputs=[cyc("b")], job_namespace=CYCLE),
        run_event("2024-03-01T12:00:00Z", "COMPLETE", "cc1", "C", inputs=[cyc("b")], outputs=[cyc("c")], job_namespace=CYCLE),
        run_event("2024-03-01T13:00:00Z", "COMPLETE", "ca2", "A", inputs=[cyc("c")], outputs=[cyc("a")], job_namespace=CYCLE),
    ]
    # two jobs with one node id string (`job:coll:b:c`), unconnected
    events += [
        run_event("2024-03-01T10:00:00Z", "COMPLETE", "k1", "c", outputs=[support.ds("x", namespace="zz")], job_namespace="coll:b"),
        run_event("2024-03-01T10:00:00Z", "COMPLETE", "k2", "b:c", outputs=[support.ds("y", namespace="bb")], job_namespace="coll"),
    ]
    return _current(spark, events)


def _only(folded, jobs, edges, namespace):
    return (
        [v for v in folded.job_versions if v["job_namespace"] == namespace],
        [j for j in jobs if j["job_namespace"] == namespace],
        [e for e in edges if e["job_namespace"] == namespace],
    )


@pytest.fixture(scope="module")
def moved_output(folded_graphs):
    folded, jobs, edges = folded_graphs
    versions, jobs, edges = _only(folded, jobs, edges, "ns")
    return SimpleNamespace(job_versions=versions), jobs, edges


def test_job_that_moves_its_output_shows_only_the_new_edge(moved_output):
    _, jobs, edges = moved_output
    assert _edge_set(edges) == {
        ("A", "OUTPUT", "ds", "Y"),
        ("B", "INPUT", "ds", "X"),
        ("B", "OUTPUT", "ds", "Z"),
    }
    by_job = {j["job_name"]: j for j in jobs}
    assert set(by_job) == {"A", "B"}
    assert by_job["A"]["latest_run_id"] == support.run_uuid("a2")
    assert by_job["A"]["latest_state"] == "COMPLETE"
    # A and B are no longer connected: two components, each named by its smallest node id
    assert by_job["A"]["component_id"] == "dataset:ds:Y"
    assert by_job["B"]["component_id"] == "dataset:ds:X"  # 'dataset:ds:X' < 'dataset:ds:Z' < 'job:ns:B'
    for e in edges:
        assert e["component_id"] == by_job[e["job_name"]]["component_id"]
        assert e["version_id"] == by_job[e["job_name"]]["version_id"]
    assert component_problems(jobs, edges) == []


def test_job_that_moves_its_output_has_two_versions(moved_output):
    folded, jobs, _ = moved_output
    a_versions = sorted((v for v in folded.job_versions if v["job_name"] == "A"), key=lambda v: v["created_at"])
    assert [[o["name"] for o in v["outputs"]] for v in a_versions] == [["X"], ["Y"]]
    current_a = next(j for j in jobs if j["job_name"] == "A")
    assert current_a["version_id"] == a_versions[-1]["version_id"]


def test_cycle_is_one_component_and_the_fold_terminates(folded_graphs):
    folded, jobs, edges = folded_graphs
    versions, jobs, edges = _only(folded, jobs, edges, CYCLE)
    assert _edge_set(edges) == {
        ("A", "INPUT", CYCLE, "c"), ("A", "OUTPUT", CYCLE, "a"),
        ("B", "INPUT", CYCLE, "a"), ("B", "OUTPUT", CYCLE, "b"),
        ("C", "INPUT", CYCLE, "b"), ("C", "OUTPUT", CYCLE, "c"),
    }
    assert {j["job_name"]: j["component_id"] for j in jobs} == {"A": "dataset:cyc:a", "B": "dataset:cyc:a", "C": "dataset:cyc:a"}
    assert {e["component_id"] for e in edges} == {"dataset:cyc:a"}
    assert component_problems(jobs, edges) == []
    assert len([v for v in versions if v["job_name"] == "A"]) == 2


def test_two_jobs_with_one_node_id_string_are_two_components(folded_graphs):
    _, jobs, edges = folded_graphs
    same = [j for j in jobs if j["job_namespace"].startswith("coll")]
    assert {(j["job_namespace"], j["job_name"]): j["component_id"] for j in same} == {
        ("coll:b", "c"): "dataset:zz:x", ("coll", "b:c"): "dataset:bb:y",
    }
    theirs = [e for e in edges if e["job_namespace"].startswith("coll")]
    assert {(e["job_namespace"], e["dataset_name"], e["component_id"]) for e in theirs} == {
        ("coll:b", "x", "dataset:zz:x"), ("coll", "y", "dataset:bb:y"),
    }
    assert component_problems(same, theirs) == []
