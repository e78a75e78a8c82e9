"""Response models: `.model_dump()` is the reference server's lineage JSON shape."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class Edge(BaseModel):
    origin: str
    destination: str


class Node(BaseModel):
    id: str
    type: Literal["JOB", "DATASET", "DATASET_FIELD"]
    data: dict[str, Any] = Field(default_factory=dict)
    inEdges: list[Edge] = Field(default_factory=list)
    outEdges: list[Edge] = Field(default_factory=list)


class LineageGraph(BaseModel):
    """An answer. The helper builds answers with `model_construct` (no validation: every value
    comes from the warehouse typed), so a large answer costs its rows, not their validation."""

    graph: list[Node] = Field(default_factory=list)

    def node(self, node_id: str) -> Node:
        for node in self.graph:
            if node.id == node_id:
                return node
        raise KeyError(node_id)

    @property
    def ids(self) -> set[str]:
        return {n.id for n in self.graph}
