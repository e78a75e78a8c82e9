"""`event_drop_sensor`: new drops -> intake runs; ingested drops -> runs of the days they touch.

The cursor remembers, per drop file, (size, mtime, sha256), the storage id of the last intake
materialization it has turned into day runs, and the days that are held because they lie in
the future. The set of registered drop partitions is the durable registry: a drop whose key
(path + content hash) is registered is never requested again, even with a fresh cursor.
"""


import datetime as dt
import json
from dataclasses import dataclass, field

from dagster import (
    AssetKey,
    AssetRecordsFilter,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from lineage_assets.defs.partitions import DROPS, drop_partitions
from lineage_assets.defs.resources import LineagePaths
from lineage_assets.intake.drop_folder import scan_drop_folder

INTAKE_JOB = "intake_job"
DAILY_JOB = "daily_job"
SNAPSHOT_JOB = "snapshot_job"
LANDED = AssetKey("landed_events")
EVENTS = AssetKey("events")
RUN_LINEAGE = AssetKey("run_lineage")
CURRENT_LINEAGE = AssetKey("current_lineage")
_FINISHED = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}


@dataclass
class DropSensorCursor:
    files: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    after_storage_id: int = 0
    held_days: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str | None) -> "DropSensorCursor":
        if not text:
            return cls()
        data = json.loads(text)
        return cls(
            files={k: tuple(v) for k, v in data.get("files", {}).items()},
            after_storage_id=int(data.get("after_storage_id", 0)),
            held_days=list(data.get("held_days", [])),
        )

    def dump(self) -> str:
        return json.dumps(
            {"files": self.files, "after_storage_id": self.after_storage_id, "held_days": sorted(self.held_days)},
            sort_keys=True,
        )


def contiguous_ranges(days: list[str]) -> list[tuple[str, str]]:
    """Sorted ISO days -> [(first, last)] of runs of consecutive days."""
    ranges: list[tuple[str, str]] = []
    for day in sorted(set(days)):
        if ranges and dt.date.fromisoformat(day) - dt.date.fromisoformat(ranges[-1][1]) == dt.timedelta(days=1):
            ranges[-1] = (ranges[-1][0], day)
        else:
            ranges.append((day, day))
    return ranges


def day_run_request(first: str, last: str, reason: str) -> RunRequest:
    """One run over a range of days (the daily assets use the single-run backfill policy)."""
    return RunRequest(
        run_key=f"days:{first}:{last}:{reason}",
        job_name=DAILY_JOB,
        tags={ASSET_PARTITION_RANGE_START_TAG: first, ASSET_PARTITION_RANGE_END_TAG: last},
    )


def evaluate_drop_sensor(context: SensorEvaluationContext, paths: LineagePaths) -> SensorResult:
    cursor = DropSensorCursor.parse(context.cursor)
    instance = context.instance

    # 1. New or changed drop files -> drop partitions + intake runs.
    changed, cursor.files = scan_drop_folder(paths.drop_dir, cursor.files, context.log)
    registered = set(instance.get_dynamic_partitions(DROPS))
    new_keys = []
    for drop in changed:
        if drop.key not in registered and drop.key not in new_keys:
            new_keys.append(drop.key)
    run_requests = [RunRequest(run_key=f"intake:{key}", job_name=INTAKE_JOB, partition_key=key) for key in new_keys]

    # 2. Intake materializations of finished, successful runs -> the days their events fall in.
    days = set(cursor.held_days)
    touched: dict[str, int] = {}  # day -> storage id of the newest intake that staged events on it
    result = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=LANDED, after_storage_id=cursor.after_storage_id or None),
        limit=1000,
        ascending=True,
    )
    last_id = cursor.after_storage_id
    for record in result.records:
        run = instance.get_run_by_id(record.run_id)
        if run is not None and run.status not in _FINISHED:
            break  # its blocking checks have not run yet: wait for the run to end
        last_id = record.storage_id
        if run is None or run.status != DagsterRunStatus.SUCCESS:
            context.log.warning(f"intake run {record.run_id} did not succeed; its days are not requested")
            continue
        materialization = record.asset_materialization
        entry = materialization.metadata.get("event_dates") if materialization else None
        for day in entry.value if entry is not None else []:
            touched[day] = max(touched.get(day, 0), record.storage_id)
    cursor.after_storage_id = last_id
    # A day whose `events` partition was materialized after the intake that touched it is done
    # (e.g. by `lineage-assets ingest`, which keeps its own cursor on the same instance).
    for day, storage_id in touched.items():
        latest = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=EVENTS, asset_partitions=[day], after_storage_id=storage_id), limit=1
        )
        if not latest.records:
            days.add(day)

    today = dt.datetime.now(dt.timezone.utc).date().isoformat()
    ready = sorted(d for d in days if paths.start_date <= d <= today)
    cursor.held_days = sorted(d for d in days if d > today)
    if ready:
        # The fold carries state from day to day: a day that changes is recomputed together with
        # every later day already processed, in order, in one run.
        processed = instance.get_materialized_partitions(RUN_LINEAGE)
        last = max([ready[-1], *[d for d in processed if d <= today]])
        run_requests.append(day_run_request(ready[0], last, f"after{last_id}"))

    # 3. A successful fold newer than the published current graph -> a new snapshot.
    snapshot = _snapshot_request(instance)
    if snapshot is not None and not ready:
        run_requests.append(snapshot)
    if cursor.held_days:
        context.log.info(f"holding future days until they exist: {cursor.held_days}")
    return SensorResult(
        run_requests=run_requests,
        dynamic_partitions_requests=[_add_drops(new_keys)] if new_keys else [],
        cursor=cursor.dump(),
    )


def _snapshot_request(instance) -> RunRequest | None:
    latest_fold = instance.fetch_materializations(RUN_LINEAGE, limit=1)
    if not latest_fold.records:
        return None
    record = latest_fold.records[0]
    run = instance.get_run_by_id(record.run_id)
    if run is None or run.status != DagsterRunStatus.SUCCESS:
        return None
    published = instance.fetch_materializations(CURRENT_LINEAGE, limit=1)
    if published.records and published.records[0].storage_id > record.storage_id:
        return None
    return RunRequest(run_key=f"snapshot:{record.storage_id}", job_name=SNAPSHOT_JOB)


def _add_drops(keys: list[str]):
    return drop_partitions().build_add_request(keys)


def build_sensor(jobs):
    @sensor(
        name="event_drop_sensor",
        jobs=jobs,
        minimum_interval_seconds=30,
        default_status=DefaultSensorStatus.RUNNING,
        description="Watches LINEAGE_DROP_DIR: new drops become intake runs; ingested drops become "
        "runs of the daily partitions their events fall in.",
    )
    def event_drop_sensor(context: SensorEvaluationContext, paths: LineagePaths):
        return evaluate_drop_sensor(context, paths)

    return event_drop_sensor
