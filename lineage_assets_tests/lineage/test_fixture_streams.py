"""The reference server's fixtures, folded as they are (read in place from ../shared).

One module fixture folds the listener pair, the apples, the food_delivery seed, the Spark
column-lineage streams (compat/CLL.ndjson, compat/spark_dataproc_bigquery_shakespare.ndjson) and
the Airflow compat stream (compat/airflow.ndjson) together; they share no job or dataset, so each scenario is checked on its own.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque

import pytest

from lineage_assets import LineageQuery
from lineage_assets_tests.support import fold_stream, publish_current

SCHEDULE_SECONDS = 30  # measured (--durations); conftest runs long files first

pytestmark = pytest.mark.fixtures


def _load(fixtures_dir):
    listener = [json.loads((fixtures_dir / "marquez/open_lineage/listener" / f"{i}.json").read_text()) for i in (1, 2)]
    apples = {p.name: json.loads(p.read_text()) for p in sorted((fixtures_dir / "marquez/apples").glob("*.json"))}
    food = [json.loads(line) for line in (fixtures_dir / "marquez/food_delivery.ndjson").read_text().splitlines() if line.strip()]
    return listener, apples, food


def _ndjson(fixtures_dir, relative: str) -> list[dict]:
    return [json.loads(line) for line in (fixtures_dir / relative).read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def fixture_fold(spark, fixtures_dir, tmp_path_factory):
    listener, apples, food = _load(fixtures_dir)
    cll = _ndjson(fixtures_dir, "compat/CLL.ndjson") + _ndjson(fixtures_dir, "compat/spark_dataproc_bigquery_shakespare.ndjson")
    airflow = _ndjson(fixtures_dir, "compat/airflow.ndjson")
    folded = fold_stream(spark, [*listener, *apples.values(), *food, *cll, *airflow])
    warehouse = tmp_path_factory.mktemp("fixture_wh")
    publish_current(spark, folded.state, str(warehouse), folded=folded)
    return folded, listener, apples, food, LineageQuery(str(warehouse))


def test_listener_pair_is_one_run_with_three_inputs_and_two_outputs(fixture_fold):
    folded, listener, *_ = fixture_fold
    run_id = listener[0]["run"]["runId"]
    [run] = [r for r in folded.runs if r["run_id"] == run_id]
    expected_in = sorted({i["name"] for e in listener for i in e["inputs"]})
    expected_out = sorted({o["name"] for e in listener for o in e["outputs"]})
    assert [i["name"] for i in run["inputs"]] == expected_in and len(expected_in) == 3
    assert [o["name"] for o in run["outputs"]] == expected_out and len(expected_out) == 2
    assert run["state"] == "COMPLETE" and run["event_count"] == 2
    assert str(run["end_date"]) == "2020-12-29"  # 2.json's +10:00 time is 09:52 UTC on the 29th


def _version_counts_implied(apples: dict) -> dict[str, int]:
    """Distinct (inputs, outputs) per job in the apples files: what the README's story implies."""
    seen = defaultdict(set)
    for event in apples.values():
        io = (tuple(sorted(i["name"] for i in event["inputs"])), tuple(sorted(o["name"] for o in event["outputs"])))
        seen[event["job"]["name"]].add(io)
    return {job: len(ios) for job, ios in seen.items()}


def test_apples_give_the_job_versions_their_readme_implies(fixture_fold):
    folded, _listener, apples, *_ = fixture_fold
    apple_jobs = {e["job"]["name"] for e in apples.values()}
    counts = defaultdict(int)
    for version in folded.job_versions:
        if version["job_name"] in apple_jobs:
            counts[version["job_name"]] += 1
    assert dict(counts) == _version_counts_implied(apples)
    assert counts["gather_apples"] == 2 and counts["prepare_apple_filling"] == 2 and counts["prepare_apple_pie"] == 1


def test_the_second_pie_was_made_from_the_crab_apple_filling(fixture_fold):
    folded, _listener, apples, *_ = fixture_fold
    lineage = {r["run_id"]: r for r in folded.run_lineage}
    runs = {name: e["run"]["runId"] for name, e in apples.items()}
    outputs = {rid: {o["name"]: o["version_id"] for o in lineage[rid]["output_versions"]} for rid in runs.values()}
    reads = lambda name: {i["name"]: i["version_id"] for i in lineage[runs[name]]["input_versions"]}  # noqa: E731
    assert reads("6_apple_pie.json")["apple.filling"] == outputs[runs["2_apple_filling.json"]]["apple.filling"]
    assert reads("9_apple_pie.json")["apple.filling"] == outputs[runs["8_apple_filling.json"]]["apple.filling"]
    assert reads("8_apple_filling.json")["apples"] == outputs[runs["7_pick_different_apples.json"]]["apples"]


def _expected_component(food: list[dict], start: str, depth: int) -> set[str]:
    """Independent BFS over the raw events: jobs linked by a shared dataset, `depth` job hops."""
    datasets_of = defaultdict(set)
    for e in food:
        job = f"job:{e['job']['namespace']}:{e['job']['name']}"
        for d in (e.get("inputs") or []) + (e.get("outputs") or []):
            datasets_of[job].add(f"dataset:{d['namespace']}:{d['name']}")
    jobs_of = defaultdict(set)
    for job, datasets in datasets_of.items():
        for d in datasets:
            jobs_of[d].add(job)
    seen, queue = {start: 0}, deque([start])
    while queue:
        job = queue.popleft()
        if seen[job] == depth:
            continue
        for d in datasets_of[job]:
            for other in jobs_of[d]:
                if other not in seen:
                    seen[other] = seen[job] + 1
                    queue.append(other)
    return set(seen) | {d for j in seen for d in datasets_of[j]}


@pytest.mark.parametrize("depth", [0, 1, 2, 20])
def test_food_delivery_lineage_from_every_job(fixture_fold, depth):
    *_, food, query = fixture_fold
    jobs = sorted({f"job:{e['job']['namespace']}:{e['job']['name']}" for e in food})
    assert len(jobs) == 13
    for job in jobs:
        graph = query.lineage(job, depth=depth)
        assert graph.ids == _expected_component(food, job, depth), job
    whole = query.lineage(jobs[0], depth=20)
    components = {n.data["componentId"] for n in whole.graph}
    assert components == {min(whole.ids)}


# ------------------------------------------------------------------ column lineage of real streams


def _column_edges(folded, output_suffix: str) -> dict[tuple[str, str], set[tuple[str, str]]]:
    """(output field, input dataset basename) -> {(input field, transformation type/subtype)}"""
    out: dict = defaultdict(set)
    for e in folded.column_lineage:
        if e["output_name"].endswith(output_suffix):
            key = (e["output_field"], e["input_name"].rsplit("/", 1)[-1], e["input_field"])
            out[key].add((e["transformation_type"], e["transformation_subtype"]))
    return out


CLL_NS = "file:/tmp/cll_test"  # the TABLE identifiers of the stream's symlinks facets: the canonical datasets


def test_spark_cll_stream_gives_the_direct_edges_of_its_sql(fixture_fold):
    folded = fixture_fold[0]
    edges = {
        (out, name.removeprefix("default."), field): ts
        for (out, name, field), ts in _column_edges(folded, "default.tbl1").items()
    }
    assert ("DIRECT", "IDENTITY") in edges[("ident", "cll_source1", "a")]
    assert ("DIRECT", "TRANSFORMATION") in edges[("trans", "cll_source1", "b")]
    assert ("DIRECT", "AGGREGATION") in edges[("agg", "cll_source2", "c")]
    direct = sorted((k[0], k[1], k[2]) for k, ts in edges.items() if any(t == "DIRECT" for t, _ in ts))
    assert direct == [("agg", "cll_source2", "c"), ("ident", "cll_source1", "a"), ("trans", "cll_source1", "b")]
    # the facet repeats on START, RUNNING and COMPLETE: one set of rows (one per transformation)
    rows = [e for e in folded.column_lineage if e["output_name"] == "default.tbl1"]
    assert len(rows) == sum(len(ts) for ts in edges.values()) == 21
    assert all(e["input_declared"] and e["output_field_known"] for e in rows)
    # the path the Spark listener reported and the table its symlinks name are one dataset
    assert {(e["output_namespace"], e["input_namespace"]) for e in rows} == {(CLL_NS, CLL_NS)}
    assert {e["input_name"] for e in rows} == {"default.cll_source1", "default.cll_source2"}
    [run] = [r for r in folded.runs if any(o["name"] == "default.tbl1" for o in r["outputs"])]
    assert [o["reported"] for o in run["outputs"]] == [[{"namespace": "file", "name": "/tmp/cll_test/tbl1"}]]
    assert {(a["alias_namespace"], a["alias_name"], a["namespace"], a["name"]) for a in folded.dataset_aliases} == {
        ("file", f"/tmp/cll_test/{t}", CLL_NS, f"default.{t}") for t in ("cll_source1", "cll_source2", "tbl1")
    }


def test_spark_cll_stream_through_the_query_helper(fixture_fold):
    folded, *_, query = fixture_fold
    canonical = f"datasetField:{CLL_NS}:default.tbl1:agg"
    graph = query.column_lineage(canonical, depth=1)
    # the path the listener reported is an alias: it answers with the canonical node
    assert query.column_lineage("datasetField:file:/tmp/cll_test/tbl1:agg", depth=1) == graph
    agg = graph.node(canonical)
    assert agg.data["aliases"] == [{"namespace": "file", "name": "/tmp/cll_test/tbl1"}]
    by_input = {(i["dataset"], i["field"]): i for i in agg.data["inputFields"]}
    assert {t["subtype"] for t in by_input[("default.cll_source2", "c")]["transformations"]} == {"AGGREGATION"}
    assert agg.data["fieldType"] is not None
    assert {e.origin for e in agg.inEdges} == {
        f"datasetField:{CLL_NS}:default.{d}:{f}" for d, f in (("cll_source1", "a"), ("cll_source1", "b"), ("cll_source2", "c"), ("cll_source2", "a"))
    }
    # one component: the writer of the table and its reader meet at one node
    whole = query.lineage("dataset:file:/tmp/cll_test/cll_source1", depth=20)
    assert f"dataset:{CLL_NS}:default.cll_source1" in whole.ids and "dataset:file:/tmp/cll_test/cll_source1" not in whole.ids


def test_field_operations_of_the_cll_streams_aggregated_column(fixture_fold):
    """compat/CLL.ndjson's `agg` has four inputs and five distinct transformations: one
    operation each, every connection naming one, the listener's job with its one run."""
    *_, query = fixture_fold
    answer = query.field_operations(CLL_NS, "default.tbl1", "agg", "2024-08-06T00:00:00Z", "2024-08-07T00:00:00Z")
    sources = {n.id for n in answer.nodes if n.sourceEndPoint is not None}
    assert sources == {f"datasetField:{CLL_NS}:default.{d}:{f}" for d, f in (("cll_source1", "a"), ("cll_source1", "b"), ("cll_source2", "c"), ("cll_source2", "a"))}
    assert [n.id for n in answer.nodes if n.destinationEndPoint is not None] == [f"datasetField:{CLL_NS}:default.tbl1:agg"]
    assert {(o.type, o.subtype) for o in answer.operations} == {
        ("DIRECT", "AGGREGATION"), ("INDIRECT", "GROUP_BY"), ("INDIRECT", "JOIN"), ("INDIRECT", "FILTER"),
    }
    label = {n.id: f"{n.sourceEndPoint.name}.{n.label}" for n in answer.nodes if n.sourceEndPoint is not None}
    by_source: dict[str, set[str]] = {}
    for c in answer.connections:
        by_source.setdefault(label[c.from_], set()).add(c.operation)
    assert by_source["default.cll_source2.c"] == {"DIRECT:AGGREGATION"}
    assert by_source["default.cll_source1.a"] == {"INDIRECT:GROUP_BY", "INDIRECT:JOIN", "INDIRECT:FILTER"}
    [program] = answer.programs
    assert program.job.name.endswith("default_tbl1") and len(program.runs) == 1
    assert query.field_operations(CLL_NS, "default.tbl1", "agg", "2024-08-07T00:00:00Z", "2024-08-08T00:00:00Z").connections == []


def test_shakespeare_keeps_direct_and_indirect_apart(fixture_fold):
    folded, *_, query = fixture_fold
    edges = _column_edges(folded, "/1729097570970")
    assert edges[("word", "bigquery-public-data.samples.shakespeare", "word")] == {("DIRECT", "IDENTITY"), ("INDIRECT", "GROUP_BY"), ("INDIRECT", "FILTER")}
    assert edges[("word", "bigquery-public-data.samples.shakespeare", "word_count")] == {("INDIRECT", "FILTER")}
    assert edges[("sum(word_count)", "bigquery-public-data.samples.shakespeare", "word_count")] == {("DIRECT", "AGGREGATION"), ("INDIRECT", "FILTER")}
    node = query.column_lineage("datasetField:file:/tmp/outputs/1729097570970:word", depth=1).node(
        "datasetField:file:/tmp/outputs/1729097570970:word"
    )
    kinds = {i["field"]: sorted({t["type"] for t in i["transformations"]}) for i in node.data["inputFields"]}
    assert kinds == {"word": ["DIRECT", "INDIRECT"], "word_count": ["INDIRECT"]}


def test_food_delivery_column_lineage_answers_from_every_field(fixture_fold):
    folded, _listener, _apples, food, query = fixture_fold
    expected: dict[str, set[str]] = defaultdict(set)
    for event in food:
        for output in event.get("outputs", []):
            facet = output.get("facets", {}).get("columnLineage")
            for field, spec in (facet or {}).get("fields", {}).items():
                node = f"datasetField:{output['namespace']}:{output['name']}:{field}"
                expected[node] |= {f"datasetField:{i['namespace']}:{i['name']}:{i['field']}" for i in spec["inputFields"]}
    assert len({n.rsplit(":", 1)[0] for n in expected}) == 5
    for node_id, inputs in expected.items():
        graph = query.column_lineage(node_id, depth=1)
        assert {e.origin for e in graph.node(node_id).inEdges} == inputs, node_id
        deep = query.column_lineage(node_id, depth=20, with_downstream=True)
        assert graph.ids <= deep.ids


# ------------------------------------------------------------------ dataset identity on real streams

COMPAT_JOBS = ("testColumnLevelLineage", "default", "airflow")  # the compat streams' job namespaces (printed below)


def _connections(runs: list[dict], reported: bool) -> set[tuple[str, str]]:
    """(writer job, reader job) pairs of the runs' history: a run of the writer wrote a dataset a
    run of the reader read; datasets by the name each run reported (`reported`), else canonical."""
    writers, readers = defaultdict(set), defaultdict(set)
    for run in runs:
        job = f"{run['job_namespace']}:{run['job_name']}"
        for side, into in (("outputs", writers), ("inputs", readers)):
            for d in run[side]:
                names = [(r["namespace"], r["name"]) for r in d["reported"]] if reported and d["reported"] else [(d["namespace"], d["name"])]
                for name in names:
                    into[name].add(job)
    return {(w, r) for name, ws in writers.items() for w in ws for r in readers.get(name, ()) if w != r}


def test_identity_loses_no_job_to_job_connection_of_the_compat_streams(fixture_fold):
    folded, *_, query = fixture_fold
    runs = [r for r in folded.runs if r["job_namespace"] in COMPAT_JOBS]
    assert {r["job_namespace"] for r in runs} == set(COMPAT_JOBS)
    before, after = _connections(runs, reported=True), _connections(runs, reported=False)
    print(f"\ncompat streams: {len(before)} job-to-job connections by reported names, {len(after)} by canonical names")
    for pair in sorted(after):
        print("  ", pair, "" if pair in before else "(joined by identity)")
    # no valid edge lost, none invented: these streams name each dataset one way on both sides
    # (the CLL stream's paths, with the table in symlinks), so identity merges names, not jobs
    assert before == after and len(after) == 13
    # and the current graph shows each of them, through a temporary dataset or not
    for writer, reader in sorted(after):
        graph = query.lineage(f"job:{writer}", depth=1)
        assert f"job:{reader}" in graph.ids, (writer, reader)


# ------------------------------------------------------------------ pictures of real streams


def test_pictures_of_real_streams_name_every_node_and_show_in_a_browser(fixture_fold, tmp_path):
    """`lineage-assets graph` over the folded fixtures: the job graph of the food_delivery seed,
    the column graph of the CLL stream's table (asked by the path its listener reported, an
    alias) and a food_delivery field's column graph with downstream: each SVG names every node
    of the answer. The HTML page, opened in headless Chromium, lists every node, draws each
    once and shows no error; its screenshot is not blank."""
    from lineage_assets.cli import main
    from lineage_assets_tests.pictures import assert_names_every_node, decode_png, dump_dom, require, screenshot

    require("dot", "graphviz")
    *_, food, query = fixture_fold
    job = f"job:food_delivery:{food[0]['job']['name']}"
    asks = [
        ([job], query.lineage(job, depth=20)),
        (["dataset:file:/tmp/cll_test/tbl1", "--columns"], query.column_lineage("dataset:file:/tmp/cll_test/tbl1")),
        (["datasetField:food_delivery:public.delivery_7_days:order_placed_on", "--columns", "--with-downstream"],
         query.column_lineage("datasetField:food_delivery:public.delivery_7_days:order_placed_on", with_downstream=True)),
    ]
    for k, (args, graph) in enumerate(asks):
        assert len(graph.graph) > 3, args
        out = tmp_path / f"{k}.svg"
        assert main(["graph", *args, "-o", str(out), "--warehouse", query.warehouse]) == 0
        assert_names_every_node(out.read_bytes(), graph)
    whole = asks[0][1]
    assert {n.type for n in whole.graph} == {"JOB", "DATASET"} and len(whole.graph) > 20
    page = tmp_path / "food_delivery.html"
    assert main(["graph", job, "-o", str(page), "--warehouse", query.warehouse]) == 0
    require("chromium", "chromium")
    dom = dump_dom(page.as_uri())
    assert '<main id="lineage-error"' not in dom and dom.count('class="node"') == len(whole.graph)
    assert all(node.id in dom for node in whole.graph)  # the node list
    shot = decode_png(screenshot(page.as_uri(), str(tmp_path / "food_delivery.png")))
    assert (shot.width, shot.height) == (1200, 900) and shot.colours > 50
