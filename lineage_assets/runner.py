"""Process a drop folder through the project's Dagster definitions, in this process.

This is what `lineage-assets ingest` and `make demo` run: the same sensor the daemon ticks, the
same jobs, on the given Dagster instance (so the runs show in `make dev`'s UI). Ticks repeat
until the sensor has nothing more to request.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Callable

from dagster import AssetKey, DagsterInstance, build_sensor_context
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG, SENSOR_NAME_TAG

from lineage_assets.definitions import build_definitions
from lineage_assets.defs.resources import LineagePaths
from lineage_assets.defs.sensors import DAILY_JOB
from lineage_assets.settings import LineageSettings

SENSOR = "event_drop_sensor"


@dataclasses.dataclass
class IngestReport:
    runs: list[tuple[str, str, bool]] = dataclasses.field(default_factory=list)  # (job, partition(s), success)

    @property
    def failed(self) -> list[tuple[str, str, bool]]:
        return [r for r in self.runs if not r[2]]


def _cursor_key(settings: LineageSettings) -> str:
    return f"lineage_assets/ingest_cursor/{os.path.abspath(settings.drop_dir)}|{settings.warehouse}"


def ingest(
    settings: LineageSettings,
    instance: DagsterInstance,
    log: Callable[[str], None] = print,
    max_ticks: int = 100,
    spark_overrides: dict | None = None,
    log_level: str = "INFO",
    daily_assets: list[str] | None = None,
) -> IngestReport:
    """Tick the sensor and run what it requests until it requests nothing more.

    `daily_assets` limits the daily runs to those assets (e.g. ["events"] to land drops without
    folding them); by default a daily run materializes all of its assets."""
    defs = build_definitions(settings, spark_overrides)
    selection = [AssetKey(name) for name in daily_assets] if daily_assets else None
    sensor_def = defs.resolve_sensor_def(SENSOR)
    key = _cursor_key(settings)
    cursor = instance.run_storage.get_cursor_values({key}).get(key)
    report = IngestReport()
    for _tick in range(max_ticks):
        with build_sensor_context(
            instance=instance, cursor=cursor, resources={"paths": LineagePaths.from_settings(settings)}
        ) as context:
            result = sensor_def(context)
        for request in result.dynamic_partitions_requests or []:
            instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        for run_request in result.run_requests or []:
            # the runs are the sensor's: tag them as the daemon would, so the UI groups them with its ticks
            tags = {**dict(run_request.tags), SENSOR_NAME_TAG: SENSOR}
            if run_request.partition_key:
                label = run_request.partition_key
            elif ASSET_PARTITION_RANGE_START_TAG in tags:
                label = f"{tags[ASSET_PARTITION_RANGE_START_TAG]}..{tags[ASSET_PARTITION_RANGE_END_TAG]}"
            else:
                label = "snapshot"
            log(f"run {run_request.job_name} [{label}]")
            began = time.monotonic()
            outcome = defs.resolve_job_def(run_request.job_name).execute_in_process(
                instance=instance,
                partition_key=run_request.partition_key,
                tags=tags,
                raise_on_error=False,
                run_config={"loggers": {"console": {"config": {"log_level": log_level}}}},
                asset_selection=selection if run_request.job_name == DAILY_JOB else None,
            )
            report.runs.append((run_request.job_name, label, outcome.success))
            log(f"  {'ok' if outcome.success else 'FAILED'} in {time.monotonic() - began:.1f}s")
            if not outcome.success:
                log(f"  FAILED: run {outcome.run_id} (see the Dagster UI for its logs)")
        cursor = result.cursor
        instance.run_storage.set_cursor_values({key: cursor})
        if not result.run_requests:
            break
    return report
