"""Field lineage over time (DESIGN.md section 8, after CDAP's field-level lineage store).

A window `[start, end)` selects runs by their END time: a run that started before the window and
wrote inside it changed the data inside it (CDAP selects by start time and misses it). The
column edges of a window's runs are indexed once per window (`WindowIndex`): by (source,
destination) dataset pair for the multi-level mappings, by field for the detailed operations.
Every walk visits a dataset pair once, so cycles end and a mapping appears at its lowest level.
CDAP shipped one level, kept the latest run per program and selected runs by start time; here
levels are unbounded (up to the depth cap), every run of the window is listed, and runs are
selected by end time.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from dataclasses import dataclass, field

import duckdb

from lineage_assets.query.field_models import (
    Connection,
    EndPoint,
    FieldInfo,
    FieldList,
    FieldMap,
    FieldMappings,
    FieldOperations,
    Mapping,
    Operation,
    OperationNode,
    Program,
    ProgramRun,
    RunRef,
    Transformation,
)
from lineage_assets.query.traversal import check_depth

DIRECTIONS = ("backward", "forward", "both")
Dataset = tuple[str, str]
FieldKey = tuple[str, str, str]

_IN_WINDOW = "FROM hist_cl c JOIN hist_runs r USING (run_id) WHERE r.ended_at >= ? AND r.ended_at < ?"
_EDGE = (
    "c.output_namespace, c.output_name, c.output_field, c.input_namespace, c.input_name, c.input_field, "
    "c.transformation_type, c.transformation_subtype, c.transformation_description, c.masking, "
    "c.legacy_transformation_type, c.legacy_transformation_description"
)
# the distinct field edges of the runs that ended in a window (hist_cl: names as they are now)
WINDOW_EDGES_SQL = f"SELECT DISTINCT {_EDGE} {_IN_WINDOW} ORDER BY ALL"
# which run wrote which (source, destination) pair in a window: a temporary table per indexed window
WINDOW_RUNS_SQL = (
    "SELECT DISTINCT c.input_namespace, c.input_name, c.output_namespace, c.output_name, c.run_id, r.job_namespace, r.job_name, r.ended_at "
    f"{_IN_WINDOW} ORDER BY c.output_namespace, c.output_name"
)
# the edges of one field in a window, with their runs (field_operations)
FIELD_EDGES_SQL = f"SELECT {_EDGE}, c.run_id, r.job_namespace, r.job_name, r.ended_at {_IN_WINDOW} AND ("
EARLIEST = dt.datetime(1, 1, 1, tzinfo=dt.timezone.utc)
LATEST = dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.timezone.utc)


# ---------------------------------------------------------------------------------- windows


def instant(value, what: str) -> dt.datetime | None:
    """An ISO 8601 date-time (naive means UTC) or epoch seconds, as an aware UTC datetime."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"{what} must be an ISO 8601 date-time or epoch seconds, got {value!r}")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError(f"{what} must be a finite number of epoch seconds, got {value!r}")
        try:
            return dt.datetime.fromtimestamp(value, dt.timezone.utc)
        except (OverflowError, OSError, ValueError) as exc:
            raise ValueError(f"{what} {value!r} is out of the range of timestamps") from exc
    if isinstance(value, str):
        text = value.strip()
        try:
            return instant(float(text), what) if text.lstrip("-").replace(".", "", 1).isdigit() else _aware(dt.datetime.fromisoformat(text.replace("Z", "+00:00")), what)
        except ValueError as exc:
            if "out of the range" in str(exc) or "finite" in str(exc):
                raise
            raise ValueError(f"{what} {value!r} is neither an ISO 8601 date-time nor epoch seconds") from exc
    if isinstance(value, dt.datetime):
        return _aware(value, what)
    raise ValueError(f"{what} must be an ISO 8601 date-time or epoch seconds, got {value!r}")


def _aware(value: dt.datetime, what: str) -> dt.datetime:
    try:
        return value.replace(tzinfo=dt.timezone.utc) if value.tzinfo is None else value.astimezone(dt.timezone.utc)
    except OverflowError as exc:
        raise ValueError(f"{what} {value.isoformat()} is out of the range of UTC timestamps") from exc


@dataclass(frozen=True)
class Window:
    start: dt.datetime
    end: dt.datetime

    @classmethod
    def of(cls, start, end) -> Window:
        """`[start, end)`; None leaves that side open. ValueError when start >= end."""
        low, high = instant(start, "start") or EARLIEST, instant(end, "end") or LATEST
        if low >= high:
            raise ValueError(f"the window's start ({low.isoformat()}) must be before its end ({high.isoformat()})")
        return cls(low, high)


# ---------------------------------------------------------------------------------- the index


def _transformation(row: dict) -> Transformation:
    if row["transformation_type"] is not None or row["transformation_subtype"] is not None:
        return Transformation(type=row["transformation_type"], subtype=row["transformation_subtype"],
                              description=row["transformation_description"], masking=row["masking"])
    return Transformation(type=row["legacy_transformation_type"], description=row["legacy_transformation_description"])


@dataclass
class WindowIndex:
    """The distinct column edges of the runs that ended in one window, indexed by dataset pair;
    which runs wrote each pair stays in DuckDB (`runs_table`), asked for the pairs of an answer."""

    runs_table: str = ""
    pairs: dict[tuple[Dataset, Dataset], dict[tuple[str, str | None], list[Transformation]]] = field(default_factory=dict)
    sources: dict[Dataset, set[Dataset]] = field(default_factory=lambda: defaultdict(set))
    destinations: dict[Dataset, set[Dataset]] = field(default_factory=lambda: defaultdict(set))
    fields: dict[Dataset, set[str]] = field(default_factory=lambda: defaultdict(set))  # fields with lineage

    @classmethod
    def build(cls, rows: list[dict], runs_table: str) -> WindowIndex:
        index = cls(runs_table)
        for row in rows:
            src: Dataset = (row["input_namespace"], row["input_name"])
            dst: Dataset = (row["output_namespace"], row["output_name"])
            transformations = index.pairs.setdefault((src, dst), {}).setdefault((row["input_field"], row["output_field"]), [])
            t = _transformation(row)
            if (t.type is not None or t.description is not None or t.subtype is not None) and t not in transformations:
                transformations.append(t)
            index.sources[dst].add(src)
            index.destinations[src].add(dst)
            index.fields[src].add(row["input_field"])
            if row["output_field"] is not None:
                index.fields[dst].add(row["output_field"])
        return index

    def runs_of(self, con: duckdb.DuckDBPyConnection, pairs: list[tuple[Dataset, Dataset]]) -> dict[tuple[Dataset, Dataset], list[RunRef]]:
        """Every run of the window that wrote each pair (one query for all of them)."""
        if not pairs:
            return {}
        columns = list(zip(*[(s[0], s[1], d[0], d[1]) for s, d in pairs]))
        rows = con.execute(
            f"SELECT w.* FROM {self.runs_table} w JOIN (SELECT unnest(?::VARCHAR[]) AS a, unnest(?::VARCHAR[]) AS b, "
            "unnest(?::VARCHAR[]) AS c, unnest(?::VARCHAR[]) AS d) p "
            "ON w.input_namespace = p.a AND w.input_name = p.b AND w.output_namespace = p.c AND w.output_name = p.d "
            "ORDER BY w.ended_at, w.run_id", [list(c) for c in columns],
        ).fetchall()
        out: dict[tuple[Dataset, Dataset], list[RunRef]] = defaultdict(list)
        for a, b, c, d, run_id, job_ns, job_name, ended_at in rows:
            out[((a, b), (c, d))].append(RunRef(runId=run_id, job=EndPoint(namespace=job_ns, name=job_name), endedAt=iso(ended_at)))
        return out


def iso(value: dt.datetime) -> str:
    return value.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")


# ---------------------------------------------------------------------------------- queries


def field_list(index: WindowIndex, dataset: Dataset, prefix: str | None, current: list[str] | None) -> FieldList:
    """The fields of `dataset` with lineage in the window; with `current` (the current schema's
    fields), those without lineage too, as `lineage: false`. `prefix`: case-insensitive."""
    with_lineage = index.fields.get(dataset, set())
    names = set(with_lineage) | set(current or [])
    if prefix is not None:
        names = {n for n in names if n.lower().startswith(prefix.lower())}
    return FieldList([FieldInfo(name=n, lineage=n in with_lineage) for n in sorted(names)])


def mappings(index: WindowIndex, dataset: Dataset, direction: str, levels: int, con: duckdb.DuckDBPyConnection) -> FieldMappings:
    """The multi-level mappings around `dataset`: level 1 the pairs with `dataset` as destination
    (backward) or source (forward); level k+1 those of each dataset newly reached at level k.
    A pair appears once, at its lowest level, also across the two directions of `both` (on a
    cycle one pair is reached both ways: the direction that reaches it first keeps it, backward
    on a tie); a dataset is expanded once (cycles end)."""
    _check_direction(direction)
    if check_depth(levels) < 1:
        raise ValueError(f"levels must be at least 1, got {levels}")
    found: list[tuple[str, tuple[Dataset, Dataset], int]] = []
    for way in ("backward", "forward") if direction == "both" else (direction,):
        neighbours = index.sources if way == "backward" else index.destinations
        frontier, expanded, seen = [dataset], {dataset}, set()
        for level in range(1, levels + 1):
            reached = []
            for here in frontier:
                for there in sorted(neighbours.get(here, ())):
                    pair = (there, here) if way == "backward" else (here, there)
                    if pair in seen:
                        continue
                    seen.add(pair)
                    found.append((way, pair, level))
                    if there not in expanded:
                        expanded.add(there)
                        reached.append(there)
            if not reached:
                break
            frontier = reached
    lowest: dict[tuple[Dataset, Dataset], int] = {}  # pair -> its entry in `found` at its lowest level
    for i, (_way, pair, level) in enumerate(found):
        if pair not in lowest or level < found[lowest[pair]][2]:
            lowest[pair] = i
    found = [found[i] for i in sorted(lowest.values())]
    runs = index.runs_of(con, [pair for _way, pair, _level in found])
    return FieldMappings([
        Mapping(
            direction=way, source=EndPoint(namespace=src[0], name=src[1]), destination=EndPoint(namespace=dst[0], name=dst[1]), level=level,
            fieldmap=[FieldMap(from_=a, to=b, transformations=t)
                      for (a, b), t in sorted(index.pairs[(src, dst)].items(), key=lambda kv: (kv[0][0], kv[0][1] or ""))],
            runs=runs.get((src, dst), []),
        )
        for way, (src, dst), level in found
    ])


def _check_direction(direction: str) -> None:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {', '.join(DIRECTIONS)}, got {direction!r}")


def field_edges(con: duckdb.DuckDBPyConnection, window: Window, key: FieldKey, direction: str) -> list[dict]:
    """The column edges of one field in the window, each with its run: into it (backward), out
    of it (forward) or both."""
    _check_direction(direction)
    sides = [side for side, way in (("output", "backward"), ("input", "forward")) if direction in (way, "both")]
    # a dataset-wide dependency (output_field null: a filter's column) feeds every field of its output
    field = {"output": "(c.output_field = ? OR c.output_field IS NULL)", "input": "c.input_field = ?"}
    where = " OR ".join(f"(c.{s}_namespace = ? AND c.{s}_name = ? AND {field[s]})" for s in sides)
    cursor = con.execute(FIELD_EDGES_SQL + where + ")", [window.start, window.end, *[v for _s in sides for v in key]])
    header = [d[0] for d in cursor.description]
    return [dict(zip(header, r)) for r in cursor.fetchall()]


def operations(rows: list[dict], field_id, directives_of=None) -> FieldOperations:
    """One level of detailed lineage of one field from its edges in the window (`field_edges`):
    the fields at both ends as nodes, each distinct transformation an operation, each edge a
    connection naming it, and the jobs that did it with every run. `field_id(ns, name, field)`
    makes node ids; `directives_of(row)`, the recipe directives of an edge (section 9): an
    operation is then one per distinct transformation and directives."""
    nodes: dict[str, OperationNode] = {}
    ops: dict[tuple, Operation] = {}
    connections: dict[tuple[str, str, str], Connection] = {}
    programs: dict[Dataset, dict[str, dt.datetime]] = defaultdict(dict)  # job -> run id -> ended at

    def node(ns: str, name: str, fld: str | None, side: str) -> str:
        label = fld if fld is not None else "*"
        node_id = field_id(ns, name, label)
        current = nodes.setdefault(node_id, OperationNode(id=node_id, label=label))
        setattr(current, "sourceEndPoint" if side == "source" else "destinationEndPoint", EndPoint(namespace=ns, name=name))
        return node_id

    for row in sorted(rows, key=lambda r: (r["input_namespace"], r["input_name"], r["input_field"], r["output_namespace"],
                                           r["output_name"], r["output_field"] or "", r["run_id"])):
        source = node(row["input_namespace"], row["input_name"], row["input_field"], "source")
        destination = node(row["output_namespace"], row["output_name"], row["output_field"], "destination")
        op = _operation(ops, _transformation(row), tuple(directives_of(row)) if directives_of else ())
        connections.setdefault((source, destination, op.name), Connection(from_=source, to=destination, operation=op.name))
        programs[(row["job_namespace"], row["job_name"])][row["run_id"]] = row["ended_at"]
    return FieldOperations(
        nodes=[nodes[k] for k in sorted(nodes)],
        operations=sorted(ops.values(), key=lambda o: o.name),
        connections=sorted(connections.values(), key=lambda c: (c.from_, c.to, c.operation)),
        programs=[
            Program(job=EndPoint(namespace=job[0], name=job[1]),
                    runs=[ProgramRun(runId=run, endedAt=iso(at)) for run, at in sorted(runs.items(), key=lambda r: (r[1], r[0]))],
                    lastExecutedAt=iso(max(runs.values())))  # by time: as text, '...:00.5Z' sorts before '...:00Z'
            for job, runs in sorted(programs.items())
        ],
    )


def _operation(ops: dict[tuple, Operation], t: Transformation, directives: tuple = ()) -> Operation:
    """The operation of a distinct transformation (type, subtype, description, masking) and
    recipe directives, named `TYPE:SUBTYPE` (`:MASKED` when masking), numbered when two differ
    only in description or directives."""
    key = (t, tuple((d.step, d.directive, d.label, d.column) for d in directives))
    if key in ops:
        return ops[key]
    base = ":".join(p for p in (t.type or "UNKNOWN", t.subtype) if p) + (":MASKED" if t.masking else "")
    taken = {o.name for o in ops.values()}
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}#{n}"
    ops[key] = Operation(name=name, description=t.description, type=t.type, subtype=t.subtype, masking=t.masking,
                         directives=list(directives))
    return ops[key]
