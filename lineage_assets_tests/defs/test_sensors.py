"""The drop sensor (evaluated against an ephemeral instance, on warehouses built without Spark)
and the Spark settings from the environment."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest
from dagster import (
    DagsterInstance,
    DagsterRunStatus,
    RunsFilter,
    SensorResult,
    SkipReason,
    build_sensor_context,
)
from dagster._core.remote_origin import (
    RegisteredCodeLocationOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)
from dagster._core.test_utils import create_run_for_test

from lineage_assets.defs import sensors
from lineage_assets.defs.resources import (
    LineagePaths,
    TASK_TRIES,
    local_tries,
    parse_spark_conf,
    spark_conf_from_env,
)
from lineage_assets.defs.sensors import (
    DAILY_JOB,
    DEAD_AFTER_SECONDS,
    FOLD_ASSETS,
    INTAKE_JOB,
    SNAPSHOT_JOB,
    WAREHOUSE_TAG,
    WORK_TAG,
    Work,
    attempt_and_wait,
    evaluate_drop_sensor,
    fail_dead_runs,
)
from lineage_assets.intake.ledger import changed_files, updated
from lineage_assets.intake.read_plan import plan_reads
from lineage_assets.pipeline import events as events_module
from lineage_assets.pipeline import fold as fold_module
from lineage_assets.pipeline import landing as landing_module
from lineage_assets.pipeline import progress
from lineage_assets.pipeline import snapshot as snapshot_module
from lineage_assets.pipeline.landing import read_ledger
from lineage_assets.warehouse import commits, leases, tables

REPO = Path(__file__).resolve().parents[2]
RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"
FUTURE = "2999-01-01"  # never within [start date, today]
EVENT = b'{"eventTime": "2024-03-01T10:00:00Z", "producer": "p", "job": {"namespace": "n", "name": "j"}}\n'


# --- helpers -------------------------------------------------------------------------------------


@pytest.fixture
def instance():
    with DagsterInstance.ephemeral() as inst:
        yield inst


@pytest.fixture
def paths(tmp_path):
    (tmp_path / "drops").mkdir()
    return LineagePaths(drop_dir=str(tmp_path / "drops"), warehouse=str(tmp_path / "wh"), start_date="2020-01-01")


def evaluate(instance, paths):
    return evaluate_drop_sensor(build_sensor_context(instance=instance), paths)


def requested(result) -> list[tuple[str, str, dict]]:
    """(job, run key, tags) of each request; the sensor keeps no cursor. Every request names the
    warehouse it writes (taken out of the tags here); an asset selection is shown as "(assets)"."""
    assert isinstance(result, SensorResult), result
    assert result.cursor is None
    out = []
    for r in result.run_requests:
        tags = dict(r.tags)
        assert tags.pop(WAREHOUSE_TAG)
        if r.asset_selection:
            tags["(assets)"] = [key.to_user_string() for key in r.asset_selection]
        out.append((r.job_name, r.run_key, tags))
    return out


def skipped(result) -> str:
    assert isinstance(result, SkipReason), result
    return result.skip_message


def landing(seq: int, attempt: int = 1):
    key = f"landing:{seq}"
    return (INTAKE_JOB, f"{key}#{attempt}", {WORK_TAG: key})


def days(first: str, last: str, seq: int, attempt: int = 1):
    key = f"days:{first}:{last}:{seq}"
    return (DAILY_JOB, f"{key}#{attempt}", {WORK_TAG: key, RANGE_START: first, RANGE_END: last})


def fold(first: str, last: str, seq: int, attempt: int = 1):
    """The fold alone (its `events` are built): the daily job with the fold selected."""
    key = f"fold:{first}:{last}:{seq}"
    return (DAILY_JOB, f"{key}#{attempt}", {WORK_TAG: key, RANGE_START: first, RANGE_END: last, "(assets)": list(FOLD_ASSETS)})


def snapshot(seq: int, attempt: int = 1):
    key = f"snapshot:{seq}"
    return (SNAPSHOT_JOB, f"{key}#{attempt}", {WORK_TAG: key})


def commit(paths, ledger=None, props=None, operation: str = "test") -> commits.Commit:
    """A commit of the ledger (when given) and of the progress properties, without Spark, as
    `operation` (the sensor looks first at the stage after the latest commit's)."""
    with commits.Transaction(paths.warehouse, operation) as txn:
        if ledger is not None:
            rows = [state.as_row() for _path, state in sorted(ledger.items())]
            txn.stage_arrow(pa.Table.from_pylist(rows), tables.DROP_LEDGER)
        return txn.commit({"test": True}, props=props)


def no_spark():
    raise AssertionError("a landing batch without anything to read asked for a Spark session")


def land(paths, event_days=()) -> commits.Commit:
    """What a landing batch commits: the ledger rows of everything new in the drop folder (as
    `plan_reads` computes them) and the days its events fall in."""
    base = commits.latest(paths.warehouse)
    ledger = read_ledger(base)
    changes = changed_files(paths.drop_dir, ledger)
    assert changes, "nothing new to land"
    _units, reads = plan_reads(paths.drop_dir, changes, f"batch-{base.seq + 1}")
    return commit(paths, updated(ledger, [r.state for r in reads]), progress.after_landing(base, event_days), landing_module.OPERATION)


def make_run(instance, job: str, status: DagsterRunStatus, tags: dict | None = None):
    """A run of `job` in `status` (a queued run needs where its job comes from: a stand-in)."""
    origin = RemoteJobOrigin(RemoteRepositoryOrigin(RegisteredCodeLocationOrigin("lineage_assets"), "__repository__"), job)
    return create_run_for_test(instance, job_name=job, status=status, tags=tags, remote_job_origin=origin)


def run_status(instance, run_id) -> DagsterRunStatus:
    return instance.get_run_by_id(run_id).status


def lease_file(paths, run_id) -> Path:
    return Path(paths.warehouse) / "_runs" / f"{run_id}.lease"


_LEASE_TAKER = textwrap.dedent(
    """
    import sys, time
    from lineage_assets.warehouse import leases
    leases.take(sys.argv[1], sys.argv[2])
    print("taken", flush=True)
    if sys.argv[3] == "hold":
        time.sleep(600)
    """
)


@pytest.fixture
def lease_taker():
    """take(root, run_id, hold): another process takes the run's lease and holds it until the end
    of the test (hold=True) or exits at once, leaving the lease file free (hold=False)."""
    started: list[subprocess.Popen] = []

    def take(root: str, run_id: str, hold: bool) -> subprocess.Popen:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        proc = subprocess.Popen(
            [sys.executable, "-c", _LEASE_TAKER, root, run_id, "hold" if hold else "exit"],
            stdout=subprocess.PIPE, text=True, env=env, cwd=str(REPO),
        )
        started.append(proc)
        assert proc.stdout.readline().strip() == "taken"
        if not hold:
            assert proc.wait(timeout=60) == 0
        return proc

    yield take
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=60)
        proc.stdout.close()


# --- landing: the drop folder against the committed ledger ------------------------------------------


def test_empty_warehouse_and_drop_folder_give_nothing(instance, paths):
    assert commits.latest(paths.warehouse).seq == 0  # no commit yet: an empty one
    assert skipped(evaluate(instance, paths)) == "nothing to do"
    assert instance.get_runs() == []


def test_new_file_gives_one_landing_run(instance, paths, tmp_path):
    (tmp_path / "drops" / "a.ndjson").write_bytes(EVENT)
    assert requested(evaluate(instance, paths)) == [landing(0)]


def test_file_in_the_committed_ledger_is_not_landed_again(instance, paths, tmp_path):
    (tmp_path / "drops" / "a.ndjson").write_bytes(EVENT)
    (tmp_path / "drops" / "sub").mkdir()
    (tmp_path / "drops" / "sub" / "b.ndjson").write_bytes(EVENT + EVENT)
    assert requested(evaluate(instance, paths)) == [landing(0)]
    base = commit(paths, props={progress.FOLD_THROUGH: "2024-01-01"})  # a commit without the ledger changes nothing
    assert requested(evaluate(instance, paths)) == [landing(base.seq)]
    landed = land(paths)
    assert sorted(read_ledger(landed)) == ["a.ndjson", "sub/b.ndjson"]
    assert skipped(evaluate(instance, paths)) == "nothing to do"


def test_a_touched_file_asks_for_one_landing_that_refreshes_the_ledger_then_nothing(instance, paths, tmp_path):
    """A file whose mtime moved with nothing new is not read again; one landing batch commits its
    refreshed ledger row (the ledger alone), after which looks take it as unchanged (without it,
    every look would fingerprint the file again, forever)."""
    (tmp_path / "drops" / "a.ndjson").write_bytes(EVENT)
    landed = land(paths)
    assert skipped(evaluate(instance, paths)) == "nothing to do"
    os.utime(tmp_path / "drops" / "a.ndjson", ns=(1, 1))  # touched, nothing new
    result = evaluate(instance, paths)
    assert requested(result) == [landing(landed.seq)]
    report = landing_module.land_batch(no_spark, paths.warehouse, paths.drop_dir, dt.date(2020, 1, 1), lambda _m: None)
    assert (report.files, report.ledger_refreshed, report.commit_seq) == ([], 1, landed.seq + 1)
    after = commits.latest(paths.warehouse)
    assert read_ledger(after)["a.ndjson"].mtime_ns == 1 and after.props == landed.props
    assert skipped(evaluate(instance, paths)) == "nothing to do"


def test_grown_file_is_landed_again(instance, paths, tmp_path):
    path = tmp_path / "drops" / "a.ndjson"
    path.write_bytes(EVENT)
    landed = land(paths)
    assert skipped(evaluate(instance, paths)) == "nothing to do"
    with open(path, "ab") as handle:
        handle.write(EVENT.replace(b"10:00:00", b"11:00:00"))
    assert requested(evaluate(instance, paths)) == [landing(landed.seq)]


def test_new_file_beside_a_landed_one_is_landed(instance, paths, tmp_path):
    (tmp_path / "drops" / "a.ndjson").write_bytes(EVENT)
    landed = land(paths)
    (tmp_path / "drops" / "b.ndjson").write_bytes(EVENT)
    assert requested(evaluate(instance, paths)) == [landing(landed.seq)]


def test_ignored_names_give_nothing(instance, paths, tmp_path):
    drops = tmp_path / "drops"
    (drops / "a.ndjson.tmp").write_bytes(EVENT)
    (drops / "b.json.partial").write_bytes(EVENT)
    (drops / ".hidden.ndjson").write_bytes(EVENT)
    (drops / ".staging").mkdir()
    (drops / ".staging" / "c.ndjson").write_bytes(EVENT)
    assert skipped(evaluate(instance, paths)) == "nothing to do"
    (drops / "d.ndjson").write_bytes(EVENT)  # the same folder with one real drop
    assert requested(evaluate(instance, paths)) == [landing(0)]


def test_missing_drop_folder_gives_nothing_but_pending_work_still_runs(instance, tmp_path):
    paths = LineagePaths(drop_dir=str(tmp_path / "nope"), warehouse=str(tmp_path / "wh"), start_date="2020-01-01")
    assert skipped(evaluate(instance, paths)) == "nothing to do"
    base = commit(paths, props={progress.EVENT_DAYS: ["2024-03-01"]})
    assert requested(evaluate(instance, paths)) == [days("2024-03-01", "2024-03-01", base.seq)]


# --- events, fold and snapshot: the progress properties of the latest commit -------------------------


def test_pending_event_days_give_one_daily_run_over_their_range(instance, paths):
    base = commit(paths, props={progress.EVENT_DAYS: ["2024-03-05", "2024-03-01", "2024-03-03"]})
    assert requested(evaluate(instance, paths)) == [days("2024-03-01", "2024-03-05", base.seq)]


def test_daily_run_extends_to_the_last_folded_day(instance, paths):
    base = commit(paths, props={progress.EVENT_DAYS: ["2024-03-01", "2024-03-02"], progress.FOLD_THROUGH: "2024-03-10"})
    assert requested(evaluate(instance, paths)) == [days("2024-03-01", "2024-03-10", base.seq)]
    # a fold that ended before the last pending day does not shorten the range
    base = commit(paths, props={progress.EVENT_DAYS: ["2024-03-01", "2024-03-12"], progress.FOLD_THROUGH: "2024-03-10"})
    assert requested(evaluate(instance, paths)) == [days("2024-03-01", "2024-03-12", base.seq)]


def test_future_days_are_held_and_past_ones_requested(instance, paths):
    base = commit(paths, props={progress.EVENT_DAYS: ["2024-03-01", "2024-03-02", FUTURE]})
    assert requested(evaluate(instance, paths)) == [days("2024-03-01", "2024-03-02", base.seq)]
    commit(paths, props={progress.EVENT_DAYS: [FUTURE]})
    assert skipped(evaluate(instance, paths)) == "nothing to do"


def test_today_is_not_held(instance, paths):
    for _attempt in range(2):  # an evaluation across midnight (UTC) is done again on the new day
        today = str(time.strftime("%Y-%m-%d", time.gmtime()))
        base = commit(paths, props={progress.EVENT_DAYS: [today, FUTURE]})
        result = evaluate(instance, paths)
        if str(time.strftime("%Y-%m-%d", time.gmtime())) == today:
            break
    assert requested(result) == [days(today, today, base.seq)]


def test_days_before_the_start_date_are_not_requested(instance, paths):
    base = commit(paths, props={progress.EVENT_DAYS: ["2019-12-31", "2020-01-01", "2020-01-02"]})
    assert requested(evaluate(instance, paths)) == [days("2020-01-01", "2020-01-02", base.seq)]
    commit(paths, props={progress.EVENT_DAYS: ["2019-06-30", "2019-12-31"]})
    assert skipped(evaluate(instance, paths)) == "nothing to do"


def test_fold_from_without_event_days_gives_a_daily_run_from_it(instance, paths):
    base = commit(paths, props={progress.FOLD_FROM: "2024-03-02", progress.FOLD_THROUGH: "2024-03-09"})
    assert requested(evaluate(instance, paths)) == [fold("2024-03-02", "2024-03-09", base.seq)]
    base = commit(paths, props={progress.FOLD_FROM: "2024-03-02", progress.FOLD_THROUGH: None})  # never folded yet
    assert requested(evaluate(instance, paths)) == [fold("2024-03-02", "2024-03-02", base.seq)]


def test_fold_is_not_requested_for_held_days_alone(instance, paths):
    # only future days pending, but the fold is behind: the fold runs (the held days wait)
    base = commit(paths, props={progress.EVENT_DAYS: [FUTURE], progress.FOLD_FROM: "2024-03-02", progress.FOLD_THROUGH: "2024-03-04"})
    assert requested(evaluate(instance, paths)) == [fold("2024-03-02", "2024-03-04", base.seq)]


def test_stale_snapshot_only_gives_a_snapshot_run(instance, paths):
    base = commit(paths, props={progress.SNAPSHOT_STALE: True, progress.FOLD_THROUGH: "2024-03-09"})
    assert requested(evaluate(instance, paths)) == [snapshot(base.seq)]


def test_nothing_pending_gives_a_skip(instance, paths):
    commit(paths, props={progress.EVENT_DAYS: [], progress.FOLD_FROM: None, progress.FOLD_THROUGH: "2024-03-09",
                         progress.SNAPSHOT_STALE: None})
    assert skipped(evaluate(instance, paths)) == "nothing to do"
    assert instance.get_runs() == []


def test_new_files_come_before_pending_days(instance, paths, tmp_path):
    base = commit(paths, props={progress.EVENT_DAYS: ["2024-03-01"], progress.FOLD_FROM: "2024-02-01",
                                progress.SNAPSHOT_STALE: True})
    (tmp_path / "drops" / "a.ndjson").write_bytes(EVENT)
    assert requested(evaluate(instance, paths)) == [landing(base.seq)]


def test_events_come_before_the_fold_and_the_fold_before_the_snapshot(instance, paths):
    base = commit(paths, props={progress.EVENT_DAYS: ["2024-03-03"], progress.FOLD_FROM: "2024-03-01",
                                progress.FOLD_THROUGH: "2024-03-05", progress.SNAPSHOT_STALE: True})
    # the fold is behind from 03-01: the events run of 03-03 folds from 03-01
    assert requested(evaluate(instance, paths)) == [days("2024-03-01", "2024-03-05", base.seq)]
    base = commit(paths, props={progress.EVENT_DAYS: []})
    assert requested(evaluate(instance, paths)) == [fold("2024-03-01", "2024-03-05", base.seq)]


def events_commit(paths, built: list[str]) -> commits.Commit:
    """What an `events` commit of `built` days does, without Spark: their `events` partitions
    (one row each) and `progress.after_events`."""
    base = commits.latest(paths.warehouse)
    with commits.Transaction(paths.warehouse, events_module.OPERATION) as txn:
        rows = pa.table({"event_id": [f"e-{d}" for d in built], "event_date": [dt.date.fromisoformat(d) for d in built]})
        txn.stage_arrow(rows, tables.EVENTS, replace=lambda p: p["event_date"] in built)
        return txn.commit({"test": True}, props=progress.after_events(base, built))


def fold_commit(paths, first: str, last: str) -> commits.Commit:
    base = commits.latest(paths.warehouse)
    return commit(paths, props=progress.after_fold(base, dt.date.fromisoformat(first), dt.date.fromisoformat(last)), operation=fold_module.OPERATION)


def test_a_whole_cycle_driven_by_the_commits(instance, paths, tmp_path):
    """Each commit of the work the sensor asked for moves it to the next piece, as the assets do."""
    (tmp_path / "drops" / "a.ndjson").write_bytes(EVENT)
    assert requested(evaluate(instance, paths)) == [landing(0)]
    base = land(paths, ["2024-03-01", "2024-03-02"])
    assert requested(evaluate(instance, paths)) == [days("2024-03-01", "2024-03-02", base.seq)]
    events_commit(paths, ["2024-03-01", "2024-03-02"])
    base = fold_commit(paths, "2024-03-01", "2024-03-02")
    assert requested(evaluate(instance, paths)) == [snapshot(base.seq)]
    commit(paths, props=progress.after_snapshot())
    assert skipped(evaluate(instance, paths)) == "nothing to do"
    # late data for a folded day: its events, then the fold through the last folded day
    (tmp_path / "drops" / "b.ndjson").write_bytes(EVENT)
    assert requested(evaluate(instance, paths)) == [landing(base.seq + 1)]
    base = land(paths, ["2024-03-01"])
    assert requested(evaluate(instance, paths)) == [days("2024-03-01", "2024-03-02", base.seq)]


def test_a_file_that_grows_on_every_tick_does_not_starve_the_rest(instance, paths, tmp_path):
    """Stages take turns: after a landing batch, the days it touched; after the fold, the
    snapshot; after the snapshot, the drop folder again, though it had grown all along."""
    listener = tmp_path / "drops" / "listener.ndjson"

    def grow() -> None:
        with open(listener, "ab") as handle:
            handle.write(EVENT)

    grow()
    assert requested(evaluate(instance, paths)) == [landing(0)]
    base = land(paths, ["2024-03-01"])
    grow()
    assert requested(evaluate(instance, paths)) == [days("2024-03-01", "2024-03-01", base.seq)]
    events_commit(paths, ["2024-03-01"])
    base = fold_commit(paths, "2024-03-01", "2024-03-01")
    grow()
    assert requested(evaluate(instance, paths)) == [snapshot(base.seq)]
    base = commit(paths, props=progress.after_snapshot(), operation=snapshot_module.OPERATION)
    assert requested(evaluate(instance, paths)) == [landing(base.seq)]
    base = land(paths, ["2024-03-02"])
    assert requested(evaluate(instance, paths)) == [days("2024-03-02", "2024-03-02", base.seq)]
    base = commit(paths, props=progress.after_snapshot(), operation="test")  # not a stage's commit: pipeline order
    grow()
    assert requested(evaluate(instance, paths)) == [landing(base.seq)]


def test_a_fold_that_failed_after_its_events_is_retried_through_every_built_day(instance, paths, tmp_path):
    """The daily run commits `events`, then its fold fails: the fold retry must reach the last
    day whose events were built, not stop at the day folded through before."""
    (tmp_path / "drops" / "a.ndjson").write_bytes(EVENT)
    land(paths, ["2024-03-01", "2024-03-02"])
    base = events_commit(paths, ["2024-03-01", "2024-03-02"])  # ... and the fold of that run failed
    pending = progress.Pending.of(base)
    assert (pending.event_days, pending.fold_from, pending.fold_through) == ((), "2024-03-01", None)
    assert requested(evaluate(instance, paths)) == [fold("2024-03-01", "2024-03-02", base.seq)]
    # the same with days folded before: events of 03-01..03-08 built, the fold had reached 03-05
    fold_commit(paths, "2024-03-01", "2024-03-05")
    base = events_commit(paths, ["2024-03-04", "2024-03-08"])
    assert requested(evaluate(instance, paths)) == [fold("2024-03-04", "2024-03-08", base.seq)]


# --- one run at a time ---------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [DagsterRunStatus.QUEUED, DagsterRunStatus.STARTED, DagsterRunStatus.NOT_STARTED])
@pytest.mark.parametrize("job", [INTAKE_JOB, DAILY_JOB, SNAPSHOT_JOB])
def test_a_run_in_flight_blocks_every_request(instance, paths, tmp_path, status, job):
    (tmp_path / "drops" / "a.ndjson").write_bytes(EVENT)
    commit(paths, props={progress.EVENT_DAYS: ["2024-03-01"], progress.SNAPSHOT_STALE: True})
    run = make_run(instance, job, status)
    message = skipped(evaluate(instance, paths))
    assert "in flight" in message and run.run_id in message
    assert [r.run_id for r in instance.get_runs()] == [run.run_id]  # nothing requested, nothing failed
    assert run_status(instance, run.run_id) == status


@pytest.mark.parametrize("status", [DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED])
def test_finished_runs_do_not_block(instance, paths, tmp_path, status):
    (tmp_path / "drops" / "a.ndjson").write_bytes(EVENT)
    make_run(instance, INTAKE_JOB, status, {WORK_TAG: "landing:earlier"})
    assert requested(evaluate(instance, paths)) == [landing(0)]


def test_a_run_of_any_job_blocks(instance, paths, tmp_path):
    """A materialization started from the UI (another job) writes the warehouse too."""
    (tmp_path / "drops" / "a.ndjson").write_bytes(EVENT)
    run = make_run(instance, "__ASSET_JOB", DagsterRunStatus.STARTED)
    message = skipped(evaluate(instance, paths))
    assert "in flight" in message and run.run_id in message


# --- dead runs --------------------------------------------------------------------------------------------


def test_started_run_with_a_free_lease_is_failed_and_its_work_retried_after_a_backoff(instance, paths, tmp_path, lease_taker):
    (tmp_path / "drops" / "a.ndjson").write_bytes(EVENT)
    run = make_run(instance, INTAKE_JOB, DagsterRunStatus.STARTED, {WORK_TAG: "landing:0"})
    lease_taker(paths.warehouse, run.run_id, hold=False)  # the run's process died holding its lease
    assert lease_file(paths, run.run_id).exists()
    assert leases.lease_state(paths.warehouse, run.run_id) == leases.FREE
    message = skipped(evaluate(instance, paths))
    assert run_status(instance, run.run_id) == DagsterRunStatus.FAILURE
    assert not lease_file(paths, run.run_id).exists()
    # the dead run was attempt 1 of the landing: retried after the first backoff
    assert "landing:0" in message and "retrying" in message and "attempt 1" in message
    assert len(instance.get_runs()) == 1


def test_started_run_whose_lease_is_held_by_a_live_process_is_left_alone(instance, paths, tmp_path, lease_taker):
    (tmp_path / "drops" / "a.ndjson").write_bytes(EVENT)
    run = make_run(instance, DAILY_JOB, DagsterRunStatus.STARTED)
    holder = lease_taker(paths.warehouse, run.run_id, hold=True)
    assert leases.lease_state(paths.warehouse, run.run_id) == leases.HELD
    # however long ago it started
    assert fail_dead_runs(instance, paths.warehouse, now=time.time() + 10 * DEAD_AFTER_SECONDS, confirm_after=0) == []
    message = skipped(evaluate(instance, paths))
    assert "in flight" in message and run.run_id in message
    assert run_status(instance, run.run_id) == DagsterRunStatus.STARTED
    assert lease_file(paths, run.run_id).exists() and holder.poll() is None
    # once its holder is gone the lease is free and the run is failed
    holder.kill()
    holder.wait(timeout=60)
    assert fail_dead_runs(instance, paths.warehouse, confirm_after=0) == [run.run_id]
    assert run_status(instance, run.run_id) == DagsterRunStatus.FAILURE
    assert not lease_file(paths, run.run_id).exists()


def test_started_run_without_a_lease_is_failed_only_once_it_started_long_ago(instance, paths):
    run = make_run(instance, SNAPSHOT_JOB, DagsterRunStatus.STARTED, tags={WAREHOUSE_TAG: paths.warehouse})
    assert leases.lease_state(paths.warehouse, run.run_id) == leases.MISSING
    started = instance.get_run_records(RunsFilter(run_ids=[run.run_id]))[0].create_timestamp.timestamp()
    assert fail_dead_runs(instance, paths.warehouse, now=started + DEAD_AFTER_SECONDS - 1, confirm_after=0) == []  # still starting up
    assert run_status(instance, run.run_id) == DagsterRunStatus.STARTED
    assert fail_dead_runs(instance, paths.warehouse, now=started + DEAD_AFTER_SECONDS + 1, confirm_after=0) == [run.run_id]
    assert run_status(instance, run.run_id) == DagsterRunStatus.FAILURE
    assert fail_dead_runs(instance, paths.warehouse, now=started + 10 * DEAD_AFTER_SECONDS, confirm_after=0) == []  # failed once


def test_a_live_run_of_another_warehouse_on_the_same_instance_is_left_alone(instance, paths, lease_taker, tmp_path):
    """`make dev` and `lineage-assets ingest --warehouse W` share `.dagster_home`: a run of W has
    its lease in W, so it is no lease here. Runs say which warehouse they write; only a run of
    this one, or one that took a lease here, is judged by this warehouse's leases."""
    other_wh = str(tmp_path / "other_wh")
    theirs = make_run(instance, DAILY_JOB, DagsterRunStatus.STARTED, tags={WAREHOUSE_TAG: other_wh})
    lease_taker(other_wh, theirs.run_id, hold=True)
    later = time.time() + 10 * DEAD_AFTER_SECONDS
    assert fail_dead_runs(instance, paths.warehouse, now=later, confirm_after=0) == []
    assert run_status(instance, theirs.run_id) == DagsterRunStatus.STARTED
    assert fail_dead_runs(instance, other_wh, now=later, confirm_after=0) == []  # held where it writes
    # a run without the tag (an ad-hoc materialization, a run from before the tag) is still judged here: the
    # sensor waits for every run in flight, so one left STARTED with no lease must be failed, or nothing runs again
    untagged = make_run(instance, "__ASSET_JOB", DagsterRunStatus.STARTED)
    assert fail_dead_runs(instance, paths.warehouse, now=later, confirm_after=0) == [untagged.run_id]


def test_dead_runs_of_any_job_are_failed_and_runs_not_started_left_alone(instance, paths, lease_taker):
    other = make_run(instance, "__ASSET_JOB", DagsterRunStatus.STARTED)
    lease_taker(paths.warehouse, other.run_id, hold=False)
    queued = make_run(instance, INTAKE_JOB, DagsterRunStatus.QUEUED)
    lease_taker(paths.warehouse, queued.run_id, hold=False)
    assert fail_dead_runs(instance, paths.warehouse, now=time.time() + 10 * DEAD_AFTER_SECONDS, confirm_after=0) == [other.run_id]
    assert run_status(instance, other.run_id) == DagsterRunStatus.FAILURE
    assert run_status(instance, queued.run_id) == DagsterRunStatus.QUEUED
    assert not lease_file(paths, other.run_id).exists() and lease_file(paths, queued.run_id).exists()


def test_a_run_that_finishes_while_it_is_looked_at_is_not_failed(instance, paths, lease_taker, monkeypatch):
    """Its lease is released just before its success is recorded: the second look sees SUCCESS."""
    run = make_run(instance, INTAKE_JOB, DagsterRunStatus.STARTED)
    lease_taker(paths.warehouse, run.run_id, hold=False)
    from dagster._core.events import DagsterEvent, DagsterEventType

    def success_recorded(_seconds):
        event = DagsterEvent(event_type_value=DagsterEventType.PIPELINE_SUCCESS.value, job_name=run.job_name, message="done")
        instance.report_dagster_event(event, run_id=run.run_id)

    monkeypatch.setattr(sensors.time, "sleep", success_recorded)
    assert fail_dead_runs(instance, paths.warehouse) == []
    assert run_status(instance, run.run_id) == DagsterRunStatus.SUCCESS


# --- retries with backoff ---------------------------------------------------------------------------------


def failed_runs(instance, key: str, count: int, status=DagsterRunStatus.FAILURE) -> float:
    """`count` runs of `key` that failed (or were canceled); returns when the last one ended."""
    ended = []
    for _ in range(count):
        run = make_run(instance, INTAKE_JOB, DagsterRunStatus.STARTED, {WORK_TAG: key})
        if status == DagsterRunStatus.FAILURE:
            instance.report_run_failed(run, "test")
        else:
            instance.report_run_canceled(run, "test")
        record = instance.get_run_records(RunsFilter(run_ids=[run.run_id]))[0]
        assert record.dagster_run.status == status and record.end_time
        ended.append(record.end_time)
    return max(ended)


def at(monkeypatch, now: float) -> None:
    """The sensor's clock reads `now`."""
    monkeypatch.setattr(sensors, "time", SimpleNamespace(time=lambda: now))


def test_failed_work_waits_for_its_backoff_then_is_requested_as_the_next_attempt(instance, paths, tmp_path, monkeypatch):
    (tmp_path / "drops" / "a.ndjson").write_bytes(EVENT)
    ended = failed_runs(instance, "landing:0", 1)
    message = skipped(evaluate(instance, paths))  # within 30 s of the failure
    assert "landing:0" in message and "retrying" in message and "attempt 1" in message
    at(monkeypatch, ended + 29)
    assert "retrying in 1s" in skipped(evaluate(instance, paths))
    at(monkeypatch, ended + 30)
    assert requested(evaluate(instance, paths)) == [landing(0, attempt=2)]
    # a second failure doubles the wait
    ended = failed_runs(instance, "landing:0", 1)
    at(monkeypatch, ended + 59)
    assert "retrying in 1s" in skipped(evaluate(instance, paths))
    at(monkeypatch, ended + 60)
    assert requested(evaluate(instance, paths)) == [landing(0, attempt=3)]


@pytest.mark.parametrize("failures,backoff", [(1, 30), (2, 60), (3, 120), (4, 240), (7, 1920), (8, 3600), (9, 3600)])
def test_backoff_doubles_up_to_an_hour(instance, failures, backoff):
    work = Work(INTAKE_JOB, "landing:7")
    ended = failed_runs(instance, work.key, failures)
    assert attempt_and_wait(instance, work, now=ended) == (failures + 1, pytest.approx(backoff))
    assert attempt_and_wait(instance, work, now=ended + backoff - 1) == (failures + 1, pytest.approx(1.0))
    assert attempt_and_wait(instance, work, now=ended + backoff) == (failures + 1, 0.0)
    assert attempt_and_wait(instance, work, now=ended + backoff + 1000) == (failures + 1, 0.0)


def test_canceled_runs_count_as_failures(instance):
    work = Work(DAILY_JOB, "days:2024-03-01:2024-03-01:3", "2024-03-01", "2024-03-01")
    ended = failed_runs(instance, work.key, 2, status=DagsterRunStatus.CANCELED)
    assert attempt_and_wait(instance, work, now=ended) == (3, pytest.approx(60))


def test_attempts_count_runs_of_the_same_work_only(instance, paths, tmp_path):
    (tmp_path / "drops" / "a.ndjson").write_bytes(EVENT)
    # a landing that succeeded without committing (its file changed while read): no wait, next attempt
    make_run(instance, INTAKE_JOB, DagsterRunStatus.SUCCESS, {WORK_TAG: "landing:0"})
    # failures of other work (another commit, another job) do not hold this one back
    failed_runs(instance, "landing:1", 3)
    failed_runs(instance, "days:2024-03-01:2024-03-01:0", 1)
    assert attempt_and_wait(instance, Work(INTAKE_JOB, "landing:0")) == (2, 0.0)
    assert attempt_and_wait(instance, Work(INTAKE_JOB, "landing:9")) == (1, 0.0)
    assert requested(evaluate(instance, paths)) == [landing(0, attempt=2)]
    # every earlier run of the work counts for the attempt, only its failures for the wait
    ended = failed_runs(instance, "landing:0", 1)
    assert attempt_and_wait(instance, Work(INTAKE_JOB, "landing:0"), now=ended) == (3, pytest.approx(30))


def test_work_tags_carry_the_partition_range_of_daily_work_only():
    assert Work(DAILY_JOB, "k", "2024-03-01", "2024-03-04").tags() == {
        WORK_TAG: "k", RANGE_START: "2024-03-01", RANGE_END: "2024-03-04",
    }
    assert Work(SNAPSHOT_JOB, "s").tags() == {WORK_TAG: "s"}


# --- Spark settings ----------------------------------------------------------------------------------


def test_parse_spark_conf_json():
    conf = {"spark.executor.memory": "4g", "spark.sql.shuffle.partitions": 16, "spark.jars.packages": "a:b:1,c:d:2"}
    parsed = parse_spark_conf("  " + json.dumps(conf) + "\n")
    assert parsed == {"spark.executor.memory": "4g", "spark.sql.shuffle.partitions": "16", "spark.jars.packages": "a:b:1,c:d:2"}


def test_parse_spark_conf_pairs():
    assert parse_spark_conf("a=b;c=d") == {"a": "b", "c": "d"}
    assert parse_spark_conf(" spark.x = 1 ;\n spark.y=a=b ;;") == {"spark.x": "1", "spark.y": "a=b"}
    assert parse_spark_conf("") == {} and parse_spark_conf("  \n ") == {}


@pytest.mark.parametrize("text", ["a=b;oops", "=value", "a=b;c", '{"a": 1', "no-equals-sign"])
def test_parse_spark_conf_bad_item_raises(text):
    with pytest.raises(ValueError):
        parse_spark_conf(text)


def test_spark_conf_defaults():
    conf = spark_conf_from_env({})
    assert conf["spark.master"] == f"local[*,{TASK_TRIES}]"  # local mode with a cluster's task tries
    assert conf["spark.sql.session.timeZone"] == "UTC"
    assert "spark.driver.memory" in conf


def test_spark_conf_master_and_driver_memory_override():
    env = {"LINEAGE_SPARK_MASTER": "spark://host:7077", "LINEAGE_SPARK_DRIVER_MEMORY": "8g"}
    conf = spark_conf_from_env(env)
    assert conf["spark.master"] == "spark://host:7077"
    assert conf["spark.driver.memory"] == "8g"


def test_spark_conf_extra_keys_and_precedence():
    env = {
        "LINEAGE_SPARK_CONF": "spark.executor.memory=3g;my.custom.key=hello;spark.master=local[2]",
        "LINEAGE_SPARK_MASTER": "local[4]",
    }
    conf = spark_conf_from_env(env)
    assert conf["spark.executor.memory"] == "3g"
    assert conf["my.custom.key"] == "hello"
    # LINEAGE_SPARK_MASTER wins over LINEAGE_SPARK_CONF (and gets the task tries)
    assert conf["spark.master"] == f"local[4,{TASK_TRIES}]"
    # defaults untouched by the extra keys stay
    assert conf["spark.sql.session.timeZone"] == spark_conf_from_env({})["spark.sql.session.timeZone"]


def test_spark_conf_json_form_in_env():
    conf = spark_conf_from_env({"LINEAGE_SPARK_CONF": json.dumps({"spark.sql.shuffle.partitions": 3})})
    assert conf["spark.sql.shuffle.partitions"] == "3"
    assert conf["spark.master"] == f"local[*,{TASK_TRIES}]"


@pytest.mark.parametrize(
    "master, max_failures, expected",
    [
        ("local", None, f"local[1,{TASK_TRIES}]"),
        ("local[*]", None, f"local[*,{TASK_TRIES}]"),
        (" local[ 3 ] ", None, f"local[3,{TASK_TRIES}]"),
        ("local[2]", "1", "local[2,1]"),  # spark.task.maxFailures is honoured in local mode too
        ("local[2,1]", None, "local[2,1]"),  # tries already given: kept
        ("local[*,7]", "2", "local[*,7]"),
        ("local-cluster[2,1,1024]", None, "local-cluster[2,1,1024]"),
        ("spark://127.0.0.1:7077", None, "spark://127.0.0.1:7077"),
        ("yarn", None, "yarn"),
    ],
)
def test_local_masters_get_task_tries(master, max_failures, expected):
    assert local_tries(master, max_failures) == expected


@pytest.mark.parametrize("bad", ["0", "-1", "two", "1.5"])
def test_local_tries_refuses_a_bad_max_failures(bad):
    with pytest.raises(ValueError, match="spark.task.maxFailures"):
        local_tries("local[*]", bad)


def test_spark_task_max_failures_sets_the_local_tries():
    conf = spark_conf_from_env({"LINEAGE_SPARK_CONF": "spark.task.maxFailures=2", "LINEAGE_SPARK_MASTER": "local[2]"})
    assert conf["spark.master"] == "local[2,2]"


def test_an_overridden_max_failures_sets_the_local_tries_of_the_resource(monkeypatch):
    """The resource's overrides are applied before the tries are added, so a
    spark.task.maxFailures given there counts as one given in LINEAGE_SPARK_CONF does."""
    from lineage_assets.defs.resources import spark_resource

    for name in ("LINEAGE_SPARK_CONF", "LINEAGE_SPARK_MASTER"):  # the defaults' master, local[*]
        monkeypatch.delenv(name, raising=False)

    assert spark_resource({"spark.task.maxFailures": 2}).spark_config["spark.master"] == "local[*,2]"
    assert spark_resource({"spark.master": "local[3]"}).spark_config["spark.master"] == f"local[3,{TASK_TRIES}]"


def test_spark_conf_empty_env_values_do_not_override():
    conf = spark_conf_from_env({"LINEAGE_SPARK_MASTER": "", "LINEAGE_SPARK_DRIVER_MEMORY": "", "LINEAGE_SPARK_CONF": ""})
    assert conf == spark_conf_from_env({})


def test_parse_spark_conf_json_booleans_use_spark_spelling_and_null_is_refused():
    assert parse_spark_conf('{"spark.ui.enabled": true, "spark.executor.cores": 2}') == {
        "spark.ui.enabled": "true",
        "spark.executor.cores": "2",
    }
    with pytest.raises(ValueError, match="spark.a"):
        parse_spark_conf('{"spark.a": null}')


def test_the_attempt_keeps_counting_past_fifty_failures(instance):
    """The attempt is part of the run key, and the daemon skips a key it has used: counting only
    the latest 50 runs froze it at 51, so failed work was never requested again."""
    work = Work(INTAKE_JOB, "landing:7")
    ended = failed_runs(instance, work.key, 53)
    assert attempt_and_wait(instance, work, now=ended + 3600) == (54, 0.0)


def test_a_failing_fold_alone_is_retried_with_backoff_and_does_not_rebuild_events(instance, paths, monkeypatch):
    """The fold alone is the daily job with only the fold selected: `events` is not rebuilt, so
    the commit, and with it the work's key, stay the same and its failures count (before: each
    retry rebuilt every day's events, a new commit, attempt 1 again, no backoff)."""
    base = commit(paths, props={progress.FOLD_FROM: "2024-03-02", progress.FOLD_THROUGH: "2024-03-04"})
    assert requested(evaluate(instance, paths)) == [fold("2024-03-02", "2024-03-04", base.seq)]
    ended = failed_runs(instance, f"fold:2024-03-02:2024-03-04:{base.seq}", 1)
    at(monkeypatch, ended + 10)
    assert "retrying in 20s" in skipped(evaluate(instance, paths))
    at(monkeypatch, ended + 30)
    assert requested(evaluate(instance, paths)) == [fold("2024-03-02", "2024-03-04", base.seq, attempt=2)]


def test_late_events_while_the_fold_is_behind_fold_through_every_built_day(instance, paths):
    """Folded through 03-05, events built through 03-10 and their fold failed (`fold_from`
    03-10); then a late event for 03-02: one run from 03-02 through 03-10, not through 03-05
    (which left 03-06..03-10 unfolded with nothing pending)."""
    base = commit(paths, props={progress.EVENT_DAYS: ["2024-03-02"], progress.FOLD_FROM: "2024-03-10",
                                progress.FOLD_THROUGH: "2024-03-05", progress.EVENTS_THROUGH: "2024-03-10"})
    assert requested(evaluate(instance, paths)) == [days("2024-03-02", "2024-03-10", base.seq)]


def test_a_fold_that_ends_before_the_day_it_was_asked_from_leaves_that_day_pending(paths):
    base = commit(paths, props={progress.FOLD_FROM: "2024-03-10", progress.FOLD_THROUGH: "2024-03-05"})
    assert progress.after_fold(base, dt.date(2024, 3, 2), dt.date(2024, 3, 5))[progress.FOLD_FROM] == "2024-03-10"
    assert progress.after_fold(base, dt.date(2024, 3, 2), dt.date(2024, 3, 10))[progress.FOLD_FROM] is None
    base = commit(paths, props={progress.FOLD_FROM: "2024-03-01"})  # events changed before the range while it ran
    assert progress.after_fold(base, dt.date(2024, 3, 2), dt.date(2024, 3, 5))[progress.FOLD_FROM] == "2024-03-01"


def test_a_fold_of_part_of_the_pending_range_leaves_the_built_days_after_it_pending(instance, paths):
    """Folded through 03-01, events built through 03-10, the fold pending from 03-02; a fold of
    03-02..03-05 only (a range chosen in the UI) leaves 03-06..03-10 to fold, and the sensor asks
    for them (before: `fold_from` was cleared and those days were never folded)."""
    base = commit(paths, props={progress.FOLD_FROM: "2024-03-02", progress.FOLD_THROUGH: "2024-03-01",
                                progress.EVENTS_THROUGH: "2024-03-10", progress.EVENT_DAYS: []})
    after = progress.after_fold(base, dt.date(2024, 3, 2), dt.date(2024, 3, 5))
    assert after[progress.FOLD_FROM] == "2024-03-06"
    assert after[progress.FOLD_THROUGH] == "2024-03-05"
    folded = commit(paths, props=after, operation=fold_module.OPERATION)
    assert requested(evaluate(instance, paths)) == [snapshot(folded.seq)]  # the stage after a fold's commit first
    published = commit(paths, props=progress.after_snapshot(), operation="current_graph")
    assert requested(evaluate(instance, paths)) == [fold("2024-03-06", "2024-03-10", published.seq)]
    # a fold that reaches the last built day leaves nothing pending
    assert progress.after_fold(published, dt.date(2024, 3, 6), dt.date(2024, 3, 10))[progress.FOLD_FROM] is None
    # asked from a later day than the fold's end: the day after the fold is the earlier of the two
    base = commit(paths, props={progress.FOLD_FROM: "2024-03-08", progress.FOLD_THROUGH: "2024-03-01",
                                progress.EVENTS_THROUGH: "2024-03-10"})
    assert progress.after_fold(base, dt.date(2024, 3, 2), dt.date(2024, 3, 5))[progress.FOLD_FROM] == "2024-03-06"


def test_a_start_date_raised_while_the_fold_is_behind_starts_the_fold_there(instance, paths):
    """Days before the start date are no partitions: the request starts at the start date (before:
    a range Dagster refused in the middle of the run, on every tick)."""
    later = LineagePaths(drop_dir=paths.drop_dir, warehouse=paths.warehouse, start_date="2024-03-05", check_sample=paths.check_sample)
    base = commit(paths, props={progress.FOLD_FROM: "2024-03-02", progress.FOLD_THROUGH: "2024-03-08"})
    assert requested(evaluate(instance, later)) == [fold("2024-03-05", "2024-03-08", base.seq)]
    base = commit(paths, props={progress.EVENT_DAYS: ["2024-03-06"], progress.FOLD_FROM: "2024-03-02", progress.FOLD_THROUGH: "2024-03-08"})
    assert requested(evaluate(instance, later)) == [days("2024-03-05", "2024-03-08", base.seq)]
    commit(paths, props={progress.EVENT_DAYS: [], progress.FOLD_FROM: "2024-03-02", progress.FOLD_THROUGH: "2024-03-03"})
    assert skipped(evaluate(instance, later)) == "nothing to do"  # all of it before the start date
    # the fold from the start date does what a fold_from before it asked: nothing stays pending (before: the
    # fold was requested again after every snapshot, forever)
    base = commit(paths, props={progress.FOLD_FROM: "2024-03-02", progress.FOLD_THROUGH: "2024-03-08", progress.SNAPSHOT_STALE: None})
    done = progress.after_fold(base, dt.date(2024, 3, 5), dt.date(2024, 3, 8), floor=dt.date(2024, 3, 5))
    assert done[progress.FOLD_FROM] is None
    commit(paths, props={**done, progress.SNAPSHOT_STALE: None}, operation="lineage_fold")
    assert skipped(evaluate(instance, later)) == "nothing to do"
