"""A small landing batch read in this process (`intake.local_intake`) gives the same tables as
the same batch read by Spark (`intake.spark_intake`), batch after batch: duplicates inside a
batch and across batches, rejects, a replaced file whose rejects are not stored twice, several
days, gzip, arrays, unicode names."""

from __future__ import annotations

import datetime as dt
import gzip
import itertools
import json
import os

import duckdb
import pytest

from lineage_assets.intake import local_intake
from lineage_assets.pipeline import landing
from lineage_assets.pipeline.landing import batch_weight, land_batch
from lineage_assets.settings import (
    DEFAULT_LOCAL_INTAKE_MAX_BYTES,
    local_intake_max_bytes,
)
from lineage_assets.warehouse import commits
from lineage_assets.warehouse import tables as t
from lineage_assets_tests.support import land_by, run_event

SCHEDULE_SECONDS = 25  # measured (--durations); conftest runs long files first

START = dt.date(2024, 1, 1)
TODAY = dt.date(2024, 6, 1)


def _event(i: int, day: str = "2024-05-01", job: str = "job") -> dict:
    return run_event(f"{day}T10:{i % 60:02d}:00Z", "COMPLETE", f"run{i}", f"{job}{i % 3}", ["in"], [f"out{i % 2}"])


def _line(event: dict) -> str:
    return json.dumps(event, ensure_ascii=False)


def _table(root: str, table: str) -> list[tuple]:
    relation = commits.duckdb_relation_sql(commits.latest(root), table)
    return duckdb.sql(f"select * exclude (device, inode, mtime_ns) from ({relation}) order by all" if table == t.DROP_LEDGER.name
                      else f"select * from ({relation}) order by all").fetchall()


def _report(report) -> tuple:
    return (report.batch_id, [f.row(report.batch_id, TODAY) for f in report.files], report.accepted_by_day, report.rejected_by_reason,
            report.duplicate_events, report.duplicate_rejects, report.reject_preview, report.held_days, report.check.passed, report.commit_seq)


def test_local_and_spark_reads_of_the_same_batches_give_the_same_tables(spark, tmp_path, monkeypatch):
    drops = tmp_path / "drops"
    (drops / "ünïcödé dir").mkdir(parents=True)
    roots = {"local": str(tmp_path / "wh_local"), "spark": str(tmp_path / "wh_spark")}
    batch_ids = itertools.count()
    monkeypatch.setattr(landing, "new_batch_id", lambda: f"20240601T000000Z-{next(batch_ids) // 2:08x}")
    used: list[str] = []
    real_local, real_spark = local_intake.parse_units, landing.read_units
    monkeypatch.setattr(local_intake, "parse_units", lambda *a: used.append("local") or real_local(*a))
    monkeypatch.setattr(landing, "read_units", lambda *a: used.append("spark") or real_spark(*a))

    def land_both() -> None:
        reports = {}
        for mode, root in roots.items():
            land_by(monkeypatch, mode)
            reports[mode] = _report(land_batch(spark, root, str(drops), START, lambda _m: None, today=TODAY))
        assert used[-2:] == ["local", "spark"]
        assert reports["local"] == reports["spark"]
        for table in (t.LANDED_EVENTS.name, t.REJECTED_EVENTS.name, t.DROP_FILES.name, t.DROP_LEDGER.name):
            assert _table(roots["local"], table) == _table(roots["spark"], table), table

    events = [_event(i) for i in range(12)]
    # batch 1: duplicates inside a file and between files, rejects, two days and a future day, gzip, an array
    (drops / "a.ndjson").write_text("\n".join([_line(events[0]), _line(events[1]), _line(events[0]), "not json", '{"eventTime": 1}']) + "\n")
    (drops / "ünïcödé dir" / "b, (quoted) 'x'.ndjson").write_text(
        "\n".join([_line(events[1]), _line(_event(2, "2024-05-02", "jöb")), _line(_event(3, "2024-07-01"))]) + "\n")
    (drops / "c.ndjson.gz").write_bytes(gzip.compress(("\n".join([_line(events[4]), "[1,", _line(events[5])]) + "\n").encode(), mtime=0))
    (drops / "d.json").write_text(json.dumps([events[6], events[4], {"eventTime": "never"}], indent=2))
    land_both()
    landed = _table(roots["local"], t.LANDED_EVENTS.name)
    assert len(landed) == 7  # events 0, 1, 2, 3, 4, 5, 6 once each
    # batch 2: a grown file (a duplicate of an event landed before, a new event, a new reject),
    # a replaced file (its old rejects are not stored twice), a new file of duplicates only
    with open(drops / "a.ndjson", "a") as handle:
        handle.write("\n".join([_line(events[5]), _line(events[7]), "{broken"]) + "\n")
    replacement = drops / "c.tmp"
    replacement.write_bytes(gzip.compress(("\n".join([_line(events[4]), "[1,", _line(events[8])]) + "\n").encode(), mtime=0))
    os.replace(replacement, drops / "c.ndjson.gz")
    (drops / "e.ndjson").write_text(_line(events[6]) + "\n" + _line(events[7]) + "\n")
    land_both()
    assert len(_table(roots["local"], t.LANDED_EVENTS.name)) == 9
    rejects = duckdb.sql(
        f"select source_file, source_line, reason_code from ({commits.duckdb_relation_sql(commits.latest(roots['local']), 'rejected_events')}) "
        "where source_file = 'c.ndjson.gz'").fetchall()
    assert rejects == [("c.ndjson.gz", 2, "not_json")]  # stored once, though read twice


def test_the_batch_size_decides_the_way_a_batch_is_read(monkeypatch):
    from lineage_assets.intake.read_plan import ReadUnit

    ndjson = ReadUnit("a", "id", "ndjson", 100, 1100, 1)
    whole = ReadUnit("b", "id", "whole", 0, 1000, 1)
    assert batch_weight([ndjson, whole]) == 1000 + 8 * 1000  # a WHOLE form may be gzip
    assert local_intake_max_bytes({}) == DEFAULT_LOCAL_INTAKE_MAX_BYTES
    assert local_intake_max_bytes({"LINEAGE_LOCAL_INTAKE_MAX_BYTES": "0"}) == 0
    with pytest.raises(ValueError, match="LINEAGE_LOCAL_INTAKE_MAX_BYTES"):
        local_intake_max_bytes({"LINEAGE_LOCAL_INTAKE_MAX_BYTES": "lots"})


def test_a_small_batch_never_asks_for_a_spark_session(tmp_path):
    drops = tmp_path / "drops"
    drops.mkdir()
    (drops / "a.ndjson").write_text(_line(_event(1)) + "\n" + "oops\n")

    def no_spark():
        raise AssertionError("a small batch asked for Spark")

    report = land_batch(no_spark, str(tmp_path / "wh"), str(drops), START, lambda _m: None, today=TODAY)
    assert report.check.passed and (report.read, report.accepted, report.rejected) == (2, 1, 1)
    assert report.reject_preview == [{"file": "a.ndjson", "line": 2, "reason": "not_json", "detail": report.reject_preview[0]["detail"]}]
