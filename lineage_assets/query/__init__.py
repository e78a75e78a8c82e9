"""Query helper over the warehouse (DuckDB, read-only)."""
