"""The lineage fold of a range of days as one commit, with its blocking checks (no Dagster)."""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import os
import secrets
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lineage_assets.identity.partitions import PartitionRule, load_rules
from lineage_assets.intake import reasons
from lineage_assets.lineage.fold import RangeTables, Reopened, StateAsOf, fold_range
from lineage_assets.lineage.identity import RangeIdentity, range_identity
from lineage_assets.lineage.state import state_as_of, valid_partitions
from lineage_assets.pipeline import progress
from lineage_assets.pipeline.small_data import STAGES_NOT_GENERATED, small_settings
from lineage_assets.pipeline.progress import FOLD_THROUGH
from lineage_assets.pipeline.checks import (
    SAMPLED,
    CheckReport,
    Sample,
    compare,
    key_problems,
    marked_frames,
    sample_frames,
    sample_inputs,
    sample_state,
)
from lineage_assets.warehouse import commits
from lineage_assets.warehouse import tables as t
from lineage_assets.warehouse.schemas import arrow_schema
from lineage_assets.warehouse.single_partition import by_column
from lineage_assets.warehouse.content_hash import WHOLE, Fingerprint, fingerprints, fingerprints_and_marked

DETERMINISM = "fold_recomputes_identically"
KEYS = "keys_unique_and_versions_exist"
OPERATION = "lineage_fold"  # the commit's operation
OUTPUTS = t.FOLD_OUTPUTS
# A range of at most this many events is recomputed whole by the determinism check: choosing a
# sample and restricting both sides to it costs about what it saves there, and the whole check
# compares every row. `benchmarks/pipeline.py --cases a --events N --sample S`, one JVM each:
# 2,000 events, fold 28.0 s whole vs 31.9 s at 0.1; 10,000 events, 40.5 s vs 40.9 s. Above that
# the sample is cheaper, the more so as the state the range carries grows: case c's range (days
# 300-365 of case b, 19,289 events, the state of 11,702 jobs carried in) refolded by
# `benchmarks/fold_jobs.py`, warm passes in one JVM: whole 83.2 / 87.5 s, at 0.1 70.4 / 71.3 s
# (the whole recompute takes a core the fold's writes wait for); one day of it (274 events) is
# still cheaper whole: 32.1 / 24.4 s vs 35.1 / 28.8 s.
WHOLE_CHECK_EVENTS = 10_000
STAGE_THREADS = 4  # fold outputs staged at a time (`stage_outputs`)
# What was written is hashed by this many Spark jobs side by side (`fingerprints_and_marked`): a
# small range's tables are one task each, so one job left a core idle once the recompute was over
# (case c's refold, warm, alternating in one JVM: hash_written 2.53 -> 2.11 s mean of 7 rounds).
HASH_JOBS = 2
# A range of at most this many events is folded (and recomputed by the check) with its shuffles
# in one partition and no adaptive re-planning: on small data, re-planning and more partitions
# cost more than they save (case c of `benchmarks/pipeline.py`, days 300-365 of case b, 20,000
# events, two warm passes each in one JVM: the fold with its check 42.9/42.7 s -> 41.4/37.4 s).
# Up to INTERPRETED_RANGE_EVENTS its expressions are also interpreted, no generated code:
# Janino, then the JIT, compile classes for each of its ~260 stages that run a few thousand rows
# (case c's range on the smaller platform of 2026-11-26, generated -> interpreted: 38.6/34.9 s ->
# 40.9/32.9 s alternating in one JVM; in a new JVM 61.1-66.2 / 36.7-41.5 / 35.5-35.7 s -> 57.9 /
# 35.8 / 33.2 s, the JIT's CPU 10-13 s -> 4-6.5 s a warm pass). Above it, on today's platform,
# compiling repays itself: case c's range (19,289 events, 11,702 jobs' state carried in)
# refolded by `benchmarks/fold_jobs.py` with the sampled check, new JVMs, warm passes:
# interpreted 77.9 / 71.9 s, generated 65.2 / 61.6 s (the first pass 105.8 s vs 101.4 s); one day
# of it (274 events, the same state): interpreted 32.1 / 24.4 s, generated 34.3 / 30.1 s (the
# first 43.2 s vs 77.7 s). Above it the expressions are compiled but no class is generated per
# stage (`small_data.STAGES_NOT_GENERATED`): case c of `benchmarks/pipeline.py` in a new JVM,
# four pairs alternating JVMs, 57.3-58.9 s against 59.6-60.3 s with a class per stage (the JIT's
# C2 took about 25 s of the ~96 s of CPU there); after cases a and b in one JVM (the benchmark),
# no difference. The tests run every fold interpreted (conftest.TEST_SPARK_CONF,
# the session's own setting).
SMALL_RANGE_EVENTS = 50_000
INTERPRETED_RANGE_EVENTS = 10_000


@dataclass
class FoldReport:
    first: dt.date
    last: dt.date
    requested_last: dt.date
    fingerprints: dict[str, dict[str, Fingerprint]]  # history table -> day (or WHOLE) -> fingerprint of what was written
    changed_jobs: list[str]
    seconds: dict[str, float]
    checks: list[CheckReport]
    commit_seq: int | None = None
    sample_rate: float = 1.0
    days: list[str] = field(default_factory=list)  # the days of [first, last] a history table has rows of, before or now
    table_rows: dict[str, int] = field(default_factory=dict)  # every output -> the rows written (the files' footers)

    def extra_days(self, asked: list[str]) -> list[str]:
        """The days this fold rewrote beyond those `asked` for (it started earlier, `fold_start`,
        or ended later, at the last folded day) whose rows were or are there."""
        asked = set(asked)
        return [day for day in self.days if day not in asked]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def rows(self, table: str, day: str | None = None) -> int:
        """The rows written of `table` (the files' footers), or of its `day` (a history table's
        fingerprint of that day)."""
        if day is None:
            return self.table_rows.get(table, 0)
        return self.fingerprints.get(table, {}).get(day, Fingerprint("", 0)).rows

    def check(self, name: str) -> CheckReport:
        return next(c for c in self.checks if c.name == name)


def range_events(commit: commits.Commit, first: dt.date, last: dt.date) -> int:
    """The events of [first, last] in `commit`, counted from the Parquet footers."""
    return sum(commit.row_counts("events", "event_date", commits.within("event_date", first, last)).values())


def reopened_from(commit: commits.Commit, first: dt.date, last: dt.date) -> tuple[dt.date, list[str]] | None:
    """(the earliest day, the runs) when runs that ended before `first` and that the fold does not
    carry have events in [first, last]; else None. Such events are new (a run's events are carried
    until the day of its last one), and they reopen the run (DESIGN.md section 4: all events of a
    runId are one run, whatever day they fall on): its row, its job's versions and what later
    readers resolved to change from the day it ended on, so the fold must start there. A carried
    run's events may be new or already folded: the fold tells them apart by their number
    (`coalesce_range`, `Reopened`).

    Read on the driver with pyarrow, no Spark job: the range's run ids from the events' files,
    then one column of `runs` before `first` (the ids of every run that ended, its partition
    giving the day), batch by batch against them. That column is the only history a fold reads:
    it is the one record of which runs ended (case b's 50,148 runs in 365 files: 0.14-0.24 s); and
    the run ids of the state's open events."""
    import pyarrow.compute as pc
    import pyarrow.dataset as pads

    day_column = t.RUNS.day_column
    ended_files = commit.files(t.RUNS.name, lambda p: p.get(day_column, "") < str(first))
    event_files = commit.files(t.EVENTS.name, commits.within("event_date", first, last))
    if not ended_files or not event_files:
        return None
    ids = pc.unique(pads.dataset(event_files, format="parquet").to_table(columns=["run_id"]).column("run_id").combine_chunks())
    carried_files = commit.files(t.STATE_OPEN_EVENTS.name, valid_partitions(first - dt.timedelta(days=1)))
    if carried_files:  # runs the fold carries: their events already folded are told from new ones in the fold (`Reopened`)
        carried = pads.dataset(carried_files, format="parquet").to_table(columns=["run_id", "valid_from"])
        carried = carried.filter(pc.less(carried.column("valid_from"), pa.scalar(first, pa.date32()))).column("run_id")
        ids = ids.filter(pc.invert(pc.is_in(ids, value_set=pc.unique(carried.combine_chunks()))))
    ended = pads.dataset(
        ended_files, format="parquet", partition_base_dir=os.path.join(commit.root, t.RUNS.path),
        partitioning=pads.partitioning(pa.schema([(day_column, pa.string())]), flavor="hive"),
    )
    earliest, runs = None, []
    for batch in ended.to_batches(columns=["run_id", day_column]):
        hit = batch.filter(pc.is_in(batch.column("run_id"), value_set=ids))
        for run_id, day in zip(hit.column("run_id").to_pylist(), hit.column(day_column).to_pylist()):
            earliest = day if earliest is None else min(earliest, day)
            runs.append(run_id)
    return (dt.date.fromisoformat(earliest), sorted(runs)) if earliest is not None else None


def fold_start(commit: commits.Commit, first: dt.date, last: dt.date, log: Callable[[str], None] = print) -> dt.date:
    """`first`, or the earlier day the fold of [first, last] must start at: the end of every run
    it has events of (`reopened_from`, until no run is left; each step moves the start earlier)."""
    while (found := reopened_from(commit, first, last)) is not None:
        day, runs = found
        shown = ", ".join(runs[:5]) + (f" and {len(runs) - 5} more" if len(runs) > 5 else "")
        log(f"lineage fold: starting at {day}, not {first}: run {shown} ended by then and has events from {first} on")
        first = day
    return first


def check_rate(events: int, rate: float, whole_below: int = WHOLE_CHECK_EVENTS) -> float:
    """The share of jobs the determinism check recomputes for a range of `events` events:
    `rate`, or 1 when the range has at most `whole_below` events."""
    return 1.0 if rate >= 1 or events <= whole_below else rate


def range_settings(
    spark: SparkSession, events: int, small_below: int = SMALL_RANGE_EVENTS, interpreted_below: int = INTERPRETED_RANGE_EVENTS,
) -> contextlib.AbstractContextManager[dict[str, str]]:
    """The session's SQL settings for a fold of `events` events, restored afterwards: a range of
    at most `small_below` events runs with `small_data.SMALL_SETTINGS` (`small_settings`), its
    expressions interpreted up to `interpreted_below` events and compiled above, without a class
    generated per stage (`small_data.STAGES_NOT_GENERATED`); a larger one with the session's own
    settings."""
    return small_settings(spark, events, small_below, interpreted_below, STAGES_NOT_GENERATED)


def fold_through(commit: commits.Commit) -> dt.date | None:
    value = commit.props.get(FOLD_THROUGH)
    return dt.date.fromisoformat(value) if value else None


@dataclass
class FoldInputs:
    """What a fold of [first, last] reads from a commit: the events of those days, the state as
    of first - 1, and the dataset identity the range's names resolve with."""

    events: DataFrame
    prev: StateAsOf
    names: RangeIdentity


def fold_inputs(spark: SparkSession, commit: commits.Commit, first: dt.date, last: dt.date, rules: tuple[PartitionRule, ...]) -> FoldInputs:
    events = commits.read_table(spark, commit.root, "events", where=commits.within("event_date", first, last), commit=commit)
    prev = state_as_of(spark, commit, first - dt.timedelta(days=1))
    return FoldInputs(events, prev, range_identity(events, prev.aliases, rules))


def _mismatch_rejects(events: DataFrame) -> DataFrame:
    return events.select(
        "source_file", "source_line", F.col("event_json").alias("raw"), F.lit("utf-8").alias("raw_encoding"),
        F.lit(reasons.JOB_MISMATCH).alias("reason_code"),
        F.concat(F.lit("run "), F.col("run_id"), F.lit(" already belongs to another job; this event names "),
                 F.col("job_namespace"), F.lit(":"), F.col("job_name")).alias("reason"),
        "event_time", F.lit(None).cast("string").alias("file_id"),
        F.col("event_date").alias("read_date"), F.lit(reasons.JOB_MISMATCH).alias("batch_id"),
    )


def run_fold(
    spark: SparkSession,
    root: str,
    first: dt.date,
    last: dt.date,
    sample_rate: float = 1.0,
    log: Callable[[str], None] = print,
    rules: tuple[PartitionRule, ...] | None = None,
    whole_check_events: int = WHOLE_CHECK_EVENTS,
    floor: dt.date | None = None,
) -> FoldReport:
    """Fold [first, last] (extended to the last day already folded: the state of every later day
    depends on it; started earlier when runs that ended before `first` have events in it:
    `fold_start`), check, and commit when the blocking checks pass.

    The determinism check's recompute reads only the base commit, so it runs in a thread beside
    the fold and its writes (`Recompute`: Spark fills the cores the fold leaves idle with its
    tasks); only the comparison waits for it. It recomputes `sample_rate` of the jobs, or all of
    them when the range has at most `whole_check_events` events (`check_rate`). `rules`: the
    partition rules (default: those in force, `identity.partitions.load_rules`); `floor`: the first
    daily partition (`progress.after_fold`)."""
    rules = load_rules() if rules is None else rules
    lap = Laps()
    with commits.writer(root):
        base = commits.latest(root)
        requested_last = last
        through = fold_through(base)
        if through and through > last:
            last = through
            log(f"lineage fold: extending {first}..{requested_last} to {last}, the last day already folded")
        first = fold_start(base, first, last, log)
        while True:
            try:
                return _fold_and_commit(spark, root, base, first, last, requested_last, sample_rate, rules, whole_check_events, lap, floor)
            except Reopened as reopened:  # a carried run that ended before `first` has new events: start at its end
                log(f"lineage fold: starting at {reopened.day}, not {first}: {reopened}")
                first = fold_start(base, reopened.day, last, log)


def _fold_and_commit(
    spark: SparkSession, root: str, base: commits.Commit, first: dt.date, last: dt.date, requested_last: dt.date,
    sample_rate: float, rules: tuple[PartitionRule, ...], whole_check_events: int, lap: Laps, floor: dt.date | None = None,
) -> FoldReport:
    """`run_fold`'s work once its range is known: fold, check, and commit when the checks pass.
    Raises `Reopened` when a run it carries has new events and ended before `first`."""
    seconds = lap.seconds
    events = range_events(base, first, last)
    sample_rate = check_rate(events, sample_rate, whole_check_events)
    # the recompute's session copies the session's settings before the fold's range settings apply (its own follow its sample)
    with Recompute(spark, base, first, last, sample_rate, rules, events) as recompute, range_settings(spark, events):
        inputs = fold_inputs(spark, base, first, last, rules)
        prev = inputs.prev
        lap("read_state")
        tables = fold_range(first, last, inputs.events, prev, inputs.names, lap=lap)
        lap("plan")
        with commits.Transaction(root, OPERATION) as txn:
            stage_outputs(txn, tables, inputs.names, first, last)
            lap("write")
            staged = {name: txn.read_staged(spark, name) for name in OUTPUTS}
            table_rows = {name: txn.staged_rows(name) for name in OUTPUTS}  # the files' footers: the hash's weights, the report's rows
            with ThreadPoolExecutor(max_workers=2, thread_name_prefix="lineage-fold-keys") as pool:  # small jobs beside the hash
                keys_found = pool.submit(key_problems, staged)
                changed_found = pool.submit(_changed_jobs, prev.jobs, staged["state_jobs"])
                written, written_sample = fingerprints_and_marked(  # one scan of each table
                    marked_frames(staged, recompute.sample()), SAMPLED, HASH_JOBS, table_rows,
                )
                lap("hash_written")
                problems, changed = keys_found.result(), changed_found.result()
            keys = CheckReport(KEYS, not problems, problems)
            lap("key_check")
            determinism = determinism_report(written_sample, recompute.computed(), sample_rate)
            lap("recompute.wait")
            seconds.update({f"recompute.{step}": s for step, s in recompute.seconds.items()})
            report = FoldReport(
                first, last, requested_last, {table.name: written[table.name] for table in t.HISTORY}, changed, seconds,
                [determinism, keys], sample_rate=sample_rate, days=_days_with_rows(base, written, first, last),
                table_rows=table_rows,
            )
            if report.passed:
                commit = txn.commit(
                    {"first": str(first), "last": str(last), "rows": report.table_rows},
                    props=progress.after_fold(base, first, last, floor),  # last >= the day folded through before (extended above)
                )
                report.commit_seq = commit.seq
            lap("commit")
    return report


def stage_outputs(
    txn: commits.Transaction, tables: RangeTables, names: RangeIdentity, first: dt.date, last: dt.date,
    threads: int = STAGE_THREADS,
) -> None:
    """Stage every fold output (each replaces its partitions from `first` on: the state's
    `valid_to >= first`) and the job_mismatch rejects, `threads` tables at a time: each table is
    a Spark job and, for a range of many days, then a cut per partition in the driver
    (`Transaction.stage`), so one table's cut and planning overlap another's Spark tasks. Every
    table is attempted; then what the first failing table in `tables.outputs()` order raised is
    raised. `last`: the range's last day (a table of [first, last] has at most a partition per
    day, and the state one more, `valid_to` OPEN: the bound `Transaction.stage` is given)."""
    days = (last - first).days + 2

    def stage(name: str, df: DataFrame) -> None:
        table = t.get(name)
        replace = commits.on_or_after(table.day_column, first)
        if name in names.rows:  # the alias tables: few rows, built on the driver, staged without a Spark job
            txn.stage_arrow(pa.Table.from_pylist(names.rows[name], schema=arrow_schema(table.schema)), table, replace=replace)
        else:
            txn.stage(by_column(df, table.day_column), table, replace=replace, partitions=days)

    def stage_rejects() -> None:
        since = commits.on_or_after("read_date", first)
        txn.stage(_mismatch_rejects(tables.job_mismatch), t.REJECTED_EVENTS,
                  replace=lambda p: p["batch_id"] == reasons.JOB_MISMATCH and since(p), partitions=days)

    work = [functools.partial(stage, name, df) for name, df in tables.outputs().items()] + [stage_rejects]
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="lineage-fold-stage") as pool:
        for future in [pool.submit(job) for job in work]:
            future.result()


class Laps:
    """Seconds per step: `lap(step)` adds the time since the previous lap (or since creation)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._began = time.monotonic()

    def __call__(self, step: str) -> None:
        now = time.monotonic()
        self.seconds[step] = round(self.seconds.get(step, 0) + now - self._began, 2)
        self._began = now


@dataclass
class RecomputeInputs:
    """What the determinism check recomputes from: the sample, its events and its carried state."""

    sample: Sample
    events: DataFrame
    prev: StateAsOf
    names: RangeIdentity


def recompute_inputs(
    spark: SparkSession, base: commits.Commit, first: dt.date, last: dt.date, rate: float, rules: tuple[PartitionRule, ...],
) -> RecomputeInputs:
    """The inputs of the fold (the committed events and the state as of first - 1, read again:
    nothing cached or written is reused; the dataset identity resolved again from all of the
    range's events) cut to a deterministic sample of jobs (all at rate 1) and what they depend on:
    their events (`checks.sample_inputs`) and their part of the state (`checks.sample_state`)."""
    inputs = fold_inputs(spark, base, first, last, rules)
    sample, sample_events, carried = sample_inputs(base, first, last, inputs.events, inputs.prev.open_events, rate, inputs.names.identity)
    inputs.prev.open_events = carried
    return RecomputeInputs(sample, sample_events, sample_state(inputs.prev, sample), inputs.names)


def recompute_sample(
    first: dt.date, last: dt.date, inputs: RecomputeInputs, lap: Callable[[str], None] = lambda _s: None,
) -> dict[str, dict[str, Fingerprint]]:
    """The fold of the sample recomputed from `inputs`: the content hashes of the rows the
    sample determines, table by table and day by day."""
    again = fold_range(first, last, inputs.events, inputs.prev, inputs.names, lap=lap)
    return fingerprints(sample_frames(again.outputs(), inputs.sample))


def determinism_report(written: dict[str, dict[str, Fingerprint]], computed: dict[str, dict[str, Fingerprint]], rate: float) -> CheckReport:
    """`written` (the hashes of the written rows the sample determines: `mark_sample`) against
    the recomputed ones."""
    problems = compare(written, computed)
    return CheckReport(
        DETERMINISM, not problems, problems,
        {"sample_rate": rate, "compared_rows": {n: written[n][WHOLE].rows for n in OUTPUTS}},
    )


class Recompute:
    """The determinism check's recompute (`recompute_inputs`, then `recompute_sample`) in a
    thread of its own, its Spark jobs in a job group of their own. `sample()` and `computed()`
    wait for its results (and raise what it raised); leaving the `with` block cancels what is
    still running (a fold that failed does not leave it behind) and waits for the thread.

    It runs in a Spark session of its own (`own_session`: the same Spark context, SQL settings
    apart), so its settings follow its own size while the fold's follow the range's
    (`range_settings`): choosing the sample reads the range's `events` events, as the fold does;
    the sample's fold reads what the sample kept (case c of `benchmarks/pipeline.py`: of 19,289
    events, the 2,719 of a tenth of the jobs and of the runs their inputs need, under the 10,000
    of INTERPRETED_RANGE_EVENTS, so its fold is interpreted, no code generated). With the fold's
    settings, the sample's fold generated and JIT-compiled its own code beside the fold's: case c
    46.8 s (C2 12.2 s of 82.6 s of CPU) -> 42.1 / 41.9 s (C2 8.8 / 8.1 s of 76.0 / 75.3 s),
    README "Pipeline cost"."""

    def __init__(
        self, spark: SparkSession, base: commits.Commit, first: dt.date, last: dt.date, rate: float, rules: tuple[PartitionRule, ...],
        events: int,
    ):
        self._laps = Laps()
        self._spark = own_session(spark)
        self._events = events
        self.seconds = self._laps.seconds
        self._sample: Future = Future()
        self._computed: Future = Future()
        self._group = f"lineage-fold-recompute-{secrets.token_hex(4)}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(base, first, last, rate, rules), name=self._group, daemon=True)

    def __enter__(self) -> Recompute:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread.is_alive():  # the fold failed before it waited: stop at the next step, cancel the running job
            self._stop.set()
            self._spark.sparkContext.cancelJobGroup(self._group)
        self._thread.join()

    def sample(self) -> Sample:
        return self._sample.result()

    def computed(self) -> dict[str, dict[str, Fingerprint]]:
        return self._computed.result()

    def _run(self, base: commits.Commit, first: dt.date, last: dt.date, rate: float, rules: tuple[PartitionRule, ...]) -> None:
        def lap(step: str) -> None:
            self._laps(step)
            if self._stop.is_set():
                raise RuntimeError("the determinism check's recompute was stopped: the fold failed")

        try:
            self._spark.sparkContext.setJobGroup(self._group, "determinism check: the fold recomputed")
            with range_settings(self._spark, self._events):  # choosing the sample reads the whole range, as the fold does
                inputs = recompute_inputs(self._spark, base, first, last, rate, rules)
            lap("sample")
            self._sample.set_result(inputs.sample)
            sampled = self._events if inputs.sample.whole else inputs.events.count()  # kept on local disk: a count of its files
            with range_settings(self._spark, sampled):  # the fold of the sample: settings for its own size
                self._computed.set_result(recompute_sample(first, last, inputs, lap))
            lap("hash")
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for a result
            for future in (self._sample, self._computed):
                if not future.done():
                    future.set_exception(exc)


def own_session(spark: SparkSession) -> SparkSession:
    """A session of `spark`'s Spark context with SQL settings of its own, starting from those
    `spark` has now (its modifiable ones), so that work in another thread can run with settings
    for its own size."""
    session = spark.newSession()
    for key, value in spark.conf.getAll.items():
        if spark.conf.isModifiable(key):
            session.conf.set(key, value)
    return session


def _days_with_rows(base: commits.Commit, written: dict[str, dict[str, Fingerprint]], first: dt.date, last: dt.date) -> list[str]:
    """The days of [first, last] that a history table has a partition of in `base` or rows of in
    `written`: what a fold of that range changed or emptied."""
    days = {day for table in t.HISTORY for day in written.get(table.name, {}) if day != WHOLE}
    days |= {day for table in t.HISTORY for day in base.partition_values(table.name, table.day_column) if str(first) <= day <= str(last)}
    return sorted(days)


def _changed_jobs(before: DataFrame, after: DataFrame) -> list[str]:
    now = after.filter(F.col("valid_to") == F.lit(t.OPEN).cast("date"))
    rows = (
        now.alias("n").join(before.alias("p"), ["job_namespace", "job_name"], "left")
        .filter(F.col("p.version_id").isNull() | (F.col("p.version_id") != F.col("n.version_id")))
        .select(F.concat_ws(":", "job_namespace", "job_name")).orderBy(1).limit(1000).collect()
    )
    return [r[0] for r in rows]
