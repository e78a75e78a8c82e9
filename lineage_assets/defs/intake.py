"""Intake assets: a landing batch -> staged events, rejects and per-file accounting; staged
events -> the daily `events`."""

import datetime as dt

import dagster as dg
from dagster_pyspark import LazyPySparkResource

from lineage_assets.defs.metadata import failed_tasks_since, markdown_table, spec, table_metadata
from lineage_assets.defs.resources import LineagePaths, failed_task_attempts
from lineage_assets.pipeline.events import UNIQUE_EVENTS, build_events
from lineage_assets.pipeline.landing import ACCOUNTING, land_batch
from lineage_assets.warehouse import tables as t

FILES_SHOWN = 200  # rows of the per-file metadata table (all of them are in `drop_files`)


def day_range(context: dg.AssetExecutionContext) -> tuple[dt.date, dt.date]:
    keys = context.partition_key_range
    return dt.date.fromisoformat(keys.start), dt.date.fromisoformat(keys.end)


def build_intake_assets(daily: dg.DailyPartitionsDefinition):
    @dg.multi_asset(
        name="landing_batch",
        specs=[spec(t.LANDED_EVENTS, "intake", skippable=True), spec(t.REJECTED_EVENTS, "intake", skippable=True),
               spec(t.DROP_FILES, "intake", skippable=True)],
        check_specs=[dg.AssetCheckSpec(
            ACCOUNTING, asset="landed_events", blocking=True,
            description="Nothing lost: for every file of the batch and for the batch, records read == accepted + "
            "rejected + duplicates, counting accepted and rejected from what was staged; the batch (and the ledger "
            "that records it as read) is committed only when this holds.",
        )],
    )
    def landing_batch(context: dg.AssetExecutionContext, pyspark: LazyPySparkResource, paths: LineagePaths):
        report = land_batch(lambda: pyspark.spark_session, paths.warehouse, paths.drop_dir, paths.start, context.log.info)
        check = report.check
        yield dg.AssetCheckResult(
            check_name=ACCOUNTING, asset_key="landed_events", passed=check.passed,
            description=None if check.passed else "records were lost or double-counted: nothing was committed",
            metadata={**check.details, "problems": dg.MetadataValue.json(check.problems[:50])},
        )
        if not check.passed:
            raise dg.Failure(f"landing batch {report.batch_id}: the accounting does not balance {check.problems[:3]}; nothing was committed")
        # these tables grow by a batch at a time: a batch's figures are its own (`batch_rows`), not the
        # table's size, which is what `dagster/row_count` would claim (summing every batch's footers would cost
        # as much as the batches ever landed)
        common = {"batch_id": report.batch_id or "none (nothing new)", "commit": report.commit_seq, "files": len(report.files)}
        yield dg.MaterializeResult(
            asset_key="landed_events",
            metadata={
                **common, "read": report.read, "accepted": report.accepted, "rejected": report.rejected,
                "duplicates": report.duplicates, "batch_rows": report.accepted,
                "event_dates": dg.MetadataValue.json(sorted(report.accepted_by_day)),
                "held_future_dates": dg.MetadataValue.json(report.held_days),
                "accepted_by_day": dg.MetadataValue.json(report.accepted_by_day),
                "changed_while_read": dg.MetadataValue.json(report.changed_while_read),
                "ledger_refreshed": report.ledger_refreshed,
            },
        )
        yield dg.MaterializeResult(
            asset_key="rejected_events",
            metadata={
                **common, "rejected": report.rejected, "batch_rows": report.rejected,
                "rejected_by_reason": dg.MetadataValue.json(report.rejected_by_reason),
                "preview": dg.MetadataValue.md(markdown_table(report.reject_preview)),
            },
        )
        yield dg.MaterializeResult(
            asset_key="drop_files",
            metadata={
                **common, "batch_rows": len(report.files), "bytes_read": report.bytes_read,
                "per_file": dg.MetadataValue.md(markdown_table(report.file_table(FILES_SHOWN))),
            },
        )

    @dg.asset(
        name="events", group_name="intake", kinds={"spark", "parquet"}, partitions_def=daily,
        backfill_policy=dg.BackfillPolicy.single_run(),
        deps=["landed_events"],
        description=t.EVENTS.description + " A range of days is one Spark write; only its days that landing batches changed are rebuilt.",
        metadata=table_metadata(t.EVENTS),
        check_specs=[dg.AssetCheckSpec(
            UNIQUE_EVENTS, asset="events", blocking=True,
            description="event_id is unique in each written day and every staged event_id of the day is present; "
            "the days are committed only when this holds.",
        )],
    )
    def events(context: dg.AssetExecutionContext, pyspark: LazyPySparkResource, paths: LineagePaths):
        first, last = day_range(context)
        spark = pyspark.spark_session
        failed = failed_task_attempts(spark)
        report = build_events(spark, paths.warehouse, first, last)
        retried = failed_tasks_since(spark, failed, context.log.warning)
        yield dg.AssetCheckResult(check_name=UNIQUE_EVENTS, passed=report.check.passed,
                                  metadata={"problems": dg.MetadataValue.json(report.check.problems[:50])})
        if not report.check.passed:
            raise dg.Failure(f"events {first}..{last}: {report.check.problems[:3]}; nothing was committed")
        rebuilt = set(report.rebuilt)
        for day in context.partition_keys:
            print_ = report.fingerprints.get(day)
            context.add_asset_metadata(
                {"dagster/row_count": report.rows(day), "rebuilt": day in rebuilt,
                 "content_hash": print_.hash if print_ else ("empty" if day in rebuilt else "unchanged")},
                partition_key=day,
            )
        yield dg.MaterializeResult(metadata={
            "range": f"{first}..{last}", "rebuilt_days": len(rebuilt), "range_rows": report.rows(), "commit": report.commit_seq, **retried,
        })

    return [landing_batch, events]
