"""Late events through Dagster: a drop for an already processed day recomputes it and every
later processed day, and the tables end equal to processing everything at once."""

from __future__ import annotations

import json

import duckdb
from dagster import DagsterInstance

from lineage_assets.runner import ingest
from lineage_assets.settings import LineageSettings
from lineage_assets.warehouse import snapshots
from lineage_assets_tests.support import run_event, run_uuid

D1, D2 = "2024-03-01", "2024-03-02"
FIRST = [
    run_event(f"{D1}T01:00:00Z", "COMPLETE", "a1", "writer", [], ["X"]),
    run_event(f"{D2}T10:00:00Z", "START", "b1", "reader", ["X"]),
    run_event(f"{D2}T10:30:00Z", "COMPLETE", "b1", "reader", ["X"], ["Y"]),
]
LATE = [run_event(f"{D1}T05:00:00Z", "COMPLETE", "a2", "writer", ["src"], ["X"])]
TABLES = {"runs": "run_id", "job_versions": "version_id", "dataset_versions": "version_id", "run_lineage": "run_id"}


def _write(path, events):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in events))


def _table(warehouse, name, key):
    return duckdb.sql(
        f"select * exclude ({'end_date' if name in ('runs', 'run_lineage') else 'created_date'}) "
        f"from read_parquet('{warehouse}/{name}/**/*.parquet', hive_partitioning = true) order by {key}"
    ).fetchall()


def _current(warehouse):
    return duckdb.sql(
        f"select * from read_parquet('{snapshots.current_dir(str(warehouse), 'current_lineage')}/*.parquet', hive_partitioning = false) order by all"
    ).fetchall()


def test_a_late_drop_recomputes_forward_and_matches_a_one_shot_run(spark, tmp_path):
    quiet = lambda _m: None  # noqa: E731
    # one shot: both drops land before anything is processed
    _write(tmp_path / "once" / "a.ndjson", FIRST)
    _write(tmp_path / "once" / "b.ndjson", LATE)
    once = LineageSettings(str(tmp_path / "once"), str(tmp_path / "wh_once"), "2024-01-01")
    with DagsterInstance.ephemeral() as instance:
        assert not ingest(once, instance, log=quiet).failed

    # in order of arrival: the late drop comes after both days were processed
    late = LineageSettings(str(tmp_path / "late"), str(tmp_path / "wh_late"), "2024-01-01")
    _write(tmp_path / "late" / "a.ndjson", FIRST)
    with DagsterInstance.ephemeral() as instance:
        first = ingest(late, instance, log=quiet)
        assert ("daily_job", f"{D1}..{D2}", True) in first.runs
        before = _table(tmp_path / "wh_late", "run_lineage", "run_id")
        _write(tmp_path / "late" / "b.ndjson", LATE)
        second = ingest(late, instance, log=quiet)
        assert not second.failed
        # the late day and every later processed day, in one run, in order
        assert [r[1] for r in second.runs if r[0] == "daily_job"] == [f"{D1}..{D2}"]

    after = _table(tmp_path / "wh_late", "run_lineage", "run_id")
    assert after != before  # the reader now resolves X to the late write
    reader = next(r for r in after if r[0] == run_uuid("b1"))
    x_version = next(v for v in reader[7] if v["name"] == "X")["version_id"]
    expected = next(
        r[0] for r in _table(tmp_path / "wh_late", "dataset_versions", "version_id") if r[3] == run_uuid("a2")
    )
    assert x_version == expected
    for name, key in TABLES.items():
        assert _table(tmp_path / "wh_late", name, key) == _table(tmp_path / "wh_once", name, key), name
    assert _current(tmp_path / "wh_late") == _current(tmp_path / "wh_once")
