"""Run-level lineage and versioning (DESIGN.md section 4): pure folds and their Spark assembly."""
