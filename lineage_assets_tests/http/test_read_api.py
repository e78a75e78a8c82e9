"""The read routes (`http.read_api`) on a real uvicorn server: each route's JSON is the query
helper's answer to the same question; ids and names URL-encoded as the reference server does;
errors are JSON with 400/404. On a synthetic platform warehouse with history (no Spark)."""

from __future__ import annotations

from urllib.parse import quote

import pytest
import requests

from lineage_assets import LineageQuery
from lineage_assets.identity.datahub import field_urn
from lineage_assets.query.render import jsonable
from lineage_assets.query import synthetic_platform as platform
from lineage_assets_tests.http.conftest import serving

NS = platform.NS  # postgres://platform.example.com:5432: '://' and a port
START, END = "2026-01-01T00:00:00Z", "2026-01-04T00:00:00Z"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("read_api")
    warehouse = str(root / "wh")
    platform.build_platform(warehouse, jobs=120, days=3, seed=3)
    jobs = [j for j in platform.platform_jobs(120, seed=3) if j.edges]
    with serving(str(root / "drops"), warehouse=warehouse) as (base, _app), LineageQuery(warehouse) as query:
        yield base, query, jobs


def _get(base: str, path: str, **params) -> requests.Response:
    return requests.get(base + path, params=params, timeout=30)


def _dataset_path(name: str, *rest: str) -> str:
    return "/api/v1/namespaces/" + "/".join(quote(p, safe="") for p in (NS, "datasets", name, *rest))


def test_each_route_answers_what_the_helper_answers(served):
    base, query, jobs = served
    job = jobs[len(jobs) // 2]
    field = job.edges[0][0]
    asks = [
        (("/api/v1/lineage", {"nodeId": f"job:{NS}:{job.name}", "depth": 3}), query.lineage(f"job:{NS}:{job.name}", depth=3)),
        (("/api/v1/column-lineage", {"nodeId": f"datasetField:{NS}:{job.output}:{field}", "depth": 5, "withDownstream": "true"}),
         query.column_lineage(f"datasetField:{NS}:{job.output}:{field}", depth=5, with_downstream=True)),
        ((_dataset_path(job.output), {}), query.dataset(NS, job.output)),
        ((_dataset_path(job.output, "fields"), {"start": START, "end": END, "includeCurrent": "true"}),
         query.fields(NS, job.output, START, END, include_current=True)),
        ((_dataset_path(job.output, "field-mappings"), {"start": START, "end": END, "levels": 3, "direction": "both"}),
         query.field_mappings(NS, job.output, START, END, direction="both", levels=3)),
        ((_dataset_path(job.output, "fields", field, "operations"), {"start": START, "end": END}),
         query.field_operations(NS, job.output, field, START, END)),
        ((_dataset_path(job.output, "upstream-lineage"), {"pathVersion": "v2"}), query.fine_grained_lineage(NS, job.output, path_version="v2")),
        (("/api/v1/column-lineage", {"nodeId": field_urn(NS, job.output, field)}),  # a DataHub URN as the node id
         query.column_lineage(f"datasetField:{NS}:{job.output}:{field}")),
    ]
    for (path, params), expected in asks:
        response = _get(base, path, **params)
        assert response.status_code == 200, (path, response.text)
        assert response.json() == jsonable(expected), path
    assert asks[6][1].fineGrainedLineages and asks[6][1].upstreams
    assert len(asks[4][1].root) > 1 and asks[5][1].connections  # answers with something in them


@pytest.mark.parametrize("path, params, status", [
    ("/api/v1/lineage", {"nodeId": f"job:{NS}:nobody"}, 404),
    ("/api/v1/lineage", {"nodeId": "task:x:y"}, 400),
    ("/api/v1/lineage", {}, 400),
    ("/api/v1/lineage", {"nodeId": f"job:{NS}:p0.job0", "depth": "deep"}, 400),
    ("/api/v1/column-lineage", {"nodeId": f"dataset:{NS}:p0.table1", "withDownstream": "maybe"}, 400),
    ("/api/v1/namespaces/x", {}, 404),
    ("/api/v1/namespaces/" + quote(NS, safe="") + "/datasets/nothing", {}, 404),
    ("/api/v1/namespaces/" + quote(NS, safe="") + "/datasets/nothing/tags", {}, 404),
    ("/api/v1/namespaces/" + quote(NS, safe="") + "/datasets/p0.table1/field-mappings", {"start": END, "end": START}, 400),
    ("/api/v1/namespaces/" + quote(NS, safe="") + "/datasets/p0.table1/elsewhere", {}, 404),
])
def test_errors_are_json_with_400_or_404(served, path, params, status):
    base, *_ = served
    response = _get(base, path, **params)
    assert response.status_code == status
    body = response.json()
    assert body["code"] == status and body["message"]


def test_structured_parameters_name_a_node_whose_id_is_ambiguous(tmp_path):
    """Two jobs whose ids coincide, (`spark://c:7077`, `load`) and (`spark://c`, `7077:load`):
    the id alone is a 400 that says so, and `nodeType`, `namespace` and `name` (DESIGN.md
    section 5's structured arguments) ask for either one, as the helper's keywords do; for
    column lineage and the column traces (column-history, column-impact) `field` too."""
    import datetime as dt

    from lineage_assets.warehouse import tables as t
    from lineage_assets_tests.support import commit_rows

    now, pg = dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc), "pg://db:5432"
    jobs = [("spark://c:7077", "load", "in1", "out1"), ("spark://c", "7077:load", "in2", "out2")]
    rows = {
        t.CURRENT_JOBS: [{"job_namespace": ns, "job_name": n, "version_id": "v", "latest_state": "COMPLETE", "latest_ended_at": now,
                          "component_id": f"job:{ns}:{n}", "lineage_unknown": False} for ns, n, _, _ in jobs],
        t.CURRENT_LINEAGE: [{"job_namespace": ns, "job_name": n, "version_id": "v", "dataset_namespace": pg, "dataset_name": d,
                             "direction": way, "component_id": f"job:{ns}:{n}", "temporary": False}
                            for ns, n, i, o in jobs for d, way in ((i, "INPUT"), (o, "OUTPUT"))],
        t.CURRENT_COLUMN_LINEAGE: [{"job_namespace": ns, "job_name": n, "output_version_id": f"v-{o}", "output_namespace": pg,
                                    "output_name": o, "output_field": "x", "input_namespace": pg, "input_name": i, "input_field": "a",
                                    "input_version_id": f"v-{i}", "transformation_type": "DIRECT", "run_id": f"r-{o}",
                                    "created_at": now, "input_declared": True} for ns, n, i, o in jobs],
    }
    warehouse = str(tmp_path / "wh")
    commit_rows(warehouse, rows)
    with serving(str(tmp_path / "drops"), warehouse=warehouse) as (base, _app), LineageQuery(warehouse) as query:
        ambiguous = _get(base, "/api/v1/lineage", nodeId="job:spark://c:7077:load")
        assert ambiguous.status_code == 400 and "ambiguous" in ambiguous.json()["message"]
        for ns, name, _i, output in jobs:
            asked = _get(base, "/api/v1/lineage", nodeType="job", namespace=ns, name=name, depth=1)
            assert asked.status_code == 200, asked.text
            assert asked.json() == jsonable(query.lineage(node_type="job", namespace=ns, name=name, depth=1))
            assert f"dataset:{pg}:{output}" in {n["id"] for n in asked.json()["graph"]}
            columns = _get(base, "/api/v1/column-lineage", nodeType="job", namespace=ns, name=name)
            assert columns.status_code == 200 and columns.json() == jsonable(query.column_lineage(node_type="job", namespace=ns, name=name))
            assert f"datasetField:{pg}:{output}:x" in {n["id"] for n in columns.json()["graph"]}
        field = _get(base, "/api/v1/column-lineage", namespace=pg, name="out2", field="x")
        assert field.status_code == 200 and {n["id"] for n in field.json()["graph"]} == {f"datasetField:{pg}:out2:x", f"datasetField:{pg}:in2:a"}
        assert _get(base, "/api/v1/lineage", namespace="spark://c").status_code == 400  # a name is missing: a clear 400
        for route, field, asked in (("column-history", ("out2", "x"), query.column_history), ("column-impact", ("in1", "a"), query.column_impact)):
            trace = _get(base, f"/api/v1/{route}", nodeType="datasetField", namespace=pg, name=field[0], field=field[1], depth=1)
            assert trace.status_code == 200, trace.text
            assert trace.json() == jsonable(asked(namespace=pg, name=field[0], field=field[1], depth=1))
            assert trace.json()["root"]["steps"] and trace.json()["root"]["id"] == f"datasetField:{pg}:{field[0]}:{field[1]}"
            assert _get(base, f"/api/v1/{route}", namespace=pg, name=field[0], field=field[1]).json() == jsonable(
                asked(namespace=pg, name=field[0], field=field[1]))
        assert _get(base, "/api/v1/column-history", namespace=pg, name="out2").status_code == 400  # a dataset: the traces take a field


def test_the_api_key_guards_the_writing_routes_and_not_the_reads(tmp_path):
    """README (HTTP endpoint): with a key, a POST without it is 401 and stores nothing; the read
    routes answer without it (the HTML view opens in a browser, which sends no bearer header)."""
    warehouse = str(tmp_path / "wh")
    platform.build_platform(warehouse, jobs=40, days=1, seed=3)
    job = next(j for j in platform.platform_jobs(40, seed=3) if j.edges)
    drops = tmp_path / "drops"
    event = {"eventTime": "2026-01-01T00:00:00Z", "eventType": "COMPLETE", "producer": "p",
             "run": {"runId": "3f1b1f4e-9a3c-4a8e-8f6e-2d7c9b1a0e55"}, "job": {"namespace": "ns", "name": "j"}}
    with serving(str(drops), warehouse=warehouse, api_key="s3cret") as (base, _app):
        assert requests.post(base + "/api/v1/lineage", json=event, timeout=30).status_code == 401
        assert not list((drops / "http").glob("*.ndjson"))
        read = _get(base, "/api/v1/lineage", nodeId=f"job:{NS}:{job.name}", depth=1)
        assert read.status_code == 200 and read.json()["graph"]
        stored = requests.post(base + "/api/v1/lineage", json=event, headers={"Authorization": "Bearer s3cret"}, timeout=30)
        assert stored.status_code in (200, 201) and len(list((drops / "http").glob("*.ndjson"))) == 1
