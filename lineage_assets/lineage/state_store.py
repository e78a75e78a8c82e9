"""Where the fold's day-to-day state lives: `_state/<part>/state_date=D/` in the warehouse."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lineage_assets.lineage.column_lineage import COLUMN_STATE, FIELDS_STATE
from lineage_assets.lineage.spark_fold import DATASET_STATE, DATASET_VERSIONS_TABLE, JOB_STATE, FoldState
from lineage_assets.warehouse import schemas, storage

PARTS = {
    "open_events": schemas.EVENTS,
    "jobs": JOB_STATE,
    "datasets": DATASET_STATE,
    "storage_versions": DATASET_STATE,
    "columns": COLUMN_STATE,
    "fields": FIELDS_STATE,
}


def _root(warehouse: str, part: str) -> str:
    return f"{storage.table_path(warehouse, storage.STATE)}/{part}"


def state_days(spark: SparkSession, warehouse: str) -> list[str]:
    return storage.partition_values(spark, _root(warehouse, "jobs"), "state_date")


def latest_state_before(spark: SparkSession, warehouse: str, day: str) -> str | None:
    earlier = [d for d in state_days(spark, warehouse) if d < day]
    return earlier[-1] if earlier else None


def load_state(spark: SparkSession, warehouse: str, state_day: str | None) -> FoldState:
    if state_day is None:
        return FoldState.empty(spark)
    frames = {}
    for part, schema in PARTS.items():
        root = _root(warehouse, part)
        df = storage.read_existing(spark, _with_state_date(schema), [f"{root}/state_date={state_day}"], root)
        frames[part] = df.drop("state_date")
    return FoldState(**frames)


def _with_state_date(schema: T.StructType) -> T.StructType:
    fields = [f for f in schema.fields if f.name != "state_date"]
    return T.StructType([*fields, T.StructField("state_date", T.DateType())])


def save_state(state: FoldState, warehouse: str, day: str) -> None:
    for part in PARTS:
        df = getattr(state, part)
        storage.write_table(df.coalesce(1), f"{_root(warehouse, part)}/state_date={day}")


def earlier_complete_versions(spark: SparkSession, warehouse: str, first_day: str, day: str):
    """COMPLETE dataset versions created on days [first_day, day) and the state before first_day,
    for resolving the inputs of runs that started on first_day or later and end on `day`."""
    root = storage.table_path(warehouse, storage.DATASET_VERSIONS)
    start = dt.date.fromisoformat(first_day)
    end = dt.date.fromisoformat(day)
    paths = [f"{root}/created_date={start + dt.timedelta(days=i)}" for i in range((end - start).days)]
    versions = (
        storage.read_existing(spark, DATASET_VERSIONS_TABLE, paths, root)
        .filter("run_state = 'COMPLETE'")
        .select(*DATASET_STATE.fieldNames())
    )
    before = load_state(spark, warehouse, latest_state_before(spark, warehouse, first_day)).datasets
    return versions.unionByName(before)


def min_open_day(state: FoldState) -> str | None:
    row = state.open_events.agg(F.min("event_date")).first()
    return str(row[0]) if row and row[0] is not None else None
