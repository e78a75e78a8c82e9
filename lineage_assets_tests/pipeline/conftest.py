"""Fixtures of the pipeline tests."""

from __future__ import annotations

import pytest

# Session settings unlike `small_data.SMALL_SETTINGS` in every key
SESSION_SETTINGS = {
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.shuffle.partitions": "3",
    "spark.sql.codegen.wholeStage": "true",
    "spark.sql.codegen.factoryMode": "FALLBACK",
}


@pytest.fixture
def session_settings(spark):
    """The session with SESSION_SETTINGS (its own settings restored after the test)."""
    saved = {key: spark.conf.get(key, None) for key in SESSION_SETTINGS}
    for key, value in SESSION_SETTINGS.items():
        spark.conf.set(key, value)
    yield spark
    for key, value in saved.items():
        spark.conf.unset(key) if value is None else spark.conf.set(key, value)
