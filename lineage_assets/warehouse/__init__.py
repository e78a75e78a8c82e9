"""The Parquet warehouse: table schemas, paths and partition-level writes."""
