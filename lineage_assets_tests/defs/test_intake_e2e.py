"""End-to-end: drops -> landing batches -> daily `events` runs, through Dagster."""

from __future__ import annotations

import datetime as dt
import gzip
import json
from pathlib import Path

import duckdb
import pytest
from dagster import AssetKey, DagsterInstance, build_sensor_context

from lineage_assets.pipeline.landing import ACCOUNTING as ACCOUNTING_CHECK
from lineage_assets.defs.resources import LineagePaths
from lineage_assets.defs.sensors import WORK_TAG, evaluate_drop_sensor
from lineage_assets.ids import event_id
from lineage_assets.runner import ingest
from lineage_assets.settings import LineageSettings
from lineage_assets.warehouse import commits
from lineage_assets_tests.support import land_by

SCHEDULE_SECONDS = 55  # measured (--durations); conftest runs long files first

LANDED = AssetKey("landed_events")
# These tests are about intake: the daily runs land `events` and stop there (the fold has its own
# end-to-end test, test_pipeline_order_independence.py).
EVENTS_ONLY = ["events"]


def _rows(warehouse: Path, table: str, columns: str = "*", where: str = "true") -> list[tuple]:
    """A table as the latest commit holds it."""
    relation = commits.duckdb_relation_sql(commits.latest(str(warehouse)), table)
    return duckdb.sql(f"select {columns} from ({relation}) where {where} order by all").fetchall()


def _metadata(instance: DagsterInstance, key: AssetKey) -> list[dict]:
    result = instance.fetch_materializations(key, limit=1000, ascending=True)
    return [{k: v.value for k, v in r.asset_materialization.metadata.items()} for r in result.records]


def _check_evaluations(instance: DagsterInstance, check: str = ACCOUNTING_CHECK) -> list:
    from dagster import DagsterEventType, EventRecordsFilter

    records = instance.get_event_records(EventRecordsFilter(event_type=DagsterEventType.ASSET_CHECK_EVALUATION), ascending=True)
    return [
        r.event_log_entry.dagster_event.event_specific_data
        for r in records
        if r.event_log_entry.dagster_event.event_specific_data.check_name == check
    ]


def _check_outcomes(instance: DagsterInstance, check: str = ACCOUNTING_CHECK) -> list[bool]:
    return [e.passed for e in _check_evaluations(instance, check)]


@pytest.mark.fixtures
def test_marquez_fixture_events_all_land_through_dagster(spark, fixtures_dir, tmp_path):
    drops = fixtures_dir / "marquez" / "open_lineage"  # read where they lie
    files = sorted(p for p in drops.rglob("*.json"))
    expected = {event_id(json.loads(p.read_text())) for p in files}
    settings = LineageSettings(str(drops), str(tmp_path / "wh"), "2020-01-01")
    with DagsterInstance.ephemeral() as instance:
        report = ingest(settings, instance, log=lambda _m: None, daily_assets=EVENTS_ONLY)
        assert not report.failed
        intake_runs = [r for r in report.runs if r[0] == "intake_job"]
        assert len(intake_runs) == 1  # one landing batch for every file
        [metadata] = _metadata(instance, LANDED)
        assert metadata["read"] == metadata["files"] == len(files)
        assert metadata["read"] == metadata["accepted"] + metadata["rejected"] + metadata["duplicates"]
        assert _check_outcomes(instance) == [True]
        per_file = _rows(tmp_path / "wh", "drop_files", "path, bytes_from, bytes_to, read, accepted + rejected + duplicates")
        assert [r[0] for r in per_file] == [p.relative_to(drops).as_posix() for p in files]
        assert all(r[1] == 0 and r[2] == (drops / r[0]).stat().st_size and r[3] == r[4] == 1 for r in per_file)
        # A second pass finds nothing new and changes nothing.
        before = _rows(tmp_path / "wh", "events", "event_id, source_file, source_line")
        again = ingest(settings, instance, log=lambda _m: None, daily_assets=EVENTS_ONLY)
        assert again.runs == []
        assert _rows(tmp_path / "wh", "events", "event_id, source_file, source_line") == before
        # The daemon's sensor finds every file and day landed: what is left is the fold of those days.
        with build_sensor_context(instance=instance, cursor=None) as context:
            fresh = evaluate_drop_sensor(context, LineagePaths.from_settings(settings))
        [request] = fresh.run_requests
        assert (request.job_name, request.tags[WORK_TAG].rsplit(":", 1)[0]) == ("daily_job", "fold:2020-12-28:2020-12-29")
    stored = _rows(tmp_path / "wh", "events", "event_id")
    # Every event once; listener 1/2 and several files repeat the same events byte for byte.
    assert sorted(r[0] for r in stored) == sorted(expected)
    assert _rows(tmp_path / "wh", "rejected_events") == []
    kinds = dict(_rows(tmp_path / "wh", "events", "event_kind, count(*)", "true group by 1"))
    assert kinds["JOB"] == 1 and kinds["DATASET"] == 1
    # No-timezone and +10:00 times land on their UTC dates.
    dates = {str(r[0]) for r in _rows(tmp_path / "wh", "events", "distinct event_date")}
    assert dates == {"2020-12-28", "2020-12-29"}


def _run_event(minute: int, day: str = "2024-03-01", run: str = "3f0b4e4e-8f9b-4a55-8f0a-0d6f0f2a0c11") -> dict:
    return {
        "eventType": "COMPLETE" if minute % 2 else "START",
        "eventTime": f"{day}T10:{minute:02d}:00Z",
        "run": {"runId": run},
        "job": {"namespace": "postgres://db.example.com:5432", "name": "jöb"},
        "inputs": [{"namespace": "s3://bucket", "name": "in"}],
        "outputs": [],
        "producer": "test",
    }


def test_redrops_appends_duplicates_and_out_of_range_dates(spark, tmp_path):
    drops = tmp_path / "drops"
    drops.mkdir()
    wh = tmp_path / "wh"
    settings = LineageSettings(str(drops), str(wh), "2024-01-01")
    a, b, c = _run_event(1), _run_event(2), _run_event(3, day="2024-03-02")
    (drops / "one.ndjson").write_text(json.dumps(a) + "\n" + json.dumps(b) + "\nnot json\n")
    with DagsterInstance.ephemeral() as instance:
        assert not ingest(settings, instance, log=lambda _m: None, daily_assets=EVENTS_ONLY).failed
        first = _rows(wh, "events", "event_id, source_file, source_line")
        assert [r[0] for r in first] == [event_id(a), event_id(b)]

        # The same content under another name: all duplicates, no table changes.
        (drops / "zz-copy.ndjson.gz").write_bytes(gzip.compress((drops / "one.ndjson").read_bytes()))
        assert not ingest(settings, instance, log=lambda _m: None, daily_assets=EVENTS_ONLY).failed
        assert _rows(wh, "events", "event_id, source_file, source_line") == first
        copy_meta = _metadata(instance, LANDED)[-1]
        assert (copy_meta["read"], copy_meta["accepted"], copy_meta["rejected"], copy_meta["duplicates"]) == (3, 0, 1, 2)

        # The file grows (FileTransport append=True): only the new lines are read.
        size_before = (drops / "one.ndjson").stat().st_size
        early = {**_run_event(5), "eventTime": "2023-12-31T23:59:59Z"}
        future_day = (dt.datetime.now(dt.timezone.utc).date() + dt.timedelta(days=3)).isoformat()
        future = _run_event(7, day=future_day)
        with open(drops / "one.ndjson", "a") as handle:
            handle.write(json.dumps(c) + "\n" + json.dumps(early) + "\n" + json.dumps(future) + "\n")
        assert not ingest(settings, instance, log=lambda _m: None, daily_assets=EVENTS_ONLY).failed
        grown = _metadata(instance, LANDED)[-1]
        assert (grown["read"], grown["accepted"], grown["rejected"], grown["duplicates"]) == (3, 2, 1, 0)
        assert grown["held_future_dates"] == [future_day]
        read = _rows(wh, "drop_files", "path, kind, bytes_from, bytes_to, first_line", "path = 'one.ndjson'")
        assert sorted(read, key=lambda r: r[2]) == [("one.ndjson", "new", 0, size_before, 1), ("one.ndjson", "grown", size_before, (drops / "one.ndjson").stat().st_size, 4)]

    events = _rows(wh, "events", "event_id")
    assert sorted(r[0] for r in events) == sorted([event_id(a), event_id(b), event_id(c)])
    # The future event is held in staging, not lost, and not in `events` until its day exists.
    assert [r[0] for r in _rows(wh, "landed_events", "event_id", f"event_date = '{future_day}'")] == [event_id(future)]
    rejects = _rows(wh, "rejected_events", "reason_code, source_file, source_line")
    assert sorted(rejects) == sorted(
        [("not_json", "one.ndjson", 3), ("not_json", "zz-copy.ndjson.gz", 3), ("before_start_date", "one.ndjson", 5)]
    )


@pytest.mark.parametrize("way", ["local", "spark"])
def test_accounting_check_blocks_a_drop_that_loses_a_row(spark, tmp_path, monkeypatch, way):
    import lineage_assets.intake.local_intake as local_intake
    import lineage_assets.pipeline.landing as intake_module

    land_by(monkeypatch, way)
    owner, name = (intake_module, "stage_drop") if way == "spark" else (local_intake, "stage_rows")
    real_stage = getattr(owner, name)

    def losing_stage(*args, **kwargs):
        staged = real_stage(*args, **kwargs)
        if way == "spark":
            staged.events = staged.events.filter("source_line != 2")  # a bug that silently drops a row
        else:
            staged.events = [e for e in staged.events if e["source_line"] != 2]
        return staged

    monkeypatch.setattr(owner, name, losing_stage)
    drops = tmp_path / "drops"
    drops.mkdir()
    (drops / "d.ndjson").write_text("\n".join(json.dumps(_run_event(m)) for m in (1, 2, 3)) + "\n")
    settings = LineageSettings(str(drops), str(tmp_path / "wh"), "2024-01-01")
    with DagsterInstance.ephemeral() as instance:
        report = ingest(settings, instance, log=lambda _m: None, daily_assets=EVENTS_ONLY)
        assert [(job, ok) for job, _label, ok in report.runs] == [("intake_job", False)]
        assert _check_outcomes(instance) == [False]
        assert _metadata(instance, LANDED) == []  # nothing was committed, so nothing materialized
        meta = {k: v.value for k, v in _check_evaluations(instance)[-1].metadata.items()}
        assert (meta["read"], meta["accepted"], meta["duplicates"]) == (3, 2, 0)
        assert "d.ndjson: read 3 != accepted 2" in meta["problems"][0]
    assert _rows(tmp_path / "wh", "events") == []  # the day was not built from a drop that lost data
    assert _rows(tmp_path / "wh", "drop_ledger") == []  # nor recorded as read: the next batch reads it again


def test_the_events_check_blocks_a_day_that_doubles_or_drops_a_row(spark, tmp_path, monkeypatch):
    """DESIGN.md section 11: `events_unique_and_complete` is blocking. A consolidation that doubles
    a row (through Dagster) or drops one (`build_events` itself) fails the check; then nothing is
    committed, and readers keep the day as the previous `events` commit wrote it. Unbroken, the
    same day then commits."""
    import lineage_assets.defs.intake as intake_defs
    import lineage_assets.pipeline.events as events_module
    from pyspark.sql import functions as F

    from lineage_assets.pipeline.events import UNIQUE_EVENTS, build_events
    from lineage_assets.pipeline.landing import OPERATION as LANDING_OPERATION

    drops, wh = tmp_path / "drops", tmp_path / "wh"
    drops.mkdir()
    settings = LineageSettings(str(drops), str(wh), "2024-01-01")
    a, b, c = _run_event(1), _run_event(2), _run_event(3)
    (drops / "one.ndjson").write_text(json.dumps(a) + "\n" + json.dumps(b) + "\n")
    with DagsterInstance.ephemeral() as instance:
        assert not ingest(settings, instance, log=lambda _m: None, daily_assets=EVENTS_ONLY).failed
        committed = _rows(wh, "events", "event_id, source_file, source_line")
        assert [r[0] for r in committed] == sorted([event_id(a), event_id(b)])

        real_consolidate, real_build = events_module.consolidate, intake_defs.build_events
        built = []  # (the latest commit before build_events, its report, the latest commit after)

        def recorded_build(spark_, root, first, last):
            before = commits.latest(root).seq
            report = real_build(spark_, root, first, last)
            built.append((before, report, commits.latest(root).seq))
            return report

        monkeypatch.setattr(events_module, "consolidate", lambda *args: (lambda df: df.unionByName(df.limit(1)))(real_consolidate(*args)))
        monkeypatch.setattr(intake_defs, "build_events", recorded_build)
        (drops / "two.ndjson").write_text(json.dumps(c) + "\n")  # a new event of the same day: the day is rebuilt
        report = ingest(settings, instance, log=lambda _m: None, daily_assets=EVENTS_ONLY)
        assert [(job, ok) for job, _label, ok in report.runs] == [("intake_job", True), ("daily_job", False)]
        assert _check_outcomes(instance, UNIQUE_EVENTS) == [True, False]
        [(before, doubled, after)] = built
        assert not doubled.check.passed and doubled.check.problems == ["2024-03-01: 4 rows, 3 distinct ids, 3 staged ids"]
        assert doubled.commit_seq is None and after == before == commits.latest(str(wh)).seq
        assert commits.latest(str(wh)).info["operation"] == LANDING_OPERATION  # the new drop's landing batch is the latest
        assert _rows(wh, "events", "event_id, source_file, source_line") == committed  # readers: the previous events commit

        # a consolidation that loses a row, through the pipeline's own function
        monkeypatch.setattr(events_module, "consolidate", lambda *args: real_consolidate(*args).filter(F.col("event_id") != event_id(c)))
        day = dt.date(2024, 3, 1)
        dropped = build_events(spark, str(wh), day, day)
        assert not dropped.check.passed and dropped.check.problems == ["2024-03-01: 2 rows, 2 distinct ids, 3 staged ids"]
        assert dropped.commit_seq is None and commits.latest(str(wh)).seq == before
        assert _rows(wh, "events", "event_id, source_file, source_line") == committed

        monkeypatch.setattr(events_module, "consolidate", real_consolidate)
        fixed = build_events(spark, str(wh), day, day)
        assert fixed.check.passed and fixed.commit_seq == before + 1
        assert [r[0] for r in _rows(wh, "events", "event_id")] == sorted([event_id(a), event_id(b), event_id(c)])
