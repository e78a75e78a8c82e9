"""A landing batch: everything new in the drop folder, read once, as one commit (no Dagster).

The batch lists the drop folder against the committed ledger (`intake.ledger`), reads the new
byte ranges (in one Spark job, `spark_intake.read_units`; or, for a batch of at most
`LINEAGE_LOCAL_INTAKE_MAX_BYTES`, in this process without a JVM, `intake.local_intake`: the same
rules, tested to give the same tables), stages the new events, the rejects, a
`drop_files` row per file and the updated ledger, checks that every file balances (read =
accepted + rejected + duplicates) and commits them together. Progress (the ledger) is recorded
by the same commit as the work, so a failed or killed batch is simply read again. Files found
touched (their mtime moved, nothing new) get their ledger rows refreshed by the batch's commit,
or, when nothing else is new, by a commit of the ledger alone: later looks then take them as
unchanged instead of fingerprinting them again, on every look, forever.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lineage_assets.intake import local_intake
from lineage_assets.intake.ledger import (
    REPLACED,
    WHOLE,
    FileState,
    Ledger,
    abandoned_before_ns,
    changed_files,
    prefix_fingerprints,
)
from lineage_assets.intake.read_plan import FileRead, ReadUnit, plan_reads
from lineage_assets.intake.spark_intake import read_units, stage_drop
from lineage_assets.lineage.checkpoint import keep
from lineage_assets.pipeline import progress
from lineage_assets.pipeline.checks import CheckReport
from lineage_assets.settings import local_intake_max_bytes
from lineage_assets.warehouse import commits
from lineage_assets.warehouse import tables as t
from lineage_assets.warehouse.schemas import arrow_schema

ACCOUNTING = "intake_accounting_balances"
OPERATION = "landing_batch"  # the commit's operation


def new_batch_id(now: dt.datetime | None = None) -> str:
    """Sortable and unique: the UTC time, then random hex."""
    now = now or dt.datetime.now(dt.timezone.utc)
    return f"{now:%Y%m%dT%H%M%S}Z-{secrets.token_hex(4)}"


_LEDGERS: dict[tuple[str, int], Ledger] = {}  # (warehouse, commit) -> its ledger: a sensor reads it once per commit


def read_ledger(commit: commits.Commit) -> Ledger:
    """The drop ledger of a commit (an empty one before the first landing batch)."""
    key = (os.path.abspath(commit.root), commit.seq)
    if key not in _LEDGERS:
        files = commit.files(t.DROP_LEDGER.name)
        _LEDGERS.clear()
        _LEDGERS[key] = Ledger(pq.read_table(files, schema=arrow_schema(t.DROP_LEDGER.schema)) if files else None)
    return _LEDGERS[key]


@dataclass
class FileReport:
    """One file's part of a batch (a `drop_files` row)."""

    read: FileRead
    records: int = 0
    accepted: int = 0
    rejected_by_reason: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0

    @property
    def rejected(self) -> int:
        return sum(self.rejected_by_reason.values())

    @property
    def balanced(self) -> bool:
        return self.records == self.accepted + self.rejected + self.duplicates

    def row(self, batch_id: str, read_date: dt.date) -> dict:
        r = self.read
        return {
            "batch_id": batch_id, "path": r.path, "file_id": r.file_id, "kind": r.kind, "form": r.form,
            "bytes_from": r.bytes_from, "bytes_to": r.bytes_to, "first_line": r.first_line, "range_sha256": r.range_sha256,
            "pending_bytes": r.pending_bytes, "read": self.records, "accepted": self.accepted, "rejected": self.rejected,
            "duplicates": self.duplicates, "rejected_by_reason": json.dumps(self.rejected_by_reason, sort_keys=True),
            "read_date": read_date,
        }


@dataclass
class BatchReport:
    batch_id: str | None  # None: nothing new was found (nothing committed)
    files: list[FileReport]
    accepted_by_day: dict[str, int]
    rejected_by_reason: dict[str, int]
    duplicate_events: int
    duplicate_rejects: int
    reject_preview: list[dict]
    held_days: list[str]
    changed_while_read: list[str]
    check: CheckReport
    commit_seq: int | None = None
    ledger_refreshed: int = 0  # ledger rows of touched files (nothing new) given their new stat

    @property
    def read(self) -> int:
        return sum(f.records for f in self.files)

    @property
    def accepted(self) -> int:
        return sum(self.accepted_by_day.values())

    @property
    def rejected(self) -> int:
        return sum(self.rejected_by_reason.values())

    @property
    def duplicates(self) -> int:
        return self.duplicate_events + self.duplicate_rejects

    @property
    def bytes_read(self) -> int:
        return sum(f.read.bytes_to - f.read.bytes_from for f in self.files)

    def file_table(self, limit: int = 200) -> list[dict]:
        """The per-file accounting, as the run's metadata table shows it (the first `limit` files)."""
        return [
            {"path": f.read.path, "kind": f.read.kind, "bytes": f"{f.read.bytes_from}-{f.read.bytes_to}",
             "pending": f.read.pending_bytes, "read": f.records, "accepted": f.accepted, "rejected": f.rejected,
             "duplicates": f.duplicates}
            for f in self.files[:limit]
        ]


def _nothing(check_name: str = ACCOUNTING) -> BatchReport:
    return BatchReport(None, [], {}, {}, 0, 0, [], [], [], CheckReport(check_name, True, [], {"files": 0}))


def _still_as_read(drop_dir: str, state: FileState) -> bool:
    """The bytes a batch read of a file are still there, unchanged (checked after the read)."""
    try:
        with open(os.path.join(drop_dir, state.path), "rb") as handle:
            stat = os.fstat(handle.fileno())
            if (stat.st_dev, stat.st_ino) != (state.device, state.inode) or stat.st_size < state.offset:
                return False
            return prefix_fingerprints(handle, state.offset) == (state.head_sha, state.tail_sha)
    except OSError:
        return False


SparkSource = SparkSession | Callable[[], SparkSession]  # a session, or how to get one (only when needed)


def batch_weight(units: list[ReadUnit]) -> int:
    """Bytes a batch parses, counting WHOLE forms (which may be gzip) eightfold."""
    return sum((u.end - u.start) * (8 if u.form == WHOLE else 1) for u in units)


@dataclass
class _Read:
    """What one way of reading a batch (Spark, or this process) found and staged."""

    records: Counter  # source_file -> records read
    dates: set[str]  # days with accepted records
    written: list[tuple[str, str, str, int]]  # (source_file, what, key, count), counted from the staged files
    preview: list[dict]


def _count_written(rows) -> list[tuple[str, str, str, int]]:
    return [(f, what, key, n) for (f, what, key), n in Counter(rows).items()]


def _read_locally(root, drop_dir, units, start, base, batch_id, today, leave_out, replaced, txn) -> _Read:
    parsed = local_intake.parse_units(drop_dir, units, start)
    moved = set(leave_out())
    parsed = [r for r in parsed if r["source_file"] not in moved]
    records = Counter(r["source_file"] for r in parsed)
    dates = {r["event_date"] for r in parsed if r["accepted"]}
    known_rejects = local_intake.known_rejects(base, replaced) if replaced else None
    accepted_ids = {r["event_id"] for r in parsed if r["accepted"]}
    known_ids = local_intake.known_event_ids(base, dates, accepted_ids)
    staged = local_intake.stage_rows(parsed, batch_id, today, known_ids, known_rejects)
    events, rejected = staged.tables()
    txn.stage_arrow(events, t.LANDED_EVENTS)
    txn.stage_arrow(rejected, t.REJECTED_EVENTS)
    written = _count_written(
        [(f, "event", day) for f, day in local_intake.staged_column_values(txn, t.LANDED_EVENTS.name, "event_date")]
        + [(f, "reject", reason) for f, reason in local_intake.staged_column_values(txn, t.REJECTED_EVENTS.name, "reason_code")]
        + [(r["source_file"], "dup_event", "") for r in staged.duplicate_events]
        + [(r["source_file"], "dup_reject", "") for r in staged.duplicate_rejects]
    )
    preview = local_intake.staged_reject_preview(txn) if rejected.num_rows else []
    return _Read(records, dates, written, preview)


def _read_with_spark(spark, root, drop_dir, units, start, base, batch_id, today, leave_out, replaced, txn) -> _Read:
    parsed_all = keep(read_units(spark, drop_dir, units, start))
    try:
        counted = parsed_all.groupBy("source_file", "accepted", "event_date").count().collect()
        moved = leave_out()
        parsed = parsed_all.filter(~F.col("source_file").isin(moved)) if moved else parsed_all
        records: Counter = Counter()
        accepted_by_day: Counter = Counter()
        for row in counted:
            if row["source_file"] in moved:
                continue
            records[row["source_file"]] += row["count"]
            if row["accepted"]:
                accepted_by_day[row["event_date"]] += row["count"]
        dates = set(accepted_by_day)
        known_ids = commits.read_table(
            spark, root, t.LANDED_EVENTS.name, where=lambda p: p["event_date"] in dates, commit=base
        ).select("event_id")
        known_rejects = commits.read_table(spark, root, t.REJECTED_EVENTS.name, commit=base).filter(
            F.col("source_file").isin(replaced)
        ) if replaced else None
        staged = stage_drop(parsed, batch_id, today, known_ids, known_rejects, dict(accepted_by_day))
        txn.stage(staged.events, t.LANDED_EVENTS, partitions=len(accepted_by_day))  # (day, this batch)
        txn.stage(staged.rejected, t.REJECTED_EVENTS, partitions=1)  # (today, this batch)
        # count what was staged, independently of what was meant to be staged
        written = (
            txn.read_staged(spark, t.LANDED_EVENTS.name).select(
                "source_file", F.lit("event").alias("what"), F.col("event_date").cast("string").alias("key"))
            .unionByName(txn.read_staged(spark, t.REJECTED_EVENTS.name).select(
                "source_file", F.lit("reject").alias("what"), F.col("reason_code").alias("key")))
            .unionByName(staged.duplicate_events.select("source_file", F.lit("dup_event").alias("what"), F.lit("").alias("key")))
            .unionByName(staged.duplicate_rejects.select("source_file", F.lit("dup_reject").alias("what"), F.lit("").alias("key")))
            .groupBy("source_file", "what", "key").count().collect()
        )
        rejected = any(row["what"] == "reject" for row in written)
        preview = [
            {"file": r.source_file, "line": r.source_line, "reason": r.reason_code, "detail": r.reason}
            for r in txn.read_staged(spark, t.REJECTED_EVENTS.name).orderBy("source_file", "source_line").limit(10).collect()
        ] if rejected else []
        return _Read(records, dates, [(r["source_file"], r["what"], r["key"], r["count"]) for r in written], preview)
    finally:
        parsed_all.unpersist()


def _commit_refreshed(root: str, ledger: Ledger, refreshed: list[FileState], batch_id: str, log) -> int:
    """Nothing read, only touched files: a commit of their refreshed ledger rows alone (no events,
    rejects or `drop_files` rows, the progress properties as they were). Returns its seq."""
    with commits.Transaction(root, OPERATION) as txn:
        txn.stage_arrow(ledger.with_states(refreshed, arrow_schema(t.DROP_LEDGER.schema)), t.DROP_LEDGER)
        seq = txn.commit({"batch": batch_id, "files": 0, "read": 0, "event_days": [], "ledger_refreshed": len(refreshed)}).seq
    log(f"landing batch {batch_id}: the ledger rows of {len(refreshed)} touched file(s) (nothing new) refreshed, "
        f"e.g. {refreshed[0].path}")
    return seq


def land_batch(
    spark: SparkSource, root: str, drop_dir: str, start: dt.date, log: Callable[[str], None] = print,
    today: dt.date | None = None,
) -> BatchReport:
    """Read everything new in `drop_dir` as one batch; commit it when every file balances. A
    batch of at most `local_intake_max_bytes()` is read in this process (no Spark session is
    asked for), a larger one by Spark."""
    today = today or dt.datetime.now(dt.timezone.utc).date()
    with commits.writer(root):
        base = commits.latest(root)
        ledger = read_ledger(base)
        refreshed: list[FileState] = []
        changes = changed_files(drop_dir, ledger, abandoned_before_ns=abandoned_before_ns(time.time()), refreshed=refreshed)
        if not changes and not refreshed:
            log("landing: nothing new in the drop folder")
            return _nothing()
        batch_id = new_batch_id()
        if not changes:
            report = _nothing()
            report.batch_id, report.ledger_refreshed = batch_id, len(refreshed)
            report.commit_seq = _commit_refreshed(root, ledger, refreshed, batch_id, log)
            return report
        units, reads = plan_reads(drop_dir, changes, batch_id)
        local = batch_weight(units) <= local_intake_max_bytes()
        log(f"landing batch {batch_id}: {len(reads)} file(s), {sum(r.bytes_to - r.bytes_from for r in reads)} new bytes, "
            f"{len(units)} read unit(s), read {'in this process' if local else 'by Spark'}")
        moved: list[str] = []

        def leave_out() -> list[str]:
            """Files that changed while they were read, or were gone when read (removed or renamed
            away since the plan: `parse_unit` found nothing): left out whole, unrecorded in the
            ledger, the next batch reads them again (if they are there)."""
            moved.extend(sorted(r.path for r in reads if not _still_as_read(drop_dir, r.state)))
            if moved:
                log(f"landing batch {batch_id}: left for the next batch, changed or gone while read: {moved[:10]}")
            return moved

        replaced = sorted(r.path for r in reads if r.kind == REPLACED)
        with commits.Transaction(root, OPERATION) as txn:
            args = (root, drop_dir, units, start, base, batch_id, today, leave_out, replaced, txn)
            if local:
                found = _read_locally(*args)
            else:
                found = _read_with_spark(spark if isinstance(spark, SparkSession) else spark(), *args)
            reads = [r for r in reads if r.path not in moved]
            files = {r.path: FileReport(r, found.records.get(r.path, 0)) for r in reads}
            by_day: Counter = Counter()
            by_reason: Counter = Counter()
            dup_events = dup_rejects = 0
            stray: list[str] = []
            for source, what, key, count in found.written:
                report = files.get(source)
                if report is None:
                    stray.append(source)
                    continue
                if what == "event":
                    report.accepted += count
                    by_day[key] += count
                elif what == "reject":
                    report.rejected_by_reason[key] = report.rejected_by_reason.get(key, 0) + count
                    by_reason[key] += count
                else:
                    report.duplicates += count
                    if what == "dup_event":
                        dup_events += count
                    else:
                        dup_rejects += count
            problems = [
                f"{f.read.path}: read {f.records} != accepted {f.accepted} + rejected {f.rejected} + duplicates {f.duplicates}"
                for f in files.values() if not f.balanced
            ] + [f"rows of a file this batch did not read: {path}" for path in sorted(set(stray))]
            total_read = sum(found.records.values())
            if total_read != sum(by_day.values()) + sum(by_reason.values()) + dup_events + dup_rejects:
                problems.append("the batch's totals do not balance")
            check = CheckReport(
                ACCOUNTING, not problems, problems,
                {"files": len(files), "read": total_read, "accepted": sum(by_day.values()),
                 "rejected": sum(by_reason.values()), "duplicates": dup_events + dup_rejects},
            )
            report = BatchReport(
                batch_id, sorted(files.values(), key=lambda f: f.read.path), dict(sorted(by_day.items())),
                dict(sorted(by_reason.items())), dup_events, dup_rejects, found.preview,
                sorted(d for d in by_day if dt.date.fromisoformat(d) > today), moved, check,
            )
            if check.passed and files:
                txn.stage_arrow(pa.Table.from_pylist([f.row(batch_id, today) for f in report.files]), t.DROP_FILES)
                txn.stage_arrow(ledger.with_states([r.state for r in reads] + refreshed, arrow_schema(t.DROP_LEDGER.schema)), t.DROP_LEDGER)
                report.ledger_refreshed = len(refreshed)
                report.commit_seq = txn.commit(
                    {"batch": batch_id, "files": len(files), "read": total_read, "event_days": sorted(by_day),
                     "ledger_refreshed": len(refreshed)},
                    props=progress.after_landing(base, by_day),
                ).seq
        if check.passed and not files and refreshed:  # every file read was left out: the touched ones still refreshed
            report.ledger_refreshed = len(refreshed)
            report.commit_seq = _commit_refreshed(root, ledger, refreshed, batch_id, log)
    log(f"landing batch {batch_id}: read {report.read}, accepted {report.accepted}, rejected {report.rejected}, duplicates {report.duplicates}")
    return report
