"""fold_start / reopened_from: where a fold must start when its range holds later events of runs
that ended before it (DESIGN.md section 4: all events of a runId are one run). Spark-free: the
warehouse is staged with pyarrow, as the probe reads it."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from lineage_assets.pipeline.fold import fold_start, reopened_from
from lineage_assets.warehouse import commits
from lineage_assets.warehouse import tables as t
from lineage_assets.warehouse.schemas import arrow_schema

D = dt.date.fromisoformat
A, B, C = (f"{n}0000000-0000-4000-8000-000000000000" for n in "abc")


def _warehouse(root: str, events: list[tuple[str, str]], runs: list[tuple[str, str]], carried=()) -> commits.Commit:
    """A commit with `events` (run id, event day), `runs` (run id, end day) and the state's open
    events `carried` (run id, valid_from, valid_to), other columns null."""
    with commits.Transaction(root, "test") as txn:
        if carried:
            txn.stage_arrow(pa.Table.from_pylist(
                [{"event_id": f"c{i}", "run_id": run, "valid_from": D(a), "valid_to": D(b)} for i, (run, a, b) in enumerate(carried)],
                schema=arrow_schema(t.STATE_OPEN_EVENTS.schema)), t.STATE_OPEN_EVENTS)
        txn.stage_arrow(pa.Table.from_pylist(
            [{"event_id": f"e{i}", "run_id": run, "event_date": D(day), "event_kind": "RUN"} for i, (run, day) in enumerate(events)],
            schema=arrow_schema(t.EVENTS.schema)), t.EVENTS)
        txn.stage_arrow(pa.Table.from_pylist(
            [{"run_id": run, "job_namespace": "ns", "job_name": "j", "end_date": D(day)} for run, day in runs],
            schema=arrow_schema(t.RUNS.schema)), t.RUNS)
        return txn.commit()


def test_a_run_that_ended_before_the_range_moves_its_start_to_that_day(tmp_path):
    commit = _warehouse(str(tmp_path), [(A, "2024-03-01"), (A, "2024-03-20"), (B, "2024-03-20")], [(A, "2024-03-01")])
    assert reopened_from(commit, D("2024-03-20"), D("2024-03-20")) == (D("2024-03-01"), [A])
    said: list[str] = []
    assert fold_start(commit, D("2024-03-20"), D("2024-03-20"), said.append) == D("2024-03-01")
    assert said == [f"lineage fold: starting at 2024-03-01, not 2024-03-20: run {A} ended by then and has events from 2024-03-20 on"]


def test_the_start_moves_until_no_run_in_the_range_ended_before_it(tmp_path):
    """B's event on the 4th reopens B (ended on the 3rd); from the 3rd, A's event that day reopens
    A (ended on the 1st): two steps, each said."""
    commit = _warehouse(
        str(tmp_path), [(A, "2024-03-03"), (B, "2024-03-04"), (C, "2024-03-04")], [(A, "2024-03-01"), (B, "2024-03-03")],
    )
    said: list[str] = []
    assert fold_start(commit, D("2024-03-04"), D("2024-03-05"), said.append) == D("2024-03-01")
    assert [line.split(":")[1].strip() for line in said] == ["starting at 2024-03-03, not 2024-03-04", "starting at 2024-03-01, not 2024-03-03"]


def test_runs_that_end_in_the_range_or_have_no_later_events_move_nothing(tmp_path):
    commit = _warehouse(str(tmp_path), [(A, "2024-03-05"), (B, "2024-03-02")], [(A, "2024-03-05"), (B, "2024-03-02"), (C, "2024-03-01")])
    assert reopened_from(commit, D("2024-03-05"), D("2024-03-06")) is None
    assert fold_start(commit, D("2024-03-05"), D("2024-03-06"), lambda line: None) == D("2024-03-05")
    assert reopened_from(_warehouse(str(tmp_path / "empty"), [(A, "2024-03-05")], []), D("2024-03-05"), D("2024-03-05")) is None


def test_a_warehouse_under_a_folder_named_like_a_column_reads_its_own_days(tmp_path):
    """Only the folder under the table is read as partitions (a `key=value` folder above the
    warehouse, even `end_date=...`, is not)."""
    commit = _warehouse(str(tmp_path / "end_date=2000-01-01" / "wh"), [(A, "2024-03-09")], [(A, "2024-03-07")])
    assert reopened_from(commit, D("2024-03-09"), D("2024-03-09")) == (D("2024-03-07"), [A])


def test_a_run_the_fold_carries_moves_nothing_before_the_fold(tmp_path):
    """Runs ending each day with one more event the next day: the fold of the 4th starts at the
    3rd (C's event of the 4th is new: C, ended on the 3rd, is not carried past it), not at the
    1st: B, ended on the 2nd, is carried until its event of the 3rd, so the fold itself tells
    whether that event is new (`coalesce_range`), and A is carried through no day of the range."""
    events = [(A, "2024-03-01"), (A, "2024-03-02"), (B, "2024-03-02"), (B, "2024-03-03"), (C, "2024-03-03"), (C, "2024-03-04")]
    runs = [(A, "2024-03-01"), (B, "2024-03-02"), (C, "2024-03-03")]
    carried = [(A, "2024-03-01", "2024-03-02"), (B, "2024-03-02", "2024-03-03")]  # until each one's last event
    commit = _warehouse(str(tmp_path), events, runs, carried)
    assert fold_start(commit, D("2024-03-04"), D("2024-03-04"), lambda line: None) == D("2024-03-03")
    assert reopened_from(commit, D("2024-03-03"), D("2024-03-04")) is None  # B carried, A not in the range
