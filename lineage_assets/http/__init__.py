"""The OpenLineage HTTP endpoint (`lineage-assets serve`): see `server`."""
