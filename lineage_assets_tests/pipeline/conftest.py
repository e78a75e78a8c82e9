"""Fixtures of the pipeline tests."""

from __future__ import annotations

import pytest

from lineage_assets.pipeline.small_data import applied
from lineage_assets.warehouse import single_partition

# Session settings unlike `small_data.SMALL_SETTINGS` in every key
SESSION_SETTINGS = {
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.shuffle.partitions": "3",
    "spark.sql.codegen.wholeStage": "true",
    "spark.sql.codegen.factoryMode": "FALLBACK",
    "spark.sql.optimizer.runtime.bloomFilter.enabled": "true",
    single_partition.SETTING: "false",
}


@pytest.fixture
def session_settings(spark):
    """The session with SESSION_SETTINGS (its own settings restored after the test)."""
    with applied(spark, SESSION_SETTINGS):
        yield spark
