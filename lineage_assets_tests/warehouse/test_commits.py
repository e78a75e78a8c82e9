"""The warehouse commit protocol (`lineage_assets/warehouse/commits.py`), mostly without Spark.

Data is staged with `Transaction.stage_arrow` and read back with DuckDB, through
`commits.duckdb_relation_sql`, the generated `duckdb_views.sql` and `summary`. The tests prove:

- an empty warehouse reads as commit 0 with typed, empty tables;
- staged files are invisible until `commit()`, after which readers see exactly the new rows;
- `stage_arrow` writes every row once into its partition's file (a null partition value into
  Spark's folder for null);
- partition replacement (`replace=`) drops, keeps and replaces the right partitions, unpartitioned
  tables are replaced whole, and tables a transaction does not stage are carried over unchanged;
- transactions opened from the same base do not lose each other's updates;
- a commit whose commit file cannot be written (a full disk) changes nothing and leaves no
  temporary file; one a killed writer left is removed by the next commit;
- an uncommitted transaction (aborted, or its process killed after staging) changes nothing, and
  garbage collection removes orphan files, dead writers' staging folders and commits beyond
  `KEEP_COMMITS`, but never a file that a kept commit lists;
- `props` are carried from commit to commit;
- `duckdb_views.sql` defines one typed view per user table over the committed files;
- `commits.writer` is a re-entrant, per-process, kernel-released lock;
- warehouse paths with quotes, spaces or `=` read correctly, and folders above the warehouse
  named like its columns (`state=CA/`) change nothing readers read;
- what Spark writes for a partitioned table is cut into one file per partition (and Spark file)
  with the registry's types, a file whose partitions are not contiguous is refused, and the
  checks read the few files Spark wrote; a frame of few partitions is written by Spark into its
  folders instead, and publishes the same rows with the same Parquet schema (the tests here
  that use Spark).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from lineage_assets.warehouse import commits, summary
from lineage_assets.warehouse import tables as registry

PROJECT = Path(__file__).resolve().parents[2]
USER_TABLE_NAMES = {t.name for t in registry.USER_TABLES}

# ---------------------------------------------------------------------------------- helpers


def day(n: int) -> dt.date:
    return dt.date(2024, 1, n)


def runs(end_date: dt.date, *run_ids: str) -> pa.Table:
    """`runs` rows (other columns null) of one end_date partition."""
    return pa.table({"run_id": list(run_ids), "state": ["COMPLETE"] * len(run_ids), "end_date": [end_date] * len(run_ids)})


def events(event_date: dt.date, *event_ids: str) -> pa.Table:
    return pa.table({"event_id": list(event_ids), "event_date": [event_date] * len(event_ids)})


def current_jobs(*names: str) -> pa.Table:
    return pa.table({"job_namespace": ["ns"] * len(names), "job_name": list(names)})


def rejected(read_date: dt.date, batch_id: str, *reasons: str) -> pa.Table:
    return pa.table({
        "source_file": [f"drop-{batch_id}.jsonl"] * len(reasons),
        "source_line": list(range(1, len(reasons) + 1)),
        "reason_code": list(reasons),
        "read_date": [read_date] * len(reasons),
        "batch_id": [batch_id] * len(reasons),
    })


def commit_one(root, table: str, data: pa.Table, replace=None, props=None, operation="test") -> commits.Commit:
    with commits.Transaction(root, operation) as txn:
        txn.stage_arrow(data, table, replace=replace)
        return txn.commit({"note": table}, props)


def rows(commit: commits.Commit, table: str, columns: str, where=None) -> list[tuple]:
    """The committed rows of a table (sorted), read by DuckDB through `duckdb_relation_sql`."""
    relation = commits.duckdb_relation_sql(commit, table, where)
    return sorted(duckdb.connect().execute(f"SELECT {columns} FROM ({relation})").fetchall(), key=repr)


def run_rows(commit: commits.Commit) -> list[tuple]:
    return rows(commit, "runs", "run_id, CAST(end_date AS VARCHAR)")


def views(root) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with `duckdb_views.sql` executed (as a reader outside the project would)."""
    con = duckdb.connect()
    con.execute((Path(root) / commits.VIEWS_FILE).read_text())
    return con


def data_files(root, table: str) -> set[str]:
    """Every file on disk in a table's folder (committed or not)."""
    base = Path(root) / registry.get(table).path
    return {str(p) for p in base.rglob("*") if p.is_file()}


def all_committed_files(commit: commits.Commit) -> set[str]:
    return {f for name in commit.tables for f in commit.files(name)}


@pytest.fixture
def wh(tmp_path) -> str:
    return str(tmp_path / "wh")


# ---------------------------------------------------------------------------------- empty warehouse


def test_before_any_commit_everything_is_empty_and_typed(wh):
    base = commits.latest(wh)
    assert (base.seq, base.tables, base.props) == (0, {}, {})
    assert base.files("runs") == [] and base.partitions("runs") == []

    counts = summary.table_counts(wh)
    assert set(counts) == USER_TABLE_NAMES
    assert all(count == 0 for count in counts.values()), counts
    assert summary.rejected_by_reason(wh) == {}
    text = summary.format_summary(wh)
    assert "(commit 0)" in text and "rejected by reason: none" in text

    con = duckdb.connect()
    described = {c[0]: c[1] for c in con.execute(f"DESCRIBE {commits.duckdb_relation_sql(base, 'runs')}").fetchall()}
    assert list(described) == registry.RUNS.column_names
    assert described["end_date"] == "DATE"
    assert described["event_count"] == "INTEGER"
    landed = {c[0]: c[1] for c in con.execute(f"DESCRIBE {commits.duckdb_relation_sql(base, 'landed_events')}").fetchall()}
    assert landed["batch_id"] == "VARCHAR" and landed["event_date"] == "DATE"
    assert con.execute(f"SELECT count(*) FROM ({commits.duckdb_relation_sql(base, 'runs')})").fetchone() == (0,)


def test_typed_empty_relation_has_the_types_of_a_committed_one(wh):
    """The empty relation's types should be those the same table has once it holds files, so a
    view's schema does not change with the first commit. (Fails: see the report; timestamps are
    TIMESTAMP when empty and TIMESTAMP WITH TIME ZONE when read from Parquet, Spark's
    TIMESTAMP_MICROS files included.)"""
    con = duckdb.connect()
    empty = con.execute(f"DESCRIBE {commits.duckdb_relation_sql(commits.latest(wh), 'runs')}").fetchall()
    data = pa.table({"run_id": ["r1"], "started_at": [dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone.utc)], "end_date": [day(1)]})
    full = con.execute(f"DESCRIBE {commits.duckdb_relation_sql(commit_one(wh, 'runs', data), 'runs')}").fetchall()
    assert [(c[0], c[1]) for c in full] == [(c[0], c[1]) for c in empty]


# ---------------------------------------------------------------------------------- isolation


def test_staged_files_are_invisible_until_commit(wh):
    first = commit_one(wh, "runs", runs(day(1), "old"))
    with commits.Transaction(wh, "test") as txn:
        txn.stage_arrow(runs(day(1), "new-a", "new-b"), "runs")
        txn.stage_arrow(runs(day(2), "new-c"), "runs")
        txn.stage_arrow(current_jobs("j1"), "current_jobs")
        staged = [p for t in ("runs", "current_jobs") for files in txn.staged_files(t).values() for p in files]
        assert len(staged) == 3 and all(os.path.isfile(p) for p in staged)  # really on disk

        seen = commits.latest(wh)
        assert seen.seq == 1 and seen.tables == first.tables
        assert run_rows(seen) == [("old", "2024-01-01")]
        counts = summary.table_counts(wh)
        assert counts["runs"] == 1 and counts["current_jobs"] == 0
        assert views(wh).execute("SELECT run_id FROM runs").fetchall() == [("old",)]
        assert views(wh).execute("SELECT count(*) FROM current_jobs").fetchone() == (0,)

        second = txn.commit()

    assert second.seq == 2 and commits.latest(wh).seq == 2
    assert run_rows(commits.latest(wh)) == [("new-a", "2024-01-01"), ("new-b", "2024-01-01"), ("new-c", "2024-01-02")]
    assert summary.table_counts(wh)["runs"] == 3 and summary.table_counts(wh)["current_jobs"] == 1
    assert sorted(views(wh).execute("SELECT run_id FROM runs").fetchall()) == [("new-a",), ("new-b",), ("new-c",)]
    assert not os.path.exists(txn.staging)  # the staging folder is gone after a commit


# ---------------------------------------------------------------------------------- replacement


def test_partition_replacement_drops_keeps_and_replaces(wh):
    carried = commit_one(wh, "events", events(day(1), "e1", "e2"))
    for n in (1, 2, 3):  # no `replace`: each commit adds its partition and keeps the others
        commit_one(wh, "runs", runs(day(n), f"r{n}"))
    before = commits.latest(wh)
    assert before.partitions("runs") == ["end_date=2024-01-01", "end_date=2024-01-02", "end_date=2024-01-03"]
    day1_files = before.files("runs", lambda p: p["end_date"] == "2024-01-01")

    since = day(2).isoformat()
    after = commit_one(wh, "runs", runs(day(2), "r2-new", "r2-newer"), replace=lambda p: p["end_date"] >= since)

    assert after.seq == 5
    assert after.partitions("runs") == ["end_date=2024-01-01", "end_date=2024-01-02"]  # day 3 is gone
    assert after.files("runs", lambda p: p["end_date"] == "2024-01-01") == day1_files  # day 1 untouched
    assert run_rows(after) == [("r1", "2024-01-01"), ("r2-new", "2024-01-02"), ("r2-newer", "2024-01-02")]
    assert summary.table_counts(wh)["runs"] == 3
    # the other table is carried over as it was: same files, same rows
    assert after.tables["events"] == carried.tables["events"]
    assert rows(after, "events", "event_id") == [("e1",), ("e2",)]
    # partition filters of readers use the same partition values
    assert rows(after, "runs", "run_id", lambda p: p["end_date"] > "2024-01-01") == [("r2-new",), ("r2-newer",)]


def test_stage_arrow_writes_every_row_once_into_its_partition_a_null_into_spark_s_null_folder(wh):
    """Rows of several partitions in any order, over two partition columns, and a null partition
    value: each row lands in its partition's one file, the null one in `HIVE_NULL` (as Spark
    names it), and readers get every row back with its values."""
    data = pa.concat_tables([
        rejected(day(2), "b2", "not_json"), rejected(day(1), "b1", "not_json", "missing_field"),
        rejected(day(2), "b1", "too_deep"), rejected(day(1), "b1", "duplicate_key"),
    ])
    data = data.set_column(data.schema.get_field_index("batch_id"), "batch_id", pa.array(["b2", "b1", "b1", "b1", None]))
    with commits.Transaction(wh, "test") as txn:
        txn.stage_arrow(data, "rejected_events")
        staged = txn.staged_files("rejected_events")
        commit = txn.commit()
    null = commits.HIVE_NULL
    assert {key: len(files) for key, files in staged.items()} == {
        "read_date=2024-01-01/batch_id=b1": 1, f"read_date=2024-01-01/batch_id={null}": 1,
        "read_date=2024-01-02/batch_id=b1": 1, "read_date=2024-01-02/batch_id=b2": 1,
    }
    assert rows(commit, "rejected_events", "reason_code, CAST(read_date AS VARCHAR), batch_id") == sorted([
        ("not_json", "2024-01-02", "b2"), ("not_json", "2024-01-01", "b1"), ("missing_field", "2024-01-01", "b1"),
        ("too_deep", "2024-01-02", "b1"), ("duplicate_key", "2024-01-01", None),
    ], key=repr)


def test_unpartitioned_table_is_replaced_whole(wh):
    first = commit_one(wh, "current_jobs", current_jobs("a", "b", "c"))
    assert first.partitions("current_jobs") == [""]
    second = commit_one(wh, "current_jobs", current_jobs("d"))
    assert second.partitions("current_jobs") == [""]
    assert rows(second, "current_jobs", "job_name") == [("d",)]
    assert len(second.files("current_jobs")) == 1
    assert set(second.files("current_jobs")).isdisjoint(first.files("current_jobs"))
    # an empty snapshot empties the table (it is not "no change")
    third = commit_one(wh, "current_jobs", current_jobs())
    assert rows(third, "current_jobs", "count(*)") == [(0,)]
    assert summary.table_counts(wh)["current_jobs"] == 0


# ---------------------------------------------------------------------------------- concurrency


def test_two_transactions_from_the_same_base_both_commit(wh):
    base = commit_one(wh, "events", events(day(1), "e1"))
    a = commits.Transaction(wh, "a")
    b = commits.Transaction(wh, "b")
    a.stage_arrow(runs(day(1), "ra"), "runs")
    b.stage_arrow(current_jobs("jb"), "current_jobs")
    first = a.commit()
    second = b.commit()  # b was opened before a committed: it must still see a's table

    assert (base.seq, first.seq, second.seq) == (1, 2, 3)
    final = commits.latest(wh)
    assert final.seq == 3
    assert set(final.tables) == {"events", "runs", "current_jobs"}
    assert rows(final, "runs", "run_id") == [("ra",)]
    assert rows(final, "current_jobs", "job_name") == [("jb",)]
    assert rows(final, "events", "event_id") == [("e1",)]
    parents = [json.loads(p.read_text())["parent"] for p in sorted((Path(wh) / commits.COMMITS).glob("*.json"))]
    assert parents == [0, 1, 2]


def test_two_fresh_transactions_get_seqs_1_and_2(wh):
    a = commits.Transaction(wh, "a")
    b = commits.Transaction(wh, "b")
    a.stage_arrow(runs(day(1), "ra"), "runs")
    b.stage_arrow(events(day(1), "eb"), "events")
    assert [b.commit().seq, a.commit().seq] == [1, 2]
    final = commits.latest(wh)
    assert commits.commit_seqs(wh) == [1, 2]
    assert rows(final, "runs", "run_id") == [("ra",)] and rows(final, "events", "event_id") == [("eb",)]


def test_concurrent_commits_from_threads_lose_nothing(wh):
    names = ["runs", "events", "current_jobs", "current_lineage"]
    data = {
        "runs": runs(day(1), "r"), "events": events(day(1), "e"), "current_jobs": current_jobs("j"),
        "current_lineage": pa.table({"job_name": ["j"], "dataset_name": ["d"], "direction": ["OUT"]}),
    }
    txns = {name: commits.Transaction(wh, name) for name in names}
    for name, txn in txns.items():
        txn.stage_arrow(data[name], name)
    barrier = threading.Barrier(len(names))
    errors = []

    def go(txn):
        try:
            barrier.wait()
            txn.commit()
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(t,)) for t in txns.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    final = commits.latest(wh)
    assert commits.commit_seqs(wh) == [1, 2, 3, 4] and final.seq == 4
    assert sorted(t.committed.seq for t in txns.values()) == [1, 2, 3, 4]
    assert set(final.tables) == set(names)
    assert {name: summary.table_counts(wh)[name] for name in names} == dict.fromkeys(names, 1)


# ---------------------------------------------------------------------------------- failures and garbage


def test_aborted_transaction_changes_nothing(wh):
    first = commit_one(wh, "runs", runs(day(1), "r1"))
    with pytest.raises(RuntimeError, match="boom"):
        with commits.Transaction(wh, "failing") as txn:
            txn.stage_arrow(runs(day(1), "bad"), "runs", replace=lambda p: True)
            txn.stage_arrow(current_jobs("bad"), "current_jobs")
            raise RuntimeError("boom")
    assert not os.path.exists(txn.staging)  # __exit__ aborted it
    assert txn.committed is None
    assert commits.latest(wh).tables == first.tables and commits.commit_seqs(wh) == [1]
    assert run_rows(commits.latest(wh)) == [("r1", "2024-01-01")]
    assert views(wh).execute("SELECT run_id FROM runs").fetchall() == [("r1",)]


def test_a_full_disk_while_the_commit_file_is_written_leaves_readers_and_the_folder_as_before(wh, monkeypatch):
    """The commit file is written to a temporary file first: when that write fails (here its
    fsync, as on a full disk) the commit raises, readers stay on the previous commit, and no
    temporary file is left; one left by a writer killed while writing it (commit or views file)
    is removed by the next commit's garbage collection."""
    import errno

    first = commit_one(wh, "runs", runs(day(1), "r1"))
    commit_dir = Path(wh) / "_commits"
    real_fsync = os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left"):
        commit_one(wh, "runs", runs(day(2), "r2"))
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert commits.latest(wh).seq == first.seq and run_rows(commits.latest(wh)) == [("r1", "2024-01-01")]
    assert views(wh).execute("SELECT run_id FROM runs").fetchall() == [("r1",)]
    assert not [p.name for p in commit_dir.iterdir() if p.name.endswith(commits.TMP_SUFFIX)]

    stale = [commit_dir / f"{first.seq + 1:020d}.json.dead{commits.TMP_SUFFIX}", Path(wh) / f"{commits.VIEWS_FILE}.dead{commits.TMP_SUFFIX}"]
    for path in stale:
        path.write_text("{half")
    keep = Path(wh) / "notes.tmp"  # not the warehouse's own: left alone
    keep.write_text("mine")
    nxt = commit_one(wh, "runs", runs(day(2), "r2"))
    assert run_rows(nxt) == [("r1", "2024-01-01"), ("r2", "2024-01-02")]
    assert not any(path.exists() for path in stale) and keep.exists()


def test_killed_writer_changes_nothing_and_gc_removes_only_orphans(wh):
    commit_one(wh, "events", events(day(1), "e1"))
    first = commit_one(wh, "runs", runs(day(1), "r1"))
    committed_before = all_committed_files(first)

    # a writer in another process stages and is killed before committing (no __exit__ runs)
    script = textwrap.dedent("""
        import datetime as dt, os, sys
        import pyarrow as pa
        from lineage_assets.warehouse import commits
        txn = commits.Transaction(sys.argv[1], "killed")
        txn.stage_arrow(pa.table({"run_id": ["ghost"], "end_date": [dt.date(2024, 1, 1)]}), "runs", replace=lambda p: True)
        print(txn.staging, flush=True)
        os.kill(os.getpid(), 9)
    """)
    proc = subprocess.run([sys.executable, "-c", script, wh], cwd=PROJECT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    dead_staging = proc.stdout.strip()
    assert os.path.isdir(dead_staging)

    # a live transaction in this process that has staged but not committed (yet)
    live = commits.Transaction(wh, "live")
    live.stage_arrow(runs(day(1), "pending"), "runs")

    # a mover killed after moving a file into the table folders, before its commit was written
    strays = [
        Path(wh) / "runs" / "end_date=2024-01-01" / "killed-mover-part-00000.parquet",
        Path(wh) / "runs" / "end_date=2024-01-07" / "killed-mover-part-00000.parquet",  # a partition no commit has
        Path(wh) / "events" / "event_date=2024-01-01" / "killed-mover-part-00000.parquet",  # a table the next commit doesn't touch
    ]
    for stray in strays:
        stray.parent.mkdir(parents=True, exist_ok=True)
        stray.write_bytes(b"PAR1 not really")

    # none of it is visible
    seen = commits.latest(wh)
    assert seen.seq == 2 and seen.tables == first.tables
    assert run_rows(seen) == [("r1", "2024-01-01")]
    assert summary.table_counts(wh)["runs"] == 1
    assert views(wh).execute("SELECT run_id FROM runs").fetchall() == [("r1",)]

    # the next commit collects the garbage
    nxt = commit_one(wh, "current_jobs", current_jobs("j"))
    assert nxt.seq == 3
    assert not any(s.exists() for s in strays)
    assert not (Path(wh) / "runs" / "end_date=2024-01-07").exists()  # emptied partition folder removed
    assert not os.path.exists(dead_staging)  # the dead writer's staging folder
    assert os.path.isdir(live.staging) and live.staged_files("runs")  # the live one is kept
    assert all(os.path.isfile(f) for f in committed_before | all_committed_files(nxt))
    for table in ("runs", "events", "current_jobs"):
        assert data_files(wh, table) == set(nxt.files(table)), table

    # and the live transaction can still commit what it staged
    done = live.commit()
    assert run_rows(done) == [("pending", "2024-01-01")]


# ---------------------------------------------------------------------------------- retention


def test_retention_keeps_the_newest_commits_and_their_files(wh):
    total = commits.KEEP_COMMITS + 3
    committed = []  # (seq, the runs file it wrote)
    for i in range(1, total + 1):
        c = commit_one(wh, "runs", runs(day(1), f"r{i}"))  # each replaces partition end_date=2024-01-01
        (only,) = c.files("runs")
        committed.append((c.seq, only))
        assert all(os.path.isfile(f) for f in c.files("runs"))

    kept_seqs = list(range(total - commits.KEEP_COMMITS + 1, total + 1))
    assert commits.commit_seqs(wh) == kept_seqs
    assert sorted(p.name for p in (Path(wh) / commits.COMMITS).glob("*.json")) == [f"{s:020d}.json" for s in kept_seqs]
    listed = set()
    for seq in kept_seqs:
        commit = commits.read_commit(wh, seq)
        assert commit.seq == seq
        for f in commit.files("runs"):
            assert os.path.isfile(f), (seq, f)
            listed.add(f)
    # the replaced files of dropped commits are deleted; those of kept commits stay for readers
    assert data_files(wh, "runs") == listed
    assert listed == {f for seq, f in committed if seq in kept_seqs}
    assert not any(os.path.exists(f) for seq, f in committed if seq not in kept_seqs)
    assert run_rows(commits.latest(wh)) == [(f"r{total}", "2024-01-01")]


# ---------------------------------------------------------------------------------- props


def test_props_are_carried_and_updated(wh):
    first = commit_one(wh, "runs", runs(day(1), "r1"), props={"last_folded_day": "2024-01-01", "owner": "fold"})
    assert first.props == {"last_folded_day": "2024-01-01", "owner": "fold"}
    second = commit_one(wh, "current_jobs", current_jobs("j"))  # no props: carried
    assert second.props == first.props
    third = commit_one(wh, "runs", runs(day(2), "r2"), props={"last_folded_day": "2024-01-02", "extra": 1})
    assert third.props == {"last_folded_day": "2024-01-02", "owner": "fold", "extra": 1}
    on_disk = commits.latest(wh)  # read back from _commits/, not the object commit() returned
    assert on_disk.seq == 3 and on_disk.props == third.props
    assert commits.read_commit(wh, 2).props == {"last_folded_day": "2024-01-01", "owner": "fold"}
    assert on_disk.info["operation"] == "test" and on_disk.info["note"] == "runs"


# ---------------------------------------------------------------------------------- views


def test_views_file_defines_one_typed_view_per_user_table(wh):
    commit_one(wh, "runs", runs(day(3), "r1", "r2"))
    with commits.Transaction(wh, "intake") as txn:
        txn.stage_arrow(rejected(day(2), "123", "BAD_JSON", "BAD_JSON", "NO_RUN_ID"), "rejected_events")
        txn.stage_arrow(pa.table({"event_id": ["e1"], "event_date": [day(2)], "batch_id": ["0042"]}), "landed_events")
        txn.stage_arrow(current_jobs("j1", "j2"), "current_jobs")
        last = txn.commit()

    con = views(wh)
    defined = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    assert defined == USER_TABLE_NAMES
    assert not defined & {t.name for t in registry.STATE}
    for table in registry.USER_TABLES:  # every view has the registry's columns, in order
        assert [c[0] for c in con.execute(f'DESCRIBE "{table.name}"').fetchall()] == table.column_names, table.name

    assert con.execute("SELECT run_id, end_date, typeof(end_date) FROM runs ORDER BY 1").fetchall() == [
        ("r1", day(3), "DATE"), ("r2", day(3), "DATE"),
    ]
    assert con.execute("SELECT DISTINCT batch_id, typeof(batch_id), read_date, typeof(read_date) FROM rejected_events").fetchall() == [
        ("123", "VARCHAR", day(2), "DATE"),
    ]
    assert con.execute("SELECT batch_id, typeof(batch_id) FROM landed_events").fetchall() == [("0042", "VARCHAR")]  # not 42
    assert con.execute("SELECT count(*) FROM current_jobs").fetchone() == (2,)
    assert con.execute("SELECT count(*) FROM events").fetchone() == (0,)
    # the views, duckdb_relation_sql and summary agree
    assert summary.table_counts(wh) == {
        name: con.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0] for name in USER_TABLE_NAMES
    }
    assert summary.rejected_by_reason(wh) == {"BAD_JSON": 2, "NO_RUN_ID": 1}
    text = summary.format_summary(wh)
    assert f"(commit {last.seq})" in text and "BAD_JSON" in text and "NO_RUN_ID" in text
    assert f"commit {last.seq} (intake)" in (Path(wh) / commits.VIEWS_FILE).read_text().splitlines()[0]


def test_views_file_follows_the_latest_commit(wh):
    commit_one(wh, "runs", runs(day(1), "r1"))
    assert views(wh).execute("SELECT run_id FROM runs").fetchall() == [("r1",)]
    commit_one(wh, "runs", runs(day(1), "r2"))
    assert views(wh).execute("SELECT run_id FROM runs").fetchall() == [("r2",)]
    leftovers = [p.name for p in Path(wh).iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


# ---------------------------------------------------------------------------------- writer lock


HOLD_WRITER = textwrap.dedent("""
    import sys, time
    from lineage_assets.warehouse import commits
    with commits.writer(sys.argv[1]):
        print("held", flush=True)
        time.sleep(120)
""")

TRY_WRITER = textwrap.dedent("""
    import sys
    from lineage_assets.warehouse import commits
    try:
        with commits.writer(sys.argv[1], wait_seconds=0.2):
            print("acquired")
    except commits.WarehouseBusy:
        print("busy")
""")


def test_writer_is_reentrant_within_a_process(wh):
    with commits.writer(wh):
        with commits.writer(wh, wait_seconds=0.2):
            with commits.writer(wh, wait_seconds=0.2):
                pass
            # still held by this process after the nested exits: another process is refused
            other = subprocess.run([sys.executable, "-c", TRY_WRITER, wh], cwd=PROJECT, capture_output=True, text=True, timeout=60)
            assert other.stdout.strip() == "busy", other.stderr
        # a commit inside the writer works (the commit lock is a different lock)
        assert commit_one(wh, "runs", runs(day(1), "r1")).seq == 1
    # released: another process gets it
    other = subprocess.run([sys.executable, "-c", TRY_WRITER, wh], cwd=PROJECT, capture_output=True, text=True, timeout=60)
    assert other.stdout.strip() == "acquired", other.stderr


def test_writer_held_by_another_process_is_busy_until_it_dies(wh):
    holder = subprocess.Popen([sys.executable, "-c", HOLD_WRITER, wh], cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held", holder.stderr.read() if holder.poll() is not None else ""
        with pytest.raises(commits.WarehouseBusy) as busy:
            with commits.writer(wh, wait_seconds=0.2):
                pytest.fail("the writer lock was granted while another process holds it")
        assert os.path.abspath(wh) in str(busy.value)
        holder.send_signal(signal.SIGKILL)
        assert holder.wait(30) == -signal.SIGKILL
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(30)
        holder.stdout.close()
        holder.stderr.close()
    with commits.writer(wh, wait_seconds=0.2):  # the kernel released the killed process's lock
        assert commit_one(wh, "runs", runs(day(1), "r1")).seq == 1


# ---------------------------------------------------------------------------------- odd paths


def test_paths_with_quotes_spaces_and_equals_signs_read_correctly(tmp_path):
    root = str(tmp_path / "env=prod" / "it's a \"wh\"")
    commit_one(root, "runs", runs(day(1), "r1", "r2"))
    last = commit_one(root, "current_jobs", current_jobs("j"))
    assert all(os.path.isfile(f) for f in all_committed_files(last))

    assert run_rows(last) == [("r1", "2024-01-01"), ("r2", "2024-01-01")]
    assert rows(last, "current_jobs", "job_name") == [("j",)]
    described = dict(c[:2] for c in duckdb.connect().execute(f"DESCRIBE {commits.duckdb_relation_sql(last, 'runs')}").fetchall())
    assert "env" not in described and described["end_date"] == "DATE"  # the `=` folder is not a column
    assert views(root).execute("SELECT run_id FROM runs ORDER BY 1").fetchall() == [("r1",), ("r2",)]
    counts = summary.table_counts(root)
    assert counts["runs"] == 2 and counts["current_jobs"] == 1
    assert root in summary.format_summary(root)



@pytest.mark.parametrize("above", ["state=CA", "end_date=1999-01-01", "run_id=zzz/state=X", "line\nbreak"])
def test_folders_above_the_warehouse_named_like_its_columns_do_not_change_what_readers_read(tmp_path, above):
    """DuckDB's hive partitioning reads every `key=value` folder of a path: a warehouse under
    `state=CA/` would read `runs.state` as 'CA' in every row, under `end_date=1999-01-01/` every
    row's end_date as that day. Readers (the relation, the views file, `summary`) get the written
    values, a null partition value included (and under a folder whose name holds a line break,
    which would end the views file's comment line)."""
    root = str(tmp_path / above / "wh")
    data = pa.table({"run_id": ["r1", "r2", "r3"], "state": ["COMPLETE"] * 3, "end_date": pa.array([day(1), day(1), None], pa.date32())})
    last = commit_one(root, "runs", data)
    expected = [("r1", "COMPLETE", "2024-01-01"), ("r2", "COMPLETE", "2024-01-01"), ("r3", "COMPLETE", None)]
    assert rows(last, "runs", "run_id, state, CAST(end_date AS VARCHAR)") == expected
    assert sorted(views(root).execute("SELECT run_id, state, CAST(end_date AS VARCHAR) FROM runs").fetchall(), key=repr) == expected
    assert rows(last, "runs", "run_id", commits.within("end_date", day(1), day(1))) == [("r1",), ("r2",)]
    described = dict(c[:2] for c in duckdb.connect().execute(f"DESCRIBE {commits.duckdb_relation_sql(last, 'runs')}").fetchall())
    assert described["end_date"] == "DATE" and "filename" not in described
    assert summary.table_counts(root)["runs"] == 3


# ---------------------------------------------------------------------------------- Spark's files cut per partition


def _runs_file(path, rows: list[tuple]) -> str:
    """A Parquet file of `runs` columns as Spark writes them (the partition column end_date
    inside, timestamps in microseconds, a list of structs), rows in the given order."""
    import pyarrow.parquet as pq

    io = pa.list_(pa.struct([("namespace", pa.string()), ("name", pa.string())]))
    table = pa.table({
        "run_id": [r[0] for r in rows],
        "started_at": pa.array([dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone.utc) if r[1] else None for r in rows], pa.timestamp("us", "UTC")),
        "inputs": pa.array([[{"namespace": "pg://h:5432", "name": f"in,{r[0]}(é)"}] for r in rows], io),
        "end_date": pa.array([r[1] for r in rows], pa.date32()),
    })
    pq.write_table(table, path)
    return str(path)


def _cut_rows(folder) -> list[tuple]:
    relation = commits.duckdb_files_sql("runs", sorted(str(p) for p in Path(folder).rglob("*.parquet")))
    return sorted(duckdb.sql(f"SELECT run_id, started_at IS NULL, inputs[1].name, CAST(end_date AS VARCHAR) FROM ({relation})").fetchall(), key=repr)


def test_spark_files_are_cut_into_one_file_per_partition_and_source(tmp_path, monkeypatch):
    monkeypatch.setattr(commits, "SPLIT_BATCH_BYTES", 1)  # a row per Arrow batch: a partition's rows span batches
    first = _runs_file(tmp_path / "a.parquet", [("r1", day(1)), ("r2", day(1)), ("r3", day(1)), ("r4", day(2)), ("r5", None), ("r6", None)])
    second = _runs_file(tmp_path / "b.parquet", [("r7", day(2)), ("r8", day(3))])
    out = tmp_path / "cut"
    counts = commits.split_by_partition([first, second], str(out), registry.RUNS)

    null = commits.HIVE_NULL
    assert counts == {"end_date=2024-01-01": 3, "end_date=2024-01-02": 2, "end_date=2024-01-03": 1, f"end_date={null}": 2}
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == [
        "end_date=2024-01-01/part-00000.parquet", "end_date=2024-01-02/part-00000.parquet", "end_date=2024-01-02/part-00001.parquet",
        "end_date=2024-01-03/part-00001.parquet", f"end_date={null}/part-00000.parquet",
    ]
    import pyarrow.parquet as pq

    from lineage_assets.warehouse.schemas import arrow_schema

    data_schema = arrow_schema(registry.RUNS.columns)  # the registry's types, the partition column only in the path
    assert all(pq.read_schema(out / f).equals(data_schema) for f in files)
    assert [r for r in _cut_rows(out) if r[3] is not None] == [
        ("r1", False, "in,r1(é)", "2024-01-01"), ("r2", False, "in,r2(é)", "2024-01-01"), ("r3", False, "in,r3(é)", "2024-01-01"),
        ("r4", False, "in,r4(é)", "2024-01-02"), ("r7", False, "in,r7(é)", "2024-01-02"), ("r8", False, "in,r8(é)", "2024-01-03"),
    ]


def test_the_cut_reads_batches_of_about_the_same_bytes_whatever_the_rows_width(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    monkeypatch.setattr(commits, "SPLIT_PROBE_ROWS", 100)
    monkeypatch.setattr(commits, "SPLIT_BATCH_BYTES", 1 << 20)
    narrow, wide = tmp_path / "narrow.parquet", tmp_path / "wide.parquet"
    pq.write_table(pa.table({"v": pa.array(range(50_000), pa.int64())}), narrow)  # 8 bytes a row
    pq.write_table(pa.table({"v": [("x" * 4096) + str(i) for i in range(1_000)]}), wide)  # ~4 KB a row
    narrow_rows, wide_rows = commits._batch_rows(pq.ParquetFile(narrow)), commits._batch_rows(pq.ParquetFile(wide))
    assert (1 << 20) // 9 <= narrow_rows <= (1 << 20) // 8  # 8 bytes a row and the batch's validity bitmap
    assert 200 <= wide_rows <= 256  # 1 MiB of ~4.1 KB rows
    pq.write_table(pa.table({"v": pa.array([], pa.int64())}), tmp_path / "empty.parquet")
    assert commits._batch_rows(pq.ParquetFile(tmp_path / "empty.parquet")) == 100


def test_conform_gives_the_registry_types_and_names_whether_or_not_a_cast_is_needed():
    from lineage_assets.warehouse.schemas import arrow_schema

    target = arrow_schema(registry.RUNS.schema)
    as_spark_writes = pa.table(
        [pa.nulls(2, f.type) if f.name != "run_id" else pa.array(["r1", "r2"]) for f in target],
        schema=pa.schema([f.with_nullable(False) if f.name == "run_id" else f for f in target]),  # nullability apart
    )
    same_types = commits.conform(as_spark_writes, target)
    assert same_types.schema.equals(target) and same_types.column("run_id").to_pylist() == ["r1", "r2"]
    other_order_and_type = pa.table({"end_date": pa.array(["2024-01-02", None]), "run_id": pa.array(["r1", "r2"])})
    cast = commits.conform(other_order_and_type.set_column(0, "end_date", pa.array([dt.date(2024, 1, 2), None], pa.date64())), target)
    assert cast.schema.equals(target) and cast.column("end_date").to_pylist() == [dt.date(2024, 1, 2), None]
    assert cast.column("state").null_count == 2  # a column the data lacks is null


def test_a_spark_file_whose_partitions_are_not_contiguous_is_refused(tmp_path):
    unsorted = _runs_file(tmp_path / "a.parquet", [("r1", day(1)), ("r2", day(2)), ("r3", day(1))])
    with pytest.raises(ValueError, match="not contiguous"):
        commits.split_by_partition([unsorted], str(tmp_path / "cut"), registry.RUNS)


def test_stage_with_spark_publishes_a_file_per_partition_and_checks_read_spark_files(spark, wh):
    from pyspark.sql import functions as F

    given = spark.createDataFrame([(f"r{i}", dt.date(2024, 1, 1 + i % 5)) for i in range(40)], "run_id string, end_date date")
    frame = given.select(*[
        F.col(f.name) if f.name in given.columns else F.lit(None).cast(f.dataType).alias(f.name) for f in registry.RUNS.schema.fields
    ]).repartition(3)  # three Spark files, each holding every day, unsorted
    with commits.Transaction(wh, "test") as txn:
        txn.stage(frame, "runs")
        staged = txn.staged_files("runs")
        assert sorted(staged) == [f"end_date=2024-01-0{d}" for d in range(1, 6)]
        assert all(len(files) <= 3 for files in staged.values())  # one file per (partition, Spark file)
        back = txn.read_staged(spark, "runs")
        assert len(back.inputFiles()) <= 3  # the checks read what Spark wrote, not a file per partition
        assert sorted((r.run_id, str(r.end_date)) for r in back.collect()) == sorted((r.run_id, str(r.end_date)) for r in frame.collect())
        commit = txn.commit()
    assert run_rows(commit) == sorted(((f"r{i}", f"2024-01-0{1 + i % 5}") for i in range(40)), key=repr)


def test_a_frame_of_few_partitions_is_written_by_spark_into_its_folders_like_a_cut_one(spark, tmp_path, monkeypatch):
    """`partitions` at most SPARK_PARTITIONED_WRITE: Spark writes the partition folders itself,
    nothing is cut, and what is published reads as the cut files do (same rows, the registry's
    Parquet schema, partition columns in the path only)."""
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    given = spark.createDataFrame(
        [(f"r{i}", dt.date(2024, 1, 1 + i % 3), dt.datetime(2024, 1, 1 + i % 3, 5, i)) for i in range(30)],
        "run_id string, end_date date, ended_at timestamp",
    )
    frame = given.select(*[
        F.col(f.name) if f.name in given.columns else F.lit(None).cast(f.dataType).alias(f.name) for f in registry.RUNS.schema.fields
    ]).repartition(2)
    committed = {}
    cuts: list[str] = []
    real_cut = commits.split_by_partition
    monkeypatch.setattr(commits, "split_by_partition", lambda paths, folder, table: cuts.append(folder) or real_cut(paths, folder, table))
    for way, hint in (("cut", None), ("spark", 3)):
        root = tmp_path / way
        cuts.clear()
        with commits.Transaction(str(root), "test") as txn:
            txn.stage(frame, "runs", partitions=hint)
            assert sorted(txn.staged_files("runs")) == [f"end_date=2024-01-0{d}" for d in range(1, 4)]
            assert sorted(r.run_id for r in txn.read_staged(spark, "runs").collect()) == sorted(f"r{i}" for i in range(30))
            commit = txn.commit()
        assert bool(cuts) == (hint is None)
        schemas = {pq.read_schema(f).remove_metadata() for f in commit.files("runs")}
        assert len(schemas) == 1
        schema = schemas.pop()
        assert "end_date" not in schema.names
        committed[way] = (run_rows(commit), schema)
    assert committed["spark"][0] == committed["cut"][0] == sorted(((f"r{i}", f"2024-01-0{1 + i % 3}") for i in range(30)), key=repr)
    assert committed["spark"][1].equals(committed["cut"][1])
