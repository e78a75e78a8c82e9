"""`column_lineage()`: field-level lineage over the warehouse.

Current answers read the published snapshot (`current_column_lineage`, `current_dataset_fields`),
walked by the traversal engine (`CurrentFields`); point-in-time answers with DuckDB recursive CTEs.
Point-in-time answers read the column_lineage / dataset_fields / dataset_versions / run_lineage
history and follow versions: the start dataset's version (given, or current at the timestamp),
then the versions its producing run read, recursively (downstream: the runs that read it).

A dataset-wide dependency (facet 1-2-0, `output_field` null) feeds every field of the output
dataset version: it is expanded to one edge per field when the tables are loaded, flagged
`datasetWide`. Depth counts field hops. Every value reaches SQL as a bound parameter.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter

import duckdb

from lineage_assets.cycle_collection import no_cycle_collection
from lineage_assets.query.current_fields import CurrentFields
from lineage_assets.query.field_history import WINDOW_EDGES_SQL, WINDOW_RUNS_SQL, Window, WindowIndex
from lineage_assets.query.models import LineageGraph, answer, edge, node
from lineage_assets.query.node_ids import NodeNotFound, NodeRef, field_node
from lineage_assets.warehouse import commits

EDGE_COLUMNS = (
    "output_namespace, output_name, output_field, output_version_id, input_namespace, input_name, input_field, "
    "input_version_id, transformation_type, transformation_subtype, transformation_description, masking, "
    "legacy_transformation_type, legacy_transformation_description, output_field_type, input_field_type, "
    "input_declared, output_field_known, input_field_known, created_at"
)

WINDOWS_KEPT = 4  # indexed history windows kept per loaded history


def _walk_sql(downstream: bool) -> str:
    """A recursive CTE over the history's field edges (output field <- input field) following
    version ids: upstream goes from outputs to their inputs, downstream from inputs to the
    outputs they feed. Rows: node, fewest hops. Keyed by node (`USING KEY`): each step goes only
    from the nodes the step before reached first, and only to nodes not reached before
    (`recurring.walk`: every row so far), so the walk stops when it finds nothing new, cycles
    included (over (node, hops) rows it went on to `depth`: 15 s at depth 100,000 around a cycle).
    (Current walks use `CurrentFields`.)"""
    here, there = ("input", "output") if downstream else ("output", "input")
    cols = "ns, name, field, version"
    step = [f"e.{there}_namespace", f"e.{there}_name", f"e.{there}_field", f"e.{there}_version_id"]
    on = (f"e.{here}_namespace = w.ns AND e.{here}_name = w.name AND e.{here}_field = w.field "
          f"AND e.{here}_version_id = w.version")
    seen = " AND ".join(f"r.{c} IS NOT DISTINCT FROM {v}" for c, v in zip(cols.split(", "), step))
    return (
        f"WITH RECURSIVE walk({cols}, hops) USING KEY ({cols}) AS (SELECT DISTINCT {cols}, 0 FROM seeds UNION "
        f"SELECT DISTINCT {', '.join(step)}, w.hops + 1 FROM walk w JOIN hist_edges e ON {on} "
        f"WHERE w.hops < ? AND NOT EXISTS (SELECT 1 FROM recurring.walk r WHERE {seen})) "
        f"SELECT {cols}, hops FROM walk"
    )


def _expand_dataset_wide(source: str, fields: str, version_join: bool) -> str:
    """SQL for field edges from a column-lineage table, dataset-wide rows expanded per field."""
    on = "f.version_id = w.output_version_id" if version_join else "f.namespace = w.output_namespace AND f.name = w.output_name"
    field_sets = (
        f"SELECT DISTINCT version_id, namespace, name, field_path AS field FROM {fields} "
        f"UNION SELECT DISTINCT output_version_id, output_namespace, output_name, output_field FROM {source} WHERE output_field IS NOT NULL"
    )
    wide_columns = ", ".join(
        "f.field AS output_field" if c == "output_field" else f"w.{c}" for c in (c.strip() for c in EDGE_COLUMNS.split(","))
    )
    return (
        f"SELECT {EDGE_COLUMNS}, false AS dataset_wide FROM {source} WHERE output_field IS NOT NULL "
        f"UNION ALL SELECT {wide_columns}, true AS dataset_wide "
        f"FROM {source} w JOIN ({field_sets}) f ON {on} WHERE w.output_field IS NULL"
    )


class ColumnGraph:
    """Column-lineage tables in one DuckDB connection; the caller holds the lock.

    `names` knows the current aliases (`LineageQuery`: `aliases_of`, `canonical_name`, and the
    `aliases` table of the connection): history is read with its datasets named as they are now,
    the way the snapshot re-points them (DESIGN.md section 10)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, warehouse: str, names, enabled: bool = True):
        self.con = con
        self.enabled = enabled  # False: never loaded, and a column question is an error
        self.warehouse = warehouse
        self.names = names
        self._history_signature: tuple | None = None
        self.temporary: set[tuple[str, str]] = set()  # (namespace, name) of the current graph's temporary datasets
        self._current = CurrentFields()
        self._windows: dict[Window, WindowIndex] = {}
        self._window_tables = 0  # windows indexed so far (names their runs tables)

    @property
    def current(self) -> CurrentFields:
        if not self.enabled:
            raise RuntimeError("this LineageQuery answers job lineage only (opened with columns=False)")
        return self._current

    # ------------------------------------------------------------------ loading

    def load_current(self, commit: commits.Commit) -> None:
        """Load the current column tables of a commit."""
        con = self.con
        con.execute(f"CREATE OR REPLACE TABLE ccl AS {commits.duckdb_relation_sql(commit, 'current_column_lineage')}")
        con.execute(f"CREATE OR REPLACE TABLE cdf AS {commits.duckdb_relation_sql(commit, 'current_dataset_fields')}")
        con.execute(f"CREATE OR REPLACE TABLE cedges_named AS {_expand_dataset_wide('ccl', 'cdf', version_join=False)}")
        con.execute(  # `edges` (the current graph, loaded first) says which datasets are temporary
            "CREATE OR REPLACE TABLE fids AS SELECT row_number() OVER (ORDER BY ns, name, field) AS fid, ns, name, field, "
            "(ns, name) IN (SELECT (dataset_namespace, dataset_name) FROM edges WHERE temporary) AS temporary FROM ("
            "SELECT output_namespace AS ns, output_name AS name, output_field AS field FROM cedges_named "
            "UNION SELECT input_namespace, input_name, input_field FROM cedges_named)"
        )
        con.execute(
            "CREATE OR REPLACE TABLE cedges AS SELECT e.*, o.fid AS out_fid, i.fid AS in_fid FROM cedges_named e "
            "JOIN fids o ON o.ns = e.output_namespace AND o.name = e.output_name AND o.field = e.output_field "
            "JOIN fids i ON i.ns = e.input_namespace AND i.name = e.input_name AND i.field = e.input_field"
        )
        con.execute("DROP TABLE cedges_named")
        self._current = CurrentFields.load(con)
        con.execute("DROP TABLE cedges")  # its rows live in `current.edges` (Arrow)
        self.temporary = {(r[0], r[1]) for r in con.execute("SELECT DISTINCT ns, name FROM fids WHERE temporary").fetchall()}

    def load_history(self, commit: commits.Commit) -> None:
        """(Re)load the history tables when the commit's files of them changed since the last load."""
        tables = ("column_lineage", "dataset_fields", "dataset_versions", "run_lineage")
        signature = tuple((name, tuple(commit.files(name))) for name in (*tables, "current_aliases"))
        if signature == self._history_signature:
            return
        con = self.con
        for table, target, columns in (
            ("column_lineage", "hist_cl", f"{EDGE_COLUMNS}, run_id"),
            ("dataset_fields", "hist_fields", "version_id, namespace, name, field_path, type"),
            ("dataset_versions", "hist_versions", "version_id, namespace, name, run_id, run_state, created_at, lifecycle_state, created_date"),
            ("run_lineage", "hist_runs", "run_id, job_namespace, job_name, ended_at, output_versions"),
        ):
            con.execute(f"CREATE OR REPLACE TABLE {target} AS SELECT {columns} FROM ({commits.duckdb_relation_sql(commit, table)})")
        for target, namespace, name in (
            ("hist_cl", "output_namespace", "output_name"), ("hist_cl", "input_namespace", "input_name"),
            ("hist_fields", "namespace", "name"), ("hist_versions", "namespace", "name"),
        ):
            con.execute(
                f"UPDATE {target} SET {namespace} = a.namespace, {name} = a.name FROM aliases a "
                f"WHERE {target}.{namespace} = a.alias_namespace AND {target}.{name} = a.alias_name"
            )
        con.execute(f"CREATE OR REPLACE TABLE hist_edges AS {_expand_dataset_wide('hist_cl', 'hist_fields', version_join=True)}")
        self._history_signature = signature
        for kept in list(self._windows):
            self._drop_window(kept)

    def window_index(self, window: Window) -> WindowIndex:
        """The column edges of the runs that ended in `window`, indexed (`field_history`); kept
        for the last few windows of the loaded history. Call `load_history` first."""
        found = self._windows.pop(window, None)
        if found is None:
            self._window_tables += 1
            table = f"window_runs_{self._window_tables}"
            self.con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS {WINDOW_RUNS_SQL}", [window.start, window.end])
            cursor = self.con.execute(WINDOW_EDGES_SQL, [window.start, window.end])
            header = [d[0] for d in cursor.description]
            found = WindowIndex.build([dict(zip(header, r)) for r in cursor.fetchall()], table)
        self._windows[window] = found  # the most recently used last
        while len(self._windows) > WINDOWS_KEPT:
            self._drop_window(next(iter(self._windows)))
        return found

    def _drop_window(self, window: Window) -> None:
        self.con.execute(f"DROP TABLE IF EXISTS {self._windows.pop(window).runs_table}")

    def dataset_known(self, namespace: str, name: str) -> bool:
        """Whether the loaded history names the dataset (a version, or an edge end)."""
        return self.con.execute(
            "SELECT 1 FROM hist_versions WHERE namespace = $1 AND name = $2 "
            "UNION ALL SELECT 1 FROM hist_cl WHERE input_namespace = $1 AND input_name = $2 LIMIT 1", [namespace, name],
        ).fetchone() is not None

    # ------------------------------------------------------------------ existence

    def field_exists(self, ref: NodeRef, versioned: bool) -> bool:
        if not versioned:
            return self.current.has_field(ref.namespace, ref.name, ref.field)
        sql = (
            "SELECT 1 FROM hist_fields WHERE namespace = $1 AND name = $2 AND field_path = $3 "
            "UNION ALL SELECT 1 FROM hist_edges WHERE output_namespace = $1 AND output_name = $2 AND output_field = $3 "
            "UNION ALL SELECT 1 FROM hist_edges WHERE input_namespace = $1 AND input_name = $2 AND input_field = $3 LIMIT 1"
        )
        return self.con.execute(sql, [ref.namespace, ref.name, ref.field]).fetchone() is not None

    def dataset_fields(self, namespace: str, name: str, version: str | None) -> list[str]:
        """Every field known for a dataset (current, or of one version)."""
        if version is None:
            return self.current.dataset_fields(namespace, name)
        sql = (
            "SELECT field_path FROM hist_fields WHERE version_id = $1 "
            "UNION SELECT output_field FROM hist_edges WHERE output_version_id = $1 "
            "UNION SELECT input_field FROM hist_edges WHERE input_version_id = $1 AND input_namespace = $2 AND input_name = $3"
        )
        return sorted(r[0] for r in self.con.execute(sql, [version, namespace, name]).fetchall() if r[0] is not None)

    def version_of(self, namespace: str, name: str, version: str | None, at: dt.datetime | None) -> str:
        """The dataset version a point-in-time answer starts from (NodeNotFound if there is none)."""
        if version is not None:
            found = self.con.execute(
                "SELECT 1 FROM hist_versions WHERE version_id = ? AND namespace = ? AND name = ? "
                "UNION ALL SELECT 1 FROM hist_edges WHERE input_version_id = ? AND input_namespace = ? AND input_name = ? LIMIT 1",
                [version, namespace, name, version, namespace, name],
            ).fetchone()
            if found is None:
                raise NodeNotFound(f"dataset {namespace}:{name} has no version {version!r}")
            return version
        missing = f"dataset {namespace}:{name} had no completed version at {at.isoformat()}"
        try:
            return self._latest(
                "SELECT version_id FROM hist_versions WHERE namespace = ? AND name = ? AND run_state = 'COMPLETE' AND created_at <= ? "
                "ORDER BY created_at DESC, version_id DESC LIMIT 1",
                [namespace, name, at], missing,
            )
        except NodeNotFound:  # a source (read, never written by a run we know): the version the latest run by `at` read
            return self._latest(
                "SELECT input_version_id FROM hist_edges WHERE input_namespace = ? AND input_name = ? AND input_version_id IS NOT NULL "
                "AND created_at <= ? ORDER BY created_at DESC, input_version_id DESC LIMIT 1",
                [namespace, name, at], missing,
            )

    def job_outputs_at(self, namespace: str, name: str, at: dt.datetime) -> list[tuple[str, str, str]]:
        """(namespace, name, version) of what the job's latest terminal run at `at` wrote."""
        versions = self._latest(
            "SELECT output_versions FROM hist_runs WHERE job_namespace = ? AND job_name = ? AND ended_at <= ? "
            "ORDER BY ended_at DESC, run_id DESC LIMIT 1",
            [namespace, name, at], f"job {namespace}:{name} had no terminal run at {at.isoformat()}",
        )
        return [(*self.names.canonical_name(v["namespace"], v["name"]), v["version_id"]) for v in versions]

    def _latest(self, sql: str, params: list, missing: str):
        row = self.con.execute(sql, params).fetchone()
        if row is None:
            raise NodeNotFound(missing)
        return row[0]

    # ------------------------------------------------------------------ traversal

    def traverse(self, seeds: list[tuple], depth: int, downstream: bool, versioned: bool, include_temporary: bool = True) -> LineageGraph:
        """The answer from `seeds`. Current answers hide the fields of temporary datasets unless
        `include_temporary` (`_bridge`); point-in-time answers show every field."""
        bridge = not include_temporary and not versioned and bool(self.temporary)
        with no_cycle_collection():
            if versioned:
                edge_rows = self._versioned_rows(seeds, depth, downstream)
            else:
                edge_rows = self.current.rows_around(seeds, depth, downstream, bridge)
            return self._graph(edge_rows, versioned, hide=self.temporary if bridge else set(), keep={tuple(s[:3]) for s in seeds})

    def _versioned_rows(self, seeds: list[tuple], depth: int, downstream: bool) -> list[dict]:
        """The history edges of a point-in-time answer (a recursive walk over `hist_edges`)."""
        con = self.con
        names = ("ns", "name", "field", "version")
        columns = list(zip(*seeds)) if seeds else [()] * len(names)
        con.execute(
            "CREATE OR REPLACE TEMP TABLE seeds AS SELECT " + ", ".join(f"unnest(?::VARCHAR[]) AS {n}" for n in names),
            [list(c) for c in columns],
        )
        con.execute(f"CREATE OR REPLACE TEMP TABLE up AS {_walk_sql(False)}", [depth])
        if downstream:
            con.execute(f"CREATE OR REPLACE TEMP TABLE down AS {_walk_sql(True)}", [depth])
        else:
            con.execute("CREATE OR REPLACE TEMP TABLE down AS SELECT * FROM up WHERE false")
        out_match = "u.ns = e.output_namespace AND u.name = e.output_name AND u.field = e.output_field AND u.version = e.output_version_id"
        in_match = "d.ns = e.input_namespace AND d.name = e.input_name AND d.field = e.input_field AND d.version = e.input_version_id"
        rows = con.execute(
            f"WITH picked AS (SELECT e.* FROM hist_edges e JOIN up u ON {out_match} WHERE u.hops < ? "
            f"UNION SELECT e.* FROM hist_edges e JOIN down d ON {in_match} WHERE d.hops < ?) "
            "SELECT e.*, coalesce(fo.type, e.output_field_type) AS output_type, coalesce(fi.type, e.input_field_type) AS input_type "
            "FROM picked e LEFT JOIN hist_fields fo ON fo.version_id = e.output_version_id AND fo.field_path = e.output_field "
            "LEFT JOIN hist_fields fi ON fi.version_id = e.input_version_id AND fi.field_path = e.input_field",
            [depth, depth],
        ).fetchall()
        header = [d[0] for d in con.description]
        return [dict(zip(header, r)) for r in rows]

    def _graph(self, edge_rows: list[dict], versioned: bool, hide: set = frozenset(), keep: set = frozenset()) -> LineageGraph:
        def key(side: str, e: dict) -> tuple:
            base = (e[f"{side}_namespace"], e[f"{side}_name"], e[f"{side}_field"])
            return (*base, e[f"{side}_version_id"]) if versioned else base

        def node_id(k: tuple) -> str:
            text = field_node(k[0], k[1], k[2])
            return f"{text}#{k[3]}" if versioned and k[3] is not None else text

        nodes: dict[tuple, dict] = {}
        seen_types: dict[tuple, str | None] = {}
        latest_version: dict[tuple, tuple] = {}
        for e in edge_rows:
            for side in ("output", "input"):
                k = key(side, e)
                nodes.setdefault(k, {"inputs": {}, "legacy": (None, None), "in": set(), "out": set()})
                if e.get(f"{side}_type") is not None:
                    seen_types.setdefault(k, e[f"{side}_type"])
                if not versioned:  # a current node shows the version of its newest edge
                    stamp = (e["created_at"].timestamp() if e["created_at"] else float("-inf"), e[f"{side}_version_id"] or "")
                    if k not in latest_version or stamp > latest_version[k]:
                        latest_version[k] = stamp
        for e in edge_rows:
            out_k, in_k = key("output", e), key("input", e)
            out_node = nodes[out_k]
            out_node["in"].add(in_k)  # keys, not ids: two fields may share an id (`ambiguousId`)
            nodes[in_k]["out"].add(out_k)
            if e["legacy_transformation_type"] or e["legacy_transformation_description"]:
                out_node["legacy"] = (e["legacy_transformation_type"], e["legacy_transformation_description"])
            entry = out_node["inputs"].setdefault(in_k, {
                "namespace": e["input_namespace"], "dataset": e["input_name"], "field": e["input_field"],
                "datasetVersion": e["input_version_id"], "transformations": [],
                "transformationDescription": e["legacy_transformation_description"],
                "transformationType": e["legacy_transformation_type"],
                "inputDeclared": e["input_declared"], "datasetWide": e["dataset_wide"],
            })
            if e["transformation_type"] is not None or e["transformation_subtype"] is not None:
                t = {"type": e["transformation_type"], "subtype": e["transformation_subtype"],
                     "description": e["transformation_description"], "masking": e["masking"]}
                if t not in entry["transformations"]:
                    entry["transformations"].append(t)
            entry["datasetWide"] = entry["datasetWide"] and e["dataset_wide"]
        if hide:
            _bridge(nodes, {k for k in nodes if (k[0], k[1]) in hide and k[:3] not in keep and nodes[k]["inputs"]}, node_id)
        shared = Counter(node_id(k) for k in nodes)

        def ordered(keys: set[tuple]) -> list[tuple]:
            return sorted(keys, key=lambda o: (node_id(o), o))

        graph = []
        for k in sorted(nodes, key=lambda k: (node_id(k), k)):
            n = nodes[k]
            field_type = seen_types.get(k)
            data = {
                "namespace": k[0], "dataset": k[1], "field": k[2], "fieldType": field_type,
                "datasetVersion": k[3] if versioned else latest_version.get(k, (None, None))[1] or None,
                "transformationType": n["legacy"][0], "transformationDescription": n["legacy"][1],
                "aliases": self.names.aliases_of(k[0], k[1]),
                "inputFields": [
                    {**v, "transformations": sorted(v["transformations"], key=lambda t: tuple(str(x) for x in t.values()))}
                    for _k, v in sorted(n["inputs"].items(), key=lambda kv: tuple(str(x) for x in kv[0]))
                ],
            }
            this = node_id(k)
            if shared[this] > 1:  # another field's id reads the same (colons in names): say so, as lineage() does
                data["ambiguousId"] = True
            graph.append(node(this, "DATASET_FIELD", data, [edge(node_id(o), this) for o in ordered(n["in"])],
                              [edge(this, node_id(d)) for d in ordered(n["out"])]))
        return answer(graph)


def _bridge(nodes: dict[tuple, dict], hidden: set[tuple], node_id) -> None:
    """Remove the `hidden` field nodes (fields of temporary datasets that have inputs) and give
    each node that read one the inputs behind it: A.x -> tmp.y -> B.z answers A.x for B.z, with
    the transformations of both hops and `through` naming the hidden fields. A hidden field
    without inputs (where lineage starts) stays; so do the nodes asked for."""

    def behind(k: tuple, seen: frozenset) -> list[tuple[tuple, dict, list[dict], list[str]]]:
        out = []
        for src, entry in nodes[k]["inputs"].items():
            if src in hidden and src not in seen:
                for deeper, deeper_entry, transformations, through in behind(src, seen | {src}):
                    out.append((deeper, deeper_entry, entry["transformations"] + transformations, [node_id(src), *through]))
            else:
                out.append((src, entry, list(entry["transformations"]), []))
        return out

    for k, item in nodes.items():
        if k in hidden:
            continue
        inputs: dict[tuple, dict] = {}
        for src, entry in item["inputs"].items():
            if src not in hidden:
                inputs.setdefault(src, {**entry, "transformations": list(entry["transformations"])})
                continue
            for deeper, deeper_entry, transformations, through in behind(src, frozenset({src})):
                merged = inputs.setdefault(deeper, {**deeper_entry, "transformations": [], "through": []})
                for t in entry["transformations"] + transformations:
                    if t not in merged["transformations"]:
                        merged["transformations"].append(t)
                for hop in [node_id(src), *through]:
                    if hop not in merged.setdefault("through", []):
                        merged["through"].append(hop)
        item["inputs"] = inputs
    for k in hidden:
        del nodes[k]
    for item in nodes.values():
        item["in"], item["out"] = set(), set()
    for k, item in nodes.items():
        for src in item["inputs"]:
            item["in"].add(src)
            nodes[src]["out"].add(k)
