"""The current column graph of one loaded snapshot, indexed for `column_lineage()`.

Fields are numbered (`fids`: ordered by namespace, name, field, so the fields of one dataset
are one range: `FieldNames`) and the current column edges are one `traversal.Adjacency` from output field to
input field (upstream is forward). The edges' rows are kept as one Arrow table in the same
order, with the field types already joined: an answer takes its rows by position, so it costs
its own edges, not a scan of them all.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import duckdb
import numpy as np
import pyarrow as pa

from lineage_assets.query.traversal import Adjacency

_TYPED_EDGES = (
    "SELECT e.*, coalesce(fo.type, e.output_field_type) AS output_type, coalesce(fi.type, e.input_field_type) AS input_type "
    "FROM cedges e "
    "LEFT JOIN cdf fo ON fo.namespace = e.output_namespace AND fo.name = e.output_name AND fo.field_path = e.output_field "
    "LEFT JOIN cdf fi ON fi.namespace = e.input_namespace AND fi.name = e.input_name AND fi.field_path = e.input_field"
)


@dataclass
class FieldNames:
    """Sorted (namespace, name, field) triples: the fields of one dataset are one range, found by
    a dictionary lookup and a binary search."""

    ranges: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)  # (ns, name) -> [start, end)
    names: pa.Array = field(default_factory=lambda: pa.array([], pa.string()))

    @classmethod
    def load(cls, con: duckdb.DuckDBPyConnection, sql: str) -> FieldNames:
        """`sql` yields (ns, name, field) rows; they are sorted here."""
        con.execute(f"CREATE OR REPLACE TEMP TABLE _names AS SELECT row_number() OVER (ORDER BY ns, name, field) - 1 AS i, * FROM ({sql}) t(ns, name, field)")
        names = con.sql("SELECT field FROM _names ORDER BY i").to_arrow_table().column(0).combine_chunks()
        ranges = con.execute("SELECT ns, name, min(i), max(i) + 1 FROM _names GROUP BY ns, name").fetchall()
        con.execute("DROP TABLE _names")
        return cls({(ns, name): (lo, hi) for ns, name, lo, hi in ranges}, names)

    def has_dataset(self, namespace: str, name: str) -> bool:
        return (namespace, name) in self.ranges

    def fields(self, namespace: str, name: str) -> list[str]:
        lo, hi = self.ranges.get((namespace, name), (0, 0))
        return self.names.slice(lo, hi - lo).to_pylist()

    def position(self, namespace: str, name: str, field_name: str) -> int | None:
        """Where a field is in the sorted triples (None when it is not there)."""
        lo, _hi = self.ranges.get((namespace, name), (0, 0))
        fields = self.fields(namespace, name)
        at = bisect.bisect_left(fields, field_name)
        return lo + at if at < len(fields) and fields[at] == field_name else None


@dataclass
class CurrentFields:
    endpoints: FieldNames = field(default_factory=FieldNames)  # fields of current edges: position + 1 is the fid
    schemas: FieldNames = field(default_factory=FieldNames)  # fields of the datasets' current schemas (`cdf`)
    edges: pa.Table | None = None  # one row per current column edge (typed), in adjacency order
    adjacency: Adjacency = field(default_factory=lambda: Adjacency(0, [], []))

    @classmethod
    def load(cls, con: duckdb.DuckDBPyConnection) -> CurrentFields:
        """From the `fids`, `cdf` and `cedges` tables of the connection (`ColumnGraph.load_current`)."""
        endpoints = FieldNames.load(con, "SELECT ns, name, field FROM fids")  # the same order as fid
        schemas = FieldNames.load(con, "SELECT namespace, name, field_path FROM cdf WHERE field_path IS NOT NULL")
        temporary = con.sql("SELECT temporary FROM fids ORDER BY fid").to_arrow_table().column(0).to_numpy()
        edges = con.sql(_TYPED_EDGES).to_arrow_table().combine_chunks()  # one chunk: `take` by position is then cheap
        size = len(temporary) + 1  # fids count from 1
        free = np.zeros(size, dtype=bool)
        free[1:] = temporary
        adjacency = Adjacency(
            size, edges.column("out_fid").to_numpy(zero_copy_only=False), edges.column("in_fid").to_numpy(zero_copy_only=False), free,
        )
        return cls(endpoints, schemas, edges, adjacency)

    def fid(self, namespace: str, name: str, field_name: str) -> int | None:
        """The number of a field that takes part in a current edge (None otherwise)."""
        at = self.endpoints.position(namespace, name, field_name)
        return None if at is None else at + 1

    def has_dataset(self, namespace: str, name: str) -> bool:
        return self.endpoints.has_dataset(namespace, name) or self.schemas.has_dataset(namespace, name)

    def has_field(self, namespace: str, name: str, field_name: str) -> bool:
        return self.fid(namespace, name, field_name) is not None or self.schemas.position(namespace, name, field_name) is not None

    def dataset_fields(self, namespace: str, name: str) -> list[str]:
        """Every current field of a dataset: its schema's and those of its current edges."""
        return sorted(set(self.schemas.fields(namespace, name)) | set(self.endpoints.fields(namespace, name)))

    def rows_around(self, seeds: list[tuple], depth: int, downstream: bool, bridge: bool) -> list[dict]:
        """The edges of an answer: those into every field fewer than `depth` hops upstream of a
        seed, and with `downstream` those out of every field fewer than `depth` hops downstream.
        With `bridge`, a hop into a field of a temporary dataset costs nothing."""
        if self.edges is None:
            return []
        start = [f for f in (self.fid(*seed[:3]) for seed in seeds) if f is not None]
        nodes, hops = self.adjacency.walk_arrays(start, depth, bridge=bridge)
        picked = [self.adjacency.edges_from(nodes[hops < depth])]
        if downstream:
            nodes, hops = self.adjacency.walk_arrays(start, depth, backward=True, bridge=bridge)
            picked.append(self.adjacency.edges_from(nodes[hops < depth], backward=True))
        rows = np.unique(np.concatenate(picked))
        return self.edges.take(pa.array(rows, pa.int64())).to_pylist() if len(rows) else []
