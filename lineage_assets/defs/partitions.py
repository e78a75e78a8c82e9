"""Partitions: one dynamic partition per landed drop; daily UTC partitions for derived tables."""

from __future__ import annotations

from dagster import DailyPartitionsDefinition, DynamicPartitionsDefinition

DROPS = "drops"


def drop_partitions() -> DynamicPartitionsDefinition:
    return DynamicPartitionsDefinition(name=DROPS)


def daily_partitions(start_date: str) -> DailyPartitionsDefinition:
    # end_offset=1: today's (still open) day is a partition too, so today's events are processed.
    return DailyPartitionsDefinition(start_date=start_date, timezone="UTC", end_offset=1)
