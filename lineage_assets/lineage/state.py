"""The fold's carried state: validity intervals in the warehouse's state tables.

Each state table holds rows `[valid_from, valid_to)` (days), partitioned by `valid_to`
(`9999-12-31` while a row is still valid). The state as of day X is the rows with
`valid_from <= X < valid_to`, all of which live in the partitions `valid_to > X`: reading the
state before a range costs the size of the state plus what changed since, never the history.
A fold of [first, last] replaces every state partition >= first.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lineage_assets.lineage.checkpoint import checkpoint
from lineage_assets.lineage.fold import StateAsOf
from lineage_assets.warehouse import commits
from lineage_assets.warehouse import tables as t


def valid_partitions(day: dt.date, since: dt.date | None = None) -> commits.PartitionFilter:
    """The partitions of a state table that hold its rows valid on `day` (valid_to > day), or
    with `since` its rows valid on any day in [since, day] (valid_to >= since, which keeps rows
    replaced on the day they appeared). Of those rows, the ones with `valid_from <= day` are."""
    return commits.on_or_after("valid_to", since or day + dt.timedelta(days=1))


def _rows(spark: SparkSession, commit: commits.Commit, table: t.Table, day: dt.date, since: dt.date | None = None) -> DataFrame:
    """Rows of a state table valid on `day`, or with `since` on any day in [since, day] (`valid_partitions`)."""
    df = commits.read_table(spark, commit.root, table.name, where=valid_partitions(day, since), commit=commit)
    return df.filter(F.col("valid_from") <= F.lit(day)).drop("valid_to")


def state_as_of(spark: SparkSession, commit: commits.Commit, day: dt.date) -> StateAsOf:
    """The state at the end of `day` as `commit` holds it."""
    open_events = _rows(spark, commit, t.STATE_OPEN_EVENTS, day).transform(checkpoint)
    earliest = open_events.agg(F.min("valid_from")).first()[0]
    datasets = _rows(spark, commit, t.STATE_DATASETS, day)
    return StateAsOf(
        day=day,
        open_events=open_events,
        aliases=_rows(spark, commit, t.STATE_ALIASES, day),
        jobs=_rows(spark, commit, t.STATE_JOBS, day),
        datasets=datasets,
        # runs still open may resolve inputs as of their start: versions since the earliest of them
        dataset_candidates=_rows(spark, commit, t.STATE_DATASETS, day, since=earliest) if earliest else datasets,
        storage_versions=_rows(spark, commit, t.STATE_STORAGE_VERSIONS, day),
        columns=_rows(spark, commit, t.STATE_COLUMNS, day),
        fields=_rows(spark, commit, t.STATE_FIELDS, day),
    )


def still_valid(partition: dict[str, str]) -> bool:
    """A state table's partition of rows still valid after the last processed day (valid_to = OPEN)."""
    return partition["valid_to"] == t.OPEN


def current_rows(spark: SparkSession, commit: commits.Commit, table: t.Table) -> DataFrame:
    """Rows of a state table still valid after the last processed day (valid_to = OPEN)."""
    return commits.read_table(spark, commit.root, table.name, where=still_valid, commit=commit).drop("valid_to")
