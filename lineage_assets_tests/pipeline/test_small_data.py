"""The snapshot follows the size of the current state (`small_data.small_settings`): a small
one is built with SMALL_SETTINGS, a mid-sized one with SMALL_SETTINGS but the session's code
generation, a large one with the session's own settings, which come back afterwards either
way. The size is the rows still valid in the current-state tables, read from the Parquet
footers."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from lineage_assets.pipeline import snapshot
from lineage_assets.pipeline.small_data import INTERPRETED, SMALL_SETTINGS
from lineage_assets.warehouse import commits
from lineage_assets.warehouse import tables as t
from lineage_assets_tests.pipeline.conftest import SESSION_SETTINGS as SESSION

OPEN = dt.date.fromisoformat(t.OPEN)
SCHEDULE_SECONDS = 1


def _state(root: str, table: t.Table, valid_to: list[dt.date]) -> None:
    """Commit rows of a state table, one per `valid_to` (only the keys and validity set)."""
    with commits.Transaction(root, "test") as txn:
        txn.stage_arrow(pa.table({
            **{key: [f"{key}-{i}" for i in range(len(valid_to))] for key in table.keys},
            "valid_from": [dt.date(2024, 1, 1)] * len(valid_to), "valid_to": valid_to,
        }), table)
        txn.commit()


def test_the_current_state_s_rows_are_those_still_valid(tmp_path):
    root = str(tmp_path / "wh")
    assert snapshot.CurrentState.rows(commits.latest(root)) == 0
    _state(root, t.STATE_JOBS, [OPEN, OPEN, dt.date(2024, 6, 1)])
    _state(root, t.STATE_COLUMNS, [OPEN, dt.date(2024, 6, 2)])
    _state(root, t.STATE_DATASETS, [OPEN])  # not a table the current graph is built from
    assert snapshot.CurrentState.rows(commits.latest(root)) == 3


class _Seen(Exception):
    """Raised where the snapshot would stage its tables, with the settings in force there."""


def _settings_while_staging(session, root: str, monkeypatch) -> dict:
    def stop(spark, _txn, _state):
        raise _Seen({key: spark.conf.get(key) for key in SESSION})

    monkeypatch.setattr(snapshot, "stage_current_graph", stop)
    monkeypatch.setattr(snapshot.CurrentState, "of", classmethod(lambda cls, spark, commit: None))
    with pytest.raises(_Seen) as seen:
        snapshot.publish_current_graph(session, root, log=lambda _m: None)
    assert {key: session.conf.get(key) for key in SESSION} == SESSION  # restored after a failure too
    return seen.value.args[0]


def test_a_small_current_state_is_built_with_the_small_settings(session_settings, tmp_path, monkeypatch):
    root = str(tmp_path / "wh")
    _state(root, t.STATE_JOBS, [OPEN] * 3)
    monkeypatch.setattr(snapshot, "SMALL_SNAPSHOT_ROWS", 3)
    assert _settings_while_staging(session_settings, root, monkeypatch) == SMALL_SETTINGS


def test_a_mid_sized_current_state_is_built_in_one_partition_with_the_session_s_code_generation(session_settings, tmp_path, monkeypatch):
    root = str(tmp_path / "wh")
    _state(root, t.STATE_JOBS, [OPEN] * 3)
    monkeypatch.setattr(snapshot, "SMALL_SNAPSHOT_ROWS", 2)
    monkeypatch.setattr(snapshot, "SINGLE_SNAPSHOT_ROWS", 3)
    seen = _settings_while_staging(session_settings, root, monkeypatch)
    assert seen == {**SMALL_SETTINGS, **{key: SESSION[key] for key in INTERPRETED}}
    assert seen["spark.sql.codegen.wholeStage"] == "true" and seen["spark.sql.shuffle.partitions"] == "1"


def test_a_large_current_state_keeps_the_session_s_settings(session_settings, tmp_path, monkeypatch):
    root = str(tmp_path / "wh")
    _state(root, t.STATE_JOBS, [OPEN] * 3)
    monkeypatch.setattr(snapshot, "SMALL_SNAPSHOT_ROWS", 1)
    monkeypatch.setattr(snapshot, "SINGLE_SNAPSHOT_ROWS", 2)
    assert _settings_while_staging(session_settings, root, monkeypatch) == SESSION
