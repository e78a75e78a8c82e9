"""The project's Dagster definitions (`dagster dev -w workspace.yaml` loads `defs`)."""

from __future__ import annotations

from dagster import AssetSelection, Definitions, define_asset_job, in_process_executor

from lineage_assets.defs.intake import build_intake_assets
from lineage_assets.defs.lineage import build_lineage_assets
from lineage_assets.defs.partitions import daily_partitions
from lineage_assets.defs.recipes import RECIPE_JOB, prepared_customers
from lineage_assets.defs.resources import LineagePaths, LineageQueryResource, spark_resource
from lineage_assets.defs.sensors import DAILY_JOB, INTAKE_JOB, SNAPSHOT_JOB, WAREHOUSE_TAG, build_sensor
from lineage_assets.settings import LineageSettings


def build_definitions(settings: LineageSettings | None = None, spark_overrides: dict | None = None) -> Definitions:
    settings = settings or LineageSettings.from_env()
    daily = daily_partitions(settings.start_date)
    landing_batch, events = build_intake_assets(daily)
    lineage_fold, current_graph, column_fields_check = build_lineage_assets(daily)
    paths = LineagePaths.from_settings(settings)
    tags = {WAREHOUSE_TAG: paths.warehouse}  # every run, from the UI too, says which warehouse it writes
    intake_job = define_asset_job(INTAKE_JOB, selection=AssetSelection.assets(landing_batch), tags=tags)
    daily_job = define_asset_job(DAILY_JOB, selection=AssetSelection.assets(events, lineage_fold), tags=tags)  # partitioned as its assets
    snapshot_job = define_asset_job(
        SNAPSHOT_JOB, selection=AssetSelection.assets(current_graph) | AssetSelection.checks(column_fields_check), tags=tags
    )
    recipe_job = define_asset_job(RECIPE_JOB, selection=AssetSelection.assets(prepared_customers), tags=tags)
    jobs = [intake_job, daily_job, snapshot_job]
    return Definitions(
        assets=[landing_batch, events, lineage_fold, current_graph, prepared_customers],
        asset_checks=[column_fields_check],
        jobs=[*jobs, recipe_job],
        sensors=[build_sensor(jobs)],
        resources={
            "pyspark": spark_resource(spark_overrides),
            "paths": paths,
            "lineage_query": LineageQueryResource.from_settings(settings),
        },
        # One JVM per run: every Spark step of a run shares the run's session.
        executor=in_process_executor,
    )


defs = build_definitions()
