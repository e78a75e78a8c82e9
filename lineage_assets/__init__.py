"""lineage_assets: an OpenLineage lakehouse as a Dagster asset project."""
