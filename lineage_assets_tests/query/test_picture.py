"""Pictures of answers (`query.picture`, DESIGN.md section 12): every node named whatever its
characters, the start highlighted, deterministic and bounded output, the `graph` command's svg,
png and html files and its errors, and the snapshot's picture. Spark-free: hand-made answers and
a synthetic platform warehouse. Graphviz's `dot` must be installed (a missing one fails)."""

from __future__ import annotations

import base64
import html
import os
import random
import xml.etree.ElementTree as ET

import pytest

from lineage_assets import LineageQuery
from lineage_assets.cli import main
from lineage_assets.defs.metadata import graph_picture_metadata
from lineage_assets.identity.datahub import dataset_urn, field_urn
from lineage_assets.query import picture
from lineage_assets.query.lineage_query import GraphPart
from lineage_assets.query.node_ids import NodeNotFound
from lineage_assets.query import synthetic_platform as platform
from lineage_assets.query.models import Edge, LineageGraph, Node
from lineage_assets_tests.pictures import (
    FIELDS, SVG, XLINK_TITLE, assert_names_every_node, column_graph, decode_png, job_graph, require, svg_parts,
)

NS = platform.NS


@pytest.fixture(scope="module", autouse=True)
def dot():
    return require("dot", "graphviz")


# ----------------------------------------------------------------------------- hand-made answers

@pytest.mark.parametrize("make", [job_graph, column_graph])
def test_a_picture_names_every_node_whatever_its_characters(make):
    graph = make()
    svg = picture.render(picture.draw(graph, title='the "title" <&> \\N').dot, "svg")
    assert_names_every_node(svg, graph)  # parses as XML: every value escaped on the way, `\\N` not expanded


def test_columns_are_grouped_by_dataset_and_indirect_edges_dashed():
    graph = column_graph()
    drawing = picture.draw(graph)
    nodes, clusters = svg_parts(picture.render(drawing.dot, "svg"))
    assert sorted(c.lines[0] for c in clusters) == sorted({d for _n, d, _f, _t in FIELDS})
    assert drawing.dot.count("subgraph cluster_") == 3
    [dashed] = [line for line in drawing.dot.splitlines() if "->" in line and 'style="dashed"' in line]
    assert "INDIRECT:FILTER" in dashed


def test_control_characters_are_shown_as_escapes():
    node = Node(id="dataset:ns:bad\x01name\x7f", type="DATASET", data={"namespace": "ns", "name": "bad\x01name\x7f"})
    nodes, _ = svg_parts(picture.render(picture.draw(LineageGraph(graph=[node])).dot, "svg"))
    assert nodes[0].text == "bad\\x01name\\x7fns" and nodes[0].tooltip == "dataset:ns:bad\\x01name\\x7f"


def test_characters_xml_does_not_allow_are_shown_as_escapes():
    """A name may hold the noncharacters U+FFFE and U+FFFF (the intake accepts them), which XML
    does not allow: Graphviz's labels are XML, so `dot` failed on them and no picture was drawn
    (the CLI printed a traceback, the view answered a bare 500, the snapshot lost its picture)."""
    name = "out\ufffe\uffffx"
    node = Node(id=f"dataset:ns:{name}", type="DATASET", data={"namespace": "ns", "name": name})
    nodes, _ = svg_parts(picture.render(picture.draw(LineageGraph(graph=[node])).dot, "svg"))
    assert nodes[0].text == "out\\ufffe\\uffffxns" and nodes[0].tooltip == "dataset:ns:out\\ufffe\\uffffx"


def test_a_failing_dot_is_a_clear_error_of_the_command_not_a_traceback(platform_warehouse, tmp_path, capsys, monkeypatch):
    """Graphviz failing on a graph is exit code 1 with its message; a file that cannot be written
    leaves no temporary file behind."""
    warehouse, job, _field = platform_warehouse

    def failing(*_args, **_kwargs):
        raise picture.GraphvizFailed("Graphviz's dot failed (exit 1): Error: syntax error")

    with monkeypatch.context() as patched:
        patched.setattr(picture, "render", failing)
        assert main(["graph", job, "-o", str(tmp_path / "x.svg"), "--warehouse", warehouse]) == 1
    assert "Graphviz's dot failed" in capsys.readouterr().err and not (tmp_path / "x.svg").exists()
    (tmp_path / "taken.svg").mkdir()  # a folder where the picture would go
    assert main(["graph", job, "-o", str(tmp_path / "taken.svg"), "--warehouse", warehouse]) == 2
    assert "cannot write" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.svg"]


def test_the_node_asked_about_is_highlighted():
    graph = job_graph()
    start = graph.graph[1].id
    svg = picture.render(picture.draw(graph, {start}).dot, "svg")
    # the start node's outline is the highlight colour, and no other node's is
    highlighted = [
        [a.get(XLINK_TITLE) for a in group.iter(f"{SVG}a")][0]
        for group in ET.fromstring(svg).iter(f"{SVG}g")
        if group.get("class") == "node" and any(e.get("stroke") == "#e8590c" for e in group.iter())
    ]
    assert highlighted == [start]


def test_the_same_answer_draws_the_same_picture_in_any_order():
    graph = job_graph()
    shuffled = LineageGraph(graph=random.Random(5).sample(graph.graph, len(graph.graph)))
    assert picture.draw(graph, {graph.graph[0].id}).dot == picture.draw(shuffled, {graph.graph[0].id}).dot
    assert picture.render(picture.draw(graph).dot, "svg") == picture.render(picture.draw(shuffled).dot, "svg")


def chain(n: int) -> LineageGraph:
    """job:c:j0 -> dataset:c:d0 -> job:c:j1 -> ... : 2n nodes in a line."""
    ids = [f"{'job' if i % 2 == 0 else 'dataset'}:c:{'j' if i % 2 == 0 else 'd'}{i // 2}" for i in range(2 * n)]
    return LineageGraph(graph=[
        Node(id=x, type="JOB" if x.startswith("job") else "DATASET", data={"namespace": "c", "name": x.rsplit(":", 1)[1]},
             inEdges=[Edge(origin=ids[i - 1], destination=x)] if i else [],
             outEdges=[Edge(origin=x, destination=ids[i + 1])] if i + 1 < len(ids) else [])
        for i, x in enumerate(ids)
    ])


def test_a_large_answer_is_cut_to_the_nodes_nearest_the_start_and_says_so():
    graph = chain(50)
    drawing = picture.draw(graph, {"job:c:j25"}, max_nodes=11)
    assert sorted(n.id for n in drawing.drawn) == sorted(
        [f"job:c:j{i}" for i in range(23, 28)] + [f"dataset:c:d{i}" for i in range(22, 28)]
    )
    assert len(drawing.left_out) == 89
    nodes, _ = svg_parts(picture.render(drawing.dot, "svg"))
    assert len(nodes) == 11
    assert "11 of 100 nodes drawn (89 farther ones left out)" in drawing.dot
    with pytest.raises(ValueError, match="max_nodes"):
        picture.draw(graph, max_nodes=0)
    with pytest.raises(ValueError, match="max_nodes"):
        picture.draw(graph, max_nodes=picture.MAX_NODES + 1)


def test_the_html_page_escapes_every_name_and_holds_the_svg():
    graph = job_graph()
    drawing = picture.draw(graph, {graph.graph[0].id})
    page = picture.html_page(graph, drawing, picture.render(drawing.dot, "svg"), title="lineage of <x>")
    assert "<title>lineage of &lt;x&gt;</title>" in page and "<svg " in page and "<?xml" not in page
    for node in graph.graph:
        assert html.escape(node.id) in page
    assert "<c>" not in page and 'id="lineage-error"' not in page
    error = picture.error_page(404, "not_found", "no job 'a<b>'")
    assert 'id="lineage-error"' in error and "error 404" in error and "a&lt;b&gt;" in error


def test_the_output_format_comes_from_the_file_name():
    assert [picture.format_of(p) for p in ("a.svg", "b.PNG", "c/d.html")] == ["svg", "png", "html"]
    for bad in ("a.jpg", "a", "svg"):
        with pytest.raises(ValueError, match=r"\.svg, \.png or \.html"):
            picture.format_of(bad)


def test_without_graphviz_the_error_names_dot_and_the_package(monkeypatch, tmp_path, capsys, platform_warehouse):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` on it
    with pytest.raises(picture.GraphvizMissing, match="dot"):
        picture.render("digraph {}", "svg")
    warehouse, job, _field = platform_warehouse
    code = main(["graph", job, "-o", str(tmp_path / "x.svg"), "--warehouse", warehouse])
    err = capsys.readouterr().err
    assert code == 2 and "`dot`" in err and "apt-get install graphviz" in err and "Traceback" not in err
    assert not (tmp_path / "x.svg").exists()


# ----------------------------------------------------------------------------- the graph command


@pytest.fixture(scope="module")
def platform_warehouse(tmp_path_factory):
    warehouse = str(tmp_path_factory.mktemp("picture") / "wh")
    platform.build_platform(warehouse, jobs=120, days=0, seed=3)
    jobs = [j for j in platform.platform_jobs(120, seed=3) if j.edges]
    job = jobs[len(jobs) // 2]
    return warehouse, f"job:{NS}:{job.name}", f"datasetField:{NS}:{job.output}:{job.edges[0][0]}"


def test_the_graph_command_writes_svg_png_and_html(platform_warehouse, tmp_path, capsys):
    warehouse, job, field = platform_warehouse
    with LineageQuery(warehouse) as query:
        jobs = query.lineage(job, depth=2)
        columns = query.column_lineage(field, depth=3, with_downstream=True)
    assert len(jobs.graph) > 10 and len(columns.graph) > 5
    for name in ("g.svg", "g.png", "g.html"):
        assert main(["graph", job, "--depth", "2", "-o", str(tmp_path / name), "--warehouse", warehouse]) == 0
    assert main(["graph", field, "--columns", "--depth", "3", "--with-downstream", "-o", str(tmp_path / "c.svg"),
                 "--warehouse", warehouse]) == 0
    assert "wrote" in capsys.readouterr().out
    svg = (tmp_path / "g.svg").read_bytes()
    assert_names_every_node(svg, jobs)
    assert_names_every_node((tmp_path / "c.svg").read_bytes(), columns)
    assert f"lineage of {job} (depth 2)" in svg.decode()
    png = decode_png((tmp_path / "g.png").read_bytes())
    assert png.width > 600 and png.height > 100 and png.colours > 20
    page = (tmp_path / "g.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg " in page and 'id="lineage-error"' not in page
    assert all(html.escape(n.id) in page for n in jobs.graph)


@pytest.mark.parametrize("args, code, says", [
    (["job:{NS}:nobody"], 3, "not found"),
    (["{job}", "--with-downstream"], 2, "column graph"),
    (["{field}"], 2, "lineage() takes a job or dataset"),
    (["{job}", "--max-nodes", "0"], 2, "max_nodes"),
    (["{job}", "--depth", "-1"], 2, "depth"),
])
def test_the_graph_command_errors(platform_warehouse, tmp_path, capsys, args, code, says):
    warehouse, job, field = platform_warehouse
    argv = [a.format(NS=NS, job=job, field=field) for a in args]
    assert main(["graph", *argv, "-o", str(tmp_path / "x.svg"), "--warehouse", warehouse]) == code
    assert says in capsys.readouterr().err
    assert not (tmp_path / "x.svg").exists()


def test_the_graph_command_refuses_an_unknown_format(platform_warehouse, tmp_path, capsys):
    warehouse, job, _field = platform_warehouse
    assert main(["graph", job, "-o", str(tmp_path / "x.jpg"), "--warehouse", warehouse]) == 2
    assert ".svg, .png or .html" in capsys.readouterr().err
    assert main(["graph", job, "-o", str(tmp_path / "x.svg"), "--warehouse", str(tmp_path / "none")]) == 2


# ----------------------------------------------------------------------------- the snapshot's picture


def test_the_snapshot_picture_draws_the_largest_components_within_the_cap(platform_warehouse):
    warehouse, *_ = platform_warehouse
    with LineageQuery(warehouse) as query:
        _seq, sizes = picture.component_sizes(query)
        shot = picture.snapshot_picture(query, max_nodes=150)
        whole = {c: query.lineage(c, depth=10_000).ids for c, _n in sizes}
    assert sum(n for _c, n in sizes) > 150 and len(sizes) > 3
    drawn = [n.id for n in shot.drawing.drawn]
    assert len(drawn) <= 150 and len(drawn) == len(set(drawn))
    assert [c for c, _d, _n in shot.shown][:1] == [sizes[0][0]]  # the largest first
    for component, count, total in shot.shown:  # whole components (these fit)
        assert count == total == len(whole[component]) and whole[component] <= set(drawn)
    assert f"left out: {len(sizes) - len(shot.shown)} smaller components" in shot.summary
    nodes, _clusters = svg_parts(shot.svg)
    assert len(nodes) == len(drawn)
    # drawn top to bottom, largest first, as many to a row as fit the width
    assert 'packmode="array_i' in shot.drawing.dot and shot.drawing.dot.index(picture._quoted(sizes[0][0])) < shot.drawing.dot.index(
        picture._quoted(sizes[1][0]))
    png = decode_png(shot.png)
    assert len(shot.png) <= picture.SNAPSHOT_PNG_MAX_BYTES and png.height > png.width > 500 and png.colours > 20


def test_the_snapshot_picture_cuts_a_component_larger_than_the_cap(platform_warehouse):
    warehouse, *_ = platform_warehouse
    with LineageQuery(warehouse) as query:
        _seq, sizes = picture.component_sizes(query)
        shot = picture.snapshot_picture(query, max_nodes=20)
    (component, count, total), *others = shot.shown
    assert component == sizes[0][0] and count <= 20 < total
    assert all(c == n for _c, c, n in others)  # smaller components fill the room left, whole
    assert "component cut to the" in shot.summary and len(shot.drawing.drawn) == sum(c for _c, c, _n in shot.shown) <= 20


def test_the_snapshot_metadata_embeds_the_png_and_writes_the_files(platform_warehouse):
    warehouse, *_ = platform_warehouse
    metadata = graph_picture_metadata(warehouse)
    assert set(metadata) == {"graph_picture", "graph_picture_summary", "graph_picture_svg", "graph_picture_png"}
    text = metadata["graph_picture"].value
    prefix = "![current lineage graph](data:image/png;base64,"
    assert text.startswith(metadata["graph_picture_summary"].value) and prefix in text and text.endswith(")")
    png = base64.b64decode(text.split(prefix, 1)[1][:-1])
    assert decode_png(png).colours > 20
    assert open(metadata["graph_picture_png"].value, "rb").read() == png
    assert os.path.dirname(metadata["graph_picture_svg"].value) == os.path.join(warehouse, "pictures")
    svg_parts(open(metadata["graph_picture_svg"].value, "rb").read())


def test_without_graphviz_the_snapshot_metadata_says_so(platform_warehouse, monkeypatch, tmp_path):
    warehouse, *_ = platform_warehouse
    monkeypatch.setenv("PATH", str(tmp_path))
    said = []
    metadata = graph_picture_metadata(warehouse, said.append)
    assert list(metadata) == ["graph_picture"] and "apt-get install graphviz" in metadata["graph_picture"].value
    assert said and "dot" in said[0]


def test_a_node_asked_for_by_its_datahub_urn_is_highlighted(platform_warehouse):
    warehouse, _job, field = platform_warehouse
    name, column = field.split(":")[-2:]  # datasetField:<NS>:<name>:<field>; the names hold no colon
    with LineageQuery(warehouse) as query:
        for urn, node in ((dataset_urn(NS, name), f"dataset:{NS}:{name}"), (field_urn(NS, name, column), field)):
            graph = query.column_lineage(urn, depth=2, with_downstream=True)
            assert picture.start_ids(query, urn, graph) == {node} == picture.start_ids(query, node, graph)
        graph = query.lineage(dataset_urn(NS, name), depth=1)
        assert picture.start_ids(query, dataset_urn(NS, name), graph) == {f"dataset:{NS}:{name}"}
        assert picture.start_ids(query, dataset_urn(NS, "nobody"), graph) == set()  # an unknown URN highlights nothing


def test_a_jobs_column_picture_cut_keeps_and_marks_the_fields_of_what_it_writes(platform_warehouse):
    """The column picture of a job cut to a few nodes keeps the fields of the datasets the job
    writes (its answer's start) and marks their cluster, as a dataset's picture does (it kept the
    first fields by id, the farthest upstream, and marked nothing)."""
    warehouse, job, _field = platform_warehouse
    with LineageQuery(warehouse) as query:
        written = {e.destination for n in query.lineage(job, depth=0).graph if n.id == job for e in n.outEdges}
        answer = query.column_lineage(job, depth=3)
        own = sorted(n.id for n in answer.graph if f"dataset:{n.data['namespace']}:{n.data['dataset']}" in written)
        assert own and len(answer.graph) > len(own) + 1
        svg = picture.picture(query, job, "svg", columns=True, depth=3, max_nodes=len(own))
    nodes, _clusters = svg_parts(svg)
    assert sorted(n.tooltip for n in nodes) == own
    marked = [g for g in ET.fromstring(svg).iter(f"{SVG}g") if g.get("class") == "cluster" and any(e.get("stroke") == "#e8590c" for e in g.iter())]
    assert len(marked) == len(written & {f"dataset:{n.data['namespace']}:{n.data['dataset']}" for n in answer.graph}) > 0


def test_the_snapshot_picture_draws_a_component_whose_id_two_datasets_share(tmp_path):
    """A component's id is its smallest node id; `dataset:a:b:c` names both (a, b:c) and (a:b, c),
    so asking for it is ambiguous: the picture starts at the component's first job instead (the
    snapshot said "no picture" before)."""
    import datetime as dt

    from lineage_assets.warehouse import tables as t
    from lineage_assets_tests.support import commit_rows

    now = dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc)
    jobs = [("j", "x", ("a", "b:c"), ("a", "x_out")), ("j", "y", ("a:b", "c"), ("a:b", "y_out"))]
    rows = {t.CURRENT_JOBS: [], t.CURRENT_LINEAGE: []}
    for ns, name, source, target in jobs:
        component = min([f"job:{ns}:{name}", *(f"dataset:{d[0]}:{d[1]}" for d in (source, target))])
        assert component == "dataset:a:b:c"
        rows[t.CURRENT_JOBS].append({"job_namespace": ns, "job_name": name, "version_id": "v", "latest_state": "COMPLETE",
                                     "latest_ended_at": now, "component_id": component, "lineage_unknown": False})
        for (dns, dname), way in ((source, "INPUT"), (target, "OUTPUT")):
            rows[t.CURRENT_LINEAGE].append({"job_namespace": ns, "job_name": name, "version_id": "v", "dataset_namespace": dns,
                                            "dataset_name": dname, "direction": way, "component_id": component, "temporary": False})
    warehouse = str(tmp_path / "wh")
    commit_rows(warehouse, rows)
    with LineageQuery(warehouse) as query:
        drawn = picture.snapshot_picture(query)
    nodes, _ = svg_parts(drawn.svg)
    assert {"job:j:x", "dataset:a:x_out"} <= {n.tooltip for n in nodes} and drawn.png
    for cap in (1, 3, 150):  # the part of the graph loaded holds both nodes of the id, and the first job
        with LineageQuery(warehouse, columns=False) as whole, LineageQuery(warehouse, columns=False, part=GraphPart()) as part:
            assert picture.snapshot_picture(part, cap).drawing.dot == picture.snapshot_picture(whole, cap).drawing.dot


@pytest.mark.parametrize("cap", [1, 2, 5, 20, 60, 150, 400])
def test_the_snapshot_picture_loads_only_what_it_draws_and_draws_the_same(platform_warehouse, cap):
    """A query of part of the graph (as the snapshot's metadata uses) is given the components the
    picture draws whole, and around a component too large for the cap the jobs the walk reaches:
    the picture is the one drawn from the whole graph, from fewer loaded jobs."""
    warehouse, *_ = platform_warehouse
    loaded: list[int] = []
    with LineageQuery(warehouse, columns=False) as whole, LineageQuery(warehouse, columns=False, part=GraphPart()) as part:
        expected = picture.snapshot_picture(whole, cap)
        restrict = part.restrict

        def counting(graph_part):
            restrict(graph_part)
            loaded.append(len(graph_part.jobs) + len(graph_part.components))

        part.restrict = counting
        drawn = picture.snapshot_picture(part, cap)
        jobs, drawn_jobs = len(whole._jobs.job_rows), len(part._jobs.job_rows)
        components = len(picture.component_sizes(whole)[1])
    assert drawn.drawing.dot == expected.drawing.dot and drawn.shown == expected.shown and drawn.svg == expected.svg
    everything = len(drawn.shown) == components and all(count == total for _c, count, total in drawn.shown)
    assert loaded and (drawn_jobs == jobs if everything else drawn_jobs < jobs)  # the last part loaded: what was drawn


def test_a_query_of_part_of_the_graph_answers_its_nodes_as_the_whole_does(platform_warehouse):
    warehouse, job, _field = platform_warehouse
    with LineageQuery(warehouse, columns=False) as whole:
        component = whole.lineage(job, depth=0).graph[0].data["componentId"]
        answer = whole.lineage(job, depth=2)
        others = [c for c, _n in picture.component_sizes(whole)[1] if c != component]
    near = picture.Neighbourhood(warehouse, component)
    start = whole.lineage(component, depth=2)
    with LineageQuery(warehouse, columns=False, part=GraphPart(components=frozenset({component}))) as part:
        assert part.lineage(job, depth=2) == answer
        with pytest.raises(NodeNotFound):
            part.lineage(others[0], depth=1)
        part.restrict(GraphPart(jobs=near.jobs(2)))
        assert part.lineage(component, depth=2) == start and len(part._jobs.job_rows) == len(near.jobs(2))
    with pytest.raises(ValueError, match="columns=False"):
        LineageQuery(warehouse, part=GraphPart())
