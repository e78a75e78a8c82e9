"""The current graph as one commit of the four snapshot tables, blocked by the components check."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from lineage_assets.lineage.current import current_alias_rows, current_column_tables, current_tables
from lineage_assets.lineage.state import current_rows, still_valid
from lineage_assets.pipeline.checks import CheckReport, component_problems, stored_components
from lineage_assets.pipeline import progress
from lineage_assets.pipeline.small_data import small_settings
from lineage_assets.pipeline.progress import FOLD_THROUGH
from lineage_assets.warehouse import commits
from lineage_assets.warehouse import tables as t
from lineage_assets.warehouse.schemas import arrow_schema

COMPONENTS = "components_match_an_independent_computation"
OPERATION = "current_graph"  # the commit's operation
# A current state of at most this many rows (state_jobs, state_columns, state_fields and
# state_aliases still valid) is built with `small_data.SMALL_SETTINGS`: case b's graph (152 jobs,
# 2,369 column edges, 2,844 fields), warm passes in one JVM, 4.1-5.5 s -> 3.1-3.8 s (16.1 s ->
# 12.6 s the first).
SMALL_SNAPSHOT_ROWS = 50_000
# Up to this many, a larger one is still built in one partition, without adaptive planning, but
# with generated code (SMALL_SETTINGS without `small_data.INTERPRETED`): today's case b's graph
# (426,376 current rows: 11,702 jobs, 185,791 column edges, 222,365 fields), `publish_current_graph`
# alternating in one JVM, each order once: the session's settings 17.9 / 15.7 / 13.7 s and 16.5 /
# 13.1 / 12.7 s, one partition 14.0 / 12.2 / 10.9 s and 14.1 / 11.9 / 11.8 s. Larger states (case d)
# keep the session's settings: not measured.
SINGLE_SNAPSHOT_ROWS = 500_000
CURRENT_STATE = (t.STATE_JOBS, t.STATE_COLUMNS, t.STATE_FIELDS, t.STATE_ALIASES)


@dataclass
class CurrentState:
    """The fold's state after the last folded day: what the current graph is built from."""

    jobs: DataFrame
    columns: DataFrame
    fields: DataFrame
    aliases: DataFrame

    @classmethod
    def of(cls, spark: SparkSession, commit: commits.Commit) -> "CurrentState":
        return cls(*(current_rows(spark, commit, table) for table in CURRENT_STATE))

    @staticmethod
    def rows(commit: commits.Commit) -> int:
        """The rows the current state holds, from the Parquet footers (no data is read)."""
        return sum(sum(commit.row_counts(table.name, "valid_to", still_valid).values()) for table in CURRENT_STATE)


@dataclass
class SnapshotReport:
    as_of: str | None
    rows: dict[str, int]
    components: int
    check: CheckReport
    commit_seq: int | None

    @property
    def passed(self) -> bool:
        return self.check.passed


def stage_current_graph(spark: SparkSession, txn: commits.Transaction, state: CurrentState) -> None:
    """Stage the current-graph tables; the others are built from the staged current_aliases and
    current_lineage, so the aliases are resolved and the edges computed once. Tables that do not
    depend on each other are staged at the same time (each is a small Spark job and a cut on the
    driver: one's driver work overlaps another's tasks)."""
    rows = current_alias_rows(state.aliases)  # few, built on the driver: staged without a Spark job
    txn.stage_arrow(pa.Table.from_pylist(rows, schema=arrow_schema(t.CURRENT_ALIASES.schema)), t.CURRENT_ALIASES)
    aliases = txn.read_staged(spark, "current_aliases")
    jobs, lineage = current_tables(state.jobs, aliases)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="lineage-snapshot-stage") as pool:
        beside = [pool.submit(txn.stage, jobs.coalesce(1), t.CURRENT_JOBS)]
        txn.stage(lineage.coalesce(1), t.CURRENT_LINEAGE)
        column_edges, column_fields = current_column_tables(state.columns, state.fields, txn.read_staged(spark, "current_lineage"), aliases)
        beside.append(pool.submit(txn.stage, column_fields.coalesce(1), t.CURRENT_DATASET_FIELDS))
        txn.stage(column_edges.coalesce(1), t.CURRENT_COLUMN_LINEAGE)
        for future in beside:
            future.result()


def publish_current_graph(spark: SparkSession, root: str, log: Callable[[str], None] = print) -> SnapshotReport:
    with commits.writer(root):
        base = commits.latest(root)
        with small_settings(spark, CurrentState.rows(base), SINGLE_SNAPSHOT_ROWS, SMALL_SNAPSHOT_ROWS), commits.Transaction(root, OPERATION) as txn:
            stage_current_graph(spark, txn, CurrentState.of(spark, base))
            files = {name: txn.staged_paths(name) for name in ("current_jobs", "current_lineage")}
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="lineage-snapshot-check") as pool:  # two DuckDB connections
                checked = pool.submit(component_problems, files)
                components = stored_components(files["current_jobs"])
                problems = checked.result()
            check = CheckReport(COMPONENTS, not problems, problems, {"components": components})
            rows = {table.name: txn.staged_rows(table.name) for table in t.SNAPSHOTS}
            as_of = base.props.get(FOLD_THROUGH)
            seq = None
            if check.passed:
                seq = txn.commit({"as_of": as_of, "rows": rows}, props=progress.after_snapshot()).seq
            else:
                log(f"current graph not published: {problems[:3]}")
    return SnapshotReport(as_of, rows, components, check, seq)
