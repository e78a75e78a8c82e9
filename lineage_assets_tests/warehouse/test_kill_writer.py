"""A writer killed (SIGKILL) anywhere in a materialization: readers only ever see whole commits,
and running it again gives exactly the tables of an uninterrupted run (DESIGN.md section 11).

The writer is a separate process that kills itself at the Nth fault point of the commit
protocol (`commits.fault_point`: after each staged table or partition, after the commit lock,
after each file moved into place, before and after the commit file, after the views file,
during garbage collection). Every point an uninterrupted run passes is tried. Meanwhile a
reader thread keeps asking: the summary's row counts, `runs` per day, and a `lineage()` answer
from a fresh `LineageQuery`; each answer must be exactly that of the commit before or after.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
import threading

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lineage_assets import LineageQuery
from lineage_assets.query.synthetic import NS, build
from lineage_assets.warehouse import commits
from lineage_assets.warehouse import tables as t
from lineage_assets.warehouse.summary import table_counts
from lineage_assets_tests.warehouse.kill_writer import TABLES, materialize

SCHEDULE_SECONDS = 25  # measured (--durations); conftest runs long files first

DAYS = [dt.date(2024, 3, d) for d in (1, 2, 3)]
SINCE = "2024-03-02"
START = f"job:{NS}:p0.job4"


def _runs(tag: str, days) -> pa.Table:
    rows = [{"run_id": f"{tag}-{day}-{i}", "job_namespace": "ns", "job_name": f"j{i}", "state": "COMPLETE", "end_date": day}
            for day in days for i in range(3 + days.index(day))]
    return pa.Table.from_pylist(rows)


def _prepare(tmp_path):
    """W0: commit A (a snapshot of 40 jobs in chains of 10, runs of three days). `next/`: the
    content of the next materialization (a snapshot in chains of 5, runs of days 2-4)."""
    base = str(tmp_path / "w0")
    build(base, jobs=40, chain=10, fields=4)
    with commits.Transaction(base, "runs") as txn:
        txn.stage_arrow(_runs("a", DAYS), "runs")
        txn.commit()
    other = str(tmp_path / "other")
    build(other, jobs=40, chain=5, fields=4, seed=9)
    source = tmp_path / "next"
    source.mkdir()
    for name in TABLES[:-1]:
        [path] = commits.committed_files(other, name)
        shutil.copy(path, source / f"{name}.parquet")
    pq.write_table(_runs("b", [DAYS[1], DAYS[2], dt.date(2024, 3, 4)]), source / "runs.parquet")
    return base, str(source)


def _answer(root: str) -> tuple:
    """Two readers' answers: row counts and runs per day (one reader of one commit), and a
    lineage answer (a fresh LineageQuery, which reads the commit newest when it loads)."""
    commit = commits.latest(root)
    counts = tuple(sorted(table_counts(root, commit).items()))
    per_day = tuple(duckdb.sql(f"select end_date, count(*) from ({commits.duckdb_relation_sql(commit, 'runs')}) group by all order by all").fetchall())
    with LineageQuery(root) as query:
        nodes = tuple(sorted(n.id for n in query.lineage(START, depth=20).graph))
    return (counts, per_day), nodes


def _diff(view: tuple, before: tuple, after: tuple) -> str:
    parts = ("counts and runs per day", "lineage")
    return "; ".join(f"{p}: {v} (before {b}, after {a})" for p, v, b, a in zip(parts, view, before, after) if v not in (b, a))


def _tables(root: str) -> dict[str, list[tuple]]:
    commit = commits.latest(root)
    return {table.name: duckdb.sql(f"select * from ({commits.duckdb_relation_sql(commit, table.name)}) order by all").fetchall()
            for table in t.USER_TABLES}


def _writer(root: str, source: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lineage_assets_tests.warehouse.kill_writer", root, source, SINCE],
        env={**os.environ, **env}, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
        capture_output=True, text=True, timeout=120,
    )


@pytest.mark.slow
def test_a_writer_killed_at_every_fault_point_leaves_only_whole_commits(tmp_path):
    base, source = _prepare(tmp_path)
    before = _answer(base)
    reference = str(tmp_path / "reference")
    shutil.copytree(base, reference)
    log = tmp_path / "faults.log"
    done = _writer(reference, source, {commits.FAULT_LOG: str(log)})
    assert done.returncode == 0, done.stderr
    after, expected = _answer(reference), _tables(reference)
    assert before[0][0] != after[0][0] and before[0][1] != after[0][1] and before[1] != after[1]
    points = log.read_text().splitlines()
    assert len(points) >= 20, points
    kinds = {line.split(" ", 1)[1].split(" ")[0] for line in points}
    assert {"staged", "staging", "moved", "before", "after", "collecting", "commit"} <= kinds

    for point, label in (line.split(" ", 1) for line in points):
        root = str(tmp_path / f"k{point}")
        shutil.copytree(base, root)
        seen: list[tuple] = []
        errors: list[BaseException] = []
        stop = threading.Event()

        def read() -> None:
            while not stop.is_set():
                try:
                    seen.append(_answer(root))
                except BaseException as exc:  # noqa: BLE001 - reported below
                    errors.append(exc)
                    return

        reader = threading.Thread(target=read)
        reader.start()
        try:
            killed = _writer(root, source, {commits.KILL_AT: point})
        finally:
            stop.set()
            reader.join()
        assert killed.returncode == -9, f"not killed at {point} {label}: {killed.returncode} {killed.stderr[-500:]}"
        assert not errors, f"reader failed while the writer died at {label}: {errors[0]!r}"
        seen.append(_answer(root))
        partial = [view for view in seen if any(part not in (b, a) for part, b, a in zip(view, before, after))]
        assert not partial, f"a reader saw a partial commit at {label}: {_diff(partial[0], before, after)}"
        committed = commits.latest(root).seq > commits.latest(base).seq
        assert seen[-1] == (after if committed else before), label
        # the materialization runs again (it is idempotent) and gives the uninterrupted tables
        if not committed:
            materialize(root, source, SINCE)
        assert _answer(root) == after, label
        assert _tables(root) == expected, label
        shutil.rmtree(root)


@pytest.mark.parametrize("point", [1, 2])
def test_the_lock_of_a_killed_writer_is_free_for_the_next(tmp_path, point):
    base, source = _prepare(tmp_path)
    killed = _writer(base, source, {commits.KILL_AT: str(point)})
    assert killed.returncode == -9
    with commits.writer(base, wait_seconds=1):
        materialize(base, source, SINCE)
    assert commits.latest(base).info["operation"] == "kill_test"
