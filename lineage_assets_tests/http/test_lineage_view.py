"""The read API's HTML page for a node (`GET /lineage/view`) on a real uvicorn server, looked at
in headless Chromium: the rendered page names every node of the answer and shows no error; its
screenshot is a real, non-blank picture; an unknown node's page is the error page (404). On a
synthetic platform warehouse (no Spark). Graphviz's `dot` and Debian's `chromium` must be
installed: a missing one fails these tests, it does not skip them."""

from __future__ import annotations

import html
import re
from urllib.parse import urlencode

import pytest
import requests

from lineage_assets import LineageQuery
from lineage_assets.query import picture
from lineage_assets.query import synthetic_platform as platform
from lineage_assets_tests.http.conftest import serving
from lineage_assets_tests.pictures import decode_png, dump_dom, job_graph, require, screenshot

NS = platform.NS
ERROR_MARK = '<main id="lineage-error"'
JOB_FILL, DATASET_FILL, START_FILL = (0xDB, 0xE4, 0xFF), (0xD3, 0xF9, 0xD8), (0xFF, 0xE8, 0xCC)  # picture.py's fills


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    require("dot", "graphviz")
    root = tmp_path_factory.mktemp("view")
    warehouse = str(root / "wh")
    platform.build_platform(warehouse, jobs=120, days=0, seed=3)
    jobs = [j for j in platform.platform_jobs(120, seed=3) if j.edges]
    job = jobs[len(jobs) // 2]
    with serving(str(root / "drops"), warehouse=warehouse) as (base, _app), LineageQuery(warehouse) as query:
        yield base, query, f"job:{NS}:{job.name}", f"datasetField:{NS}:{job.output}:{job.edges[0][0]}"


def _url(base: str, **params) -> str:
    return f"{base}/lineage/view?{urlencode(params)}"


def _assert_page_names(page: str, graph) -> None:
    """The page (as served, or as the browser's DOM) lists every node and draws each once."""
    assert ERROR_MARK not in page
    for node in graph.graph:
        assert html.escape(node.id, quote=False) in page, node.id
    assert len(re.findall(r'<g id="node\d+" class="node">', page)) == len(graph.graph)


def test_the_page_of_a_node_draws_and_lists_its_answer(served):
    base, query, job, field = served
    for params, graph in (
        ({"nodeId": job, "depth": 2}, query.lineage(job, depth=2)),
        ({"nodeId": field, "depth": 3, "columns": "true", "withDownstream": "true"}, query.column_lineage(field, depth=3, with_downstream=True)),
    ):
        response = requests.get(_url(base, **params), timeout=60)
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
        _assert_page_names(response.text, graph)
        assert "/lineage/view?nodeId=" in response.text  # each node links to its own page


def test_every_link_of_a_page_answers_even_at_the_deepest_depth(served):
    """The page's links to change the question are pages that answer: at the deepest depth
    allowed there is no link one deeper (it was a 400)."""
    from lineage_assets.query.traversal import MAX_DEPTH

    base, _query, job, _field = served
    for depth in (0, 3, MAX_DEPTH):
        page = requests.get(_url(base, nodeId=job, depth=depth), timeout=60).text
        links = [html.unescape(href) for href in re.findall(r'<a href="(/lineage/view\?[^"]*)"', page)]
        deeper = [href for href in links if re.search(rf"[?&]depth={depth + 1}(&|$)", href)]
        assert bool(deeper) == (depth < MAX_DEPTH), (depth, deeper)
        for href in deeper:
            assert requests.get(base + href, timeout=60).status_code == 200, href


@pytest.mark.parametrize("params, status", [
    ({"nodeId": f"job:{NS}:nobody"}, 404),
    ({"nodeId": "task:x:y"}, 400),
    ({}, 400),
    ({"nodeId": f"job:{NS}:p0.job0", "depth": "deep"}, 400),
    ({"nodeId": f"job:{NS}:p0.job0", "columns": "maybe"}, 400),
    ({"nodeId": f"job:{NS}:p0.job0", "maxNodes": str(picture.MAX_NODES + 1)}, 400),
    ({"nodeId": f"job:{NS}:p0.job0", "withDownstream": "true"}, 400),
    ({"nodeId": f"datasetField:{NS}:p0.table1:f0"}, 400),  # a field has a column graph only
])
def test_errors_are_html_pages_that_say_error(served, params, status):
    base, *_ = served
    response = requests.get(_url(base, **params), timeout=60)
    assert response.status_code == status and response.headers["content-type"].startswith("text/html")
    assert ERROR_MARK in response.text and f"error {status}" in response.text


def test_in_a_browser_the_page_shows_the_graph_and_no_error(served, tmp_path):
    require("chromium", "chromium")
    base, query, job, field = served
    graph = query.lineage(job, depth=1)
    url = _url(base, nodeId=job, depth=1)
    _assert_page_names(dump_dom(url), graph)
    shot = decode_png(screenshot(url, str(tmp_path / "page.png")))
    assert (shot.width, shot.height) == (1200, 900) and shot.colours > 50  # not blank
    assert {JOB_FILL, DATASET_FILL, START_FILL} <= shot.rgb  # the picture is on screen, its start marked
    columns = query.column_lineage(field, depth=2)
    _assert_page_names(dump_dom(_url(base, nodeId=field, depth=2, columns="true")), columns)


def test_in_a_browser_an_unknown_node_shows_the_error_page(served, tmp_path):
    require("chromium", "chromium")
    base, *_ = served
    url = _url(base, nodeId=f"job:{NS}:nobody")
    assert requests.get(url, timeout=60).status_code == 404
    dom = dump_dom(url)
    assert ERROR_MARK in dom and "error 404" in dom and "nobody" in dom and "<svg" not in dom
    shot = decode_png(screenshot(url, str(tmp_path / "error.png")))
    assert (shot.width, shot.height) == (1200, 900) and not {JOB_FILL, DATASET_FILL, START_FILL} & shot.rgb


def test_in_a_browser_awkward_names_show_as_they_are(tmp_path):
    """Quotes, backslashes, `&`, `<>`, unicode and long names: the browser's DOM holds each
    name and id as text (escaped once when serialised), the SVG parsed without error."""
    require("chromium", "chromium")
    graph = job_graph()
    drawing = picture.draw(graph, {graph.graph[0].id})
    page = tmp_path / "awkward.html"
    page.write_text(picture.html_page(graph, drawing, picture.render(drawing.dot, "svg"), title="awkward <names>"), encoding="utf-8")
    dom = dump_dom(page.as_uri())
    _assert_page_names(dom, graph)
    for node in graph.graph:
        assert f"<td>{html.escape(node.data['name'], quote=False)}</td>" in dom
    assert "<h1>awkward &lt;names&gt;</h1>" in dom
