"""The one traversal engine of the query helper: breadth-first walks over an adjacency index.

An `Adjacency` is built once per loaded snapshot (or history window) from integer edge arrays:
compressed sparse rows in both directions, so the neighbours of a node are one slice. A walk
visits each node once and stops when nothing new is found, so its cost follows the answer (the
nodes reached and their edges), not the graph, and a depth beyond the graph's longest path (or a
cycle) costs nothing more. Hops into nodes marked `free` cost 0 (0-1 breadth-first search): the
hidden temporary datasets a bridged answer looks through.
"""

from __future__ import annotations

import threading
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
        self._hops = np.full(size, -1, dtype=np.int32)  # scratch of a walk: -1 = not reached; reset after each walk
        self._scratch_lock = threading.Lock()

    def walk(self, seeds: Iterable[int], depth: int, *, backward: bool = False, both: bool = False, bridge: bool = False) -> dict[int, int]:
        """{node: fewest hops} of every node within `depth` hops of a seed (seeds at 0),
        following edges forward (or backward, or both ways). With `bridge`, entering a `free`
        node costs no hop. Only nodes nearer than `depth` are expanded (a free node beside one
        at `depth` is not reached)."""
        nodes, hops = self.walk_arrays(seeds, depth, backward=backward, both=both, bridge=bridge)
        return dict(zip(nodes.tolist(), hops.tolist()))

    def walk_arrays(
        self, seeds: Iterable[int], depth: int, *, backward: bool = False, both: bool = False, bridge: bool = False,
    ) -> tuple[np.ndarray, np.ndarray]:
        """`walk` as two arrays (nodes in the order found, their hops). Breadth-first by levels,
        each level one set of array operations: the neighbours of the whole frontier are one
        gather from the compressed rows, so the Python work is per level, not per node. Within a
        level, free nodes entered (with `bridge`) join the level and are expanded in turn."""
        rows = [self.forward, self.backward] if both else [self.backward if backward else self.forward]
        seed_array = np.unique(np.fromiter((int(n) for n in seeds), dtype=np.int64))
        if len(seed_array) and (seed_array[0] < 0 or seed_array[-1] >= self.size):
            raise ValueError("seeds must name nodes 0..size-1")
        with self._scratch_lock:
            hops = self._hops
            found = [seed_array]
            hops[seed_array] = 0
            try:
                frontier, level = seed_array, 0
                while len(frontier) and level < depth:
                    reached = []
                    current = frontier
                    while len(current):  # this level's nodes, and the free nodes they enter
                        near = _gather(rows, current)
                        near = np.unique(near[hops[near] < 0])
                        if not len(near):
                            break
                        if bridge:
                            zero = self.free[near]
                            current, paid = near[zero], near[~zero]
                        else:
                            current, paid = near[:0], near
                        hops[current] = level
                        hops[paid] = level + 1
                        found += [current, paid]
                        reached.append(paid)
                    frontier = np.concatenate(reached) if reached else seed_array[:0]
                    level += 1
                nodes = np.concatenate(found)
                return nodes, hops[nodes].astype(np.int64)
            finally:
                for part in found:
                    hops[part] = -1

    def edges_from(self, nodes: Iterable[int], *, backward: bool = False) -> np.ndarray:
        """The edge numbers leaving `nodes` (entering them with `backward`), sorted, each once."""
        rows = self.backward if backward else self.forward
        array = nodes if isinstance(nodes, np.ndarray) else np.fromiter((int(n) for n in nodes), dtype=np.int64)
        return np.unique(_gather([rows], array.astype(np.int64, copy=False), edges=True))


def _gather(rows: list[_Rows], nodes: np.ndarray, edges: bool = False) -> np.ndarray:
    """The neighbours (or edge numbers) of all `nodes` in the compressed rows given, with
    repeats: one slice per node, taken at once."""
    parts = []
    for direction in rows:
        starts = direction.offsets[nodes]
        lengths = direction.offsets[nodes + 1] - starts
        total = int(lengths.sum())
        if not total:
            continue
        ends = np.cumsum(lengths)
        index = np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - lengths), lengths)
        parts.append((direction.edges if edges else direction.targets)[index])
    if not parts:
        return np.zeros(0, dtype=np.int64)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)
