"""Latency of the query helper on synthetic warehouses written with pyarrow (no Spark needed)
and published like a materialization does. Prints load times and p50/p95/max per query kind.

    .venv/bin/python benchmarks/query_latency.py --jobs 100000 --history-jobs 10000 --days 30

`--shape platform` (default, `query/synthetic_platform.py`): pipelines of 10-30 layers, 1-3
inputs per job, a few hub datasets read by hundreds of jobs, 5-20 fields per dataset; then a
second warehouse of `--history-jobs` jobs with `--days` days of history (every job once a day)
for the field-lineage queries over time (`field_mappings(levels=3)` over the whole window).
`--shape chain`: the earlier graph, independent pipelines of `--chain` jobs where job i reads
jobs i-1 and i-2, `--column-edges` setting the fan-in, and every dataset with an alias.
"""

from __future__ import annotations

import argparse
import datetime as dt
import atexit
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

from checkout import use_this_checkout  # noqa: E402 (a sibling: this script's folder is first on sys.path)

use_this_checkout()

from lineage_assets import LineageQuery  # noqa: E402
from lineage_assets.identity.datahub import dataset_urn, field_urn  # noqa: E402
from lineage_assets.query import synthetic_platform  # noqa: E402
from lineage_assets.query.synthetic import ALIAS_NS, NS, alias_of, build  # noqa: E402

def _percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return f"p50 {statistics.median(ordered) * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms   max {ordered[-1] * 1000:7.1f} ms"


def _time(label: str, ask, samples: int, depth: int | None = None) -> None:
    ask()  # warm
    times, sizes_seen = [], []
    for _ in range(samples):
        began = time.perf_counter()
        answer = ask()
        times.append(time.perf_counter() - began)
        sizes_seen.append(len(answer.graph) if hasattr(answer, "graph") else len(getattr(answer, "root", [])))
    at = f"depth {depth}" if depth is not None else ""
    ordered = sorted(sizes_seen)
    print(f"{label:<40} {at:<9}: {_percentiles(times)}   nodes/answer median {statistics.median(ordered):.0f}, "
          f"p95 {ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]}, max {ordered[-1]}")


def _scratch(args) -> str:
    folder = tempfile.mkdtemp(prefix="lineage_bench_", dir=args.warehouse)
    atexit.register(shutil.rmtree, folder, True)  # removed when the script ends
    return folder


def platform(args) -> None:
    warehouse = _scratch(args)
    began = time.perf_counter()
    sizes = synthetic_platform.build_platform(warehouse, args.jobs, seed=args.seed)
    print(f"platform graph {sizes} built in {time.perf_counter() - began:.1f}s")
    ns = synthetic_platform.NS
    jobs = synthetic_platform.platform_jobs(args.jobs, seed=args.seed)
    rng = random.Random(args.seed)
    with LineageQuery(warehouse) as query:
        began = time.perf_counter()
        query.lineage(f"job:{ns}:{jobs[-1].name}", depth=0)
        print(f"first query (loads the snapshot and builds the indexes): {time.perf_counter() - began:.2f}s")
        fielded = [j for j in jobs if j.edges]
        for depth in (2, args.depth):
            _time("lineage(job)", lambda: query.lineage(f"job:{ns}:{rng.choice(jobs).name}", depth=depth), args.samples, depth)
        _time("lineage(dataset)", lambda: query.lineage(f"dataset:{ns}:{rng.choice(jobs).output}", depth=args.depth), args.samples, args.depth)

        def field_id() -> str:
            job = rng.choice(fielded)
            return f"datasetField:{ns}:{job.output}:{rng.choice(job.edges)[0]}"

        _time("column_lineage(field)", lambda: query.column_lineage(field_id(), depth=args.depth), args.samples, args.depth)
        _time("column_lineage(field, downstream)", lambda: query.column_lineage(field_id(), depth=args.depth, with_downstream=True),
              args.samples, args.depth)
        _time("column_lineage(dataset)", lambda: query.column_lineage(f"dataset:{ns}:{rng.choice(fielded).output}", depth=args.depth),
              args.samples, args.depth)
        began = time.perf_counter()
        query.lineage(dataset_urn(ns, jobs[0].output), depth=0)
        print(f"first URN (builds the URN index of the datasets): {time.perf_counter() - began:.2f}s")
        _time("lineage(dataset URN)", lambda: query.lineage(dataset_urn(ns, rng.choice(jobs).output), depth=args.depth), args.samples, args.depth)
        _time("column_lineage(field URN)", lambda: query.column_lineage(
            field_urn(ns, *(lambda j: (j.output, rng.choice(j.edges)[0]))(rng.choice(fielded))), depth=args.depth), args.samples, args.depth)
        _time("fine_grained_lineage (DataHub aspect)",
              lambda: type("A", (), {"root": query.fine_grained_lineage(ns, rng.choice(fielded).output).fineGrainedLineages})(), args.samples)


def history(args) -> None:
    warehouse = _scratch(args)
    began = time.perf_counter()
    sizes = synthetic_platform.build_platform(warehouse, args.history_jobs, days=args.days, seed=args.seed)
    print(f"\nplatform graph with history {sizes} built in {time.perf_counter() - began:.1f}s")
    ns, start = synthetic_platform.NS, synthetic_platform.START
    end = start + dt.timedelta(days=args.days)
    jobs = [j for j in synthetic_platform.platform_jobs(args.history_jobs, seed=args.seed) if j.edges]
    rng = random.Random(args.seed)
    with LineageQuery(warehouse) as query:
        began = time.perf_counter()
        query.field_mappings(ns, jobs[0].output, start, end)
        print(f"first field query (loads the history, indexes the {args.days}-day window): {time.perf_counter() - began:.2f}s")
        _time("field_mappings(levels=3)", lambda: query.field_mappings(ns, rng.choice(jobs).output, start, end, levels=3), args.samples)
        _time("field_mappings(levels=3, both)",
              lambda: query.field_mappings(ns, rng.choice(jobs).output, start, end, direction="both", levels=3), args.samples)
        _time("fields(include_current)", lambda: query.fields(ns, rng.choice(jobs).output, start, end, include_current=True), args.samples)

        def operations():
            job = rng.choice(jobs)
            return query.field_operations(ns, job.output, rng.choice(job.edges)[0], start, end).connections

        _time("field_operations", lambda: type("A", (), {"root": operations()})(), args.samples)
        _time("dataset", lambda: type("A", (), {"root": query.dataset(ns, rng.choice(jobs).output).columnLineage})(), args.samples)


def chain(args) -> None:
    fan_in = max(1, round(args.column_edges / (args.jobs * args.fields)))
    warehouse = _scratch(args)
    began = time.perf_counter()
    sizes = build(warehouse, args.jobs, args.chain, args.fields, fan_in, args.seed)
    print(f"built {sizes} (fan-in {fan_in}) in {time.perf_counter() - began:.1f}s at {warehouse}")
    rng = random.Random(args.seed)
    with LineageQuery(warehouse) as query:
        began = time.perf_counter()
        query.lineage(f"job:{NS}:p0.job0", depth=0)
        print(f"first query (loads the snapshot and builds the indexes): {time.perf_counter() - began:.2f}s")
        pipelines = max(1, args.jobs // args.chain)
        _time("lineage(job)", lambda: query.lineage(f"job:{NS}:p{rng.randrange(pipelines)}.job{rng.randrange(args.chain)}", depth=args.depth),
              args.samples, args.depth)
        _time("column_lineage(field)", lambda: query.column_lineage(
            f"datasetField:{NS}:p{rng.randrange(pipelines)}.table{rng.randrange(args.chain)}:f{rng.randrange(args.fields)}", depth=args.depth,
        ), args.samples, args.depth)
        # a dataset asked for by its canonical id and by its alias (the storage path): the same
        # datasets in the same order, the resolution alone and the whole answer
        picks = [f"p{rng.randrange(pipelines)}.table{rng.randrange(args.chain)}" for _ in range(args.samples)]
        for label, node in (("canonical", lambda t: f"dataset:{NS}:{t}"), ("alias", lambda t: f"dataset:{ALIAS_NS}:{alias_of(t)}")):
            for what, ask in (("resolve", lambda n: query.resolve(n)), ("lineage", lambda n: query.lineage(n, depth=args.depth))):
                ask(node(picks[0]))  # warm
                times = []
                for table in picks:
                    began = time.perf_counter()
                    ask(node(table))
                    times.append(time.perf_counter() - began)
                print(f"{f'{what}(dataset, {label})':<40} depth {args.depth}: {_percentiles(times)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", choices=("platform", "chain"), default="platform")
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--history-jobs", type=int, default=10_000, help="jobs of the warehouse with history (platform shape)")
    parser.add_argument("--days", type=int, default=30, help="days of history (platform shape; 0: none)")
    parser.add_argument("--column-edges", type=int, default=1_000_000, help="chain shape")
    parser.add_argument("--chain", type=int, default=50, help="jobs per pipeline (chain shape)")
    parser.add_argument("--fields", type=int, default=20, help="fields per dataset (chain shape)")
    parser.add_argument("--depth", type=int, default=20)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--warehouse", default=None, help="a folder to build in (default: the system's temporary folder)")
    args = parser.parse_args()
    if args.shape == "chain":
        chain(args)
        return
    platform(args)
    if args.days:
        history(args)


if __name__ == "__main__":
    main()
