"""What the warehouse holds, read with DuckDB from the latest commit (read-only: DuckDB never
locks out the pipeline, and it reads only committed files)."""

from __future__ import annotations

import duckdb

from lineage_assets.warehouse import commits
from lineage_assets.warehouse import tables as t


def table_counts(warehouse: str, commit: commits.Commit | None = None) -> dict[str, int]:
    commit = commit or commits.latest(warehouse)
    con = duckdb.connect()
    return {
        table.name: con.execute(f"SELECT count(*) FROM ({commits.duckdb_relation_sql(commit, table.name)})").fetchone()[0]
        for table in t.USER_TABLES
    }


def rejected_by_reason(warehouse: str, commit: commits.Commit | None = None) -> dict[str, int]:
    commit = commit or commits.latest(warehouse)
    rows = duckdb.connect().execute(
        f"SELECT reason_code, count(*) FROM ({commits.duckdb_relation_sql(commit, 'rejected_events')}) GROUP BY 1 ORDER BY 1"
    ).fetchall()
    return dict(rows)


def format_summary(warehouse: str) -> str:
    commit = commits.latest(warehouse)
    lines = [f"warehouse: {warehouse} (commit {commit.seq})", "rows per table:"]
    for table, count in table_counts(warehouse, commit).items():
        lines.append(f"  {table:<24} {count:>8}")
    reasons = rejected_by_reason(warehouse, commit)
    lines.append("rejected by reason:" if reasons else "rejected by reason: none")
    for reason, count in reasons.items():
        lines.append(f"  {str(reason):<24} {count:>8}")
    return "\n".join(lines)
