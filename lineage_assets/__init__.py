"""lineage_assets: an OpenLineage lakehouse as a Dagster asset project."""

from lineage_assets.query.lineage_query import LineageQuery
from lineage_assets.query.node_ids import NodeNotFound

__all__ = ["LineageQuery", "NodeNotFound"]
