"""`LineageQuery`: lineage questions answered with DuckDB over the Parquet warehouse.

DuckDB runs in-process and only reads Parquet: it takes no lock that could block the pipeline,
the UI or another reader. Tables are read through the warehouse's latest commit (the files it
lists), so an answer always comes from one whole commit, even while the next is being written. Node ids
never reach SQL as text: every value is a bound parameter.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

import duckdb

from lineage_assets.cycle_collection import no_cycle_collection
from lineage_assets.identity.datahub import DataHubConfig
from lineage_assets.identity.partitions import fold_name, load_rules
from lineage_assets.intake.decode import has_surrogate
from lineage_assets.query.column_graph import ColumnGraph
from lineage_assets.query.dataset_resource import dataset_resource
from lineage_assets.query.datahub_models import UpstreamLineage
from lineage_assets.query.field_history import Window, field_edges, field_list, mappings, operations
from lineage_assets.query.field_models import DatasetResource, FieldList, FieldMappings, FieldOperations
from lineage_assets.query.job_graph import JobGraph
from lineage_assets.query.models import LineageGraph, Node, answer, edge, node
from lineage_assets.query.recipe_history import column_directives as recipe_directives
from lineage_assets.query.recipe_history import column_trace, load_ops, paths_to_inputs
from lineage_assets.query.recipe_models import ColumnDirectives, ColumnTrace, DatasetTags, TaggedFields
from lineage_assets.query.tagged_fields import dataset_tags, field_tag_names, tagged_fields
from lineage_assets.query.traversal import check_depth
from lineage_assets.query.urns import UrnResolver, field_urn_function, is_urn, upstream_lineage
from lineage_assets.query.node_ids import (
    KINDS,
    NodeNotFound,
    NodeRef,
    candidates,
    dataset_node,
    dataset_node_sql,
    field_node,
    job_node_sql,
    split_version,
)
from lineage_assets.warehouse import commits

T = TypeVar("T")
PART_NEEDS_NO_COLUMNS = "a query of part of the current graph answers lineage() only: give columns=False"


@dataclass(frozen=True)
class GraphPart:
    """Part of the current graph to load: whole components (by component id) and jobs (by node
    id), each job with all its edges. `lineage()` of a node answers as over the whole graph when
    the part holds every job its walk reaches (a whole component holds every walk from its
    nodes); other nodes are not found."""

    components: frozenset[str] = frozenset()
    jobs: frozenset[str] = frozenset()


_READ_ERRORS = (duckdb.IOException, duckdb.InvalidInputException)  # a file missing, truncated or not Parquet


class WarehouseReadError(OSError):
    """A committed file could not be read (truncated, removed, unreadable). Nothing is kept of
    the failed load: the next call reads the latest commit again."""


class LineageQuery:
    """Answers `lineage()` (current graph, depth in job hops) over a warehouse folder."""

    def __init__(self, warehouse: str, columns: bool = True, part: GraphPart | None = None):
        """`columns=False`: the current job graph only (`lineage()`), for a caller that draws it;
        the column tables are not loaded, and a question about columns raises. `part`: only that
        part of the current graph is loaded (`restrict`; with columns=False), for a caller that
        draws some of it."""
        if columns and part is not None:
            raise ValueError(PART_NEEDS_NO_COLUMNS)
        self.warehouse = str(warehouse)
        self._part = part
        self._con = duckdb.connect()
        self._con.execute("SET TimeZone = 'UTC'")
        self._seq: int | None = None
        self._commit: commits.Commit | None = None
        self._lock = threading.Lock()
        self._columns = ColumnGraph(self._con, self.warehouse, self, enabled=columns)
        self._rules = load_rules()
        self._canonical: dict[tuple[str, str], tuple[str, str]] = {}  # alias -> canonical (current_aliases)
        self._aliases: dict[tuple[str, str], list[dict[str, str]]] = {}  # canonical -> its aliases
        self._jobs = JobGraph()
        self._urns = UrnResolver(DataHubConfig.from_env(), self._rules)
        self._loaded_at: dict[str, int | None] = {}  # DuckDB table -> commit seq it was loaded at

    # ------------------------------------------------------------------ loading

    @property
    def part(self) -> GraphPart | None:
        """The part of the current graph loaded (`restrict`); None: all of it."""
        return self._part

    def restrict(self, part: GraphPart) -> None:
        """Load only `part` of the current graph from the next question on (columns=False)."""
        if self._columns.enabled:
            raise ValueError(PART_NEEDS_NO_COLUMNS)
        with self._lock:
            self._part = part
            self._seq = self._commit = None

    def _refresh(self, attempts: int = 10) -> None:
        """Load the newest commit's current graph if the warehouse moved on. The tables are loaded
        in one transaction, so a half-loaded commit is never answered from (`_read_newest`)."""

        def load(commit: commits.Commit) -> None:
            if commit.seq == self._seq:
                return
            self._con.execute("BEGIN TRANSACTION")
            self._load(commit)
            self._con.execute("COMMIT")
            self._seq, self._commit = commit.seq, commit

        def undo() -> None:  # the connection is left clean whatever failed: the next call loads again
            self._con.execute("ROLLBACK")
            self._seq = self._commit = None

        self._read_newest(load, attempts, undo)

    def _read_newest(self, read: Callable[[commits.Commit], T], attempts: int, undo: Callable[[], None] = lambda: None) -> T:
        """`read(commit)` of the newest commit. A file that vanishes while being read (the commit
        was pruned meanwhile) gives way to the newest commit; a file that cannot be read is a
        WarehouseReadError. `undo` runs after any DuckDB error."""
        for attempt in range(attempts):
            commit = commits.latest(self.warehouse)
            try:
                return read(commit)
            except duckdb.Error as exc:
                undo()
                if isinstance(exc, duckdb.IOException) and attempt < attempts - 1:
                    time.sleep(0.01 * (attempt + 1))
                    continue
                if isinstance(exc, _READ_ERRORS):
                    raise WarehouseReadError(f"cannot read commit {commit.seq} of {self.warehouse}: {exc}") from exc
                raise
        raise AssertionError("every attempt returns or raises")

    def _load(self, commit: commits.Commit) -> None:
        con = self._con
        where, chosen = ("", []) if self._part is None else (
            " WHERE list_contains(?, component_id) OR list_contains(?, job_id)", [sorted(self._part.components), sorted(self._part.jobs)])
        con.execute(
            f"CREATE OR REPLACE TABLE edges AS SELECT {job_node_sql()} AS job_id, {dataset_node_sql()} AS dataset_id, "
            "job_namespace, job_name, dataset_namespace, dataset_name, direction, component_id, coalesce(temporary, false) AS temporary "
            f"FROM ({commits.duckdb_relation_sql(commit, 'current_lineage')}){where}", chosen,
        )
        con.execute(
            f"CREATE OR REPLACE TABLE jobs AS SELECT {job_node_sql()} AS job_id, * FROM ({commits.duckdb_relation_sql(commit, 'current_jobs')}){where}",
            chosen,
        )
        con.execute(f"CREATE OR REPLACE TABLE aliases AS {commits.duckdb_relation_sql(commit, 'current_aliases')}")
        rows = con.execute("SELECT alias_namespace, alias_name, namespace, name FROM aliases ORDER BY ALL").fetchall()
        self._canonical = {(a, b): (c, d) for a, b, c, d in rows}
        self._aliases = {}
        for a, b, c, d in rows:
            self._aliases.setdefault((c, d), []).append({"namespace": a, "name": b})
        self._jobs = JobGraph.load(con, self.aliases_of)
        if self._columns.enabled:
            self._columns.load_current(commit)

    def _load_history(self) -> None:
        """The history tables of the commit loaded (`ColumnGraph.load_history`); a file that cannot
        be read is a WarehouseReadError, as in `_refresh`, and the next call loads them again.
        The caller holds the lock and has refreshed."""
        try:
            self._columns.load_history(self._commit)
        except _READ_ERRORS as exc:
            raise WarehouseReadError(f"cannot read the history of commit {self._seq} of {self.warehouse}: {exc}") from exc

    # ------------------------------------------------------------------ resolution

    def canonical(self, ref: NodeRef) -> NodeRef:
        """A dataset or field node named by any of its identifiers (an alias, a partition) as its
        canonical node: the partition rules fold the name, then the current aliases map it (one
        dictionary lookup: an alias costs what a canonical id costs). Jobs are as given."""
        if ref.kind == "job":
            return ref
        namespace, name = self.canonical_name(ref.namespace, fold_name(ref.namespace, ref.name, self._rules)[0])
        if (namespace, name) == (ref.namespace, ref.name):
            return ref
        return NodeRef(ref.kind, namespace, name, ref.field, ref.version)

    def canonical_name(self, namespace: str, name: str) -> tuple[str, str]:
        """The dataset an identifier stands for now (itself when it is no alias)."""
        return self._canonical.get((namespace, name), (namespace, name))

    def aliases_of(self, namespace: str, name: str) -> list[dict[str, str]]:
        """The identifiers that stand for a canonical dataset now: a copy (answers hand it out)."""
        return [dict(alias) for alias in self._aliases.get((namespace, name), ())]

    def resolve_urn(self, urn: str) -> NodeRef:
        """The canonical dataset or field node a DataHub URN names in the current graph
        (ValueError when malformed or ambiguous, NodeNotFound when unknown)."""
        with self._lock:
            self._refresh()
            return self.canonical(self._urn_ref(urn))

    def _urn_ref(self, urn: str, with_history: bool = False) -> NodeRef:
        """The dataset or field node a DataHub URN names (v1 or v2 field path). The caller holds
        the lock and has refreshed."""
        return self._urns.resolve(self._con, self._seq, urn, with_history, self._schema_name)

    def _schema_name(self, namespace: str, name: str) -> tuple[str, str]:
        """The canonical dataset whose schemas a name's fields are read against (`canonical`)."""
        ref = self.canonical(NodeRef("dataset", namespace, name))
        return ref.namespace, ref.name

    def _exists(self, ref: NodeRef) -> bool:
        if ref.kind == "job":
            return self._jobs.has_job(ref.namespace, ref.name)
        return self._jobs.has_dataset(ref.namespace, ref.name)

    def resolve(self, node_id: str | None = None, *, node_type: str | None = None, namespace: str | None = None, name: str | None = None) -> NodeRef:
        """A node id, or structured arguments, to the one node it names (NodeNotFound otherwise)."""
        if namespace is not None or name is not None:
            kind = node_type or (node_id.split(":", 1)[0] if node_id else None)
            if kind not in ("job", "dataset") or not namespace or not name:
                raise ValueError("structured lookup needs node_type='job' or 'dataset', namespace= and name=")
            refs = [NodeRef(kind, namespace, name)]
        else:
            if node_id is None:
                raise ValueError("give a node id or node_type=, namespace= and name=")
            if is_urn(node_id):
                refs = [self._urn_ref(node_id)]
                if refs[0].kind != "dataset":
                    raise ValueError(f"lineage() takes a job or dataset: {node_id!r} is a field URN (column_lineage() takes it)")
                return _one_match([self.canonical(r) for r in refs], self._exists, node_id, "the current lineage graph", "namespace= and name=")
            refs = [r for r in candidates(node_id) if r.kind in ("job", "dataset")]
            if not refs:
                raise ValueError(f"lineage() takes a job or dataset node, not {node_id!r}")
            if split_version(node_id)[1] is not None:  # a version, unless the id names a node whole (a '#' in its name)
                refs = [r for r in refs if r.version is None]
                if not any(self._exists(self.canonical(r)) for r in refs):
                    raise ValueError(f"lineage() answers the current graph: node id {node_id!r} names a version (#...); column_lineage() takes versions")
        return _one_match([self.canonical(r) for r in refs], self._exists, node_id, "the current lineage graph", "namespace= and name=")

    # ------------------------------------------------------------------ lineage

    def lineage(
        self, node_id: str | None = None, depth: int = 20, *, node_type: str | None = None, namespace: str | None = None,
        name: str | None = None, include_temporary: bool = False,
    ) -> LineageGraph:
        """The current graph around a job or dataset, `depth` job hops in either direction.

        Temporary datasets (DESIGN.md section 10) are hidden unless `include_temporary`: a job
        that writes one gets an edge straight to each job that reads it (`bridged` in the job's
        data lists them); a temporary dataset asked for by name is shown."""
        depth = check_depth(depth)
        _check_types(node_id=node_id, node_type=node_type, namespace=namespace, name=name, include_temporary=include_temporary)
        with self._lock:
            self._refresh()
            ref = self.resolve(node_id, node_type=node_type, namespace=namespace, name=name)
            with no_cycle_collection():
                reach = self._jobs.reach(ref.kind, ref.namespace, ref.name, depth)
                if include_temporary or not self._jobs.has_temporary[reach.jobs].any():
                    return self._jobs.answer(reach, _start_node(ref, self.aliases_of))
                job_rows, edge_rows = self._jobs.rows(reach.jobs)
                return _graph(ref, job_rows, edge_rows, self.aliases_of, include_temporary)

    # ------------------------------------------------------------------ column lineage

    def column_lineage(
        self,
        node_id: str | None = None,
        depth: int = 20,
        with_downstream: bool = False,
        dataset_version: str | None = None,
        lineage_at: dt.datetime | str | None = None,
        *,
        node_type: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        field: str | None = None,
        include_temporary: bool = False,
    ) -> LineageGraph:
        """Field-level lineage from a field, a dataset (all its fields) or a job (the fields of
        the datasets its current version writes). Upstream by default, downstream on request;
        depth counts field hops. Point in time by dataset version id (or `#version` in the id) or
        by timestamp (`lineage_at`: a datetime or ISO-8601 text, UTC unless it has an offset; a
        date alone, as a `datetime.date` or as text, means the end of that day): node ids in such
        an answer carry `#version`. Current answers bridge fields through temporary datasets
        (A.x -> tmp.y -> B.z gives A.x for B.z, `through` tmp.y) unless `include_temporary`."""
        depth = check_depth(depth)
        _check_types(node_id=node_id, node_type=node_type, namespace=namespace, name=name, field=field,
                     dataset_version=dataset_version, with_downstream=with_downstream, include_temporary=include_temporary)
        at = _timestamp(lineage_at)
        with self._lock:
            self._refresh()
            if node_id is not None and namespace is None and not is_urn(node_id):
                _, id_version = split_version(node_id) if isinstance(node_id, str) else (None, None)
                if id_version is not None and self._names_a_node_whole(node_id):  # a '#' in a name, not a version
                    id_version = None
                if id_version is not None:
                    if dataset_version is not None and dataset_version != id_version:
                        raise ValueError(f"node id {node_id!r} names version {id_version!r} but dataset_version={dataset_version!r}")
                    dataset_version = id_version
            if dataset_version is not None and at is not None:
                raise ValueError("give dataset_version or lineage_at, not both")
            versioned = dataset_version is not None or at is not None
            if versioned:
                self._load_history()
            ref = self._resolve_column_start(node_id, node_type, namespace, name, field, versioned)
            if ref.kind == "job" and dataset_version is not None:
                raise ValueError("dataset_version applies to a dataset or field node, not a job: use lineage_at")
            seeds = self._column_seeds(ref, dataset_version, at)
            return self._columns.traverse(seeds, depth, with_downstream, versioned, include_temporary)

    def _column_seeds(self, ref: NodeRef, version: str | None, at: dt.datetime | None) -> list[tuple]:
        cols = self._columns
        versioned = version is not None or at is not None
        if ref.kind == "job":
            if at is not None:
                datasets = cols.job_outputs_at(ref.namespace, ref.name, at)
            else:
                datasets = [
                    (r[0], r[1], None) for r in self._con.execute(
                        "SELECT DISTINCT dataset_namespace, dataset_name FROM edges WHERE job_namespace = ? AND job_name = ? "
                        "AND direction = 'OUTPUT' ORDER BY 1, 2", [ref.namespace, ref.name],
                    ).fetchall()
                ]
        else:
            datasets = [(ref.namespace, ref.name, cols.version_of(ref.namespace, ref.name, version, at) if versioned else None)]
        seeds = []
        for ns, name, dv in datasets:
            fields = [ref.field] if ref.kind == "datasetField" else cols.dataset_fields(ns, name, dv)
            seeds += [(ns, name, f, dv) if versioned else (ns, name, f) for f in fields]
        return seeds

    def _resolve_column_start(self, node_id, node_type, namespace, name, field, versioned: bool) -> NodeRef:
        if namespace is not None or name is not None or field is not None:
            kind = node_type or ("datasetField" if field is not None else "dataset")
            if kind not in KINDS or not namespace or not name or (kind == "datasetField") != (field is not None and field != ""):
                raise ValueError("structured lookup needs node_type= (job, dataset or datasetField), namespace=, name= and, for a field, field=")
            refs = [NodeRef(kind, namespace, name, field if kind == "datasetField" else None)]
        else:
            if node_id is None:
                raise ValueError("give a node id or node_type=, namespace=, name= (and field=)")
            refs = [self._urn_ref(node_id, versioned)] if is_urn(node_id) else candidates(node_id)
        return _one_match(
            [self.canonical(r) for r in refs], lambda r: self._column_node_exists(r, versioned), node_id, "the column lineage",
            "namespace=, name= and field=",
        )

    def _names_a_node_whole(self, node_id: str) -> bool:
        """Whether an id ending in `#...` names a node of the column lineage as it is (its name
        or field holds the '#'), rather than a version of one."""
        try:
            whole = [r for r in candidates(node_id) if r.version is None]
        except ValueError:
            return False
        return any(self._column_node_exists(self.canonical(r), False) for r in whole)

    def _column_node_exists(self, ref: NodeRef, versioned: bool) -> bool:
        con = self._con
        if ref.kind == "datasetField":
            return self._columns.field_exists(ref, versioned)
        if ref.kind == "job" and not versioned:
            return self._exists(ref)
        if ref.kind == "job":
            sql = "SELECT 1 FROM hist_runs WHERE job_namespace = ? AND job_name = ? LIMIT 1"
            params = [ref.namespace, ref.name]
        elif versioned:
            sql = ("SELECT 1 FROM hist_versions WHERE namespace = ? AND name = ? "
                   "UNION ALL SELECT 1 FROM hist_edges WHERE input_namespace = ? AND input_name = ? LIMIT 1")
            params = [ref.namespace, ref.name] * 2
        else:
            return self._jobs.has_dataset(ref.namespace, ref.name) or self._columns.current.has_dataset(ref.namespace, ref.name)
        return con.execute(sql, params).fetchone() is not None

    # ------------------------------------------------------------------ field lineage over time (DESIGN.md section 8)

    def fields(
        self, namespace: str, name: str | None = None, start=None, end=None, prefix: str | None = None, include_current: bool = False,
    ) -> FieldList:
        """The fields of a dataset that took part in column lineage (as output or input field) in
        runs that ended in `[start, end)`; with `include_current`, every field of its current
        schema too (`lineage: false` when it took no part). Nested fields as dotted paths. Like
        every dataset question, it also takes a DataHub dataset URN in place of namespace and name."""
        _check_types(prefix=prefix, include_current=include_current)
        window = Window.of(start, end)
        with self._lock:
            dataset = self._window_dataset(namespace, name)
            current = self._columns.current.schemas.fields(*dataset) if include_current else None
            return field_list(self._columns.window_index(window), dataset, prefix, current)

    def field_mappings(
        self, namespace: str, name: str | None = None, start=None, end=None, direction: str = "backward", levels: int = 1,
    ) -> FieldMappings:
        """Dataset-to-dataset field mappings of the runs that ended in `[start, end)`, `levels`
        deep: backward (what fed the dataset), forward (what it fed) or both."""
        window = Window.of(start, end)
        with self._lock:
            dataset = self._window_dataset(namespace, name)
            return mappings(self._columns.window_index(window), dataset, direction, levels, self._con)

    def field_operations(
        self, namespace: str, name: str | None = None, field: str | None = None, start=None, end=None, direction: str = "backward",
    ) -> FieldOperations:
        """The detailed lineage of one field, one level: the fields it came from (backward) or
        went to (forward), the operations and connections between them, and the programs (jobs
        with every run that ended in the window). A field URN may stand for namespace, name and field."""
        _check_types(field=field)
        window = Window.of(start, end)
        with self._lock:
            dataset, field = self._window_field(namespace, name, field, "field_operations")
            if not any(self._columns.field_exists(NodeRef("datasetField", *dataset, field), versioned) for versioned in (True, False)):
                raise NodeNotFound(f"dataset {dataset[0]}:{dataset[1]} has no field {field!r} in its schemas or column lineage")
            rows = field_edges(self._con, window, (*dataset, field), direction)
            self._load_recipe_ops()
            recipe_ops = load_ops(self._con, {(r["run_id"], r["output_namespace"], r["output_name"]) for r in rows})

            def directives_of(row: dict) -> list:
                ops = recipe_ops.get((row["run_id"], row["output_namespace"], row["output_name"]))
                if not ops or row["output_field"] is None:
                    return []
                return paths_to_inputs(ops, row["output_field"]).get(row["input_field"], [])

            return operations(rows, field_node, directives_of)

    # ------------------------------------------------------------------ recipes (DESIGN.md section 9)

    def _load_table(self, table: str, target: str) -> None:
        """A committed history table as DuckDB table `target` (once per commit)."""
        if self._loaded_at.get(target) != self._seq:
            self._con.execute(f"CREATE OR REPLACE TABLE {target} AS {commits.duckdb_relation_sql(self._commit, table)}")
            self._loaded_at[target] = self._seq

    def _load_recipe_ops(self) -> None:
        self._load_table("field_operations", "recipe_ops")

    def tagged_fields(self, key: str, value: str | None = None, propagate: bool = False) -> TaggedFields:
        """Fields whose dataset's newest tags facet tags them with `key` (and `value`); with
        `propagate`, also every field derived from one through DIRECT column edges with no
        masking on the way, each with the path that carried the tag."""
        _check_types(value=value, propagate=propagate)
        if not isinstance(key, str) or not key:
            raise ValueError("key must be a non-empty string")
        with self._lock:
            self._refresh()
            self._load_table("field_tags", "tag_rows")
            return tagged_fields(self._con, key, value, propagate)

    def knows_dataset(self, namespace: str, name: str) -> bool:
        """Whether the current graph or the history names the dataset (by any identifier)."""
        with self._lock:
            try:
                self._window_dataset(namespace, name)
            except NodeNotFound:
                return False
            return True

    def dataset_tags(self, namespace: str, name: str | None = None) -> DatasetTags:
        """The tags a dataset's newest tags facet states (field None: the whole dataset). Like
        every dataset question, it takes a DataHub dataset URN in place of namespace and name,
        and raises NodeNotFound for a dataset neither the current graph nor the history knows."""
        with self._lock:
            ns, nm = self._window_dataset(namespace, name)
            self._load_table("field_tags", "tag_rows")
            return dataset_tags(self._con, ns, nm)

    def column_directives(
        self, namespace: str, name: str | None = None, field: str | None = None, start=None, end=None,
    ) -> ColumnDirectives:
        """The runs that ended in `[start, end)` and wrote the dataset, each with the recipe
        directives that touched the field (its earlier names followed back through renames);
        `recipe: false` for a run whose job carried no recipe. A schemaField URN may stand for
        namespace, name and field."""
        _check_types(field=field)
        window = Window.of(start, end)
        with self._lock:
            dataset, field = self._window_field(namespace, name, field, "column_directives")
            self._load_recipe_ops()
            return recipe_directives(self._con, dataset, field, window)

    def column_history(
        self, node_id: str | None = None, depth: int = 20, *, node_type: str | None = None, namespace: str | None = None,
        name: str | None = None, field: str | None = None,
    ) -> ColumnTrace:
        """How a field got to its current state: backward over the current column lineage,
        each hop with its job, run, transformation and the recipe directives on the way. The
        field is a node id, a schemaField URN, or (as for column_lineage()) namespace=, name=, field=."""
        return self._column_trace(node_id, "backward", depth, node_type, namespace, name, field)

    def column_impact(
        self, node_id: str | None = None, depth: int = 20, *, node_type: str | None = None, namespace: str | None = None,
        name: str | None = None, field: str | None = None,
    ) -> ColumnTrace:
        """The fields a field impacted: forward over the current column lineage, each hop with
        its recipe directives (a filter's dataset-wide dependency reaches the field `*`). The
        field is named as for column_history()."""
        return self._column_trace(node_id, "forward", depth, node_type, namespace, name, field)

    def _column_trace(self, node_id: str | None, direction: str, depth: int, node_type: str | None, namespace: str | None,
                      name: str | None, field: str | None) -> ColumnTrace:
        depth = check_depth(depth)
        _check_types(node_id=node_id, node_type=node_type, namespace=namespace, name=name, field=field)
        with self._lock:
            self._refresh()
            ref = self._resolve_column_start(node_id, node_type, namespace, name, field, False)
            if ref.kind != "datasetField":
                raise ValueError(f"column_{'history' if direction == 'backward' else 'impact'}() takes a field "
                                 f"(datasetField:NS:NAME:FIELD, a schemaField URN or field=), not {node_id if node_id is not None else ref.id!r}")
            self._load_recipe_ops()
            return column_trace(self._con, (ref.namespace, ref.name, ref.field), direction, depth)

    def dataset(self, namespace: str, name: str | None = None) -> DatasetResource:
        """The reference server's Dataset resource with its current column lineage
        (`columnLineage`: that of `column_lineage(dataset, depth=1)`); each field's `tags` are
        the names (keys) the dataset's newest tags facet gives it."""
        with self._lock:
            ns, nm = self._window_dataset(namespace, name)
            self._load_table("field_tags", "tag_rows")
            return dataset_resource(self._con, self._commit, ns, nm, self._dataset_column_lineage(ns, nm), self.aliases_of(ns, nm),
                                    field_tag_names(self._con, ns, nm))

    def fine_grained_lineage(self, namespace: str, name: str | None = None, path_version: str = "v1") -> UpstreamLineage:
        """The dataset's current column lineage as DataHub's `upstreamLineage` aspect: its
        upstream datasets (those its current writers read) and one fine-grained lineage per
        (field, distinct transformation) with the input fields, `transformOperation`
        `TYPE:SUBTYPE[:MASKED] (description)`; field URNs carry `path_version` paths (v1 dotted or
        v2 typed, from the current schema)."""
        with self._lock:
            ns, nm = self._window_dataset(namespace, name)
            field_urn_of = field_urn_function(self._urns, self._con, path_version)
            readers = self._con.execute(
                "SELECT DISTINCT i.dataset_namespace, i.dataset_name FROM edges o JOIN edges i USING (job_namespace, job_name) "
                "WHERE o.direction = 'OUTPUT' AND o.dataset_namespace = ? AND o.dataset_name = ? AND i.direction = 'INPUT' "
                "AND NOT i.temporary ORDER BY ALL", [ns, nm],
            ).fetchall()
            graph = self._dataset_column_lineage(ns, nm)
            return upstream_lineage(graph, ns, nm, readers, self._urns.dataset_urn, field_urn_of)

    def _window_field(self, namespace: str, name: str | None, field: str | None, question: str) -> tuple[tuple[str, str], str]:
        """((namespace, name), field) of a field named by its parts or by a schemaField URN (in
        `namespace`, with name and field None), the history loaded. The caller holds the lock."""
        if is_urn(namespace) and name is None and field is None:
            self._refresh()
            self._load_history()
            ref = self._urn_ref(namespace, with_history=True)
            if ref.field is None:
                raise ValueError(f"{question}() takes a field: {namespace!r} is a dataset URN")
            namespace, name, field = ref.namespace, ref.name, ref.field
        if not field:
            raise ValueError("field must be a non-empty string")
        return self._window_dataset(namespace, name), field

    def _window_dataset(self, namespace: str, name: str) -> tuple[str, str]:
        """A dataset named by any identifier, as its canonical (namespace, name), with the
        history loaded; NodeNotFound when neither the current graph nor the history knows it.
        The caller holds the lock. A dataset URN may stand for namespace and name."""
        _check_types(namespace=namespace, name=name)
        urn = is_urn(namespace) and name is None
        if not namespace or not (name or urn):
            raise ValueError("namespace and name must be non-empty strings (or give a DataHub dataset URN)")
        self._refresh()
        self._load_history()
        given = self._urn_ref(namespace, with_history=True) if urn else NodeRef("dataset", namespace, name)
        if given.field is not None:
            raise ValueError(f"a dataset question takes a dataset URN, not the field URN {namespace!r}")
        ref = self.canonical(given)
        if not (self._column_node_exists(ref, False) or self._columns.dataset_known(ref.namespace, ref.name)):
            raise NodeNotFound(f"no dataset {ref.id} in the current graph or its history")
        return ref.namespace, ref.name

    def _dataset_column_lineage(self, namespace: str, name: str) -> LineageGraph:
        ref = NodeRef("dataset", namespace, name)
        return self._columns.traverse(self._column_seeds(ref, None, None), 1, False, False, include_temporary=False)

    def current_column_edge_report(self) -> dict[str, int]:
        """`column_edge_report` of the newest commit. It reads that commit's two tables where they
        lie, so a check that asks it does not load the graph (seconds for a large one)."""
        return self._read_newest(column_edge_report, attempts=5)

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> "LineageQuery":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def column_edge_report(commit: commits.Commit) -> dict[str, int]:
    """Counts over a commit's current column edges: how many there are, how many carry a flag
    (undeclared input, field missing from its version's schema), and how many name a field that
    the current fields of a dataset with a known schema do not hold, unflagged."""
    with duckdb.connect() as con:
        ccl, cdf = (commits.duckdb_relation_sql(commit, table) for table in ("current_column_lineage", "current_dataset_fields"))
        cursor = con.execute(
            f"""
            WITH ccl AS ({ccl}), cdf AS (SELECT namespace, name, field_path FROM ({cdf})),
                 known AS (SELECT DISTINCT namespace, name FROM cdf)
            SELECT
                count(*) AS edges,
                count(*) FILTER (WHERE NOT coalesce(input_declared, true)) AS undeclared_inputs,
                count(*) FILTER (WHERE output_field_known = false OR input_field_known = false) AS flagged_unknown_fields,
                count(*) FILTER (
                    WHERE output_field IS NOT NULL AND coalesce(output_field_known, true)
                      AND (output_namespace, output_name) IN (SELECT (namespace, name) FROM known)
                      AND (output_namespace, output_name, output_field) NOT IN (SELECT (namespace, name, field_path) FROM cdf)
                ) AS unflagged_missing_output_fields,
                count(*) FILTER (
                    WHERE coalesce(input_field_known, true)
                      AND (input_namespace, input_name) IN (SELECT (namespace, name) FROM known)
                      AND (input_namespace, input_name, input_field) NOT IN (SELECT (namespace, name, field_path) FROM cdf)
                ) AS unflagged_missing_input_fields
            FROM ccl
            """
        )
        row = cursor.fetchone()
        names = [d[0] for d in cursor.description]
    return dict(zip(names, (int(v) for v in row)))


def _one_match(refs: list[NodeRef], exists, node_id: str | None, where: str, hint: str) -> NodeRef:
    """The one reading of an id that names an existing node: NodeNotFound when none does,
    ValueError (asking for structured arguments) when several do."""
    matches = list(dict.fromkeys(r for r in refs if exists(r)))  # two readings naming one canonical node are one
    if not matches:
        raise NodeNotFound(f"no {refs[0].kind} {refs[0].id if len(refs) == 1 else node_id!r} in {where}")
    if len(matches) > 1:
        options = "; ".join(f"namespace={m.namespace!r} name={m.name!r}" + (f" field={m.field!r}" if m.field else "") for m in matches)
        raise ValueError(f"node id {node_id!r} is ambiguous ({options}): pass {hint}")
    return matches[0]


def _bridge_temporary(edge_rows: list[tuple], keep: tuple) -> tuple[list[tuple], list[tuple[str, str, list[str]]]]:
    """(the edges without those of temporary datasets, the job -> job bridges around them:
    (writer job id, reader job id, the temporary dataset ids between)). A job reading what it
    wrote itself gets no edge to itself; `keep` (the node asked for) is never hidden."""
    hidden: dict[str, tuple[set, set]] = {}
    kept = []
    for row in edge_rows:
        job_id, dataset_id, direction, ns, name, _component, temporary = row
        if temporary and ("DATASET", ns, name) != keep:
            writers, readers = hidden.setdefault(dataset_id, (set(), set()))
            (writers if direction == "OUTPUT" else readers).add(job_id)
        else:
            kept.append(row)
    through: dict[tuple[str, str], list[str]] = {}
    for dataset_id, (writers, readers) in sorted(hidden.items()):
        for writer in writers:
            for reader in readers:
                if writer != reader:
                    through.setdefault((writer, reader), []).append(dataset_id)
    return kept, [(w, r, ids) for (w, r), ids in sorted(through.items())]


_FLAGS = ("with_downstream", "include_temporary", "include_current", "propagate")


def _check_types(**arguments) -> None:
    """ValueError for an argument of the wrong type: the flags are booleans, the names strings (or
    None) of Unicode text (a lone surrogate, which no stored name holds, cannot be looked up)."""
    for key, value in arguments.items():
        if key in _FLAGS and not isinstance(value, bool):
            raise ValueError(f"{key} must be True or False, got {value!r}")
        if key not in _FLAGS and value is not None and not isinstance(value, str):
            raise ValueError(f"{key} must be a string, got {value!r}")
        if isinstance(value, str) and has_surrogate(value):
            raise ValueError(f"{key} holds a lone surrogate, which is not Unicode text: {value[:80]!r}")


def _timestamp(value) -> dt.datetime | None:
    """lineage_at as an aware UTC datetime (naive values and strings without an offset are UTC).
    A date alone, a `datetime.date` or an ISO-8601 date string ("2024-06-01"), is the end of that
    day (23:59:59.999999 UTC): one rule for both forms."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = dt.date.fromisoformat(value)
        except ValueError:
            try:
                value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError as exc:
                raise ValueError(f"lineage_at {value!r} is not an ISO-8601 timestamp") from exc
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime.combine(value, dt.time.max)
    if not isinstance(value, dt.datetime):
        raise ValueError(f"lineage_at must be a datetime or an ISO-8601 string, got {value!r}")
    try:
        return value.replace(tzinfo=dt.timezone.utc) if value.tzinfo is None else value.astimezone(dt.timezone.utc)
    except OverflowError as exc:  # an offset that moves year 1 or 9999 out of range
        raise ValueError(f"lineage_at {value.isoformat()} is out of the range of UTC timestamps") from exc


def _start_node(start: NodeRef, aliases_of) -> Node:
    """The node asked for, as an answer shows it when no edge of the answer touches it."""
    return node(start.id, KINDS[start.kind], {"namespace": start.namespace, "name": start.name, "aliases": aliases_of(start.namespace, start.name)})


def _graph(start: NodeRef, job_rows: list[tuple], edge_rows: list[tuple], aliases_of, include_temporary: bool = True) -> LineageGraph:
    """Build the answer. Nodes are keyed by (type, namespace, name): two datasets whose string ids
    coincide (namespace 'a', name 'b:c' and namespace 'a:b', name 'c') stay two nodes, both
    flagged `ambiguousId` in their data. A dataset's data lists its aliases and whether it is
    temporary; hidden temporary datasets are bridged (`_bridge_temporary`)."""
    start_key = (KINDS[start.kind], start.namespace, start.name)
    if not include_temporary:
        edge_rows, bridges = _bridge_temporary(edge_rows, keep=start_key)
    else:
        bridges = []
    nodes: dict[tuple, Node] = {}
    job_keys: dict[str, tuple] = {}
    for job_id, ns, name, version, run_id, state, ended_at, unknown, code, component, temporary in job_rows:
        key = ("JOB", ns, name)
        job_keys[job_id] = key
        nodes[key] = node(job_id, "JOB", {
            "namespace": ns, "name": name, "currentVersion": version, "latestRunId": run_id,
            "latestRunState": state, "latestRunEndedAt": ended_at.isoformat() if ended_at else None,
            "lineageUnknown": unknown, "codeVersion": code, "componentId": component,
            "temporaryDatasets": [dataset_node(d["namespace"], d["name"]) for d in temporary or []],
        })
    for job_id, dataset_id, direction, ns, name, component, temporary in edge_rows:
        key = ("DATASET", ns, name)
        dataset = nodes.get(key)
        if dataset is None:
            dataset = nodes[key] = node(dataset_id, "DATASET", {
                "namespace": ns, "name": name, "componentId": component, "aliases": aliases_of(ns, name), "temporary": bool(temporary),
            })
        job = nodes[job_keys[job_id]]
        if direction == "INPUT":
            link = edge(dataset_id, job_id)
            dataset.outEdges.append(link)
            job.inEdges.append(link)
        else:
            link = edge(job_id, dataset_id)
            job.outEdges.append(link)
            dataset.inEdges.append(link)
    for writer, reader, through in bridges:
        link = edge(writer, reader)
        nodes[job_keys[writer]].outEdges.append(link)
        nodes[job_keys[reader]].inEdges.append(link)
        nodes[job_keys[writer]].data.setdefault("bridged", []).append({"to": reader, "through": through})
    if start_key not in nodes:  # a dataset no current job touches
        nodes[start_key] = _start_node(start, aliases_of)
    by_id: dict[str, int] = {}
    for built in nodes.values():
        by_id[built.id] = by_id.get(built.id, 0) + 1
    for built in nodes.values():
        if by_id[built.id] > 1:
            built.data["ambiguousId"] = True
        built.inEdges.sort(key=lambda e: (e.origin, e.destination))
        built.outEdges.sort(key=lambda e: (e.origin, e.destination))
    return answer([nodes[k] for k in sorted(nodes, key=lambda k: (nodes[k].id, k))])
