"""What the determinism check's sample depends on (`checks.sample_closure`): the runs of the
sampled jobs, the families their datasets belong to, every run writing one of those families
(named by any alias), the families' dataset events, and the open events carried into the range.
Read with DuckDB from committed files; the jobs' hashes are given here, so no Spark is needed."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from lineage_assets.identity.aliases import AliasTimeline, Statement, micros
from lineage_assets.identity.resolver import Identity
from lineage_assets.lineage.state import valid_partitions
from lineage_assets.pipeline.checks import Sample, sample_closure
from lineage_assets.warehouse import commits
from lineage_assets.warehouse import tables as t
from lineage_assets.warehouse.schemas import arrow_schema
from lineage_assets_tests.support import ds, run_event, run_uuid, to_rows

DAY = dt.date(2024, 7, 2)
HIVE = "hive://metastore:9083"
PATH, TABLE = ("s3://bucket:9000", "warehouse/t"), (HIVE, "db.t")  # one dataset by two names (an alias ties them)


def _events() -> list[dict]:
    at = f"{DAY}T01:00:00Z"
    return [
        run_event(at, "COMPLETE", "reads-t", "reader", [ds(TABLE[1], TABLE[0])], ["u, (\"quoted\")"]),
        run_event(at, "COMPLETE", "writes-path", "path_writer", ["src"], [ds(PATH[1], PATH[0])]),
        run_event(at, "COMPLETE", "writes-table", "table_writer", ["src"], [ds(TABLE[1], TABLE[0])]),
        run_event(at, "COMPLETE", "writes-u", "u_writer", [], ["u, (\"quoted\")"]),
        run_event(at, "COMPLETE", "reads-u", "u_reader", ["u, (\"quoted\")"], ["v"]),  # reads a sampled family: not needed
        run_event(at, "COMPLETE", "unrelated", "unrelated", ["z"], ["y"]),
        run_event(at, "COMPLETE", "no-datasets", "reader", [], []),  # a run of a sampled job that names no dataset
        {"eventTime": at, "producer": "p", "dataset": {"namespace": PATH[0], "name": PATH[1]}},
        {"eventTime": at, "producer": "p", "dataset": {"namespace": "ds", "name": "z"}},
    ]


def _identity() -> Identity:
    at = micros(dt.datetime(2024, 7, 1, tzinfo=dt.timezone.utc))
    return Identity(aliases=AliasTimeline.of([Statement(PATH, at, "e0", TABLE)]))


def _commit(root: str, table: t.Table, rows: list[dict]) -> commits.Commit:
    with commits.Transaction(root, "test") as txn:
        txn.stage_arrow(pa.Table.from_pylist(rows, schema=arrow_schema(table.schema)), table)
        txn.commit()
    return commits.latest(root)


def _hashes(sampled: set[str]):
    """Job hashes that put the `sampled` job names first in the sample order (0) and every other last."""

    def hashes(jobs: pa.Table) -> pa.Table:
        names = jobs.column("job_name").to_pylist()
        return jobs.append_column("h", pa.array([0 if n in sampled else 9999 for n in names], pa.int64()))

    return hashes


def _closure(commit: commits.Commit, rate: float, sampled: set[str], first: dt.date = DAY):
    return sample_closure(
        commit.files(t.EVENTS.name), commit.files(t.STATE_OPEN_EVENTS.name, valid_partitions(first - dt.timedelta(days=1))),
        first, rate, _identity(), _hashes(sampled),
    )


def test_the_sample_takes_its_jobs_runs_every_writer_of_their_families_and_the_families_dataset_events(tmp_path):
    commit = _commit(str(tmp_path), t.EVENTS, to_rows(_events()))
    closure = _closure(commit, 0.5, {"reader"})
    identity = _identity()
    assert closure.cut == Sample.rate_cut(0.5)
    assert closure.runs.column("run_id").to_pylist() == sorted(run_uuid(r) for r in ("reads-t", "no-datasets"))
    assert closure.datasets == sorted({identity.family(*TABLE), identity.family("ds", 'u, ("quoted")')})
    assert identity.family(*PATH) == identity.family(*TABLE)  # so the path's writer is one of the table's
    needed = {run_uuid(r) for r in ("reads-t", "no-datasets", "writes-path", "writes-table", "writes-u")}
    assert closure.needed.column("run_id").to_pylist() == sorted(needed)
    assert closure.dataset_event_names == [PATH]  # of the table's family by its path; z is no sampled family's


def test_a_rate_that_takes_no_job_takes_the_lowest_in_the_sample_order(tmp_path):
    commit = _commit(str(tmp_path), t.EVENTS, to_rows(_events()))

    def hashes(jobs: pa.Table) -> pa.Table:
        order = {"unrelated": 7, "reader": 8}
        return jobs.append_column("h", pa.array([order.get(n, 9000) for n in jobs.column("job_name").to_pylist()], pa.int64()))

    closure = sample_closure(commit.files(t.EVENTS.name), [], DAY, 0.0001, _identity(), hashes)
    assert closure.cut == 8  # the lowest hash (7) + 1: its job only
    assert closure.runs.column("run_id").to_pylist() == [run_uuid("unrelated")]
    assert closure.datasets == sorted({("ds", "y"), ("ds", "z")})
    assert closure.dataset_event_names == [("ds", "z")]


@pytest.mark.parametrize("valid_from, carried", [(DAY - dt.timedelta(days=1), True), (DAY, False)])
def test_open_events_carried_into_the_range_count_and_later_ones_do_not(tmp_path, valid_from, carried):
    """A run still open at the day before the range (its events in `state_open_events` with
    valid_from < first) writes a sampled family: it is needed; a row valid only from the range's
    first day on is not the state carried into it (the fold reads it as the range's own event)."""
    root = str(tmp_path)
    _commit(root, t.EVENTS, to_rows(_events()))
    open_row = to_rows([run_event(f"{DAY - dt.timedelta(days=1)}T23:00:00Z", "START", "open-writer", "late_writer", [], [ds(PATH[1], PATH[0])])])[0]
    commit = _commit(root, t.STATE_OPEN_EVENTS, [{**open_row, "valid_from": valid_from, "kept_events": None, "valid_to": dt.date.fromisoformat(t.OPEN)}])
    closure = _closure(commit, 0.5, {"reader"})
    assert (run_uuid("open-writer") in closure.needed.column("run_id").to_pylist()) is carried
    assert run_uuid("open-writer") not in closure.runs.column("run_id").to_pylist()  # its job is not sampled
