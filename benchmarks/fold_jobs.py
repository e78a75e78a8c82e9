"""What a fold's fixed cost is made of: refold a copy of a warehouse's range, several times in one
JVM, and print each pass's time, its steps (`FoldReport.seconds`) and the Spark jobs, stages and
tasks it ran. Not a test; it writes only to its copy of the warehouse.

    python benchmarks/fold_jobs.py WAREHOUSE FIRST LAST [--passes 3] [--sample 0.1] [--sites] [--timeline]

A warehouse to refold: `python benchmarks/pipeline.py --cases a --events 300 --warmup 300 --work
DIR` leaves one in DIR/wh_a (its day: 2025-01-01). Set LINEAGE_SPARK_CONF to the tests' settings
(`lineage_assets_tests/conftest.py`, TEST_SPARK_CONF) to measure the folds the tests run.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import shutil
import sys
import tempfile
import time

from checkout import use_this_checkout
from cpu_use import BusyCores

use_this_checkout()  # before lineage_assets is imported

from lineage_assets.defs.resources import spark_resource  # noqa: E402
from lineage_assets.pipeline.fold import run_fold  # noqa: E402
from lineage_assets.pipeline.snapshot import publish_current_graph  # noqa: E402


def jobs_after(spark, after_job: int) -> list:
    """The session's jobs (Spark's JobData) numbered above `after_job`. Jobs are told by number,
    not by the length of the listing: Spark keeps only the last `spark.ui.retainedJobs` (1,000)
    jobs, which a dozen passes of a small fold (about 80 jobs each) exceed."""
    jobs = spark.sparkContext._jsc.sc().statusStore().jobsList(None)
    return [job for job in (jobs.apply(i) for i in range(jobs.size())) if job.jobId() > after_job]


def spark_counts(listed: list, after_job: int) -> tuple[int, int, int, int]:
    """(jobs, completed stages, completed tasks) of `listed` (`jobs_after(spark, after_job)`),
    and the highest job number so far."""
    last = max([after_job, *(job.jobId() for job in listed)])
    return len(listed), sum(j.numCompletedStages() for j in listed), sum(j.numCompletedTasks() for j in listed), last


def job_sites(listed: list, top: int = 25) -> list[str]:
    """`listed` jobs grouped by call site (the Python line that started them): jobs, completed
    stages and seconds (submission to completion) per site, most seconds first, as printable lines."""
    sites: dict[str, list[float]] = {}
    for job in listed:
        began, ended = job.submissionTime(), job.completionTime()
        seconds = (ended.get().getTime() - began.get().getTime()) / 1000 if began.isDefined() and ended.isDefined() else 0.0
        entry = sites.setdefault(job.name(), [0, 0, 0.0])
        entry[0] += 1
        entry[1] += job.numCompletedStages()
        entry[2] += seconds
    ranked = sorted(sites.items(), key=lambda kv: -kv[1][2])[:top]
    return [f"    {n:3d} jobs {st:4d} stages {sec:6.1f}s  {site}" for site, (n, st, sec) in ranked]


def timeline(cores: BusyCores, seconds: dict[str, float], began: float, folded: float, ended: float) -> list[str]:
    """Printable lines, one per second of a pass: the busy cores and the fold's own steps that
    ended in that second (`FoldReport.seconds` in order, the recompute's beside them left out),
    then where the fold and the snapshot ended."""
    ends: dict[int, list[str]] = {}
    at = began - cores.began
    for step, spent in seconds.items():
        if not step.startswith("recompute."):
            at += spent
            ends.setdefault(int(at), []).append(step)
    ends.setdefault(int(folded - cores.began), []).append("(fold ended)")
    ends.setdefault(int(ended - cores.began), []).append("(snapshot ended)")
    return [
        f"  {second:4d}s {busy:4.2f} cores {'#' * round(10 * busy):20s} {' '.join(ends.get(second, []))}".rstrip()
        for second, busy in enumerate(cores.per_second())
    ]


def refold_parser(doc: str, passes: int) -> argparse.ArgumentParser:
    """The arguments of a script that refolds a copy of WAREHOUSE's days FIRST..LAST in passes."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("warehouse")
    parser.add_argument("first", type=dt.date.fromisoformat)
    parser.add_argument("last", type=dt.date.fromisoformat)
    parser.add_argument("--passes", type=int, default=passes)
    parser.add_argument("--sample", type=float, default=0.1)
    return parser


def quiet_session():
    """The Dagster resource's session (the production settings, LINEAGE_SPARK_CONF over them), UI off."""
    spark = spark_resource({"spark.ui.enabled": "false"}).spark_session
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> int:
    parser = refold_parser(__doc__, passes=3)
    parser.add_argument("--sites", action="store_true", help="also print each pass's jobs by call site")
    parser.add_argument("--timeline", action="store_true",
                        help="also print, for each pass, the machine's busy cores in each second and the fold's steps that ended in it")
    args = parser.parse_args()
    spark = quiet_session()
    work = tempfile.mkdtemp(prefix="fold_jobs_")
    copy = os.path.join(work, "wh")
    last_job = spark_counts(jobs_after(spark, -1), -1)[3]
    try:
        for n in range(args.passes):
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(args.warehouse, copy)
            with BusyCores() if args.timeline else contextlib.nullcontext() as cores:
                began = time.monotonic()
                fold = run_fold(spark, copy, args.first, args.last, sample_rate=args.sample, log=lambda _m: None)
                folded = time.monotonic()
                snapshot = publish_current_graph(spark, copy, lambda _m: None)
                ended = time.monotonic()
            listed = jobs_after(spark, last_job)  # one listing for the counts and the call sites
            sites = job_sites(listed) if args.sites else []
            jobs, stages, tasks, last_job = spark_counts(listed, last_job)
            print(f"pass {n}: fold {folded - began:.1f}s (checks passed: {fold.passed}), snapshot {ended - folded:.1f}s "
                  f"(passed: {snapshot.passed}); {jobs} Spark jobs, {stages} stages, {tasks} tasks")
            print("  " + ", ".join(f"{step} {s:.1f}" for step, s in fold.seconds.items()))
            if sites:
                print("\n".join(sites))
            if cores is not None:
                print("\n".join(timeline(cores, fold.seconds, began, folded, ended)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
