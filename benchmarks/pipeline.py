"""The whole pipeline against a bare `spark.read.json` + Parquet write of the same input.

A script, not a test: it prints figures. One Spark session (the project's default settings:
`local[*]`, 2g driver) serves every case, so the ratios compare runs on the same JVM, machine
and moment. The input comes from the project's own generator (`lineage_assets.demo.platform`):
events of realistic size (schema facets of 5-20 fields, column lineage on every output) from a
layered platform of jobs.

Cases (DESIGN.md section 7; issue targets in brackets):
  a. N events (default 100,000) in one file, one day: intake, events, fold, snapshot, checks as
     configured by default  [<= 2.0x bare Spark]
  b. the same number of events spread over 365 days  [<= 1.25x case a]
  c. 1% of case b's events arriving late for day 300: the recompute  [<= 0.25x case b]
  d. 1,000,000 events: completes with the default 2g driver; peak memory printed

    python benchmarks/pipeline.py [--events 100000] [--cases a,b,c,d] [--work DIR]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from lineage_assets.defs.resources import spark_resource  # noqa: E402
from lineage_assets.demo import platform  # noqa: E402
from lineage_assets.pipeline.fold import run_fold  # noqa: E402
from lineage_assets.pipeline.events import build_events  # noqa: E402
from lineage_assets.pipeline.landing import land_batch  # noqa: E402
from lineage_assets.pipeline.snapshot import publish_current_graph  # noqa: E402
from lineage_assets.settings import DEFAULT_CHECK_SAMPLE  # noqa: E402

START = dt.date(2025, 1, 1)


class PeakRss:
    """Peak resident memory of this process's children (the Spark JVM and its Python workers),
    sampled every 0.2 s, plus this driver process's own peak."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            total = 0
            for pid in _descendants(os.getpid()):
                try:
                    with open(f"/proc/{pid}/status") as handle:
                        for line in handle:
                            if line.startswith("VmRSS:"):
                                total += int(line.split()[1]) * 1024
                except OSError:
                    pass
            self.peak = max(self.peak, total)
            self._stop.wait(0.2)

    def __enter__(self) -> "PeakRss":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def _descendants(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout.split()
    children: dict[int, list[int]] = {}
    for child, parent in zip(out[0::2], out[1::2]):
        children.setdefault(int(parent), []).append(int(child))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def bare(spark, path: str, work: str) -> float:
    """spark.read.json + Parquet write of the same file (schema inferred, as a user would)."""
    target = os.path.join(work, "bare_parquet")
    began = time.monotonic()
    spark.read.json(path).write.mode("overwrite").parquet(target)
    seconds = time.monotonic() - began
    shutil.rmtree(target, ignore_errors=True)
    return seconds


def pipeline(spark, drop_dir: str, files: list[str], warehouse: str, first: dt.date, last: dt.date, sample: float) -> dict[str, float]:
    """One landing batch of what is new in the drop folder (`files`), then `events`, the fold and
    the snapshot of [first, last], timed."""
    steps: dict[str, float] = {}
    began = time.monotonic()
    quiet = lambda _m: None  # noqa: E731
    report = land_batch(spark, warehouse, drop_dir, START - dt.timedelta(days=1), quiet)
    assert report.check.passed and report.rejected == 0, (report.check.problems, report.rejected_by_reason)
    assert sorted(f.read.path for f in report.files) == sorted(files), [f.read.path for f in report.files]
    steps["intake"] = time.monotonic() - began
    began = time.monotonic()
    events = build_events(spark, warehouse, first, last)
    assert events.check.passed, events.check.problems
    steps["events"] = time.monotonic() - began
    began = time.monotonic()
    fold = run_fold(spark, warehouse, first, last, sample_rate=sample, log=quiet)
    assert fold.passed, [c.problems for c in fold.checks]
    steps["fold"] = time.monotonic() - began
    steps.update({f"  fold.{k}": v for k, v in fold.seconds.items()})
    began = time.monotonic()
    snap = publish_current_graph(spark, warehouse, quiet)
    assert snap.passed, snap.check.problems
    steps["snapshot"] = time.monotonic() - began
    steps["total"] = steps["intake"] + steps["events"] + steps["fold"] + steps["snapshot"]
    steps["_runs"] = fold.rows("runs")
    steps["_column_edges"] = fold.rows("column_lineage")
    return steps


def _print_steps(label: str, steps: dict[str, float]) -> None:
    print(f"  {label}: total {steps['total']:.1f}s  (runs {steps['_runs']}, column edges {steps['_column_edges']})")
    for name, value in steps.items():
        if name not in ("total",) and not name.startswith("_"):
            print(f"    {name:<28} {value:8.1f}s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--big", type=int, default=1_000_000, help="events of case d")
    parser.add_argument("--cases", default="a,b,c,d")
    parser.add_argument("--work", default=None, help="scratch folder (default: a temporary one, removed after)")
    parser.add_argument("--sample", type=float, default=DEFAULT_CHECK_SAMPLE, help="determinism check sample (default as configured)")
    args = parser.parse_args()
    cases = set(args.cases.split(","))
    work = args.work or tempfile.mkdtemp(prefix="bench_pipeline_")
    os.makedirs(work, exist_ok=True)
    spark = spark_resource({"spark.ui.enabled": "false"}).spark_session
    spark.sparkContext.setLogLevel("ERROR")
    conf = spark.sparkContext.getConf()
    print(f"spark {spark.version}, master {conf.get('spark.master')}, driver memory {conf.get('spark.driver.memory')}, "
          f"{os.cpu_count()} cores; determinism check sample {args.sample}")
    results: dict[str, float] = {}

    def generate(name: str, events: int, days: int, start: dt.date = START, seed: int = 1) -> tuple[str, str]:
        folder = os.path.join(work, name)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"{name}.ndjson")
        began = time.monotonic()
        stats = platform.generate(path, events=events, days=days, start=start, seed=seed)
        print(f"  generated {name}: {stats.events} events, {stats.runs} runs, {stats.jobs} jobs, "
              f"{stats.bytes / 1e6:.0f} MB over {days} day(s) in {time.monotonic() - began:.0f}s")
        return folder, path

    if cases & {"a", "b", "c"}:
        print(f"\ncase a: {args.events} events in one file, one day")
        drops, path = generate("a", args.events, 1)
        results["bare_a"] = bare(spark, path, work)
        print(f"  bare spark.read.json + parquet: {results['bare_a']:.1f}s")
        steps = pipeline(spark, drops, ["a.ndjson"], os.path.join(work, "wh_a"), START, START, args.sample)
        _print_steps("pipeline", steps)
        results["a"] = steps["total"]
        print(f"  ratio a / bare = {results['a'] / results['bare_a']:.2f}  (target <= 2.0)")
    if cases & {"b", "c"}:
        print(f"\ncase b: the same {args.events} events over 365 days")
        drops, path = generate("b", args.events, 365)
        last = START + dt.timedelta(days=364)
        results["bare_b"] = bare(spark, path, work)
        print(f"  bare spark.read.json + parquet: {results['bare_b']:.1f}s")
        warehouse_b = os.path.join(work, "wh_b")
        steps = pipeline(spark, drops, ["b.ndjson"], warehouse_b, START, last, args.sample)
        _print_steps("pipeline", steps)
        results["b"] = steps["total"]
        print(f"  ratio b / a = {results['b'] / results['a']:.2f}  (target <= 1.25); b / bare_b = {results['b'] / results['bare_b']:.2f}")
        if "c" in cases:
            day300 = START + dt.timedelta(days=299)
            late = max(2, args.events // 100)
            print(f"\ncase c: {late} late events for day 300 ({day300}), landing after case b")
            late_folder, late_path = generate("c", late, 1, start=day300, seed=2)
            shutil.move(late_path, os.path.join(drops, "late.ndjson"))
            steps = pipeline(spark, drops, ["late.ndjson"], warehouse_b, day300, last, args.sample)
            _print_steps("recompute", steps)
            results["c"] = steps["total"]
            print(f"  ratio c / b = {results['c'] / results['b']:.2f}  (target <= 0.25)")
    if "d" in cases:
        print(f"\ncase d: {args.big} events, 30 days, default driver memory")
        drops, path = generate("d", args.big, 30)
        with PeakRss() as rss:
            steps = pipeline(spark, drops, ["d.ndjson"], os.path.join(work, "wh_d"), START, START + dt.timedelta(days=29), args.sample)
        _print_steps("pipeline", steps)
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        print(f"  peak memory: Spark JVM + Python workers {rss.peak / 2**30:.2f} GiB; driver Python {own / 2**30:.2f} GiB")
        results["d"] = steps["total"]
    print("\nsummary: " + json.dumps({k: round(v, 1) for k, v in results.items()}))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
