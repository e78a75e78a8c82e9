"""Partitions: daily UTC partitions for the derived tables (landing batches are not partitioned:
each materialization of `landing_batch` is one batch)."""

from __future__ import annotations

from dagster import DailyPartitionsDefinition


def daily_partitions(start_date: str) -> DailyPartitionsDefinition:
    # end_offset=1: today's (still open) day is a partition too, so today's events are processed.
    return DailyPartitionsDefinition(start_date=start_date, timezone="UTC", end_offset=1)
