"""Intake assets: one drop -> staged events + rejected records; staged events -> daily `events`."""

import datetime as dt

import dagster as dg
from dagster_pyspark import LazyPySparkResource

from lineage_assets.defs.metadata import markdown_table, spec, table_metadata
from lineage_assets.defs.resources import LineagePaths
from lineage_assets.pipeline.intake import ACCOUNTING, UNIQUE_EVENTS, DropError, build_events, intake_drop
from lineage_assets.warehouse import tables as t


def day_range(context: dg.AssetExecutionContext) -> tuple[dt.date, dt.date]:
    keys = context.partition_key_range
    return dt.date.fromisoformat(keys.start), dt.date.fromisoformat(keys.end)


def build_intake_assets(drops: dg.DynamicPartitionsDefinition, daily: dg.DailyPartitionsDefinition):
    @dg.multi_asset(
        name="intake_drop",
        specs=[spec(t.LANDED_EVENTS, "intake", skippable=True), spec(t.REJECTED_EVENTS, "intake", skippable=True)],
        check_specs=[dg.AssetCheckSpec(
            ACCOUNTING, asset="landed_events", blocking=True,
            description="Nothing lost: records read == accepted + rejected + duplicates, counting accepted and rejected "
            "from what was staged; the drop is committed only when this holds.",
        )],
        partitions_def=drops,
    )
    def intake_drop_asset(context: dg.AssetExecutionContext, pyspark: LazyPySparkResource, paths: LineagePaths):
        try:
            report = intake_drop(pyspark.spark_session, paths.warehouse, paths.drop_dir, context.partition_key, paths.start, context.log.info)
        except DropError as exc:
            raise dg.Failure(str(exc)) from exc
        check = report.check
        yield dg.AssetCheckResult(
            check_name=ACCOUNTING, asset_key="landed_events", passed=check.passed,
            description=None if check.passed else "records were lost or double-counted: nothing was committed",
            metadata=check.details,
        )
        if not check.passed:
            raise dg.Failure(f"drop {report.source_file}: the accounting does not balance {check.details}; nothing was committed")
        yield dg.MaterializeResult(
            asset_key="landed_events",
            metadata={
                "source_file": report.source_file, "drop_id": report.drop_id, "read": report.read,
                "accepted": report.accepted, "rejected": report.rejected, "duplicates": report.duplicates,
                "duplicate_events": report.duplicate_events, "duplicate_rejects": report.duplicate_rejects,
                "dagster/row_count": report.accepted,
                "event_dates": dg.MetadataValue.json(sorted(report.accepted_by_day)),
                "held_future_dates": dg.MetadataValue.json(report.held_days),
                "accepted_by_day": dg.MetadataValue.json(report.accepted_by_day),
                "commit": report.commit_seq,
            },
        )
        yield dg.MaterializeResult(
            asset_key="rejected_events",
            metadata={
                "rejected": report.rejected, "dagster/row_count": report.rejected,
                "rejected_by_reason": dg.MetadataValue.json(report.rejected_by_reason),
                "preview": dg.MetadataValue.md(markdown_table(report.reject_preview)),
                "commit": report.commit_seq,
            },
        )

    @dg.asset(
        name="events", group_name="intake", kinds={"spark", "parquet"}, partitions_def=daily,
        backfill_policy=dg.BackfillPolicy.single_run(),
        deps=[dg.AssetDep("landed_events", partition_mapping=dg.AllPartitionMapping())],
        description=t.EVENTS.description + " A range of days is one Spark write.",
        metadata=table_metadata(t.EVENTS),
        check_specs=[dg.AssetCheckSpec(
            UNIQUE_EVENTS, asset="events", blocking=True,
            description="event_id is unique in each written day and every staged event_id of the day is present; "
            "the days are committed only when this holds.",
        )],
    )
    def events(context: dg.AssetExecutionContext, pyspark: LazyPySparkResource, paths: LineagePaths):
        first, last = day_range(context)
        report = build_events(pyspark.spark_session, paths.warehouse, first, last)
        yield dg.AssetCheckResult(check_name=UNIQUE_EVENTS, passed=report.check.passed,
                                  metadata={"problems": dg.MetadataValue.json(report.check.problems[:50])})
        if not report.check.passed:
            raise dg.Failure(f"events {first}..{last}: {report.check.problems[:3]}; nothing was committed")
        for day in context.partition_keys:
            print_ = report.fingerprints.get(day)
            context.add_asset_metadata(
                {"dagster/row_count": report.rows(day), "content_hash": print_.hash if print_ else "empty"}, partition_key=day
            )
        yield dg.MaterializeResult(metadata={"range": f"{first}..{last}", "range_rows": report.rows(), "commit": report.commit_seq})

    return [intake_drop_asset, events]
