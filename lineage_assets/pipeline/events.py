"""The daily `events` table over a range of days, as one commit."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lineage_assets.intake.spark_intake import EVENTS_ORDER, consolidate
from lineage_assets.pipeline import progress
from lineage_assets.pipeline.checks import CheckReport
from lineage_assets.warehouse import commits
from lineage_assets.warehouse import tables as t
from lineage_assets.warehouse.content_hash import WHOLE, Fingerprint, fingerprints

UNIQUE_EVENTS = "events_unique_and_complete"
OPERATION = "events"  # the commit's operation
# What a day's content hash covers: every other column of an `events` row is read from the event's
# canonical JSON, whose sha256 is its event_id, so these three columns stand for the whole row
# and the hash reads them instead of every facet (case a's day: 800 MB).
CONTENT_KEY = ("event_id", "source_file", "source_line")


@dataclass
class EventsReport:
    first: dt.date
    last: dt.date
    fingerprints: dict[str, Fingerprint]  # day (and WHOLE) -> fingerprint of the written day
    staged_ids: dict[str, int]
    check: CheckReport
    rebuilt: list[str]  # the days of the range that were rebuilt (the others were unchanged)
    commit_seq: int | None = None
    day_rows: dict[str, int] | None = None  # rows of every day of the range in the new commit

    def rows(self, day: str | None = None) -> int:
        if day is not None and self.day_rows is not None:
            return self.day_rows.get(day, 0)
        return self.fingerprints.get(day or WHOLE, Fingerprint("", 0)).rows


def build_events(spark: SparkSession, root: str, first: dt.date, last: dt.date) -> EventsReport:
    """`events` for the days [first, last]: every staged event of those days once, in one Spark
    write whatever the number of days (days without events get no partition). Only the days of
    the range that landing batches changed are rebuilt (all of them when none was changed: a
    manual rebuild)."""
    with commits.writer(root):
        base = commits.latest(root)
        dirty = {d for d in progress.Pending.of(base).event_days if str(first) <= d <= str(last)}
        days = sorted(dirty) or [str(first + dt.timedelta(days=i)) for i in range((last - first).days + 1)]
        in_range = commits.within("event_date", first, last)
        if dirty:
            in_range = lambda p: p["event_date"] in dirty  # noqa: E731
        landed = commits.read_table(spark, root, "landed_events", where=in_range, commit=base)
        with commits.Transaction(root, OPERATION) as txn:
            landed_rows = base.row_counts(t.LANDED_EVENTS.name, "event_date", in_range)  # from the footers
            txn.stage(consolidate(landed, landed_rows), t.EVENTS, replace=in_range, order=EVENTS_ORDER, partitions=len(landed_rows))
            written = txn.read_staged(spark, "events")
            prints = fingerprints({"events": (written.select(*CONTENT_KEY, "event_date"), "event_date")})["events"]
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
            report = EventsReport(
                first, last, prints, {r["day"]: int(r["staged"]) for r in counts}, CheckReport(UNIQUE_EVENTS, not problems, problems), days,
            )
            if not problems:
                commit = txn.commit(
                    {"first": str(first), "last": str(last), "days": len(days), "rows": prints[WHOLE].rows},
                    props=progress.after_events(base, days),
                )
                report.commit_seq = commit.seq
                report.day_rows = commit.row_counts(t.EVENTS.name, "event_date", commits.within("event_date", first, last))
    return report
