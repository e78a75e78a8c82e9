"""DataHub URNs in the query helper (DESIGN.md section 8): every query that takes a node id, or a
dataset's namespace and name, also takes a dataset or schemaField URN, its field path in v1 or
v2 form; and `fine_grained_lineage` exports a dataset's current column lineage as DataHub's
`UpstreamLineage` aspect.

A URN is resolved against the datasets the loaded commit knows (an index from URN to dataset,
built once per commit on the first URN asked, `identity.datahub.UrnIndex`); a field path against
the dataset's current schema, unflattened back into the schema facet's nested form so that a v2
path (`[version=2.0].[type=struct].[type=array].[type=struct].items.sku`) finds the field the
pipeline stores as `items._element.sku`. A path the schema does not hold is read as a v1 path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import duckdb

from lineage_assets.identity.datahub import (
    FS_PLATFORMS,
    DataHubConfig,
    DatasetUrn,
    FieldPath,
    FieldUrn,
    UrnIndex,
    dataset_urn,
    field_paths,
    field_urn,
    normalise_path,
    parse_urn,
    resolve_field,
    shared_v1_paths,
)
from lineage_assets.identity.partitions import DEFAULT_RULES, PartitionRule, fold_name
from lineage_assets.query.datahub_models import FineGrainedLineage, Upstream, UpstreamLineage
from lineage_assets.query.models import LineageGraph
from lineage_assets.query.node_ids import MAX_ID_LENGTH, NodeNotFound, NodeRef

URN_PREFIX = "urn:li:"
_FILE_PLATFORMS = frozenset(FS_PLATFORMS.values()) | {"hdfs"}  # DataHub platforms whose dataset names are paths

# Every dataset the current tables name (and, once the history is loaded, the history's): the
# identifiers a URN can stand for. Aliases are included: an alias's URN resolves to the alias,
# which the helper then maps to its canonical dataset like any other identifier.
_CURRENT_DATASETS = """
    SELECT dataset_namespace, dataset_name FROM edges
    UNION SELECT namespace, name FROM cdf
    UNION SELECT output_namespace, output_name FROM ccl
    UNION SELECT input_namespace, input_name FROM ccl
    UNION SELECT alias_namespace, alias_name FROM aliases
"""
_HISTORY_DATASETS = " UNION SELECT namespace, name FROM hist_versions UNION SELECT input_namespace, input_name FROM hist_cl"


def is_urn(value: object) -> bool:
    return isinstance(value, str) and value.startswith(URN_PREFIX)


def unflatten(rows: Iterable[tuple[str, str | None]]) -> list[dict]:
    """The schema facet's nested `fields` back from its flattened (field_path, type) rows in
    ordinal order (parents before their members, as `flatten_schema` writes them): a path's
    parent is its longest proper dotted prefix that is itself a field."""
    top: list[dict] = []
    by_path: dict[str, dict] = {}
    for path, type_text in rows:
        entry: dict = {"name": path, "type": type_text}
        cut = path.rfind(".")
        while cut > 0:
            parent = by_path.get(path[:cut])
            if parent is not None:
                entry["name"] = path[cut + 1:]
                parent.setdefault("fields", []).append(entry)
                break
            cut = path.rfind(".", 0, cut)
        else:
            top.append(entry)
        by_path.setdefault(path, entry)
    return top


class UrnResolver:
    """URN -> node for one helper; its index follows the helper's loaded commit."""

    def __init__(self, config: DataHubConfig, rules: tuple[PartitionRule, ...] = DEFAULT_RULES):
        self.config = config
        self.rules = rules
        self._key: tuple | None = None
        self._index: UrnIndex | None = None

    def _datasets(self, con: duckdb.DuckDBPyConnection, key: tuple) -> UrnIndex:
        if key != self._key or self._index is None:
            sql = _CURRENT_DATASETS + (_HISTORY_DATASETS if key[1] else "")
            self._index = UrnIndex.build(con.execute(sql).fetchall(), self.config)
            self._key = key
        return self._index

    def resolve(
        self, con: duckdb.DuckDBPyConnection, seq: int, urn: str, with_history: bool = False,
        canonical: Callable[[str, str], tuple[str, str]] = lambda ns, name: (ns, name),
    ) -> NodeRef:
        """The dataset or field node a URN names: ValueError when it is malformed or stands for
        two datasets, NodeNotFound when no known dataset has it. A field's path is read against
        the schemas of the dataset the URN stands for (`canonical`: an alias's dataset, whose
        schemas are stored under the canonical name): its current one, then, with the history
        loaded, each of its versions' newest first (a field it no longer has)."""
        if len(urn) > MAX_ID_LENGTH:
            raise ValueError(f"URN of {len(urn)} characters is longer than {MAX_ID_LENGTH}")
        parsed = parse_urn(urn)
        index = self._datasets(con, (seq, with_history))
        found = index.resolve(urn)
        if found is None and (folded := self._partition_folded(parsed)) is not None:
            found = index.resolve(folded)
        if found is None:
            raise NodeNotFound(f"no dataset of the warehouse has the URN {urn!r} (ENV {self.config.env})")
        namespace, name, _v1 = found
        if not isinstance(parsed, FieldUrn):
            return NodeRef("dataset", namespace, name)
        schemas_of = canonical(namespace, name)
        field = resolve_field(self.paths(con, *schemas_of), parsed.path)
        if field is None and with_history:
            field = next(filter(None, (resolve_field(paths, parsed.path) for paths in self.history_paths(con, *schemas_of))), None)
        return NodeRef("datasetField", namespace, name, field or normalise_path(parsed.path))

    def _partition_folded(self, parsed: DatasetUrn | FieldUrn) -> str | None:
        """The URN of the dataset a URN's partition belongs to (`p0.t$20240101` -> `p0.t`, a
        file system's `bucket/t/date=2024-01-01` -> `bucket/t`: the partition rules on its
        DataHub name, a file platform's name as a path), as a node id naming a partition resolves;
        None when the name has no partition."""
        dataset = parsed.dataset if isinstance(parsed, FieldUrn) else parsed
        namespace = "file" if dataset.platform in _FILE_PLATFORMS else dataset.platform
        name, partition = fold_name(namespace, dataset.name, self.rules)
        if partition is None:
            return None
        return DatasetUrn(dataset.platform, name, dataset.env).urn

    @staticmethod
    def paths(con: duckdb.DuckDBPyConnection, namespace: str, name: str) -> list[FieldPath]:
        """The DataHub paths of a dataset's current schema (its past ones: `history_paths`)."""
        rows = con.execute(
            "SELECT field_path, type FROM cdf WHERE namespace = ? AND name = ? ORDER BY ordinal, field_path", [namespace, name],
        ).fetchall()
        return field_paths(unflatten(rows))

    @staticmethod
    def history_paths(con: duckdb.DuckDBPyConnection, namespace: str, name: str) -> Iterator[list[FieldPath]]:
        """The DataHub paths of each distinct schema of a dataset's versions, newest first (the
        history loaded)."""
        rows = con.execute(
            "SELECT list(f.field_path ORDER BY f.field_path), list(f.type ORDER BY f.field_path) "  # parents first
            "FROM hist_fields f JOIN hist_versions v USING (version_id) WHERE f.namespace = ? AND f.name = ? "
            "GROUP BY v.version_id, v.created_at ORDER BY v.created_at DESC, v.version_id DESC", [namespace, name],
        ).fetchall()
        seen: set[tuple] = set()
        for paths, types in rows:
            schema = tuple(zip(paths, types))
            if schema not in seen:
                seen.add(schema)
                yield field_paths(unflatten(schema))

    def dataset_urn(self, namespace: str, name: str) -> str:
        return dataset_urn(namespace, name, self.config)


def _operation(transformation: dict | None, legacy_type: str | None, legacy_description: str | None) -> str | None:
    """`TYPE:SUBTYPE`, `:MASKED` when the transformation masks, then the description in
    parentheses: DataHub's aspect has one free-text field for the operation, and the converter's
    loss of masking and descriptions is what this export does not repeat."""
    if transformation is None:
        text, description = legacy_type, legacy_description
    else:
        parts = [transformation.get("type") or "UNKNOWN", transformation.get("subtype") or "UNKNOWN"]
        if transformation.get("masking"):
            parts.append("MASKED")
        text, description = ":".join(parts), transformation.get("description")
    if description:
        text = f"{text} ({description})" if text else f"({description})"
    return text


def upstream_lineage(
    graph: LineageGraph, namespace: str, name: str, upstream_datasets: Iterable[tuple[str, str]],
    urn_of: Callable[[str, str], str], field_urn_of: Callable[[str, str, str], str | None],
) -> UpstreamLineage:
    """The `upstreamLineage` aspect of a dataset from its depth-1 column answer: `upstreams`, one
    per dataset its current writers read (TRANSFORMED) or a column edge names; one
    `fineGrainedLineages` entry per (downstream field, distinct transformation) with every input
    field that transformation reads (FIELD_SET -> FIELD). Ordered, so equal answers give equal
    aspects."""
    groups: dict[tuple[str, str | None], set[str]] = {}
    datasets = set(upstream_datasets)
    for node in graph.graph:
        data = node.data
        if (data["namespace"], data["dataset"]) != (namespace, name):
            continue
        downstream = field_urn_of(namespace, name, data["field"])
        for entry in data["inputFields"]:
            datasets.add((entry["namespace"], entry["dataset"]))
            upstream = field_urn_of(entry["namespace"], entry["dataset"], entry["field"])
            if downstream is None or upstream is None:  # no DataHub field (`field_urn_function`)
                continue
            kinds = entry["transformations"] or [None]
            for t in kinds:
                op = _operation(t, entry.get("transformationType"), entry.get("transformationDescription"))
                groups.setdefault((downstream, op), set()).add(upstream)
    fine = [
        FineGrainedLineage(upstreamType="FIELD_SET", upstreams=sorted(ups), downstreamType="FIELD", downstreams=[down],
                           transformOperation=op)
        for (down, op), ups in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or ""))
    ]
    upstreams = sorted({urn_of(ns, nm) for ns, nm in datasets})
    return UpstreamLineage(
        upstreams=[Upstream(dataset=u, type="TRANSFORMED") for u in upstreams],
        fineGrainedLineages=fine or None,
    )


def field_urn_function(resolver: UrnResolver, con: duckdb.DuckDBPyConnection, path_version: str) -> Callable[[str, str, str], str | None]:
    """(namespace, name, field) -> field URN, its path in `path_version` form ('v1' or 'v2';
    a v2 path comes from the dataset's current schema, v1 when the schema lacks the field; a v1
    path two fields of the schema share, union members with one name, is given as v2), or
    None for a structural entry of the schema that DataHub has no field for (an array's
    `_element` record, a map's `key`/`value` holder: a stored path other paths continue)."""
    if path_version not in ("v1", "v2"):
        raise ValueError(f"path_version must be 'v1' or 'v2', not {path_version!r}")
    # (namespace, name) -> (its fields by facet name, the v1 paths two of them share)
    cache: dict[tuple[str, str], tuple[dict[str, FieldPath], set[str]]] = {}

    def make(namespace: str, name: str, field: str) -> str | None:
        if (namespace, name) not in cache:
            paths = resolver.paths(con, namespace, name)
            by_name: dict[str, FieldPath] = {}
            for p in paths:
                by_name.setdefault(p.ol_name, p)
            cache[(namespace, name)] = by_name, shared_v1_paths(paths)
        by_name, shared = cache[(namespace, name)]
        known = by_name.get(field)
        if known is None and any(other.startswith(field + ".") for other in by_name):
            return None  # a structural entry of the schema (an array's `_element`): no DataHub field
        # a v1 path that two union members share would lead back to either: such a field keeps its v2 path
        v1 = path_version == "v1" and (known is None or known.v1 not in shared)
        path = field if known is None else (known.v1 if v1 else known.v2)
        return field_urn(namespace, name, path, resolver.config)

    return make
