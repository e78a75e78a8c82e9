"""Atomic, isolated commits of the whole warehouse (DESIGN.md section 11).

The warehouse is a folder of tables (Parquet, hive-style partition folders) and a commit log
`_commits/<seq>.json`. A commit lists, for every table, the partitions that exist and the data
files of each: it is the whole truth about what a reader may read. Files that no commit lists
(a write in progress, a killed writer's leftovers, files replaced by a later commit) are
invisible, and `duckdb_views.sql` or `committed_files()` is how a reader outside the project
finds the committed ones.

A writer opens a `Transaction`, lets Spark write each table into the transaction's staging
folder (`_staging/<txn>/<table>/`; a partitioned table as a few files under `_spark/`, cut
into one file per partition by `split_by_partition`, which checks that every row is written
once), may read the staged rows back (checks run on the rows that will be published), and commits: under the warehouse's commit lock it moves the staged files
into the table folders under names no other commit uses, composes the next commit from the
latest one (partitions it replaces are dropped, partitions it writes are added, every other
table and partition is carried over) and creates `_commits/<seq+1>.json` with put-if-absent
(`os.link` of a fully written temporary file), the single atomic step. A kill at any point
before that step leaves the previous commit in force; a kill after it leaves the new one.
Older commits are kept (`KEEP_COMMITS`) so that a reader that has just read one still finds
its files; files no kept commit lists are deleted.

Why not Delta Lake or Iceberg: their Spark jars cannot be fetched here (only PyPI, Debian and
npm are reachable), and the Python writers (`deltalake`, `pyiceberg`) would commit
Spark-written Parquet through a second table format and a second engine; this log is ~300
lines, shared with the snapshots, and readable by plain DuckDB through the generated views.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import shutil
import sys
import signal
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable, Iterator

from lineage_assets.warehouse import tables as registry
from lineage_assets.warehouse.schemas import arrow_schema

COMMITS = "_commits"
STAGING = "_staging"
SPARK_FILES = "_spark"  # inside a transaction's staging folder: what Spark wrote, before the cut per partition
# A frame of at most this many partitions is written by Spark into its partition folders (no
# cut by `split_by_partition`; `Transaction.stage`).
SPARK_PARTITIONED_WRITE = 8
# The bytes of an Arrow batch while cutting: 2,048 event rows (~8 KB each). The cut runs in the
# run's own Python process, whose memory follows the batch: cutting case a's events as Spark wrote
# them (100,000 rows, three files, 263 MB) peaked at 1,008 MB resident with 8,192-row batches,
# 560 MB with 2,048 (2.9 vs 3.1 s) and 460 MB with 512 (3.5 s), a fresh process each. A table of
# narrow rows gets as many rows as fit (`_batch_rows`): each batch is a write and a row group of
# its partition's file, and 2,048-row batches of a column edge (~400 bytes) made cutting case c's
# fold outputs cost 2.3-2.9 s of the driver's CPU instead of 1.7-1.8 s (files 8% larger).
SPLIT_BATCH_BYTES = 16 << 20
SPLIT_PROBE_ROWS = 2048  # rows read first to size a source file's batches
TMP_SUFFIX = ".tmp"  # a commit or views file being written, not yet in place
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"  # Spark's folder name for a null partition value
VIEWS_FILE = "duckdb_views.sql"
KEEP_COMMITS = 10
FORMAT = 1

PartitionFilter = Callable[[dict[str, str]], bool]


KILL_AT = "LINEAGE_KILL_AT"  # test hook: SIGKILL this process at the Nth fault point
FAULT_LOG = "LINEAGE_FAULT_LOG"  # test hook: append each fault point's label to this file
_faults_passed = 0
_FAULTS_LOCK = threading.Lock()


def fault_point(label: str) -> None:
    """A place where a writer can die. Tests kill the process here (LINEAGE_KILL_AT=N kills it
    at the Nth point reached) to prove that readers only ever see whole commits."""
    global _faults_passed
    if KILL_AT not in os.environ and FAULT_LOG not in os.environ:
        return
    with _FAULTS_LOCK:  # tables may be staged from several threads (`pipeline.fold.stage_outputs`)
        _faults_passed += 1
        if os.environ.get(FAULT_LOG):
            with open(os.environ[FAULT_LOG], "a") as handle:
                handle.write(f"{_faults_passed} {label}\n")
        if os.environ.get(KILL_AT) and _faults_passed == int(os.environ[KILL_AT]):
            os.kill(os.getpid(), signal.SIGKILL)


class WarehouseBusy(RuntimeError):
    """Another process is writing this warehouse."""


def on_or_after(column: str, day) -> PartitionFilter:
    """Partitions whose `column` (an ISO date) is `day` or later."""
    text = str(day)
    return lambda p: p[column] >= text


def within(column: str, first, last) -> PartitionFilter:
    """Partitions whose `column` (an ISO date) lies in [first, last]."""
    a, b = str(first), str(last)
    return lambda p: a <= p[column] <= b


def parse_partition(path: str) -> dict[str, str]:
    """"a=1/b=x" -> {"a": "1", "b": "x"} ("" -> {})."""
    out = {}
    for part in filter(None, path.split("/")):
        key, _, value = part.partition("=")
        out[key] = value
    return out


@dataclass(frozen=True)
class Commit:
    """One commit: table -> partition path ("" when unpartitioned) -> data file names."""

    root: str
    seq: int
    tables: dict[str, dict[str, list[str]]]
    info: dict = field(default_factory=dict)
    props: dict = field(default_factory=dict)  # carried from commit to commit (e.g. the last folded day)

    def partitions(self, table: str, where: PartitionFilter | None = None) -> list[str]:
        parts = self.tables.get(table, {})
        return sorted(p for p in parts if where is None or where(parse_partition(p)))

    def partition_values(self, table: str, column: str) -> list[str]:
        return sorted({parse_partition(p).get(column) for p in self.tables.get(table, {})} - {None})

    def files(self, table: str, where: PartitionFilter | None = None) -> list[str]:
        """Absolute paths of the table's committed files (of the partitions `where` accepts)."""
        base = os.path.join(self.root, registry.get(table).path)
        parts = self.tables.get(table, {})
        return [os.path.join(base, p, f) if p else os.path.join(base, f) for p in self.partitions(table, where) for f in parts[p]]

    def row_counts(self, table: str, column: str, where: PartitionFilter | None = None) -> dict[str, int]:
        """Rows per value of a partition column, from the Parquet footers (no data is read)."""
        base = os.path.join(self.root, registry.get(table).path)
        counts: dict[str, int] = {}
        for part in self.partitions(table, where):
            value = parse_partition(part).get(column)
            counts[value] = counts.get(value, 0) + footer_rows(os.path.join(base, part, name) for name in self.tables[table][part])
        return counts

    def file_count(self) -> int:
        return sum(len(files) for parts in self.tables.values() for files in parts.values())


def footer_rows(paths) -> int:
    """The rows of Parquet files, from their footers (no data is read)."""
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(path).metadata.num_rows for path in paths)


def _commit_dir(root: str) -> str:
    return os.path.join(root, COMMITS)


def commit_seqs(root: str) -> list[int]:
    try:
        names = os.listdir(_commit_dir(root))
    except FileNotFoundError:
        return []
    return sorted(int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit())


class CorruptCommit(OSError):
    """A commit file that is not what this module writes (edited, or damaged on disk): the
    warehouse cannot be read, which is no fault of the caller's arguments."""


def read_commit(root: str, seq: int) -> Commit:
    path = os.path.join(_commit_dir(root), f"{seq:020d}.json")
    with open(path) as handle:
        try:
            data = json.load(handle)
            return Commit(root, data["seq"], data["tables"], data.get("info", {}), data.get("props", {}))
        except (ValueError, KeyError, TypeError) as exc:  # UnicodeDecodeError is a ValueError
            raise CorruptCommit(f"commit file {path} cannot be read: {type(exc).__name__}: {exc}") from exc


def latest(root: str) -> Commit:
    """The newest commit (an empty one, seq 0, before the first)."""
    root = str(root)
    for _attempt in range(5):
        seqs = commit_seqs(root)
        if not seqs:
            return Commit(root, 0, {}, {}, {})
        try:
            return read_commit(root, seqs[-1])
        except FileNotFoundError:  # pruned between listing and reading: list again
            continue
    return read_commit(root, commit_seqs(root)[-1])


def committed_files(root: str, table: str, where: PartitionFilter | None = None) -> list[str]:
    return latest(root).files(table, where)


# ---------------------------------------------------------------------------------- locks

_held: dict[str, int] = {}
_held_lock = threading.Lock()


@contextlib.contextmanager
def _flock(path: str, wait_seconds: float, message: str) -> Iterator[None]:
    """An exclusive kernel lock on `path`; its holder (pid and command) is written into the file
    so that a process that finds it taken can say who holds it."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a+") as handle:
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    handle.seek(0)
                    holder = handle.read().strip()
                    raise WarehouseBusy(f"{message} (held by {holder})" if holder else message) from None
                time.sleep(0.05)
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()}: {' '.join(sys.argv)[:300]}")
            handle.flush()
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            handle.flush()
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def writer(root: str, wait_seconds: float = 30.0) -> Iterator[None]:
    """One writer per warehouse at a time (re-entrant within a process). The lock is the
    kernel's: a killed writer releases it with its process."""
    key = os.path.abspath(root)
    with _held_lock:
        if _held.get(key):
            _held[key] += 1
            nested = True
        else:
            nested = False
    if nested:
        try:
            yield
        finally:
            with _held_lock:
                _held[key] -= 1
        return
    with _flock(
        os.path.join(key, COMMITS, ".writer.lock"), wait_seconds,
        f"another process is writing the warehouse {key} (only one writer at a time); try again when it has finished",
    ):
        with _held_lock:
            _held[key] = 1
        try:
            yield
        finally:
            with _held_lock:
                _held.pop(key, None)


# ---------------------------------------------------------------------------------- transactions


@dataclass
class _Staged:
    table: registry.Table
    replace: PartitionFilter | None
    folder: str
    written: str | None = None  # the files Spark wrote, before they were cut per partition (read back by checks)


class Transaction:
    """Stage tables with Spark, then `commit()` them together (or `abort()`)."""

    def __init__(self, root: str, operation: str):
        self.root = os.path.abspath(str(root))
        self.operation = operation
        self.id = f"{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%S}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.staging = os.path.join(self.root, STAGING, self.id)
        self.staged: dict[str, _Staged] = {}
        self.committed: Commit | None = None

    def __enter__(self) -> "Transaction":
        return self

    def __exit__(self, *exc) -> None:
        if self.committed is None:
            self.abort()

    def stage(
        self, df, table: registry.Table | str, replace: PartitionFilter | None = None, order: tuple[str, ...] = (),
        partitions: int | None = None,
    ) -> None:
        """Write `df` as the new content of `table`'s partitions present in it; `replace` also
        drops the committed partitions it accepts (partitions it accepts that `df` has no rows
        for disappear). Unpartitioned tables are replaced whole. `order`: columns the rows of a
        partition's file are sorted by (within each Spark partition). `partitions`: at most how
        many partitions `df` holds, when the caller knows.

        A partitioned table of many partitions is written by Spark as a few files, each sorted
        by the partition columns (`SPARK_FILES`), then cut into one file per partition and Spark
        file by `split_by_partition` (pyarrow). Spark's own partitioned write costs about 12 ms
        per file it creates, which made a year of daily partitions cost far more than the same
        rows in one day (measured: 365 partition files 4.5-5 s through Spark, 0.8-1.1 s written
        flat and cut). A frame of at most `SPARK_PARTITIONED_WRITE` partitions is written by
        Spark into its partition folders directly: cutting reads and writes every row again in
        this process, which for one large day costs more than the few files Spark creates."""
        table = registry.get(table) if isinstance(table, str) else table
        folder = os.path.join(self.staging, table.name)
        frame = df.select(*table.column_names)
        if not table.partition_by:
            frame.write.mode("overwrite").parquet(folder)
            self.staged[table.name] = _Staged(table, lambda _p: True, folder)
            fault_point(f"staged {table.name}")
            return
        frame = frame.sortWithinPartitions(*table.partition_by, *order)
        written = None
        if partitions is not None and partitions <= SPARK_PARTITIONED_WRITE:
            frame.write.mode("overwrite").partitionBy(*table.partition_by).parquet(folder)
            fault_point(f"written {table.name}")
        else:
            written = os.path.join(self.staging, SPARK_FILES, table.name)
            frame.write.mode("overwrite").parquet(written)
            fault_point(f"written {table.name}")
            split_by_partition(_data_files(written), folder, table)
        self.staged[table.name] = _Staged(table, replace, folder, written)
        fault_point(f"staged {table.name}")

    def stage_arrow(self, data, table: registry.Table | str, replace: PartitionFilter | None = None) -> None:
        """`stage` without Spark: a pyarrow Table with the table's columns (partition columns
        included), cast to the registry schema and written one file per partition (a null
        partition value in Spark's folder for it, `HIVE_NULL`)."""
        import pyarrow.parquet as pq

        table = registry.get(table) if isinstance(table, str) else table
        folder = os.path.join(self.staging, table.name)
        os.makedirs(folder, exist_ok=True)
        data = conform(data, arrow_schema(table.schema))
        if not table.partition_by:
            pq.write_table(data, os.path.join(folder, "part-00000.parquet"))
            self.staged[table.name] = _Staged(table, lambda _p: True, folder)
            fault_point(f"staged {table.name}")
            return
        keys = list(table.partition_by)
        data = data.sort_by([(c, "ascending") for c in keys])
        starts = _run_starts(data, keys)
        for begin, end in zip(starts, [*starts[1:], data.num_rows]):
            target = os.path.join(folder, partition_path(table, tuple(data[c][begin].as_py() for c in keys)))
            os.makedirs(target, exist_ok=True)
            pq.write_table(data.slice(begin, end - begin).drop_columns(keys), os.path.join(target, "part-00000.parquet"))
            fault_point(f"staging {table.name}/{os.path.relpath(target, folder)}")
        self.staged[table.name] = _Staged(table, replace, folder)

    def staged_files(self, table: str) -> dict[str, list[str]]:
        """partition path -> staged file paths (absolute)."""
        staged = self.staged[table]
        out: dict[str, list[str]] = {}
        for dirpath, dirs, files in os.walk(staged.folder):
            dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
            data = sorted(f for f in files if f.endswith(".parquet") and not f.startswith((".", "_")))
            if data:
                rel = os.path.relpath(dirpath, staged.folder)
                out["" if rel == "." else rel.replace(os.sep, "/")] = [os.path.join(dirpath, f) for f in data]
        return out

    def staged_paths(self, table: str) -> list[str]:
        """The staged files of a table, every partition's."""
        return [path for paths in self.staged_files(table).values() for path in paths]

    def staged_rows(self, table: str) -> int:
        """The rows staged for a table, from the Parquet footers (no data is read)."""
        return footer_rows(self.staged_paths(table))

    def read_staged(self, spark, table: str):
        """The staged rows of a table, read back from the files: those Spark wrote (a few files,
        not one per partition; `split_by_partition` checked that the files the commit will
        publish hold exactly their rows), or the staged files themselves."""
        spec, staged = registry.get(table), self.staged[table]
        if staged.written is not None:
            return read_files(spark, spec, _data_files(staged.written), staged.written)
        return read_files(spark, spec, self.staged_paths(table), staged.folder)

    def commit(self, info: dict | None = None, props: dict | None = None) -> Commit:
        if self.committed is not None:
            raise RuntimeError(f"transaction {self.id} is already committed (as commit {self.committed.seq})")
        with _flock(os.path.join(self.root, COMMITS, ".commit.lock"), 600, "commit lock held for 10 minutes"):
            fault_point("commit lock taken")
            base = latest(self.root)
            tables = {name: dict(parts) for name, parts in base.tables.items()}
            for name, staged in self.staged.items():
                new = self.staged_files(name)
                current = tables.get(name, {})
                kept = {
                    p: files for p, files in current.items()
                    if p not in new and not (staged.replace is not None and staged.replace(parse_partition(p)))
                }
                base_dir = os.path.join(self.root, staged.table.path)
                for part, paths in new.items():
                    target = os.path.join(base_dir, part) if part else base_dir
                    os.makedirs(target, exist_ok=True)
                    names = []
                    for path in paths:
                        final = f"{self.id}-{os.path.basename(path)}"
                        os.rename(path, os.path.join(target, final))
                        names.append(final)
                        fault_point(f"moved {name}/{part}/{final}")
                    kept[part] = names
                tables[name] = kept
            seq = base.seq + 1
            info = {
                "operation": self.operation, "transaction": self.id,
                "committed_at": dt.datetime.now(dt.timezone.utc).isoformat(), **(info or {}),
            }
            merged = {**base.props, **(props or {})}
            payload = {"format": FORMAT, "seq": seq, "parent": base.seq, "tables": tables, "info": info, "props": merged}
            fault_point("before the commit file")
            _put_if_absent(os.path.join(_commit_dir(self.root), f"{seq:020d}.json"), json.dumps(payload, sort_keys=True))
            fault_point("after the commit file")
            self.committed = Commit(self.root, seq, tables, info, merged)
            write_views(self.committed)
            fault_point("after the views file")
            _collect_garbage(self.root, keep_transaction=self.id)
            fault_point("after garbage collection")
        shutil.rmtree(self.staging, ignore_errors=True)
        return self.committed

    def abort(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)


def _put_if_absent(path: str, text: str) -> None:
    tmp = f"{path}.{uuid.uuid4().hex}{TMP_SUFFIX}"
    try:
        with open(tmp, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.link(tmp, path)  # fails if the commit exists: two writers never both win one seq
    finally:  # a failed write (a full disk) leaves no temporary file behind either
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    dir_fd = os.open(os.path.dirname(path), os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _collect_garbage(root: str, keep_transaction: str) -> None:
    """Drop commits beyond the newest KEEP_COMMITS and the files none of the kept ones lists
    (table folders only change under the commit lock, so nothing in flight is lost), and the
    staging folders of transactions whose process has died."""
    seqs = commit_seqs(root)
    for old in seqs[:-KEEP_COMMITS]:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(_commit_dir(root), f"{old:020d}.json"))
    referenced: set[str] = set()
    for seq in seqs[-KEEP_COMMITS:]:
        with contextlib.suppress(FileNotFoundError):
            commit = read_commit(root, seq)
            for name in commit.tables:
                referenced.update(commit.files(name))
    for table in registry.ALL:
        base = os.path.join(root, table.path)
        if not os.path.isdir(base):
            continue
        fault_point(f"collecting garbage in {table.name}")
        for dirpath, dirs, files in os.walk(base, topdown=False):
            for name in files:
                path = os.path.join(dirpath, name)
                if path not in referenced:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(path)
            if dirpath != base and not os.listdir(dirpath):
                with contextlib.suppress(OSError):
                    os.rmdir(dirpath)
    staging = os.path.join(root, STAGING)
    if os.path.isdir(staging):
        for name in os.listdir(staging):
            if name != keep_transaction and not _alive(name):
                shutil.rmtree(os.path.join(staging, name), ignore_errors=True)
    # temporary commit and views files of a writer killed while writing them (one writer at a
    # time, and this one's own are already in place or removed)
    for folder, prefix in ((_commit_dir(root), ""), (root, VIEWS_FILE)):
        for name in os.listdir(folder) if os.path.isdir(folder) else ():
            if name.startswith(prefix) and name.endswith(TMP_SUFFIX):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(folder, name))


def _alive(transaction_id: str) -> bool:
    """Whether the process that opened a transaction (its id holds the pid) still runs."""
    parts = transaction_id.split("-")
    if len(parts) < 3 or not parts[1].isdigit():
        return False
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---------------------------------------------------------------------------------- partition files


def _data_files(folder: str) -> list[str]:
    """The Parquet data files Spark wrote into `folder` (not its `_SUCCESS` or `.crc` files)."""
    if not os.path.isdir(folder):
        return []
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".parquet") and not f.startswith((".", "_")))


def partition_path(table: registry.Table, values: tuple) -> str:
    """The hive-style folder of one partition: "event_date=2024-03-01/batch_id=b1" (a null
    value is Spark's `__HIVE_DEFAULT_PARTITION__`)."""
    return "/".join(f"{c}={HIVE_NULL if v is None else v}" for c, v in zip(table.partition_by, values))


def conform(data, target):
    """A pyarrow Table with exactly the columns and types of `target` (a table's
    `arrow_schema(table.schema)`, partition columns included; columns `data` lacks are null).
    Columns already of those names and types are taken as they are (no cast: what Spark writes
    differs from the registry in nullability at most)."""
    import pyarrow as pa

    if data.column_names == target.names and all(a.type == b.type for a, b in zip(data.schema, target)):
        return pa.Table.from_arrays(data.columns, schema=target)
    return pa.table(
        [data[f.name].cast(f.type) if f.name in data.column_names else pa.nulls(len(data), f.type) for f in target], schema=target,
    )


def _run_starts(data, columns: list[str]) -> list[int]:
    """The rows of `data` where the values of `columns` differ from the row before (row 0 included)."""
    import numpy as np
    import pyarrow.compute as pc

    starts = np.zeros(data.num_rows, dtype=bool)
    starts[:1] = True
    if data.num_rows > 1:
        for column in columns:
            before, after = data[column].slice(0, data.num_rows - 1), data[column].slice(1)
            differs = pc.or_(
                pc.fill_null(pc.not_equal(after, before), False), pc.not_equal(pc.is_null(after), pc.is_null(before))
            )
            starts[1:] |= differs.to_numpy(zero_copy_only=False)
    return np.flatnonzero(starts).tolist()


def _batch_rows(source) -> int:
    """Rows per batch for cutting the Parquet file `source` (a pyarrow ParquetFile): as many as
    hold about SPLIT_BATCH_BYTES in memory, by the size of its first SPLIT_PROBE_ROWS rows."""
    first = next(source.iter_batches(batch_size=SPLIT_PROBE_ROWS), None)
    if first is None or first.num_rows == 0 or first.nbytes == 0:
        return SPLIT_PROBE_ROWS
    return max(1, SPLIT_BATCH_BYTES * first.num_rows // first.nbytes)


def split_by_partition(paths: list[str], folder: str, table: registry.Table) -> dict[str, int]:
    """Cut Parquet files of `table`'s columns, each sorted by the partition columns (what
    `Transaction.stage` has Spark write), into one file per partition and source file under
    hive-style folders of `folder` (`part-<source index>.parquet`, partition columns in the
    path only, types of the registry). Returns rows per partition path. Raises ValueError when a
    source file's partitions are not contiguous, and RuntimeError when the rows written are not
    the rows the source files' footers hold."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    keys = list(table.partition_by)
    schema = arrow_schema(table.schema)  # once, not per batch
    rows: dict[str, int] = {}
    held = 0
    for index, path in enumerate(paths):
        source = pq.ParquetFile(path)
        held += source.metadata.num_rows
        seen: set[str] = set()
        current, writer = None, None
        try:
            for batch in source.iter_batches(batch_size=_batch_rows(source)):
                data = conform(pa.Table.from_batches([batch]), schema)
                starts = _run_starts(data, keys)
                for begin, end in zip(starts, [*starts[1:], data.num_rows]):
                    part = partition_path(table, tuple(data[c][begin].as_py() for c in keys))
                    chunk = data.slice(begin, end - begin).drop_columns(keys)
                    if part != current:
                        if part in seen:
                            raise ValueError(f"{path}: the rows of partition {part} are not contiguous (sort by {keys} first)")
                        if writer is not None:
                            writer.close()
                        seen.add(part)
                        current = part
                        target = os.path.join(folder, part)
                        os.makedirs(target, exist_ok=True)
                        writer = pq.ParquetWriter(os.path.join(target, f"part-{index:05d}.parquet"), chunk.schema)
                    writer.write_table(chunk)
                    rows[part] = rows.get(part, 0) + chunk.num_rows
        finally:
            if writer is not None:
                writer.close()
    if sum(rows.values()) != held:
        raise RuntimeError(f"{table.name}: {sum(rows.values())} rows cut into partitions, the written files hold {held}")
    return rows


# ---------------------------------------------------------------------------------- readers


def read_files(spark, table: registry.Table, paths: list[str], base_path: str):
    from lineage_assets.warehouse.single_partition import single

    if not paths:  # no files yet (a new warehouse's state): an empty frame, taken into one partition like the rest
        return single(spark.createDataFrame([], table.schema))
    return single(spark.read.schema(table.schema).option("basePath", base_path).parquet(*paths))


def read_table(spark, root: str, table: str, where: PartitionFilter | None = None, commit: Commit | None = None):
    """A table's committed rows (of the partitions `where` accepts) as a Spark DataFrame."""
    spec = registry.get(table)
    commit = commit or latest(root)
    return read_files(spark, spec, commit.files(table, where), os.path.join(commit.root, spec.path))


def duckdb_relation_sql(commit: Commit, table: str, where: PartitionFilter | None = None) -> str:
    """A DuckDB SELECT over the committed files of a table (typed and empty when it has none)."""
    return duckdb_files_sql(table, commit.files(table, where))


def duckdb_files_sql(table: str, files: list[str]) -> str:
    """A DuckDB SELECT of a table's columns over the given files (typed and empty when none)."""
    spec = registry.get(table)
    columns = registry.duckdb_columns(spec)
    if not files:
        return "SELECT " + ", ".join(f'NULL::{t} AS "{c}"' for c, t in columns) + " WHERE false"
    listing = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
    names = ", ".join(f'"{c}"' for c, _t in columns)
    if not spec.partition_by:
        return f"SELECT {names} FROM read_parquet([{listing}], hive_partitioning = false)"
    types = [registry.duckdb_type(t) for t in spec.partition_types]
    if not _hive_above(files[0], len(spec.partition_by)):
        hive_types = ", ".join(f"'{c}': '{t}'" for c, t in zip(spec.partition_by, types))
        return f"SELECT {names} FROM read_parquet([{listing}], hive_partitioning = true, hive_types = {{{hive_types}}})"
    # DuckDB's hive partitioning takes every key=value folder of a path, those above the
    # warehouse too (a root under `state=CA/` would read `runs.state` as 'CA' in every row): the
    # partition values are then read from the folders just above each file instead
    pattern = "/" + "/".join(f"{c}=([^/]*)" for c in spec.partition_by) + "/[^/]*$"
    values = {
        c: f"CAST(NULLIF(regexp_extract(filename, '{pattern}', {i + 1}), '{HIVE_NULL}') AS {t}) AS \"{c}\""
        for i, (c, t) in enumerate(zip(spec.partition_by, types))
    }
    selected = ", ".join(values.get(c, f'"{c}"') for c, _t in columns)
    return f"SELECT {selected} FROM read_parquet([{listing}], hive_partitioning = false, filename = true)"


def _hive_above(path: str, levels: int) -> bool:
    """Whether a folder above a table's partition folders (`levels` of them, just above the file)
    is named like a hive partition (`key=value`)."""
    return any("=" in part for part in os.path.normpath(path).split(os.sep)[:-(levels + 1)])


def write_views(commit: Commit) -> None:
    """`duckdb_views.sql`: one view per table over this commit's files (atomically replaced)."""
    shown = os.path.join(commit.root, VIEWS_FILE).replace("\n", " ").replace("\r", " ")  # a line break would end the comment
    lines = [f"-- lineage_assets warehouse, commit {commit.seq} ({commit.info.get('operation', '')}); "
             f"regenerated at every commit. In DuckDB: .read {shown}"]
    for table in registry.USER_TABLES:
        lines.append(f'CREATE OR REPLACE VIEW "{table.name}" AS {duckdb_relation_sql(commit, table.name)};')
    path = os.path.join(commit.root, VIEWS_FILE)
    tmp = f"{path}.{uuid.uuid4().hex}{TMP_SUFFIX}"
    try:
        with open(tmp, "w") as handle:
            handle.write("\n".join(lines) + "\n")
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
