"""The snapshot follows the size of the current state (`small_data.small_settings`): a small
one is built with SMALL_SETTINGS, a large one with the session's own settings, which come back
afterwards either way. The size is the current state's rows, read from the Parquet footers."""

from __future__ import annotations

import datetime as dt

import pytest

from lineage_assets.lineage.state import current_rows
from lineage_assets.pipeline import snapshot
from lineage_assets.pipeline.fold import run_fold
from lineage_assets.pipeline.small_data import SMALL_SETTINGS
from lineage_assets.warehouse import commits
from lineage_assets_tests.support import chain_events, commit_events

SESSION = {  # unlike SMALL_SETTINGS in every key
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.shuffle.partitions": "3",
    "spark.sql.codegen.wholeStage": "true",
    "spark.sql.codegen.factoryMode": "FALLBACK",
}
SCHEDULE_SECONDS = 20


@pytest.fixture(scope="module")
def folded(spark, tmp_path_factory):
    root = str(tmp_path_factory.mktemp("small") / "wh")
    commit_events(spark, root, chain_events(["2024-06-01", "2024-06-02"]))
    assert run_fold(spark, root, dt.date(2024, 6, 1), dt.date(2024, 6, 2), log=lambda _m: None).passed
    return root


@pytest.fixture
def session(spark):
    saved = {key: spark.conf.get(key, None) for key in SESSION}
    for key, value in SESSION.items():
        spark.conf.set(key, value)
    yield spark
    for key, value in saved.items():
        spark.conf.unset(key) if value is None else spark.conf.set(key, value)


def _settings_while_staging(monkeypatch) -> list[dict]:
    seen = []
    real = snapshot.stage_current_graph

    def recording(spark, txn, state):
        seen.append({key: spark.conf.get(key) for key in SESSION})
        return real(spark, txn, state)

    monkeypatch.setattr(snapshot, "stage_current_graph", recording)
    return seen


def test_the_current_state_s_rows_are_counted_from_the_footers(spark, folded):
    commit = commits.latest(folded)
    counted = sum(current_rows(spark, commit, table).count() for table in snapshot.CURRENT_STATE)
    assert counted > 0 and snapshot.CurrentState.rows(commit) == counted


def test_a_small_current_state_is_built_with_the_small_settings(session, folded, monkeypatch):
    seen = _settings_while_staging(monkeypatch)
    assert snapshot.publish_current_graph(session, folded, log=lambda _m: None).passed
    assert seen == [SMALL_SETTINGS]
    assert {key: session.conf.get(key) for key in SESSION} == SESSION


def test_a_large_current_state_keeps_the_session_s_settings(session, folded, monkeypatch):
    monkeypatch.setattr(snapshot, "SMALL_SNAPSHOT_ROWS", snapshot.CurrentState.rows(commits.latest(folded)) - 1)
    seen = _settings_while_staging(monkeypatch)
    assert snapshot.publish_current_graph(session, folded, log=lambda _m: None).passed
    assert seen == [SESSION]
    assert {key: session.conf.get(key) for key in SESSION} == SESSION
