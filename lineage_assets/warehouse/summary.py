"""What the warehouse holds, read with DuckDB (read-only: it never locks out the pipeline)."""

from __future__ import annotations

import os

import duckdb

from lineage_assets.warehouse import snapshots

TABLES = ("events", "rejected_events", "landed_events", "runs", "job_versions", "dataset_versions", "run_lineage", "column_lineage", "dataset_fields")
SNAPSHOTS = ("current_jobs", "current_lineage", "current_column_lineage", "current_dataset_fields")


def _files(warehouse: str, table: str) -> str | None:
    root = os.path.join(warehouse, table)
    if not os.path.isdir(root):
        return None
    for _dirpath, _dirs, files in os.walk(root):
        if any(f.endswith(".parquet") for f in files):
            return os.path.join(root, "**", "*.parquet")
    return None


def table_counts(warehouse: str) -> dict[str, int]:
    con = duckdb.connect()
    counts = {}
    for table in TABLES:
        pattern = _files(warehouse, table)
        counts[table] = (
            con.execute("select count(*) from read_parquet(?, hive_partitioning = true)", [pattern]).fetchone()[0]
            if pattern
            else 0
        )
    for table in SNAPSHOTS:
        current = snapshots.current_dir(warehouse, table)
        counts[table] = (
            con.execute(
                "select count(*) from read_parquet(?, hive_partitioning = false)", [os.path.join(current, "*.parquet")]
            ).fetchone()[0]
            if current
            else 0
        )
    return counts


def rejected_by_reason(warehouse: str) -> dict[str, int]:
    pattern = _files(warehouse, "rejected_events")
    if not pattern:
        return {}
    rows = duckdb.connect().execute(
        "select reason_code, count(*) from read_parquet(?, hive_partitioning = true) group by 1 order by 1",
        [pattern],
    ).fetchall()
    return dict(rows)


def format_summary(warehouse: str) -> str:
    lines = [f"warehouse: {warehouse}", "rows per table:"]
    for table, count in table_counts(warehouse).items():
        lines.append(f"  {table:<24} {count:>8}")
    reasons = rejected_by_reason(warehouse)
    lines.append("rejected by reason:" if reasons else "rejected by reason: none")
    for reason, count in reasons.items():
        lines.append(f"  {reason:<24} {count:>8}")
    return "\n".join(lines)
