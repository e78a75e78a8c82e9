"""Intake assets: one drop -> staged events + rejected records; staged events -> daily `events`."""


import datetime as dt
import os

from dagster import (
    AllPartitionMapping,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetDep,
    AssetExecutionContext,
    AssetSpec,
    BackfillPolicy,
    DailyPartitionsDefinition,
    DynamicPartitionsDefinition,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
    multi_asset,
)
from dagster_pyspark import LazyPySparkResource
from pyspark.sql import functions as F

from lineage_assets.defs.metadata import markdown_table
from lineage_assets.defs.resources import LineagePaths
from lineage_assets.intake.drop_folder import drop_id, file_sha256
from lineage_assets.intake.spark_intake import consolidate_day, fingerprint, read_drop, stage_drop
from lineage_assets.warehouse import schemas, storage

ACCOUNTING_CHECK = "intake_accounting_balances"
UNIQUE_EVENTS_CHECK = "events_unique_and_complete"


def split_drop_key(key: str) -> tuple[str, str]:
    relpath, sep, sha_prefix = key.rpartition("@")
    if not sep:
        raise Failure(f"drop partition key {key!r} is not of the form <path>@<sha256 prefix>")
    return relpath, sha_prefix


def build_intake_assets(drops: DynamicPartitionsDefinition, daily: DailyPartitionsDefinition):
    @multi_asset(
        name="intake_drop",
        specs=[
            AssetSpec(
                "landed_events",
                group_name="intake",
                kinds={"spark", "parquet"},
                description="Accepted events of one drop, staged per (event_date, drop). "
                "Events already known from this or an earlier drop are counted as duplicates.",
            ),
            AssetSpec(
                "rejected_events",
                group_name="intake",
                kinds={"spark", "parquet"},
                description="Every record of a drop that is not an acceptable event, with its whole "
                "original text, source file and line, and a reason code.",
            ),
        ],
        check_specs=[
            AssetCheckSpec(
                ACCOUNTING_CHECK,
                asset="landed_events",
                blocking=True,
                description="Nothing lost: records read == accepted + rejected + duplicates, "
                "counting accepted and rejected from what was written.",
            )
        ],
        partitions_def=drops,
    )
    def intake_drop(context: AssetExecutionContext, pyspark: LazyPySparkResource, paths: LineagePaths):
        key = context.partition_key
        relpath, sha_prefix = split_drop_key(key)
        full_path = os.path.join(paths.drop_dir, relpath)
        if not os.path.isfile(full_path):
            raise Failure(f"drop {relpath!r} is no longer in the drop folder {paths.drop_dir}")
        if not file_sha256(full_path).startswith(sha_prefix):
            raise Failure(
                f"drop {relpath!r} changed since it was registered as {key!r}; "
                "the sensor registers its new content as a new drop"
            )
        spark = pyspark.spark_session
        this_drop = drop_id(key)
        landed_root = storage.table_path(paths.warehouse, storage.LANDED_EVENTS)
        rejected_root = storage.table_path(paths.warehouse, storage.REJECTED_EVENTS)
        today = dt.datetime.now(dt.timezone.utc).date()

        parsed = read_drop(spark, os.path.abspath(full_path), relpath, paths.start).cache()
        try:
            stats = parsed.groupBy("accepted", "event_date").count().collect()
            read_count = sum(r["count"] for r in stats)
            dates = sorted(r["event_date"] for r in stats if r["accepted"])
            context.log.info(f"drop {relpath}: {read_count} records, events on {len(dates)} day(s)")
            known_ids = storage.read_existing(
                spark, schemas.LANDED_EVENTS, [f"{landed_root}/event_date={d}" for d in dates], landed_root
            ).filter(F.col("drop_id") != this_drop)
            known_rejects = storage.read_glob(
                spark, schemas.REJECTED_EVENTS, f"{rejected_root}/read_date=*/drop_id=*", rejected_root
            ).filter((F.col("source_file") == relpath) & (F.col("drop_id") != this_drop))
            staged = stage_drop(parsed, key, this_drop, today, known_ids, known_rejects)
            dup_counts = {
                r["kind"]: r["count"]
                for r in staged.duplicate_events.select(F.lit("events").alias("kind"))
                .unionByName(staged.duplicate_rejects.select(F.lit("rejects").alias("kind")))
                .groupBy("kind")
                .count()
                .collect()
            }
            duplicate_events = dup_counts.get("events", 0)
            duplicate_rejects = dup_counts.get("rejects", 0)
            # Re-materializing a drop replaces its own staged rows and nothing else.
            storage.delete_glob(spark, f"{landed_root}/event_date=*/drop_id={this_drop}")
            storage.delete_glob(spark, f"{rejected_root}/read_date=*/drop_id={this_drop}")
            storage.write_partitions(staged.events, landed_root, ["event_date", "drop_id"])
            storage.write_partitions(staged.rejected, rejected_root, ["read_date", "drop_id"])
        finally:
            parsed.unpersist()

        # Count what was actually written, independently of the counts above.
        stored_events = storage.read_glob(
            spark, schemas.LANDED_EVENTS, f"{landed_root}/event_date=*/drop_id={this_drop}", landed_root
        )
        stored_rejects = storage.read_glob(
            spark, schemas.REJECTED_EVENTS, f"{rejected_root}/read_date=*/drop_id={this_drop}", rejected_root
        )
        written = (
            stored_events.select(F.lit("event").alias("table"), F.col("event_date").cast("string").alias("key"))
            .unionByName(stored_rejects.select(F.lit("reject").alias("table"), F.col("reason_code").alias("key")))
            .groupBy("table", "key")
            .count()
            .collect()
        )
        by_day = {r["key"]: r["count"] for r in written if r["table"] == "event"}
        by_reason = {r["key"]: r["count"] for r in written if r["table"] == "reject"}
        accepted = sum(by_day.values())
        rejected = sum(by_reason.values())
        duplicates = duplicate_events + duplicate_rejects
        new_days = sorted(by_day)
        held = [d for d in new_days if dt.date.fromisoformat(d) > today]
        preview = [
            {"line": r.source_line, "reason": r.reason_code, "detail": r.reason}
            for r in stored_rejects.orderBy("source_line").limit(10).collect()
        ] if rejected else []
        context.log.info(
            f"drop {relpath}: read {read_count}, accepted {accepted}, rejected {rejected}, duplicates {duplicates}"
        )
        yield MaterializeResult(
            asset_key="landed_events",
            metadata={
                "source_file": relpath,
                "drop_id": this_drop,
                "read": read_count,
                "accepted": accepted,
                "rejected": rejected,
                "duplicates": duplicates,
                "duplicate_events": duplicate_events,
                "duplicate_rejects": duplicate_rejects,
                "event_dates": MetadataValue.json(new_days),
                "held_future_dates": MetadataValue.json(held),
                "accepted_by_day": MetadataValue.json(by_day),
            },
        )
        yield MaterializeResult(
            asset_key="rejected_events",
            metadata={
                "rejected": rejected,
                "rejected_by_reason": MetadataValue.json(by_reason),
                "preview": MetadataValue.md(markdown_table(preview)),
            },
        )
        balanced = read_count == accepted + rejected + duplicates
        yield AssetCheckResult(
            check_name=ACCOUNTING_CHECK,
            asset_key="landed_events",
            passed=balanced,
            severity=AssetCheckSeverity.ERROR,
            description=None if balanced else "records were lost or double-counted",
            metadata={"read": read_count, "accepted": accepted, "rejected": rejected, "duplicates": duplicates},
        )

    @asset(
        name="events",
        group_name="intake",
        kinds={"spark", "parquet"},
        partitions_def=daily,
        backfill_policy=BackfillPolicy.single_run(),
        deps=[AssetDep("landed_events", partition_mapping=AllPartitionMapping())],
        description="Every accepted event once, partitioned by the UTC date of eventTime "
        "(DESIGN.md section 3). A day reads only what drops staged for that day.",
        check_specs=[
            AssetCheckSpec(
                UNIQUE_EVENTS_CHECK,
                asset="events",
                blocking=True,
                description="event_id is unique in each written day and every staged event_id of the day is present.",
            )
        ],
    )
    def events(context: AssetExecutionContext, pyspark: LazyPySparkResource, paths: LineagePaths):
        spark = pyspark.spark_session
        landed_root = storage.table_path(paths.warehouse, storage.LANDED_EVENTS)
        events_root = storage.table_path(paths.warehouse, storage.EVENTS)
        days = list(context.partition_keys)
        per_day: dict[str, int] = {}
        hashes: dict[str, str] = {}
        problems: list[str] = []
        for index, day in enumerate(days, start=1):
            landed = storage.read_day(spark, schemas.LANDED_EVENTS, landed_root, "event_date", day)
            storage.write_day(consolidate_day(landed), events_root, "event_date", day)
            written = storage.read_day(spark, schemas.EVENTS, events_root, "event_date", day)
            rows, distinct = written.agg(F.count("*"), F.countDistinct("event_id")).first()
            staged = landed.select("event_id").distinct().count()
            if rows != distinct or distinct != staged:
                problems.append(f"{day}: {rows} rows, {distinct} distinct ids, {staged} staged ids")
            per_day[day] = rows
            hashes[day] = fingerprint(written)
            if len(days) > 1:
                context.log.info(f"events: day {index}/{len(days)} {day}: {rows} events")
        yield MaterializeResult(
            metadata={
                "days": len(days),
                "rows": sum(per_day.values()),
                "rows_by_day": MetadataValue.json(per_day),
                "content_hash_by_day": MetadataValue.json(hashes),
            }
        )
        yield AssetCheckResult(
            check_name=UNIQUE_EVENTS_CHECK,
            passed=not problems,
            metadata={"problems": MetadataValue.json(problems)},
        )

    return [intake_drop, events]
