"""Text renderings of a lineage answer: JSON (the reference shape) or an indented tree."""

from __future__ import annotations

import json

from pydantic import BaseModel

from lineage_assets.identity.datahub import parse_urn
from lineage_assets.query.datahub_models import UpstreamLineage
from lineage_assets.query.field_models import DatasetResource, FieldList, FieldMappings, FieldOperations
from lineage_assets.query.models import LineageGraph
from lineage_assets.query.recipe_history import trace_lines
from lineage_assets.query.recipe_models import ColumnDirectives, ColumnTrace


def jsonable(answer: BaseModel) -> object:
    """The answer as JSON values (what the CLI prints and the read API sends); a DataHub aspect
    without its absent optional fields, as DataHub writes it."""
    return answer.model_dump(mode="json", exclude_none=isinstance(answer, UpstreamLineage))


def as_json(answer: BaseModel) -> str:
    return json.dumps(jsonable(answer), indent=2, ensure_ascii=False, default=str)


def _how(transformations) -> str:
    return ", ".join(
        ":".join(p for p in (t.type, t.subtype) if p) + (" masked" if t.masking else "") + (f" ({t.description})" if t.description else "")
        for t in transformations
    )


def as_table(answer: BaseModel) -> str:
    """A readable text table of a field-lineage answer or a dataset resource."""
    if isinstance(answer, FieldList):
        rows = [f"{f.name}\t{'lineage' if f.lineage else '-'}" for f in answer.root]
        return "\n".join(rows) or "(no fields)"
    if isinstance(answer, FieldMappings):
        lines = []
        for m in answer.root:
            lines.append(f"{m.direction} level {m.level}: {m.source.namespace}:{m.source.name} -> {m.destination.namespace}:{m.destination.name}"
                         f"  ({len(m.runs)} run(s), last {m.runs[-1].endedAt if m.runs else '-'})")
            lines += [f"    {f.from_} -> {f.to if f.to is not None else '* (whole dataset)'}" + (f"  [{_how(f.transformations)}]" if f.transformations else "")
                      for f in m.fieldmap]
        return "\n".join(lines) or "(no mappings)"
    if isinstance(answer, FieldOperations):
        lines = [f"{c.from_} -> {c.to}  [{c.operation}]" for c in answer.connections]
        lines += [f"operation {o.name}: {o.description or ''}" for o in answer.operations]
        lines += [f"program {p.job.namespace}:{p.job.name}: {len(p.runs)} run(s), last {p.lastExecutedAt}" for p in answer.programs]
        return "\n".join(lines) or "(no operations)"
    if isinstance(answer, DatasetResource):
        lines = [f"{answer.namespace}:{answer.name} ({answer.type}) current version {answer.currentVersion}, modified {answer.lastModifiedAt}"]
        lines += [f"  field {f.name}: {f.type or '?'}" + (f" - {f.description}" if f.description else "") for f in answer.fields]
        for entry in answer.columnLineage:
            sources = ", ".join(f"{i.namespace}:{i.dataset}.{i.field}" + (f" ({i.transformationType})" if i.transformationType else "")
                                for i in entry.inputFields)
            lines.append(f"  {entry.name} <- {sources}")
        return "\n".join(lines)
    if isinstance(answer, UpstreamLineage):
        lines = [f"upstream {u.dataset} ({u.type})" for u in answer.upstreams]
        for fine in answer.fineGrainedLineages or []:
            down = ", ".join(parse_urn(d).path for d in fine.downstreams or [])
            ups = ", ".join(f"{parse_urn(u).dataset.name}.{parse_urn(u).path}" for u in fine.upstreams or [])
            lines.append(f"  {down} <- {ups}  [{fine.transformOperation or '-'}]")
        return "\n".join(lines) or "(no upstreams)"
    if isinstance(answer, ColumnDirectives):
        lines = [f"{answer.dataset.namespace}:{answer.dataset.name} :: {answer.field}"]
        for run in answer.runs:
            lines.append(f"  run {run.runId} {run.job.namespace}/{run.job.name} ended {run.endedAt} {run.state or ''}"
                         + ("" if run.recipe else "  (no recipe)"))
            lines += [f"    step {d.step} (line {d.line}) {d.label} {d.column}: {d.directive}" for d in run.directives]
            lines += [f"    note: {n}" for n in run.notes]
        return "\n".join(lines)
    raise TypeError(f"no table rendering for {type(answer).__name__}")


def as_tree(graph: LineageGraph | ColumnTrace, roots: list[str] | None = None) -> str:
    """Each root (by default the nodes nothing downstream in the answer reads) followed by its
    inputs, indented one level per hop; a node met again on the same path is marked (cycle)."""
    if isinstance(graph, ColumnTrace):
        return "\n".join(trace_lines(graph))
    by_id = {n.id: n for n in graph.graph}
    if not by_id:
        return "(no lineage)"
    if roots is None:
        roots = [n.id for n in graph.graph if not any(e.destination in by_id for e in n.outEdges)] or [graph.graph[0].id]
    lines: list[str] = []

    def label(node_id: str) -> str:
        node = by_id[node_id]
        kind = node.data.get("fieldType")
        how = sorted({t["type"] for i in node.data.get("inputFields", []) for t in i.get("transformations", []) if t.get("type")})
        extra = [x for x in (kind and f"type {kind}", how and "from " + "/".join(how)) if x]
        return node_id + (f"  ({', '.join(extra)})" if extra else "")

    def walk(node_id: str, depth: int, path: tuple[str, ...]) -> None:
        if node_id in path:
            lines.append("  " * depth + f"{node_id}  (cycle)")
            return
        lines.append("  " * depth + ("<- " if depth else "") + label(node_id))
        for edge in sorted(by_id[node_id].inEdges, key=lambda e: e.origin):
            if edge.origin in by_id:
                walk(edge.origin, depth + 1, (*path, node_id))

    for root in sorted(roots):
        walk(root, 0, ())
    return "\n".join(lines)
