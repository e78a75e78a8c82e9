"""Text renderings of a lineage answer: JSON (the reference shape) or an indented tree."""

from __future__ import annotations

import json

from lineage_assets.query.models import LineageGraph


def as_json(graph: LineageGraph) -> str:
    return json.dumps(graph.model_dump(mode="json"), indent=2, ensure_ascii=False, default=str)


def as_tree(graph: LineageGraph, roots: list[str] | None = None) -> str:
    """Each root (by default the nodes nothing downstream in the answer reads) followed by its
    inputs, indented one level per hop; a node met again on the same path is marked (cycle)."""
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
