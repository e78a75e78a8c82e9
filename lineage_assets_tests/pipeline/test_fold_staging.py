"""How `pipeline.fold` runs a fold: its Spark SQL settings follow the size of the range
(`range_settings`: a small range runs its shuffles in one partition without adaptive
re-planning or generated code, and the session's own settings come back afterwards, whatever happened inside),
and its outputs are staged several tables at a time (`stage_outputs`), every one of them, a
failure of any failing the fold."""

from __future__ import annotations

import datetime as dt

import pytest

from lineage_assets.pipeline import fold
from lineage_assets.pipeline.fold import INTERPRETED_RANGE_EVENTS, SMALL_RANGE_EVENTS, range_settings
from lineage_assets.pipeline.small_data import INTERPRETED, SMALL_SETTINGS, STAGES_NOT_GENERATED
from lineage_assets.warehouse import tables as t

AQE, PARTITIONS, CODEGEN = "spark.sql.adaptive.enabled", "spark.sql.shuffle.partitions", "spark.sql.codegen.wholeStage"
SCHEDULE_SECONDS = 1


def _in_force(spark) -> tuple[str, str, str]:
    return spark.conf.get(AQE), spark.conf.get(PARTITIONS), spark.conf.get(CODEGEN)


def test_a_small_range_runs_with_the_small_settings_and_restores_the_session_s(session_settings):
    spark = session_settings
    with range_settings(spark, INTERPRETED_RANGE_EVENTS) as changed:
        assert changed == SMALL_SETTINGS
        assert _in_force(spark) == ("false", "1", "false")
    assert _in_force(spark) == ("true", "3", "true")


def test_a_range_above_the_interpreted_size_compiles_expressions_but_no_class_per_stage(session_settings):
    spark = session_settings
    for events in (INTERPRETED_RANGE_EVENTS + 1, SMALL_RANGE_EVENTS):
        with range_settings(spark, events) as changed:
            assert changed == {**{k: v for k, v in SMALL_SETTINGS.items() if k not in INTERPRETED}, **STAGES_NOT_GENERATED}
            assert _in_force(spark) == ("false", "1", "false")
            assert spark.conf.get("spark.sql.codegen.factoryMode") != "NO_CODEGEN"
        assert _in_force(spark) == ("true", "3", "true")


def test_a_large_range_keeps_the_session_s_settings(session_settings):
    spark = session_settings
    with range_settings(spark, SMALL_RANGE_EVENTS + 1) as changed:
        assert changed == {}
        assert _in_force(spark) == ("true", "3", "true")
    assert _in_force(spark) == ("true", "3", "true")


def test_the_session_s_settings_come_back_when_the_fold_fails(session_settings):
    spark = session_settings
    with pytest.raises(RuntimeError, match="fold failed"), range_settings(spark, 10):
        assert spark.conf.get(PARTITIONS) == "1"
        raise RuntimeError("fold failed")
    assert (spark.conf.get(AQE), spark.conf.get(PARTITIONS)) == ("true", "3")


def test_a_setting_the_session_did_not_have_is_unset_again(spark, monkeypatch):
    monkeypatch.setitem(SMALL_SETTINGS, "spark.lineage.test.unset", "x")
    assert spark.conf.get("spark.lineage.test.unset", None) is None
    with range_settings(spark, 1) as changed:
        assert changed["spark.lineage.test.unset"] == "x" == spark.conf.get("spark.lineage.test.unset")
    assert spark.conf.get("spark.lineage.test.unset", None) is None


class _Tables:
    """What `stage_outputs` reads of a fold's RangeTables."""

    job_mismatch = "job_mismatch"

    def __init__(self, names):
        self.names = names

    def outputs(self):
        return {name: name for name in self.names}


class _Names:
    rows: dict = {}


class _Txn:
    """Records what is staged, from whichever thread; fails on `fail`."""

    def __init__(self, fail=None):
        self.staged, self.fail = [], fail

    def stage(self, df, table, replace=None, partitions=None):
        name = table if isinstance(table, str) else table.name
        if name == self.fail:
            raise OSError(f"disk full while staging {name}")
        self.staged.append(name)


def test_every_output_and_the_mismatch_rejects_are_staged(monkeypatch):
    monkeypatch.setattr(fold, "_mismatch_rejects", lambda rows: rows)
    monkeypatch.setattr(fold, "by_column", lambda df, _column: df)
    names = [name for name in t.FOLD_OUTPUTS if name not in ("dataset_aliases", "state_aliases")]
    txn = _Txn()
    fold.stage_outputs(txn, _Tables(names), _Names(), dt.date(2024, 1, 1), dt.date(2024, 1, 1), threads=3)
    assert sorted(txn.staged) == sorted([*names, "rejected_events"])


def test_a_table_that_fails_to_stage_fails_the_fold(monkeypatch):
    monkeypatch.setattr(fold, "_mismatch_rejects", lambda rows: rows)
    monkeypatch.setattr(fold, "by_column", lambda df, _column: df)
    txn = _Txn(fail="job_versions")
    with pytest.raises(OSError, match="disk full while staging job_versions"):
        fold.stage_outputs(txn, _Tables(["runs", "job_versions", "column_lineage"]), _Names(), dt.date(2024, 1, 1), dt.date(2024, 1, 1), threads=2)
    assert "job_versions" not in txn.staged and "runs" in txn.staged
