"""The dataset resource (the reference server's Dataset, DESIGN.md section 8) with its column
lineage, from the loaded history (`hist_versions`), the current fields (`cdf`) with their tags
(the newest tags facet's, `tagged_fields.field_tag_names`), the facets of the run that wrote the
current version (`runs`, one partition) and a depth-1 column answer."""

from __future__ import annotations

import datetime as dt
import json
from urllib.parse import urlparse

import duckdb

from lineage_assets.query.field_history import iso
from lineage_assets.query.field_models import ColumnLineageEntry, DatasetResource, EndPoint, InputFieldRef, SchemaField
from lineage_assets.query.models import LineageGraph
from lineage_assets.warehouse import commits

STREAM_SCHEMES = ("kafka", "pulsar", "kinesis", "pubsub")  # namespaces of message streams: type STREAM


def dataset_resource(
    con: duckdb.DuckDBPyConnection, commit: commits.Commit, namespace: str, name: str, columns: LineageGraph,
    aliases: list[dict[str, str]], tags: dict[str, list[str]],
) -> DatasetResource:
    versions = con.execute(
        "SELECT version_id, run_state, created_at, lifecycle_state, run_id, created_date FROM hist_versions "
        "WHERE namespace = ? AND name = ? ORDER BY created_at, version_id", [namespace, name],
    ).fetchall()
    complete = [v for v in versions if v[1] == "COMPLETE"]  # DESIGN.md section 4: written by a COMPLETE run (not a DatasetEvent's)
    current = complete[-1] if complete else None
    lifecycle = next((v[3] for v in reversed(versions) if v[3] is not None), None)
    fields = con.execute(
        "SELECT field_path, type, description FROM cdf WHERE namespace = ? AND name = ? ORDER BY ordinal, field_path", [namespace, name],
    ).fetchall()
    return DatasetResource(
        id=EndPoint(namespace=namespace, name=name),
        type="STREAM" if urlparse(namespace).scheme in STREAM_SCHEMES else "DB_TABLE",
        name=name, physicalName=name, namespace=namespace,
        createdAt=_iso_or_none(versions[0][2]) if versions else None,
        updatedAt=_iso_or_none(versions[-1][2]) if versions else None,
        fields=[SchemaField(name=f, type=t, tags=tags.get(f, []), description=d) for f, t, d in fields],
        currentVersion=current[0] if current else None,
        lastModifiedAt=_iso_or_none(current[2]) if current else None,
        lastLifecycleState=lifecycle,
        facets=_facets(con, commit, namespace, name, current[4], current[5]) if current and current[4] else {},
        columnLineage=column_lineage_entries(columns, namespace, name),
        aliases=[EndPoint(**a) for a in aliases],
    )


def column_lineage_entries(graph: LineageGraph, namespace: str, name: str) -> list[ColumnLineageEntry]:
    """`columnLineage` of a dataset: one entry per output field with its input fields, from a
    column answer (each input's legacy transformation, else its first detailed one)."""
    out = []
    for node in graph.graph:
        data = node.data
        if (data["namespace"], data["dataset"]) != (namespace, name) or not data["inputFields"]:
            continue
        inputs = []
        for i in data["inputFields"]:
            first = i["transformations"][0] if i["transformations"] else {}
            inputs.append(InputFieldRef(
                namespace=i["namespace"], dataset=i["dataset"], field=i["field"],
                transformationDescription=i["transformationDescription"] or first.get("description"),
                transformationType=i["transformationType"] or first.get("type"),
            ))
        out.append(ColumnLineageEntry(name=data["field"], inputFields=inputs))
    return sorted(out, key=lambda e: e.name)


def _facets(con: duckdb.DuckDBPyConnection, commit: commits.Commit, namespace: str, name: str, run_id: str, day: dt.date) -> dict:
    """The dataset facets the run that wrote the current version reported for it (one partition of `runs`)."""
    files = commit.files("runs", lambda p: p["end_date"] == str(day))
    rows = con.execute(
        f"SELECT o.facets FROM (SELECT unnest(outputs) AS o FROM ({commits.duckdb_files_sql('runs', files)}) WHERE run_id = ?) "
        "WHERE o.namespace = ? AND o.name = ?", [run_id, namespace, name],
    ).fetchall()
    return json.loads(rows[0][0]) if rows and rows[0][0] else {}


def _iso_or_none(value: dt.datetime | None) -> str | None:
    return iso(value) if value else None
