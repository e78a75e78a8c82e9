"""`event_drop_sensor`: what the warehouse says remains to be done -> one run at a time.

The sensor keeps no progress of its own (its cursor is empty). What is done is what has been
committed: the drop ledger says what was read of each file, and the latest commit's properties
(`pipeline.progress`) say which days still need `events`, from which day the fold must run and
whether the snapshot is stale. Each tick:

1. A run of this project whose process died (its warehouse lease is free) is marked failed: the
   default run launcher cannot see a killed run worker, so it would stay STARTED forever.
2. While a run of this project is queued or running, nothing else is requested (one writer).
3. Otherwise the next pending work, in pipeline order (a landing batch when the drop folder
   holds something the ledger lacks; one run of `events` + the fold over the pending days; the
   fold from `fold_from`; the snapshot), starting after the stage of the latest commit: stages
   take turns, so a file that grows on every tick cannot starve the days it touches.
4. Work that failed is requested again after a backoff (30 s, doubling, at most an hour); its
   runs show in the UI as failed until one succeeds.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from dataclasses import dataclass

from dagster import (
    AssetKey,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
)

from lineage_assets.defs.resources import LineagePaths
from lineage_assets.intake.ledger import abandoned_before_ns, changed_files
from lineage_assets.pipeline import events, fold, landing, snapshot
from lineage_assets.pipeline.landing import read_ledger
from lineage_assets.pipeline.progress import Pending
from lineage_assets.warehouse import commits, leases
from lineage_assets.warehouse import tables

INTAKE_JOB = "intake_job"
DAILY_JOB = "daily_job"
SNAPSHOT_JOB = "snapshot_job"
JOBS = (INTAKE_JOB, DAILY_JOB, SNAPSHOT_JOB)
WORK_TAG = "lineage/work"
WAREHOUSE_TAG = "lineage/warehouse"  # the warehouse a run writes (an instance may serve several)
FOLD_ASSETS = tuple(table.name for table in tables.HISTORY)  # the `lineage_fold` multi-asset's keys
IN_FLIGHT = [
    DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING, DagsterRunStatus.STARTED,
    DagsterRunStatus.CANCELING,
]
DEAD_AFTER_SECONDS = 120  # a STARTED run without a lease for this long is dead (or never got going)
BACKOFF_FIRST, BACKOFF_MAX = 30.0, 3600.0


@dataclass(frozen=True)
class Work:
    """One piece of pending work: which job, over which days, and its identity (the commit it
    starts from), so that a retry of the same work is counted as such."""

    job: str
    key: str
    first: str | None = None
    last: str | None = None
    assets: tuple[str, ...] = ()  # the job's assets to materialize (all when empty)

    def tags(self) -> dict[str, str]:
        tags = {WORK_TAG: self.key}
        if self.first:
            tags.update({ASSET_PARTITION_RANGE_START_TAG: self.first, ASSET_PARTITION_RANGE_END_TAG: self.last})
        return tags


STAGES = ("landing", "events", "fold", "snapshot")
QUIET_SECONDS = 3600  # a file consumed whole and untouched this long is not stat'ed between sweeps
SWEEP_SECONDS = 600  # every file is stat'ed at least this often (and by every landing batch)
_last_sweep: dict[str, float] = {}  # drop folder -> when this process last looked at every file


def _quiet_after_ns(drop_dir: str, now: float) -> int | None:
    """None when a full sweep is due (then recorded as done), else the quiet-file cutoff."""
    if now - _last_sweep.get(drop_dir, 0.0) >= SWEEP_SECONDS:
        _last_sweep[drop_dir] = now
        return None
    return int((now - QUIET_SECONDS) * 1e9)


# The stage whose work each commit operation was: the next tick starts looking after it.
_STAGE_OF_OPERATION = {landing.OPERATION: "landing", events.OPERATION: "events", fold.OPERATION: "fold", snapshot.OPERATION: "snapshot"}


def next_work(paths: LineagePaths, log=None, today: dt.date | None = None, stages=STAGES) -> tuple[Work | None, str]:
    """The pending work to run next among `stages`, and why (for the tick's log).

    Stages take turns: the stages are looked at in pipeline order starting after the stage of
    the latest commit, so a file that grows on every tick cannot starve `events`, the fold or
    the snapshot (after a landing batch, the days it touched come first; after the snapshot, the
    drop folder). With nothing arriving this is plain pipeline order."""
    base = commits.latest(paths.warehouse)
    candidates: dict[str, tuple[Work, str]] = {}
    if "landing" in stages:
        quiet = _quiet_after_ns(paths.drop_dir, time.time())
        touched: list = []  # files whose mtime moved with nothing new: fingerprinted by every look until a landing
        changes = changed_files(paths.drop_dir, read_ledger(base), log, quiet_after_ns=quiet,
                                abandoned_before_ns=abandoned_before_ns(time.time()), refreshed=touched)
        if changes:
            candidates["landing"] = Work(INTAKE_JOB, f"landing:{base.seq}"), f"{len(changes)} new or grown file(s), e.g. {changes[0].path}"
        elif touched:  # batch commits their refreshed ledger rows (the ledger alone), so later looks skip them
            candidates["landing"] = (
                Work(INTAKE_JOB, f"landing:{base.seq}"),
                f"{len(touched)} file(s) touched with nothing new, e.g. {touched[0].path}: their ledger rows to refresh",
            )
    today_text = str(today or dt.datetime.now(dt.timezone.utc).date())
    pending = Pending.of(base)
    ready = [d for d in pending.event_days if paths.start_date <= d <= today_text]
    if ready and "events" in stages:
        # the fold, if it is behind from an earlier day, runs from that day in the same run, through
        # the last day folded or built (days built and not yet folded are behind too)
        first = max(min([ready[0], *([pending.fold_from] if pending.fold_from else [])]), paths.start_date)
        done = [d for d in (pending.fold_through, pending.events_through if pending.fold_from else None) if d and d <= today_text]
        last = max([ready[-1], *done])
        held = len(pending.event_days) - len(ready)
        why = f"events of {len(ready)} day(s) to build" + (f" ({held} outside [start date, today] held)" if held else "")
        candidates["events"] = Work(DAILY_JOB, f"days:{first}:{last}:{base.seq}", first, last), why
    behind = pending.fold_range()
    if behind is not None and "fold" in stages:
        # days before the start date are not partitions (a start date raised since): the fold starts there
        first, last = max(behind[0], paths.start_date), min(behind[1], today_text)
        if first <= last:  # the fold alone: rebuilding `events` would change the commit and so the work's key (no backoff)
            candidates["fold"] = (
                Work(DAILY_JOB, f"fold:{first}:{last}:{base.seq}", first, last, assets=FOLD_ASSETS), "the fold is behind the events"
            )
    if pending.snapshot_stale and "snapshot" in stages:
        candidates["snapshot"] = Work(SNAPSHOT_JOB, f"snapshot:{base.seq}"), "the current graph is older than the fold"
    if not candidates:
        return None, "nothing to do"
    last_stage = _STAGE_OF_OPERATION.get(base.info.get("operation", ""))
    after = STAGES.index(last_stage) + 1 if last_stage else 0
    return next(candidates[stage] for stage in STAGES[after:] + STAGES[:after] if stage in candidates)


def fail_dead_runs(instance, warehouse: str, now: float | None = None, confirm_after: float = 2.0) -> list[str]:
    """Mark failed every STARTED run whose process is gone; returns their ids. A run found
    without a live lease is looked at again `confirm_after` seconds later, so that a run that was
    just finishing (its lease released, its success not yet recorded) is not failed."""
    now = now or time.time()
    suspects = []
    for record in instance.get_run_records(RunsFilter(statuses=[DagsterRunStatus.STARTED])):
        written = record.dagster_run.tags.get(WAREHOUSE_TAG)
        if written is not None and os.path.abspath(written) != os.path.abspath(warehouse):
            continue  # a run of another warehouse on the same instance: its lease is there, not here
        state = leases.lease_state(warehouse, record.dagster_run.run_id)
        started = record.start_time or record.create_timestamp.timestamp()
        # a run without the tag (an ad-hoc materialization, a run from before the tag) is judged here: `in_flight` waits for it
        if state == leases.FREE or (state == leases.MISSING and now - started > DEAD_AFTER_SECONDS):
            suspects.append(record.dagster_run.run_id)
    if suspects and confirm_after:
        time.sleep(confirm_after)
    dead = []
    for run_id in suspects:
        run = instance.get_run_by_id(run_id)
        state = leases.lease_state(warehouse, run_id)
        if run is None or run.status != DagsterRunStatus.STARTED or state == leases.HELD:
            continue
        instance.report_run_failed(run, f"run process is gone (lease {state}); its work is requested again")
        leases.forget(warehouse, run_id)
        dead.append(run_id)
    return dead


def in_flight(instance) -> list[str]:
    """Runs of this instance not yet finished, whatever their job (a UI materialization too)."""
    return [r.run_id for r in instance.get_runs(RunsFilter(statuses=IN_FLIGHT))]


def attempt_and_wait(instance, work: Work, now: float | None = None) -> tuple[int, float]:
    """(the attempt a new run of `work` would be, seconds still to wait before it may start).
    Runs are counted, not listed: the attempt (part of the run key, which the daemon skips once
    used) goes on growing however many runs failed."""
    now = now or time.time()
    attempts = instance.get_runs_count(RunsFilter(tags={WORK_TAG: work.key}))
    failed = RunsFilter(tags={WORK_TAG: work.key}, statuses=[DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED])
    failures = instance.get_runs_count(failed)
    if not failures:
        return attempts + 1, 0.0
    latest = max(r.end_time or r.create_timestamp.timestamp() for r in instance.get_run_records(failed, limit=1))
    backoff = min(BACKOFF_FIRST * 2 ** min(failures - 1, 20), BACKOFF_MAX)
    return attempts + 1, max(0.0, latest + backoff - now)


def evaluate_drop_sensor(context: SensorEvaluationContext, paths: LineagePaths) -> SensorResult | SkipReason:
    instance = context.instance
    dead = fail_dead_runs(instance, paths.warehouse)
    if dead:
        context.log.warning(f"marked failed, their processes are gone: {dead}")
    busy = in_flight(instance)
    if busy:
        return SkipReason(f"waiting for run(s) in flight: {busy[:3]}")
    work, why = next_work(paths, context.log)
    if work is None:
        return SkipReason(why)
    attempt, wait = attempt_and_wait(instance, work)
    if wait > 0:
        return SkipReason(f"{work.key} failed before (attempt {attempt - 1}); retrying in {wait:.0f}s")
    context.log.info(f"requesting {work.job} for {work.key} (attempt {attempt}): {why}")
    selection = [AssetKey(name) for name in work.assets] or None
    return SensorResult(run_requests=[RunRequest(
        run_key=f"{work.key}#{attempt}", job_name=work.job, tags={**work.tags(), WAREHOUSE_TAG: paths.warehouse}, asset_selection=selection,
    )])


def build_sensor(jobs):
    @sensor(
        name="event_drop_sensor",
        jobs=jobs,
        minimum_interval_seconds=30,
        default_status=DefaultSensorStatus.RUNNING,
        description="Watches LINEAGE_DROP_DIR and the warehouse's pending work: new or grown files become a "
        "landing batch; days they touched become one events + fold run; then the snapshot. One run at a time; "
        "failed work is retried with backoff; runs whose process died are marked failed.",
    )
    def event_drop_sensor(context: SensorEvaluationContext, paths: LineagePaths):
        return evaluate_drop_sensor(context, paths)

    return event_drop_sensor
