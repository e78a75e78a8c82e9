"""The one traversal engine of the query helper: breadth-first walks over an adjacency index.

An `Adjacency` is built once per loaded snapshot (or history window) from integer edge arrays:
compressed sparse rows in both directions, so the neighbours of a node are one slice. A walk
visits each node once and stops when nothing new is found, so its cost follows the answer (the
nodes reached and their edges), not the graph, and a depth beyond the graph's longest path (or a
cycle) costs nothing more. Hops into nodes marked `free` cost 0 (0-1 breadth-first search): the
hidden temporary datasets a bridged answer looks through.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

MAX_DEPTH = 100_000  # a walk converges long before; larger values are a caller's mistake


def check_depth(depth: object) -> int:
    """`depth` as a walk's bound, or ValueError: a non-negative integer up to MAX_DEPTH."""
    if not isinstance(depth, (int, np.integer)) or isinstance(depth, bool) or not 0 <= depth <= MAX_DEPTH:
        raise ValueError(f"depth must be an integer from 0 to {MAX_DEPTH}, got {depth!r}")
    return int(depth)


@dataclass(frozen=True)
class _Rows:
    """Compressed sparse rows: the neighbours of node n are targets[offsets[n]:offsets[n + 1]],
    and edges[...] the same slice's edge numbers (positions in the arrays it was built from)."""

    offsets: np.ndarray
    targets: np.ndarray
    edges: np.ndarray

    @classmethod
    def build(cls, size: int, source: np.ndarray, target: np.ndarray) -> _Rows:
        order = np.argsort(source, kind="stable")
        offsets = np.zeros(size + 1, dtype=np.int64)
        np.cumsum(np.bincount(source, minlength=size), out=offsets[1:])
        return cls(offsets, target[order], order)

    def around(self, node: int) -> tuple[np.ndarray, np.ndarray]:
        start, end = self.offsets[node], self.offsets[node + 1]
        return self.targets[start:end], self.edges[start:end]


class Adjacency:
    """Directed edges `source[i] -> target[i]` between nodes 0..size-1, walkable both ways."""

    def __init__(self, size: int, source: Iterable[int], target: Iterable[int], free: Iterable[bool] | None = None):
        src = np.asarray(source if isinstance(source, np.ndarray) else list(source), dtype=np.int64)
        dst = np.asarray(target if isinstance(target, np.ndarray) else list(target), dtype=np.int64)
        if src.shape != dst.shape or (len(src) and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= size)):
            raise ValueError("edges must name nodes 0..size-1, as many sources as targets")
        self.size = size
        self.forward = _Rows.build(size, src, dst)
        self.backward = _Rows.build(size, dst, src)
        self.free = np.zeros(size, dtype=bool) if free is None else np.asarray(list(free) if not isinstance(free, np.ndarray) else free, dtype=bool)
        if self.free.shape != (size,):
            raise ValueError("free must hold one flag per node")

    def walk(self, seeds: Iterable[int], depth: int, *, backward: bool = False, both: bool = False, bridge: bool = False) -> dict[int, int]:
        """{node: fewest hops} of every node within `depth` hops of a seed (seeds at 0),
        following edges forward (or backward, or both ways). With `bridge`, entering a `free`
        node costs no hop. Only nodes nearer than `depth` are expanded (a free node beside one
        at `depth` is not reached)."""
        rows = [self.backward] if backward else [self.forward]
        if both:
            rows = [self.forward, self.backward]
        hops: dict[int, int] = {}
        queue: deque[int] = deque()
        for seed in seeds:
            if seed not in hops:
                hops[seed] = 0
                queue.append(seed)
        free = self.free
        while queue:
            node = queue.popleft()
            here = hops[node]
            if here >= depth:
                continue
            for direction in rows:
                targets, _edges = direction.around(node)
                for other in targets.tolist():
                    cost = 0 if bridge and free[other] else 1
                    there = here + cost
                    if there > depth or hops.get(other, depth + 1) <= there:
                        continue
                    hops[other] = there
                    if cost:
                        queue.append(other)
                    else:
                        queue.appendleft(other)
        return hops

    def edges_from(self, nodes: Iterable[int], *, backward: bool = False) -> np.ndarray:
        """The edge numbers leaving `nodes` (entering them with `backward`), sorted, each once."""
        rows = self.backward if backward else self.forward
        parts = [rows.around(n)[1] for n in nodes]
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
