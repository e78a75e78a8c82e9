"""lineage_assets: an OpenLineage lakehouse as a Dagster asset project.

The query helper is imported lazily: Spark's Python workers import this package to run the
fold's per-group functions and must not pay for DuckDB and pandas on every worker start.
"""

from typing import TYPE_CHECKING

from lineage_assets.known_warnings import ignore_known_warnings

ignore_known_warnings()

__all__ = ["LineageQuery", "NodeNotFound"]

if TYPE_CHECKING:
    from lineage_assets.query.lineage_query import LineageQuery
    from lineage_assets.query.node_ids import NodeNotFound


def __getattr__(name: str):
    if name == "LineageQuery":
        from lineage_assets.query.lineage_query import LineageQuery

        return LineageQuery
    if name == "NodeNotFound":
        from lineage_assets.query.node_ids import NodeNotFound

        return NodeNotFound
    raise AttributeError(f"module 'lineage_assets' has no attribute {name!r}")
