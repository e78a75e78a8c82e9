"""Field URNs and field questions over history (DESIGN.md section 8: every query accepts a URN
wherever it accepts a node id, both path forms resolve to the same field; section 5: unknown
nodes raise NodeNotFound). On warehouses written with pyarrow (no Spark)."""

from __future__ import annotations

import datetime as dt

import pytest

from lineage_assets import LineageQuery, NodeNotFound
from lineage_assets.identity.datahub import field_urn, parse_urn
from lineage_assets.warehouse import tables as t
from lineage_assets_tests.support import commit_rows

NS = "postgres://db.example.com:5432"
T1, T2 = dt.datetime(2024, 6, 1, 1, tzinfo=dt.timezone.utc), dt.datetime(2024, 6, 5, 1, tzinfo=dt.timezone.utc)
WINDOW = {"start": "2024-06-01T00:00:00Z", "end": "2024-06-02T00:00:00Z"}
V2_SKU = "[version=2.0].[type=struct].[type=array].[type=struct].items.[type=string].sku"
ITEMS = [("items", "array"), ("items._element", "struct"), ("items._element.sku", "string")]  # an array of records, as stored


def _edge(run: str, output: str, field: str | None, input_: str, input_field: str, at: dt.datetime, kind=("DIRECT", "IDENTITY")) -> dict:
    return {"output_version_id": f"{output}@{run}", "output_namespace": NS, "output_name": output, "output_field": field,
            "input_namespace": NS, "input_name": input_, "input_field": input_field, "input_version_id": f"{input_}@src",
            "transformation_type": kind[0], "transformation_subtype": kind[1], "run_id": run, "created_at": at,
            "created_date": at.date(), "input_declared": True}


def _current_edge(run: str, output: str, field: str | None, input_: str, input_field: str, at: dt.datetime, kind=("DIRECT", "IDENTITY")) -> dict:
    row = _edge(run, output, field, input_, input_field, at, kind)
    row.pop("created_date")
    return {**row, "job_namespace": NS, "job_name": "J"}


def _warehouse(root: str, *, current_fields: list[tuple[str, str, str]], current_edges: list[dict], history_fields=(),
               history_edges=(), runs=(), aliases=()) -> str:
    """A commit of job J reading S and writing O: the current graph, fields and edges, and the
    history of `runs` (run id, end time) with their fields (run, dataset, path, type) and edges."""
    rows = {
        t.CURRENT_JOBS: [{"job_namespace": NS, "job_name": "J", "version_id": "jv", "latest_state": "COMPLETE",
                          "latest_ended_at": T2, "component_id": f"job:{NS}:J", "lineage_unknown": False}],
        t.CURRENT_LINEAGE: [{"job_namespace": NS, "job_name": "J", "version_id": "jv", "dataset_namespace": NS, "dataset_name": d,
                             "direction": way, "component_id": f"job:{NS}:J", "temporary": False}
                            for d, way in (("S", "INPUT"), ("O", "OUTPUT"))],
        t.CURRENT_COLUMN_LINEAGE: current_edges,
        t.CURRENT_DATASET_FIELDS: [{"namespace": NS, "name": name, "version_id": "cur", "field_path": path, "type": kind, "ordinal": i}
                                   for i, (name, path, kind) in enumerate(current_fields)],
        t.CURRENT_ALIASES: [{"alias_namespace": a, "alias_name": b, "namespace": NS, "name": "O"} for a, b in aliases],
        t.RUN_LINEAGE: [{"run_id": run, "job_namespace": NS, "job_name": "J", "state": "COMPLETE", "started_at": at, "ended_at": at,
                         "input_versions": [], "output_versions": [{"namespace": NS, "name": "O", "version_id": f"O@{run}"}],
                         "end_date": at.date()} for run, at in runs],
        t.DATASET_VERSIONS: [{"version_id": f"O@{run}", "namespace": NS, "name": "O", "run_id": run, "run_state": "COMPLETE",
                              "job_namespace": NS, "job_name": "J", "created_at": at, "created_date": at.date()} for run, at in runs],
        t.DATASET_FIELDS: [{"version_id": f"{name}@{run}", "namespace": NS, "name": name, "field_path": path, "type": kind,
                            "ordinal": i, "created_date": dict(runs)[run].date()} for i, (run, name, path, kind) in enumerate(history_fields)],
        t.COLUMN_LINEAGE: list(history_edges),
    }
    commit_rows(root, rows)
    return root


def _connections(answer) -> list[tuple[str, str]]:
    return [(c.from_.rsplit(":", 1)[1], c.to.rsplit(":", 1)[1]) for c in answer.connections]


def test_a_field_urn_by_an_alias_reads_the_datasets_schema(tmp_path):
    """The schemas are stored under the canonical name: a URN naming the dataset by its alias
    path resolves a nested path against them, as the canonical URN does (it fell back to
    `items.sku`, a field that does not exist: an empty answer, or NodeNotFound)."""
    root = _warehouse(
        str(tmp_path / "wh"), current_fields=[("O", p, k) for p, k in ITEMS],
        current_edges=[_current_edge("r", "O", "items._element.sku", "S", "a", T1)], runs=[("r", T1)],
        history_edges=[_edge("r", "O", "items._element.sku", "S", "a", T1)], aliases=[("s3://lake", "/warehouse/O")],
    )
    with LineageQuery(root) as query:
        for ns, name in ((NS, "O"), ("s3://lake", "/warehouse/O")):
            for path in (V2_SKU, "items.sku"):
                urn = field_urn(ns, name, path)
                assert _connections(query.field_operations(urn, **WINDOW)) == [("a", "items._element.sku")], (name, path)
                assert sorted(n.data["field"] for n in query.column_lineage(urn).graph) == ["a", "items._element.sku"], (name, path)


def test_a_field_urn_of_a_field_the_dataset_no_longer_has_reads_its_past_schemas(tmp_path):
    """O had `items._element.sku` on June 1 and only `x` since June 5: a question about June 1
    by the field's URN, v1 or v2, answers what it answers by the stored name (the URN was read
    against the current schema only)."""
    root = _warehouse(
        str(tmp_path / "wh"), current_fields=[("O", "x", "string")],
        current_edges=[_current_edge("r2", "O", "x", "S", "a", T2)], runs=[("r1", T1), ("r2", T2)],
        history_fields=[*[("r1", "O", p, k) for p, k in ITEMS], ("r2", "O", "x", "string")],
        history_edges=[_edge("r1", "O", "items._element.sku", "S", "sku", T1), _edge("r2", "O", "x", "S", "a", T2)],
    )
    with LineageQuery(root) as query:
        by_name = _connections(query.field_operations(NS, "O", "items._element.sku", **WINDOW))
        assert by_name == [("sku", "items._element.sku")]
        for path in (V2_SKU, "items.sku"):
            assert _connections(query.field_operations(field_urn(NS, "O", path), **WINDOW)) == by_name, path


def test_field_operations_of_a_field_nobody_knows_is_node_not_found(tmp_path):
    """O only ever had `x`; a run in the window filtered on S.active (a dataset-wide dependency).
    A field O never had is NodeNotFound, as `column_lineage` says (it answered the filter)."""
    root = _warehouse(
        str(tmp_path / "wh"), current_fields=[("O", "x", "string")],
        current_edges=[_current_edge("r", "O", "x", "S", "a", T1)], runs=[("r", T1)], history_fields=[("r", "O", "x", "string")],
        history_edges=[_edge("r", "O", "x", "S", "a", T1), _edge("r", "O", None, "S", "active", T1, ("INDIRECT", "FILTER"))],
    )
    with LineageQuery(root) as query:
        assert ("a", "x") in _connections(query.field_operations(NS, "O", "x", **WINDOW))
        for direction in ("backward", "forward"):
            with pytest.raises(NodeNotFound, match="no field 'no_such_field'"):
                query.field_operations(NS, "O", "no_such_field", **WINDOW, direction=direction)


def test_fine_grained_lineage_names_only_datahub_fields(tmp_path):
    """A filter's dataset-wide dependency reaches every field of O, the array's structural
    `items._element` record among the stored ones: DataHub has no such field, so the aspect
    leaves it out (it exported `items._element` as a path, neither v1 nor v2)."""
    root = _warehouse(
        str(tmp_path / "wh"),
        current_fields=[*[("O", p, k) for p, k in ITEMS], ("S", "sku", "string"), ("S", "active", "boolean")],
        current_edges=[_current_edge("r", "O", "items._element.sku", "S", "sku", T1),
                       _current_edge("r", "O", None, "S", "active", T1, ("INDIRECT", "FILTER"))],
    )
    with LineageQuery(root) as query:
        for version, expected in (("v1", ["items", "items.sku"]), ("v2", ["[version=2.0].[type=struct].[type=array].[type=struct].items", V2_SKU])):
            aspect = query.fine_grained_lineage(NS, "O", path_version=version)
            assert sorted({parse_urn(d).path for f in aspect.fineGrainedLineages for d in f.downstreams}) == expected, version


def test_a_union_members_field_keeps_its_v2_path_where_v1_names_two_fields(tmp_path):
    """O.x comes from S's union member `u._1.f`; `u._0.f` has the v1 path `u.f` too. The v1
    aspect names the member by its v2 path (before: `u.f`, whose URN led to `u._0.f`), and that
    URN leads back to `u._1.f`; the v1 URN `u.f` is a ValueError naming both v2 paths."""
    union = [("u", "union"), ("u._0", "A"), ("u._0.f", "string"), ("u._1", "B"), ("u._1.f", "string")]
    root = _warehouse(
        str(tmp_path / "wh"),
        current_fields=[("O", "x", "string"), *[("S", p, k) for p, k in union]],
        current_edges=[_current_edge("r", "O", "x", "S", "u._1.f", T1)],
    )
    member = "[version=2.0].[type=struct].[type=union].[type=B].u.[type=string].f"
    with LineageQuery(root) as query:
        aspect = query.fine_grained_lineage(NS, "O", path_version="v1")
        [upstream] = [u for f in aspect.fineGrainedLineages for u in f.upstreams]
        assert parse_urn(upstream).path == member
        assert [parse_urn(d).path for f in aspect.fineGrainedLineages for d in f.downstreams] == ["x"]  # not shared: v1
        downstream = query.column_lineage(upstream, with_downstream=True)
        assert f"datasetField:{NS}:S:u._1.f" in {n.id for n in downstream.graph}
        with pytest.raises(ValueError, match="names 2 fields"):
            query.column_lineage(field_urn(NS, "S", "u.f"))
