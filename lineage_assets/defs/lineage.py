"""Lineage assets: the fold of a range of days and the current-graph snapshot (wiring only)."""

import dagster as dg
from dagster_pyspark import LazyPySparkResource

from lineage_assets.defs.intake import day_range
from lineage_assets.defs.metadata import (
    PICTURE_SETTING,
    failed_tasks_since,
    graph_picture_metadata,
    snapshot_pictures_on,
    spec,
)
from lineage_assets.defs.resources import LineagePaths, LineageQueryResource, failed_task_attempts
from lineage_assets.pipeline.fold import DETERMINISM, KEYS, run_fold
from lineage_assets.pipeline.snapshot import COMPONENTS, publish_current_graph
from lineage_assets.warehouse import tables as t

COLUMN_FIELDS_CHECK = "current_column_edges_name_existing_fields"


def build_lineage_assets(daily: dg.DailyPartitionsDefinition):
    @dg.multi_asset(
        name="lineage_fold",
        partitions_def=daily,
        backfill_policy=dg.BackfillPolicy.single_run(),
        specs=[spec(table, "lineage", deps=["events"], skippable=True) for table in t.HISTORY],
        check_specs=[
            dg.AssetCheckSpec(
                DETERMINISM, asset="run_lineage", blocking=True,
                description="The fold recomputed from its inputs (events and the state before the range, read again) for a "
                "deterministic sample of jobs (LINEAGE_CHECK_SAMPLE; all in tests) gives the same content hashes, table by "
                "table and day by day, as what was written. Nothing is committed otherwise.",
            ),
            dg.AssetCheckSpec(
                KEYS, asset="run_lineage", blocking=True,
                description="Keys are unique and every version id that run_lineage or a column edge names exists. "
                "Nothing is committed otherwise.",
            ),
        ],
    )
    def lineage_fold(context: dg.AssetExecutionContext, pyspark: LazyPySparkResource, paths: LineagePaths):
        first, last = day_range(context)
        spark = pyspark.spark_session
        failed = failed_task_attempts(spark)
        report = run_fold(spark, paths.warehouse, first, last, paths.check_sample, context.log.info, floor=paths.start)
        retried = failed_tasks_since(spark, failed, context.log.warning)
        for check in report.checks:
            yield dg.AssetCheckResult(
                check_name=check.name, asset_key="run_lineage", passed=check.passed,
                metadata={"problems": dg.MetadataValue.json(check.problems[:50]), **_details(check.details)},
            )
        if not report.passed:
            raise dg.Failure(f"lineage fold {report.first}..{report.last}: a blocking check failed; nothing was committed")
        extra = report.extra_days(context.partition_keys)
        if extra:
            context.log.info(f"lineage fold: also rewrote {len(extra)} day(s) outside the run's partitions: {', '.join(extra[:10])}")
        for table in t.HISTORY:
            for day in context.partition_keys:
                context.add_asset_metadata(_day_figures(report, table.name, day), asset_key=table.name, partition_key=day)
            for day in extra:  # days the fold rewrote beyond the run's partitions: their new figures
                context.log_event(dg.AssetMaterialization(
                    asset_key=table.name, partition=day,
                    metadata={**_day_figures(report, table.name, day), "range": f"{report.first}..{report.last}"},
                    description="rewritten by a fold of a wider range than its run's partitions",
                ))
        common = {
            "range": f"{report.first}..{report.last}",
            "commit": report.commit_seq,
            "jobs_with_changed_lineage": dg.MetadataValue.json(report.changed_jobs[:200]),
            "jobs_with_changed_lineage_count": len(report.changed_jobs),
            "seconds_by_step": dg.MetadataValue.json(report.seconds),
            "check_sample_rate": report.sample_rate,
            **retried,
        }
        for table in t.HISTORY:
            yield dg.MaterializeResult(asset_key=table.name, metadata={**common, "range_rows": report.rows(table.name)})

    @dg.multi_asset(
        name="current_graph",
        specs=[
            spec(table, "lineage", deps=[dg.AssetDep(upstream, partition_mapping=dg.AllPartitionMapping())], skippable=True)
            for table, upstream in (
                (t.CURRENT_JOBS, "run_lineage"), (t.CURRENT_LINEAGE, "run_lineage"),
                (t.CURRENT_COLUMN_LINEAGE, "column_lineage"), (t.CURRENT_DATASET_FIELDS, "dataset_fields"),
                (t.CURRENT_ALIASES, "dataset_aliases"),
            )
        ],
        check_specs=[dg.AssetCheckSpec(
            COMPONENTS, asset="current_lineage", blocking=True,
            description="Every job's and edge's component_id equals the component computed independently (label "
            "propagation in DuckDB over the written files; the snapshot itself uses a union-find in Python). "
            "The snapshot is committed only when they agree.",
        )],
    )
    def current_graph(context: dg.AssetExecutionContext, pyspark: LazyPySparkResource, paths: LineagePaths):
        spark = pyspark.spark_session
        failed = failed_task_attempts(spark)
        report = publish_current_graph(spark, paths.warehouse, context.log.info)
        retried = failed_tasks_since(spark, failed, context.log.warning)
        yield dg.AssetCheckResult(
            check_name=COMPONENTS, asset_key="current_lineage", passed=report.check.passed,
            metadata={"problems": dg.MetadataValue.json(report.check.problems[:50]), "components": report.components},
        )
        if not report.passed:
            raise dg.Failure("current graph: component ids disagree with an independent computation; nothing was published")
        picture = (  # the graph's largest components, drawn
            graph_picture_metadata(paths.warehouse, context.log.warning) if snapshot_pictures_on()
            else {"graph_picture": dg.MetadataValue.md(f"_no picture: {PICTURE_SETTING} is off_")}
        )
        for table in t.SNAPSHOTS:
            yield dg.MaterializeResult(
                asset_key=table.name,
                metadata={"dagster/row_count": report.rows[table.name], "commit": report.commit_seq, "as_of_day": report.as_of,
                          **retried, **(picture if table is t.CURRENT_LINEAGE else {})},
            )

    @dg.asset_check(
        asset="current_column_lineage", name=COLUMN_FIELDS_CHECK,
        description="Every current column edge names a field its dataset's current fields hold, or carries the flag "
        "that says it does not (asked through the LineageQueryResource, over the committed snapshot).",
    )
    def current_column_edges_name_existing_fields(lineage_query: LineageQueryResource) -> dg.AssetCheckResult:
        report = lineage_query.current_column_edge_report()
        unflagged = report["unflagged_missing_output_fields"] + report["unflagged_missing_input_fields"]
        return dg.AssetCheckResult(
            passed=unflagged == 0, severity=dg.AssetCheckSeverity.WARN,
            metadata={key: dg.MetadataValue.int(value) for key, value in report.items()},
        )

    return [lineage_fold, current_graph, current_column_edges_name_existing_fields]


def _details(details: dict) -> dict:
    return {k: dg.MetadataValue.json(v) if isinstance(v, (dict, list)) else v for k, v in details.items()}


def _day_figures(report, table: str, day: str) -> dict:
    found = report.fingerprints[table].get(day)
    return {"dagster/row_count": found.rows if found else 0, "content_hash": found.hash if found else "empty"}
