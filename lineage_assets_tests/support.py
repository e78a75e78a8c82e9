"""Helpers shared by tests: build events, fold a stream through the pipeline, publish a current graph."""

from __future__ import annotations

import atexit

import builtins
import datetime as dt
import io
import json
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from lineage_assets.intake.validate import event_row
from lineage_assets.lineage.state import current_rows
from lineage_assets.pipeline.fold import run_fold
from lineage_assets.pipeline.snapshot import CurrentState, stage_current_graph
from lineage_assets.settings import DEFAULT_LOCAL_INTAKE_MAX_BYTES
from lineage_assets.warehouse import commits, tables

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
    dataset_aliases: list[dict]
    field_operations: list[dict]
    field_tags: list[dict]
    job_mismatch: list[dict]  # rejected_events rows with reason job_mismatch
    state: "FoldState"
    jobs_state: list[dict]
    warehouse: str


@dataclass
class FoldState:
    """The state after the last folded day (rows still valid), as DataFrames."""

    open_events: object
    jobs: object
    datasets: object
    storage_versions: object
    columns: object
    fields: object
    aliases: object
    warehouse: str


def commit_events(spark, warehouse: str, events: list[dict]) -> list[dt.date]:
    """Commit events (unique event_ids, as `events` holds them) into a warehouse; their days."""
    rows, seen = [], set()
    for row in to_rows(events):
        if row["event_id"] not in seen:
            seen.add(row["event_id"])
            rows.append(row)
    with commits.Transaction(warehouse, "test_events") as txn:
        txn.stage(spark.createDataFrame(rows, tables.EVENTS.schema), tables.EVENTS)
        txn.commit()
    return sorted({r["event_date"] for r in rows})


def fold_stream(spark, events: list[dict], warehouse: str | None = None, by_day: bool = False, rules=None) -> Folded:
    """Commit a stream's events and fold them: one range run over all days (or one run per day
    that has events, in order, with `by_day`); tables are collected as lists of dicts. `rules`:
    the partition rules of the fold (`run_fold`'s; default those in force)."""
    if warehouse is None:
        warehouse = tempfile.mkdtemp(prefix="fold_")
        atexit.register(shutil.rmtree, warehouse, True)  # the test process's folds leave nothing in /tmp
    days = commit_events(spark, warehouse, events)
    for first, last in ([(d, d) for d in days] if by_day else [(days[0], days[-1])]):
        report = run_fold(spark, warehouse, first, last, sample_rate=1.0, log=lambda _m: None, rules=rules)
        assert report.passed, [c.problems for c in report.checks]
    return folded_from(spark, warehouse)


def folded_from(spark, warehouse: str) -> Folded:
    """The tables of a folded warehouse's latest commit, collected (see `fold_stream`)."""
    commit = commits.latest(warehouse)

    def rows(name, where=None):
        return [r.asDict(recursive=True) for r in commits.read_table(spark, warehouse, name, where=where, commit=commit).collect()]

    state = FoldState(*(current_rows(spark, commit, table) for table in (
        tables.STATE_OPEN_EVENTS, tables.STATE_JOBS, tables.STATE_DATASETS, tables.STATE_STORAGE_VERSIONS,
        tables.STATE_COLUMNS, tables.STATE_FIELDS, tables.STATE_ALIASES)), warehouse=warehouse)
    return Folded(
        *(rows(table.name) for table in tables.HISTORY),
        job_mismatch=[_with_event(r) for r in rows("rejected_events", where=lambda p: p["batch_id"] == "job_mismatch")],
        state=state, jobs_state=[r.asDict(recursive=True) for r in state.jobs.collect()], warehouse=warehouse,
    )


def _with_event(reject: dict) -> dict:
    """A job_mismatch reject with its event's job name and type read back from the raw text."""
    event = json.loads(reject["raw"])
    return {**reject, "job_name": event["job"]["name"], "event_type": event.get("eventType")}


def publish_current(spark, state: FoldState, warehouse: str, folded: "Folded | None" = None) -> None:
    """Publish the current graph of a fold into `warehouse` (with the fold's history tables,
    which point-in-time column queries read, when `folded` is given)."""
    if folded is not None and os.path.abspath(folded.warehouse) != os.path.abspath(warehouse):
        shutil.copytree(folded.warehouse, warehouse, dirs_exist_ok=True)
    with commits.Transaction(warehouse, "test_snapshot") as txn:
        stage_current_graph(spark, txn, CurrentState(state.jobs, state.columns, state.fields, state.aliases))
        txn.commit()


def chain_events(days: list[str]) -> list[dict]:
    """src -> A -> X -> B -> Y, one run of each job per given day (same events whatever the days)."""
    events = []
    for i, day in enumerate(days):
        events += [
            run_event(f"{day}T01:00:00Z", "START", f"a{i}", "A", ["src"]),
            run_event(f"{day}T01:10:00Z", "COMPLETE", f"a{i}", "A", ["src"], ["X"]),
            run_event(f"{day}T02:00:00Z", "START", f"b{i}", "B", ["X"]),
            run_event(f"{day}T02:10:00Z", "COMPLETE", f"b{i}", "B", ["X"], ["Y"]),
        ]
    return events


class ByteCounter:
    """Wraps `open` (builtins and io) and counts the bytes read from files under one folder."""

    def __init__(self, monkeypatch, root: Path):
        self.root = str(root)
        self.bytes = 0
        self.opens = 0
        self.sizes: list[int] = []  # of each read() call
        real_open = builtins.open
        counter = self

        class Counting:
            def __init__(self, handle):
                self._handle = handle

            def read(self, *args):
                out = self._handle.read(*args)
                counter.bytes += len(out)
                counter.sizes.append(len(out))
                return out

            def readinto(self, buffer):
                n = self._handle.readinto(buffer)
                counter.bytes += n or 0
                return n

            def __iter__(self):
                raise AssertionError("line iteration over a drop file is not counted: use read()")

            def __getattr__(self, name):
                return getattr(self._handle, name)

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self._handle.close()

        def counting_open(file, *args, **kwargs):
            handle = real_open(file, *args, **kwargs)
            if isinstance(file, (str, os.PathLike)) and os.fspath(file).startswith(counter.root):
                counter.opens += 1
                return Counting(handle)
            return handle

        monkeypatch.setattr(builtins, "open", counting_open)
        monkeypatch.setattr(io, "open", counting_open)


def land_by(monkeypatch, way: str) -> None:
    """Landing batches of the test read `way` ("spark" or "local"), whatever their size."""
    assert way in ("spark", "local"), way
    monkeypatch.setenv("LINEAGE_LOCAL_INTAKE_MAX_BYTES", "0" if way == "spark" else str(DEFAULT_LOCAL_INTAKE_MAX_BYTES))


def commit_rows(root: str, rows: dict, operation: str = "test_snapshot") -> str:
    """One commit of `rows` ({registry table: [row dicts]}) written with pyarrow, no Spark: a
    snapshot or history as a test needs it, columns not given null. Returns `root`."""
    import pyarrow as pa

    from lineage_assets.warehouse.schemas import arrow_schema

    with commits.Transaction(root, operation) as txn:
        for table, table_rows in rows.items():
            txn.stage_arrow(pa.Table.from_pylist(table_rows, schema=arrow_schema(table.schema)), table)
        txn.commit()
    return root
