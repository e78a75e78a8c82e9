"""The recipe questions (DESIGN.md section 9): which directives touched a column over a period,
how a column got to its current state, and which columns it impacted.

They read `field_operations` (each recipe step's labels per column, per run and output) and the
current column lineage. Inside one run the directives are followed through the rows of that run
and output: a column's earlier names through `Rename` rows, the columns it was made from through
the `reads` of its `Add`/`Modify` rows. Across runs the current column edges lead from dataset
to dataset. Plain functions over rows; `LineageQuery` holds the connection and the lock.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import groupby
from dataclasses import dataclass

import duckdb

from lineage_assets.query.field_history import Window, iso
from lineage_assets.query.field_models import EndPoint
from lineage_assets.query.node_ids import field_node
from lineage_assets.query.recipe_models import (
    ColumnDirectives,
    ColumnNode,
    ColumnStep,
    ColumnTrace,
    Directive,
    DirectiveRun,
)

OPS_COLUMNS = ("run_id, output_namespace, output_name, step, line, directive, directive_name, field, label, reads, "
               "new_name, all_columns, note")


@dataclass(frozen=True)
class OpRow:
    step: int | None
    line: int | None
    directive: str | None
    name: str | None
    field: str | None
    label: str | None
    reads: tuple[str, ...]
    new_name: str | None
    all_columns: bool
    note: str | None

    def as_directive(self, column: str) -> Directive:
        return Directive(step=self.step, line=self.line, directive=self.directive, name=self.name, label=self.label,
                         column=column, reads=list(self.reads), newName=self.new_name)


Key = tuple[str, str, str]  # run_id, output namespace, output name


def load_ops(con: duckdb.DuckDBPyConnection, keys: set[Key]) -> dict[Key, list[OpRow]]:
    """The field_operations rows (table `recipe_ops`) of some (run, output) pairs."""
    if not keys:
        return {}
    con.execute("CREATE OR REPLACE TEMP TABLE wanted_ops (run_id VARCHAR, output_namespace VARCHAR, output_name VARCHAR)")
    con.executemany("INSERT INTO wanted_ops VALUES (?, ?, ?)", sorted(keys))
    rows = con.execute(
        f"SELECT {OPS_COLUMNS} FROM recipe_ops JOIN wanted_ops USING (run_id, output_namespace, output_name) "
        "ORDER BY run_id, output_namespace, output_name, step NULLS LAST, label, field"
    ).fetchall()
    found: dict[Key, list[OpRow]] = defaultdict(list)
    for r in rows:
        found[(r[0], r[1], r[2])].append(OpRow(r[3], r[4], r[5], r[6], r[7], r[8], tuple(r[9] or ()), r[10], bool(r[11]), r[12]))
    return found


def _steps_down(ops: list[OpRow], before: int | None) -> list[list[OpRow]]:
    """Labelled rows (and the notes of renames only the data settles) grouped by step, steps
    before `before` (all when None), latest first. A step is read as a whole against the
    column's name before it (`swap` renames both ways)."""
    labelled = sorted((o for o in ops if (o.label or _data_rename(o)) and o.step is not None
                       and (before is None or o.step < before)), key=lambda o: -o.step)
    return [list(rows) for _, rows in groupby(labelled, key=lambda o: o.step)]


def _data_rename(op: OpRow) -> bool:
    """A note of a rename whose old name only the data knows (a set-headers position among
    columns the data names): no Rename row names it, the note carries the name it gives."""
    return op.label is None and op.new_name is not None


def _rename_to(rows: list[OpRow], name: str) -> OpRow | None:
    return next((o for o in rows if o.label == "Rename" and o.new_name == name), None)


def _renamed_by_data(rows: list[OpRow], name: str) -> OpRow | None:
    """The note of a rename to `name` whose old name only the data knows; or, from rows written
    before such renames were notes, a Rename row with an "all columns" form."""
    return next((o for o in rows if (_data_rename(o) or (o.label == "Rename" and o.all_columns))
                 and o.new_name == name), None)


def _as_data_rename(note: OpRow, column: str) -> Directive:
    """The step that gave a column its name from a position only the data knows, as a Rename
    to that name (its old name is the note's to tell)."""
    return Directive(step=note.step, line=note.line, directive=note.directive, name=note.name, label="Rename",
                     column=column, reads=[], newName=note.new_name)


def renamed_back(ops: list[OpRow], field: str) -> tuple[list[Directive], list[str]]:
    """The directives that touched a column, in step order, its earlier names followed back
    through renames (and to the step that made it: an Add); and the notes of what only the
    data settles about it."""
    touched: list[Directive] = []
    name = field
    notes = {o.note for o in ops if o.label is None and o.field == field and o.note}
    for rows in _steps_down(ops, None):
        by_data = _renamed_by_data(rows, name)
        if by_data is not None:  # named by position only: its earlier name is the data's
            touched.append(_as_data_rename(by_data, name))
            notes |= {o.note for o in ops if o.label is None and o.step == by_data.step and o.field == name and o.note}
            break
        rename = _rename_to(rows, name)
        if rename is not None:
            touched.append(rename.as_directive(name))
            name = rename.field
            continue
        mine = [o for o in rows if o.field == name and o.label in ("Modify", "Read", "Drop", "Add")]
        touched.extend(o.as_directive(name) for o in mine)
        if any(o.label == "Add" or (o.label == "Modify" and name not in o.reads) for o in mine):
            break  # made here (an Add, or a Modify that wrote over it without reading it)
    return sorted(touched, key=lambda d: (d.step, d.label)), sorted(notes)


def paths_to_inputs(ops: list[OpRow], field: str) -> dict[str, list[Directive]]:
    """Each input column an output column was made from, with the directives on the way."""
    found: dict[str, dict[tuple, Directive]] = defaultdict(dict)

    def walk(name: str, before: int | None, trail: tuple[Directive, ...], seen: frozenset) -> None:
        if (name, before) in seen:
            return
        seen = seen | {(name, before)}
        for rows in _steps_down(ops, before):
            if _renamed_by_data(rows, name) is not None:
                return  # a position only the data knows: the edge's input says where it came from
            rename = _rename_to(rows, name)
            if rename is not None:
                trail, name = (*trail, rename.as_directive(name)), rename.field
                continue
            made = next((o for o in rows if o.field == name and o.label in ("Modify", "Add")), None)
            if made is None:
                continue
            trail = (*trail, made.as_directive(name))
            for read in made.reads:
                if read != name or made.label == "Add":
                    walk(read, made.step, trail, seen)
            if made.label == "Add" or name not in made.reads:
                return  # made here (an Add, or a Modify that wrote over it without reading it)
        for directive in trail:
            found[name][(directive.step, directive.label, directive.column)] = directive

    walk(field, None, (), frozenset())
    return {name: sorted(ds.values(), key=lambda d: (d.step, d.label)) for name, ds in found.items()}


# ------------------------------------------------------------------------------ column_directives


def column_directives(con: duckdb.DuckDBPyConnection, dataset: tuple[str, str], field: str, window: Window) -> ColumnDirectives:
    """Runs that ended in the window and wrote the dataset, with the directives that touched the
    column in each (tables `hist_versions`, `hist_runs`, `recipe_ops`)."""
    runs = con.execute(
        "SELECT DISTINCT r.run_id, r.job_namespace, r.job_name, r.ended_at, v.run_state FROM hist_versions v "
        "JOIN hist_runs r USING (run_id) WHERE v.namespace = ? AND v.name = ? AND r.ended_at >= ? AND r.ended_at < ? "
        "ORDER BY r.ended_at, r.run_id",
        [*dataset, window.start, window.end],
    ).fetchall()
    ops = load_ops(con, {(r[0], *dataset) for r in runs})
    answer: list[DirectiveRun] = []
    for run_id, job_ns, job_name, ended_at, state in runs:
        rows = ops.get((run_id, *dataset), [])
        directives, notes = renamed_back(rows, field) if rows else ([], [])
        answer.append(DirectiveRun(runId=run_id, job=EndPoint(namespace=job_ns, name=job_name), endedAt=iso(ended_at),
                                   state=state, recipe=bool(rows), directives=directives, notes=notes))
    return ColumnDirectives(dataset=EndPoint(namespace=dataset[0], name=dataset[1]), field=field, runs=answer)


# ------------------------------------------------------------------------------ column_history / column_impact

FILTERS = ("filter-rows-on", "filter-row", "send-to-error")  # directives that remove rows

EDGE_SQL = (
    "SELECT job_namespace, job_name, run_id, output_namespace, output_name, output_field, input_namespace, input_name, "
    "input_field, transformation_type, transformation_subtype, transformation_description, masking FROM ccl "
)


def _edges(con: duckdb.DuckDBPyConnection, node: tuple[str, str, str], direction: str) -> list[tuple]:
    ns, name, field = node
    if direction == "backward":
        sql = EDGE_SQL + ("WHERE output_namespace = ? AND output_name = ? AND (output_field = ? OR output_field IS NULL) "
                          "AND input_field IS NOT NULL")
    else:
        sql = EDGE_SQL + "WHERE input_namespace = ? AND input_name = ? AND input_field = ?"
    return con.execute(sql + " ORDER BY ALL", [ns, name, field]).fetchall()


def column_trace(con: duckdb.DuckDBPyConnection, start: tuple[str, str, str], direction: str, depth: int) -> ColumnTrace:
    """The backward (history) or forward (impact) tree of a column over the current column
    edges (`ccl`), each hop with its recipe directives. A column met again is marked `repeated`
    and not expanded twice; a dataset-wide dependency (a filter) reaches the field "*"."""
    if depth < 0:
        raise ValueError(f"depth must be >= 0, got {depth}")
    expanded: set[tuple[str, str, str]] = set()
    ops_cache: dict[Key, list[OpRow]] = {}

    def ops_of(keys: set[Key]) -> None:
        missing = {k for k in keys if k not in ops_cache}
        loaded = load_ops(con, missing)
        for key in missing:
            ops_cache[key] = loaded.get(key, [])

    def node(ns: str, name: str, field: str, level: int) -> ColumnNode:
        key = (ns, name, field)
        out = ColumnNode(id=field_node(ns, name, field), namespace=ns, name=name, field=field)
        if field == "*":
            return out
        if key in expanded:
            out.repeated = True
            return out
        expanded.add(key)
        edges = _edges(con, key, direction)
        if edges and level >= depth:
            out.truncated = True
            return out
        ops_of({(e[2], e[3], e[4]) for e in edges if e[2]})
        steps = []
        for (job_ns, job_name, run_id, o_ns, o_name, o_field, i_ns, i_name, i_field, t_type, t_sub, t_desc, masking) in edges:
            ops = ops_cache.get((run_id, o_ns, o_name), [])
            if t_type == "INDIRECT":  # a filter's dependency: the recipe's filters are its directives
                directives = [o.as_directive(o.field) for o in ops if o.name in FILTERS and o.label == "Read"]
                target = (i_ns, i_name, i_field) if direction == "backward" else (o_ns, o_name, o_field or "*")
                other = node(*target, level + 1)
            elif direction == "backward":
                directives = paths_to_inputs(ops, field).get(i_field, []) if ops else []
                other = node(i_ns, i_name, i_field, level + 1)
            else:
                target = o_field if o_field is not None else "*"
                directives = paths_to_inputs(ops, o_field).get(field, []) if ops and o_field is not None else []
                other = node(o_ns, o_name, target, level + 1)
            steps.append(ColumnStep(job=EndPoint(namespace=job_ns, name=job_name), runId=run_id, type=t_type, subtype=t_sub,
                                    description=t_desc, masking=masking, directives=directives, node=other))
        out.steps = steps
        return out

    return ColumnTrace(direction=direction, depth=depth, root=node(*start, 0))


def trace_lines(trace: ColumnTrace) -> list[str]:
    """`--tree`: each column, then each hop indented under it with its job and directives."""
    lines: list[str] = []

    def label(n: ColumnNode) -> str:
        marks = [m for m, on in (("repeated", n.repeated), ("depth limit", n.truncated)) if on]
        return f"{n.namespace} {n.name} :: {n.field}" + (f"  ({', '.join(marks)})" if marks else "")

    def walk(n: ColumnNode, indent: str) -> None:
        for step in n.steps:
            how = ":".join(p for p in (step.type, step.subtype) if p) + (" masked" if step.masking else "")
            arrow = "<-" if trace.direction == "backward" else "->"
            lines.append(f"{indent}{arrow} job {step.job.namespace}/{step.job.name} [{how}]")
            for d in step.directives:
                lines.append(f"{indent}     step {d.step} (line {d.line}) {d.label} {d.column}: {d.directive}")
            lines.append(f"{indent}   {label(step.node)}")
            walk(step.node, indent + "   ")

    lines.append(label(trace.root))
    walk(trace.root, "")
    return lines
