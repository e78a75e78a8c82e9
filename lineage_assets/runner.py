"""Process a drop folder through the project's Dagster definitions, in this process.

This is what `lineage-assets ingest` and `make demo` run: the sensor's own choice of the next
work (`defs.sensors.next_work`), the same jobs, on the given Dagster instance (so the runs show
in `make dev`'s UI), until nothing is pending.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable

from dagster import AssetKey, DagsterInstance
from dagster._core.storage.tags import SENSOR_NAME_TAG

from lineage_assets.definitions import build_definitions
from lineage_assets.defs.resources import LineagePaths
from lineage_assets.defs.sensors import DAILY_JOB, STAGES, WAREHOUSE_TAG, fail_dead_runs, next_work
from lineage_assets.warehouse import commits
from lineage_assets.settings import LineageSettings

SENSOR = "event_drop_sensor"


@dataclasses.dataclass
class IngestReport:
    runs: list[tuple[str, str, bool]] = dataclasses.field(default_factory=list)  # (job, partition(s), success)

    @property
    def failed(self) -> list[tuple[str, str, bool]]:
        return [r for r in self.runs if not r[2]]


def ingest(
    settings: LineageSettings,
    instance: DagsterInstance,
    log: Callable[[str], None] = print,
    max_runs: int = 100,
    spark_overrides: dict | None = None,
    log_level: str = "INFO",
    daily_assets: list[str] | None = None,
) -> IngestReport:
    """Run what the sensor would request, one run after another, until nothing is pending.

    The whole ingest is one writer of the warehouse: it holds the writer lock from start to end,
    so a second `ingest` or a daemon run fails at once with a clear error instead of interleaving.
    A failed run ends the ingest (its work stays pending: the next ingest or tick retries it).
    `daily_assets` limits the daily runs to those assets (e.g. ["events"] to land drops without
    folding them); by default a daily run materializes all of its assets."""
    defs = build_definitions(settings, spark_overrides)
    selection = [AssetKey(name) for name in daily_assets] if daily_assets else None
    paths = LineagePaths.from_settings(settings)
    report = IngestReport()
    # a selection without the fold (e.g. ["events"]) lands drops and builds events, nothing after
    stages = STAGES if not daily_assets or "lineage_fold" in daily_assets else ("landing", "events")
    with commits.writer(settings.warehouse, wait_seconds=0):
        # a run of an earlier ingest (or of the daemon) whose process was killed is failed first
        for run_id in fail_dead_runs(instance, settings.warehouse, confirm_after=0):
            log(f"run {run_id} was left STARTED by a process that is gone: marked failed; its work is done again")
        for _ in range(max_runs):
            work, why = next_work(paths, stages=stages)
            if work is None:
                break
            tags = {**work.tags(), SENSOR_NAME_TAG: SENSOR, WAREHOUSE_TAG: paths.warehouse}  # the sensor's runs, as the daemon would tag them
            label = f"{work.first}..{work.last}" if work.first else work.key.split(":")[0]
            log(f"run {work.job} [{label}]: {why}")
            began = time.monotonic()
            outcome = defs.resolve_job_def(work.job).execute_in_process(
                instance=instance, tags=tags, raise_on_error=False,
                run_config={"loggers": {"console": {"config": {"log_level": log_level}}}},
                asset_selection=([AssetKey(name) for name in work.assets] or selection) if work.job == DAILY_JOB else None,
            )
            report.runs.append((work.job, label, outcome.success))
            log(f"  {'ok' if outcome.success else 'FAILED'} in {time.monotonic() - began:.1f}s")
            if not outcome.success:
                log(f"  FAILED: run {outcome.run_id} (see the Dagster UI for its logs); its work stays pending")
                break
    return report


def run_recipe_asset(settings: LineageSettings, instance: DagsterInstance, log: Callable[[str], None] = print,
                     spark_overrides: dict | None = None, log_level: str = "INFO") -> bool:
    """Materialize the recipe asset (`prepared_customers`) once, on the given instance: its run's
    events land in the drop folder, for `ingest` to read like any producer's."""
    from lineage_assets.defs.recipes import RECIPE_JOB

    defs = build_definitions(settings, spark_overrides)
    began = time.monotonic()
    log(f"run {RECIPE_JOB}: a Wrangler recipe prepares the raw customers and reports its run into the drop folder")
    outcome = defs.resolve_job_def(RECIPE_JOB).execute_in_process(
        instance=instance, raise_on_error=False,
        run_config={"loggers": {"console": {"config": {"log_level": log_level}}}},
    )
    log(f"  {'ok' if outcome.success else 'FAILED'} in {time.monotonic() - began:.1f}s")
    return outcome.success
