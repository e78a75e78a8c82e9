"""Field tags (DESIGN.md section 9): the tags a dataset's newest `tags` facet states, and the
fields a tag reaches downstream along the current column lineage.

A tag follows DIRECT edges only and stops at a masking transformation: a `pii` field reaches
every field copied or computed from it, not its hash. Plain functions over the tables `tag_rows`
(field_tags) and `ccl` (current column lineage) of a `LineageQuery` connection.
"""

from __future__ import annotations

from collections import deque

import duckdb

from lineage_assets.query.field_models import EndPoint
from lineage_assets.query.node_ids import field_node
from lineage_assets.query.field_history import iso
from lineage_assets.query.recipe_models import DatasetTag, DatasetTags, TaggedField, TaggedFields, TagHop

CURRENT_TAGS_SQL = (
    "WITH newest AS (SELECT namespace, name, arg_max(version_id, (created_at, version_id)) AS version_id "
    "FROM tag_rows GROUP BY namespace, name) "
    "SELECT t.namespace, t.name, t.field, t.tag_key, t.tag_value, t.source FROM tag_rows t "
    "JOIN newest USING (namespace, name, version_id) WHERE t.tag_key IS NOT NULL"
)


def dataset_tags(con: duckdb.DuckDBPyConnection, namespace: str, name: str) -> DatasetTags:
    newest = con.execute("SELECT max(created_at) FROM tag_rows WHERE namespace = ? AND name = ?", [namespace, name]).fetchone()[0]
    rows = con.execute(f"SELECT * FROM ({CURRENT_TAGS_SQL}) WHERE namespace = ? AND name = ? ORDER BY field NULLS FIRST, tag_key",
                       [namespace, name]).fetchall()
    return DatasetTags(namespace=namespace, name=name, asOf=iso(newest) if newest else None,
                       tags=[DatasetTag(field=r[2], key=r[3], value=r[4], source=r[5]) for r in rows])


def field_tag_names(con: duckdb.DuckDBPyConnection, namespace: str, name: str) -> dict[str, list[str]]:
    """Each field's tag names (keys) in the dataset's newest tags facet: the reference server's
    field `tags` (a list of names); dataset-wide tags are no field's."""
    rows = con.execute(f"SELECT DISTINCT field, tag_key FROM ({CURRENT_TAGS_SQL}) WHERE namespace = ? AND name = ? AND field IS NOT NULL "
                       "ORDER BY ALL", [namespace, name]).fetchall()
    names: dict[str, list[str]] = {}
    for field, key in rows:
        names.setdefault(field, []).append(key)
    return names


def tagged_fields(con: duckdb.DuckDBPyConnection, key: str, value: str | None, propagate: bool) -> TaggedFields:
    sql = f"SELECT * FROM ({CURRENT_TAGS_SQL}) WHERE tag_key = ? AND field IS NOT NULL"
    params: list = [key]
    if value is not None:
        sql += " AND tag_value = ?"
        params.append(value)
    rows = con.execute(sql + " ORDER BY ALL", params).fetchall()
    found: dict[tuple[str, str, str, str | None], TaggedField] = {}
    queue: deque = deque()
    for ns, name, field, tag_key, tag_value, source in rows:
        tag = TaggedField(id=field_node(ns, name, field), namespace=ns, name=name, field=field, key=tag_key, value=tag_value,
                          source=source, direct=True, taggedField=field_node(ns, name, field))
        found.setdefault((ns, name, field, tag_value), tag)
        queue.append(((ns, name, field), tag))
    while propagate and queue:
        (ns, name, field), tag = queue.popleft()
        edges = con.execute(
            "SELECT DISTINCT output_namespace, output_name, output_field, job_namespace, job_name, transformation_subtype FROM ccl "
            "WHERE input_namespace = ? AND input_name = ? AND input_field = ? AND transformation_type = 'DIRECT' "
            "AND NOT coalesce(masking, false) AND output_field IS NOT NULL ORDER BY ALL",
            [ns, name, field],
        ).fetchall()
        for o_ns, o_name, o_field, job_ns, job_name, subtype in edges:
            target = (o_ns, o_name, o_field, tag.value)
            if target in found:
                continue
            hop = TagHop(from_=tag.id, to=field_node(o_ns, o_name, o_field), job=EndPoint(namespace=job_ns, name=job_name),
                         subtype=subtype)
            derived = TaggedField(id=hop.to, namespace=o_ns, name=o_name, field=o_field, key=tag.key, value=tag.value,
                                  source=tag.source, direct=False, taggedField=tag.taggedField, path=[*tag.path, hop])
            found[target] = derived
            queue.append(((o_ns, o_name, o_field), derived))
    return TaggedFields(sorted(found.values(), key=lambda t: (t.namespace, t.name, t.field, t.value or "", not t.direct)))
