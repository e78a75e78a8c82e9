"""Response models: `.model_dump()` is the reference server's lineage JSON shape."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Edge(BaseModel):
    """Frozen: the query helper makes each edge of a loaded snapshot once and answers share it."""

    model_config = ConfigDict(frozen=True)

    origin: str
    destination: str


class Node(BaseModel):
    """Frozen: its fields are not reassigned. The parts of a `lineage()` answer that the helper
    prepared at load (each job's node, each dataset's data) are shared by every answer holding
    them and are read-only (`ReadOnlyDict`, `ReadOnlyList`); copy them to change them."""

    model_config = ConfigDict(frozen=True)

    id: str
    type: Literal["JOB", "DATASET", "DATASET_FIELD"]
    data: dict[str, Any] = Field(default_factory=dict)
    inEdges: list[Edge] = Field(default_factory=list)
    outEdges: list[Edge] = Field(default_factory=list)


class LineageGraph(BaseModel):
    """An answer. The helper builds answers with `edge`, `node` and `answer` below (no
    validation: every value comes from the warehouse typed), so a large answer costs its rows,
    not their validation."""

    graph: list[Node] = Field(default_factory=list)

    def node(self, node_id: str) -> Node:
        for node in self.graph:
            if node.id == node_id:
                return node
        raise KeyError(node_id)

    @property
    def ids(self) -> set[str]:
        return {n.id for n in self.graph}


# ----------------------------------------------------------------------------- shared parts


def _read_only(self, *args, **kwargs):
    raise TypeError("this part of a lineage answer is shared with other answers and read-only: copy it to change it")


class ReadOnlyDict(dict):
    """A dict that answers share: reads as a dict (and serialises as one), refuses changes."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _read_only

    def copy(self) -> dict:
        return dict(self)

    def __reduce__(self):
        return (ReadOnlyDict, (dict(self),))


class ReadOnlyList(list):
    """A list that answers share: reads as a list (and serialises as one), refuses changes."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = append = extend = insert = pop = remove = clear = sort = reverse = _read_only

    def copy(self) -> list:
        return list(self)

    def __reduce__(self):
        return (ReadOnlyList, (list(self),))


# ----------------------------------------------------------------------------- building answers
#
# A depth-20 answer on a platform graph with hub datasets can hold 40,000 nodes and 58,000 edges.
# `model_construct` costs about 2.5 us an object (and, for a field left to a `default_factory`,
# pydantic inspects the factory's signature on every call: 150 us for `list`); these set the
# instance's state directly, as `model_construct` does once its arguments are checked: about
# 0.6 us. Every field is given, so `fields_set` is all of them and one shared set serves
# (pydantic only ever adds to it, and adding a field already in it changes nothing).

_set = object.__setattr__
_EDGE_FIELDS = set(Edge.model_fields)
_NODE_FIELDS = set(Node.model_fields)
_GRAPH_FIELDS = set(LineageGraph.model_fields)


def _instance(cls: type[BaseModel], values: dict, fields: set[str]) -> Any:
    obj = object.__new__(cls)
    _set(obj, "__dict__", values)
    _set(obj, "__pydantic_fields_set__", fields)
    _set(obj, "__pydantic_extra__", None)
    _set(obj, "__pydantic_private__", None)
    return obj


def edge(origin: str, destination: str) -> Edge:
    return _instance(Edge, {"origin": origin, "destination": destination}, _EDGE_FIELDS)


def node(node_id: str, kind: str, data: dict[str, Any], in_edges: list[Edge] | None = None, out_edges: list[Edge] | None = None) -> Node:
    return _instance(Node, {"id": node_id, "type": kind, "data": data, "inEdges": in_edges if in_edges is not None else [],
                            "outEdges": out_edges if out_edges is not None else []}, _NODE_FIELDS)


def answer(nodes: list[Node]) -> LineageGraph:
    return _instance(LineageGraph, {"graph": nodes}, _GRAPH_FIELDS)
