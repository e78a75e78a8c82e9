"""Latency of `lineage()` and `column_lineage()` on a synthetic warehouse of a given size.

    .venv/bin/python benchmarks/query_latency.py --jobs 10000 --column-edges 1000000

The graph: independent pipelines of `--chain` jobs; job i of a pipeline reads the datasets of
jobs i-1 and i-2 and writes its own dataset of `--fields` fields; each output field depends on
`--fan-in` fields of the inputs (so column edges = jobs x fields x fan-in; `--column-edges` sets
fan-in). The current snapshot is written as Parquet with pyarrow (no Spark needed) and
published like a materialization does. Prints the load time and p50/p95/max per query kind.
"""

from __future__ import annotations

import argparse
import atexit
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from lineage_assets import LineageQuery  # noqa: E402
from lineage_assets.query.synthetic import ALIAS_NS, NS, alias_of, build  # noqa: E402

def _percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return f"p50 {statistics.median(ordered) * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms   max {ordered[-1] * 1000:7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--column-edges", type=int, default=1_000_000)
    parser.add_argument("--chain", type=int, default=50, help="jobs per pipeline")
    parser.add_argument("--fields", type=int, default=20, help="fields per dataset")
    parser.add_argument("--depth", type=int, default=20)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--warehouse", default=None, help="where to build it (default: a temporary folder)")
    args = parser.parse_args()
    fan_in = max(1, round(args.column_edges / (args.jobs * args.fields)))
    warehouse = args.warehouse or tempfile.mkdtemp(prefix="lineage_bench_")
    if args.warehouse is None:
        atexit.register(shutil.rmtree, warehouse, True)  # a temporary warehouse goes when the script ends
    began = time.perf_counter()
    sizes = build(warehouse, args.jobs, args.chain, args.fields, fan_in, args.seed)
    print(f"built {sizes} (fan-in {fan_in}) in {time.perf_counter() - began:.1f}s at {warehouse}")
    rng = random.Random(args.seed)
    with LineageQuery(warehouse) as query:
        began = time.perf_counter()
        query.lineage(f"job:{NS}:p0.job0", depth=0)
        print(f"first query (loads the snapshot into DuckDB): {time.perf_counter() - began:.2f}s")
        pipelines = max(1, args.jobs // args.chain)
        kinds = {
            "lineage(job)": lambda: query.lineage(f"job:{NS}:p{rng.randrange(pipelines)}.job{rng.randrange(args.chain)}", depth=args.depth),
            "column_lineage(field)": lambda: query.column_lineage(
                f"datasetField:{NS}:p{rng.randrange(pipelines)}.table{rng.randrange(args.chain)}:f{rng.randrange(args.fields)}", depth=args.depth
            ),
            "column_lineage(field, downstream)": lambda: query.column_lineage(
                f"datasetField:{NS}:p{rng.randrange(pipelines)}.table{rng.randrange(args.chain)}:f{rng.randrange(args.fields)}",
                depth=args.depth, with_downstream=True,
            ),
        }
        for name, ask in kinds.items():
            ask()  # warm
            times, sizes_seen = [], []
            for _ in range(args.samples):
                began = time.perf_counter()
                graph = ask()
                times.append(time.perf_counter() - began)
                sizes_seen.append(len(graph.graph))
            print(f"{name:<36} depth {args.depth}: {_percentiles(times)}   nodes/answer median {statistics.median(sizes_seen):.0f}")
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
                print(f"{f'{what}(dataset, {label})':<36} depth {args.depth}: {_percentiles(times)}")


if __name__ == "__main__":
    main()
