"""The warehouse summary counts partitioned tables and only the published snapshot."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from lineage_assets.warehouse.snapshots import publish, snapshot_dir
from lineage_assets.warehouse.summary import format_summary, rejected_by_reason, table_counts


def _write(path, rows):
    path.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path / "part-0.parquet")


def test_counts_partitions_and_the_published_snapshot_only(tmp_path):
    _write(tmp_path / "runs" / "end_date=2024-03-01", [{"run_id": "a"}, {"run_id": "b"}])
    _write(tmp_path / "runs" / "end_date=2024-03-02", [{"run_id": "c"}])
    _write(tmp_path / "rejected_events" / "read_date=2024-03-01" / "drop_id=x", [{"reason_code": "not_json"}, {"reason_code": "not_json"}, {"reason_code": "invalid_run_id"}])
    from pathlib import Path

    _write(Path(snapshot_dir(str(tmp_path), "current_jobs", "one")), [{"job_name": "j1"}])
    publish(str(tmp_path), "current_jobs", "one")
    _write(Path(snapshot_dir(str(tmp_path), "current_jobs", "two")), [{"job_name": "j1"}, {"job_name": "j2"}])  # not published
    counts = table_counts(str(tmp_path))
    assert counts["runs"] == 3 and counts["events"] == 0 and counts["rejected_events"] == 3
    assert counts["current_jobs"] == 1 and counts["current_lineage"] == 0
    assert rejected_by_reason(str(tmp_path)) == {"invalid_run_id": 1, "not_json": 2}
    lines = format_summary(str(tmp_path)).splitlines()
    assert any(line.split() == ["runs", "3"] for line in lines)
    assert any(line.split() == ["current_column_lineage", "0"] for line in lines)
