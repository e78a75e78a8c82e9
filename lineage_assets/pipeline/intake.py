"""Intake of one drop and the daily `events` table over a range of days, each one commit."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from typing import Callable

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lineage_assets.intake.drop_folder import drop_id, file_sha256
from lineage_assets.intake.spark_intake import consolidate, read_drop, stage_drop
from lineage_assets.pipeline.checks import CheckReport
from lineage_assets.warehouse import commits
from lineage_assets.warehouse import tables as t
from lineage_assets.warehouse.content_hash import WHOLE, Fingerprint, fingerprints

ACCOUNTING = "intake_accounting_balances"
UNIQUE_EVENTS = "events_unique_and_complete"


class DropError(ValueError):
    """A drop key that cannot be read as asked (malformed, missing file, changed content)."""


def split_drop_key(key: str) -> tuple[str, str]:
    relpath, sep, sha_prefix = key.rpartition("@")
    if not sep or not relpath or len(sha_prefix) < 16:
        raise DropError(f"drop partition key {key!r} is not of the form <path>@<sha256 prefix of 16 hex digits>")
    return relpath, sha_prefix


@dataclass
class IntakeReport:
    key: str
    source_file: str
    drop_id: str
    read: int
    accepted_by_day: dict[str, int]
    rejected_by_reason: dict[str, int]
    duplicate_events: int
    duplicate_rejects: int
    reject_preview: list[dict]
    held_days: list[str]
    check: CheckReport
    commit_seq: int | None = None

    @property
    def accepted(self) -> int:
        return sum(self.accepted_by_day.values())

    @property
    def rejected(self) -> int:
        return sum(self.rejected_by_reason.values())

    @property
    def duplicates(self) -> int:
        return self.duplicate_events + self.duplicate_rejects


def intake_drop(spark: SparkSession, root: str, drop_dir: str, key: str, start: dt.date, log: Callable[[str], None] = print) -> IntakeReport:
    """Parse one drop, stage its new events and rejects, count what was staged, commit when the
    accounting balances (read = accepted + rejected + duplicates)."""
    relpath, sha_prefix = split_drop_key(key)
    real_dir = os.path.realpath(drop_dir)
    full_path = os.path.realpath(os.path.join(drop_dir, relpath))
    if os.path.commonpath([real_dir, full_path]) != real_dir:
        raise DropError(f"drop {relpath!r} lies outside the drop folder {drop_dir}")
    if not os.path.isfile(full_path):
        raise DropError(f"drop {relpath!r} is no longer in the drop folder {drop_dir}")
    if not file_sha256(full_path).startswith(sha_prefix):
        raise DropError(f"drop {relpath!r} changed since it was registered as {key!r}; the sensor registers its new content as a new drop")
    this_drop = drop_id(key)
    today = dt.datetime.now(dt.timezone.utc).date()
    with commits.writer(root):
        base = commits.latest(root)
        parsed = read_drop(spark, full_path, relpath, start).cache()
        try:
            stats = parsed.groupBy("accepted", "event_date").count().collect()
            read_count = sum(r["count"] for r in stats)
            dates = {r["event_date"] for r in stats if r["accepted"]}
            log(f"drop {relpath}: {read_count} records, events on {len(dates)} day(s)")
            known_ids = commits.read_table(
                spark, root, "landed_events", where=lambda p: p["event_date"] in dates and p["drop_id"] != this_drop, commit=base
            )
            known_rejects = commits.read_table(spark, root, "rejected_events", where=lambda p: p["drop_id"] != this_drop, commit=base).filter(
                F.col("source_file") == relpath
            )
            staged = stage_drop(parsed, key, this_drop, today, known_ids, known_rejects)
            with commits.Transaction(root, "intake_drop") as txn:
                mine = lambda p: p["drop_id"] == this_drop  # noqa: E731 - re-materializing a drop replaces its own rows
                txn.stage(staged.events, t.LANDED_EVENTS, replace=mine)
                txn.stage(staged.rejected, t.REJECTED_EVENTS, replace=mine)
                # count what was staged, independently of what was meant to be staged
                events_written = txn.read_staged(spark, "landed_events")
                rejects_written = txn.read_staged(spark, "rejected_events")
                written = (
                    events_written.select(F.lit("event").alias("table"), F.col("event_date").cast("string").alias("key"))
                    .unionByName(rejects_written.select(F.lit("reject").alias("table"), F.col("reason_code").alias("key")))
                    .unionByName(staged.duplicate_events.select(F.lit("dup_event").alias("table"), F.lit("").alias("key")))
                    .unionByName(staged.duplicate_rejects.select(F.lit("dup_reject").alias("table"), F.lit("").alias("key")))
                    .groupBy("table", "key").count().collect()
                )
                by_day = {r["key"]: r["count"] for r in written if r["table"] == "event"}
                by_reason = {r["key"]: r["count"] for r in written if r["table"] == "reject"}
                dup_events = sum(r["count"] for r in written if r["table"] == "dup_event")
                dup_rejects = sum(r["count"] for r in written if r["table"] == "dup_reject")
                preview = [
                    {"line": r.source_line, "reason": r.reason_code, "detail": r.reason}
                    for r in rejects_written.orderBy("source_line").limit(10).collect()
                ] if by_reason else []
                accepted, rejected = sum(by_day.values()), sum(by_reason.values())
                balanced = read_count == accepted + rejected + dup_events + dup_rejects
                check = CheckReport(
                    ACCOUNTING, balanced, [] if balanced else ["records were lost or double-counted"],
                    {"read": read_count, "accepted": accepted, "rejected": rejected, "duplicates": dup_events + dup_rejects},
                )
                report = IntakeReport(
                    key, relpath, this_drop, read_count, by_day, by_reason, dup_events, dup_rejects, preview,
                    sorted(d for d in by_day if dt.date.fromisoformat(d) > today), check,
                )
                if balanced:
                    report.commit_seq = txn.commit({"drop": key, "read": read_count}).seq
        finally:
            parsed.unpersist()
    log(f"drop {relpath}: read {read_count}, accepted {report.accepted}, rejected {report.rejected}, duplicates {report.duplicates}")
    return report


@dataclass
class EventsReport:
    first: dt.date
    last: dt.date
    fingerprints: dict[str, Fingerprint]  # day (and WHOLE) -> fingerprint of the written day
    staged_ids: dict[str, int]
    check: CheckReport
    commit_seq: int | None = None

    def rows(self, day: str | None = None) -> int:
        return self.fingerprints.get(day or WHOLE, Fingerprint("", 0)).rows


def build_events(spark: SparkSession, root: str, first: dt.date, last: dt.date) -> EventsReport:
    """`events` for the days [first, last]: every staged event of those days once, in one Spark
    write whatever the number of days (days without events get no partition)."""
    in_range = commits.within("event_date", first, last)
    with commits.writer(root):
        base = commits.latest(root)
        landed = commits.read_table(spark, root, "landed_events", where=in_range, commit=base)
        with commits.Transaction(root, "events") as txn:
            txn.stage(consolidate(landed), t.EVENTS, replace=in_range)
            written = txn.read_staged(spark, "events")
            prints = fingerprints({"events": (written, "event_date")})["events"]
            counts = (
                written.groupBy(F.col("event_date").cast("string").alias("day")).agg(
                    F.count("*").alias("rows"), F.countDistinct("event_id").alias("ids"), F.lit(0).alias("staged"))
                .unionByName(landed.groupBy(F.col("event_date").cast("string").alias("day")).agg(
                    F.lit(0).alias("rows"), F.lit(0).alias("ids"), F.countDistinct("event_id").alias("staged")))
                .groupBy("day").agg(F.sum("rows").alias("rows"), F.sum("ids").alias("ids"), F.sum("staged").alias("staged"))
                .collect()
            )
            problems = [
                f"{r['day']}: {r['rows']} rows, {r['ids']} distinct ids, {r['staged']} staged ids"
                for r in sorted(counts, key=lambda r: r["day"]) if not (r["rows"] == r["ids"] == r["staged"])
            ]
            report = EventsReport(first, last, prints, {r["day"]: int(r["staged"]) for r in counts}, CheckReport(UNIQUE_EVENTS, not problems, problems))
            if not problems:
                report.commit_seq = txn.commit({"first": str(first), "last": str(last), "rows": prints[WHOLE].rows}).seq
    return report
