"""Helpers shared by tests: build events, fold a stream day by day, publish a current graph."""

from __future__ import annotations

import datetime as dt
import uuid
from collections import defaultdict
from dataclasses import dataclass

from lineage_assets.intake.validate import event_row
from lineage_assets.lineage.column_lineage import COLUMN_LINEAGE_TABLE, DATASET_FIELDS_TABLE
from lineage_assets.lineage.current import write_current_snapshot
from lineage_assets.lineage.spark_fold import DATASET_STATE, DATASET_VERSIONS_TABLE, RUN_LINEAGE_TABLE, FoldState, fold_day
from lineage_assets.warehouse import schemas, snapshots, storage

_RUN_NS = uuid.UUID("0b7c2b52-7d44-4f4a-9d3e-5c1a2f9e8d10")


def run_uuid(label: str) -> str:
    """A stable runId for a readable label."""
    return str(uuid.uuid5(_RUN_NS, label))


def ds(name: str, namespace: str = "ds", **facets) -> dict:
    return {"namespace": namespace, "name": name, "facets": facets}


def run_event(
    time: str,
    event_type: str | None,
    run: str,
    job: str,
    inputs=(),
    outputs=(),
    job_namespace: str = "ns",
    job_facets: dict | None = None,
    run_facets: dict | None = None,
) -> dict:
    """An OpenLineage RunEvent; inputs/outputs are names (dataset namespace 'ds') or ds() dicts."""
    event = {
        "eventTime": time,
        "run": {"runId": run if _is_uuid(run) else run_uuid(run), "facets": run_facets or {}},
        "job": {"namespace": job_namespace, "name": job, "facets": job_facets or {}},
        "inputs": [i if isinstance(i, dict) else ds(i) for i in inputs],
        "outputs": [o if isinstance(o, dict) else ds(o) for o in outputs],
        "producer": "https://example.com/tests",
    }
    if event_type is not None:
        event["eventType"] = event_type
    return event


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
        return True
    except ValueError:
        return False


def to_rows(events: list[dict]) -> list[dict]:
    rows = []
    for line, event in enumerate(events, start=1):
        row = event_row(event)
        row["event_date"] = dt.date.fromisoformat(row["event_date"])
        row["source_file"] = "test.ndjson"
        row["source_line"] = line
        rows.append(row)
    return rows


@dataclass
class Folded:
    runs: list[dict]
    job_versions: list[dict]
    dataset_versions: list[dict]
    run_lineage: list[dict]
    column_lineage: list[dict]
    dataset_fields: list[dict]
    job_mismatch: list[dict]
    state: FoldState
    jobs_state: list[dict]


def fold_stream(spark, events: list[dict]) -> Folded:
    """Fold a stream day by day (each day that has events, in order), like the assets do.

    Unique event_ids only, as `events` holds them; tables are collected as lists of dicts.
    """
    by_day: dict[dt.date, list[dict]] = defaultdict(list)
    seen = set()
    for row in to_rows(events):
        if row["event_id"] not in seen:
            seen.add(row["event_id"])
            by_day[row["event_date"]].append(row)
    state = FoldState.empty(spark)
    complete: list[dict] = []  # every COMPLETE dataset version so far, for runs that span days
    out = {k: [] for k in ("runs", "job_versions", "dataset_versions", "run_lineage", "column_lineage", "dataset_fields", "job_mismatch")}
    for day in sorted(by_day):
        frame = spark.createDataFrame(by_day.get(day, []), schemas.EVENTS)
        earlier = spark.createDataFrame(complete, DATASET_STATE) if complete else None
        tables = fold_day(day, frame, state, earlier)
        for key in out:
            out[key].extend(r.asDict(recursive=True) for r in getattr(tables, key).collect())
        complete.extend(
            {k: v[k] for k in DATASET_STATE.fieldNames()}
            for v in out["dataset_versions"] if v["run_state"] == "COMPLETE" and v["created_date"] == day
        )
        # materialize the state so the next day does not recompute the whole chain
        state = FoldState(*(spark.createDataFrame(getattr(tables.state, part).collect(), getattr(tables.state, part).schema)
                            for part in ("open_events", "jobs", "datasets", "storage_versions", "columns", "fields")))
    jobs_state = [r.asDict(recursive=True) for r in state.jobs.collect()]
    return Folded(**out, state=state, jobs_state=jobs_state)


def publish_current(spark, state: FoldState, warehouse: str, snapshot_id: str = "test", folded: "Folded | None" = None) -> None:
    """Publish the current-graph snapshots from a fold state (and, given the fold, write the
    history tables that point-in-time column queries read)."""
    write_current_snapshot(state, warehouse, snapshot_id)
    snapshots.publish_all(warehouse, snapshot_id)
    if folded is not None:
        for name, (column, schema) in HISTORY_TABLES.items():
            rows = getattr(folded, name)
            if rows:
                df = spark.createDataFrame(rows, schema)
                storage.write_partitions(df.coalesce(1), storage.table_path(warehouse, name), [column])


HISTORY_TABLES = {
    "column_lineage": ("created_date", COLUMN_LINEAGE_TABLE),
    "dataset_fields": ("created_date", DATASET_FIELDS_TABLE),
    "dataset_versions": ("created_date", DATASET_VERSIONS_TABLE),
    "run_lineage": ("end_date", RUN_LINEAGE_TABLE),
}
