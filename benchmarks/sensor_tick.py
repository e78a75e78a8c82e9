"""What a sensor tick costs with many files already landed (DESIGN.md section 7).

Writes N one-event files, records them all in a committed drop ledger (as a landing batch
would, without Spark), adds `--new` files, then times what a tick does before it can request
anything: read the ledger of the latest commit, list the folder, stat every file and
fingerprint the changed ones (`defs.sensors.next_work`). Prints the figures; not a test.

    python benchmarks/sensor_tick.py --files 100000 --new 10
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

from checkout import use_this_checkout  # noqa: E402 (a sibling: this script's folder is first on sys.path)

use_this_checkout()

from lineage_assets.defs.resources import LineagePaths  # noqa: E402
from lineage_assets.defs.sensors import INTAKE_JOB, QUIET_SECONDS, next_work  # noqa: E402
from lineage_assets.intake.ledger import Ledger, changed_files  # noqa: E402
from lineage_assets.intake.read_plan import plan_reads  # noqa: E402
from lineage_assets.warehouse import commits, tables  # noqa: E402

EVENT = ('{"eventType":"COMPLETE","eventTime":"2024-05-01T10:00:00Z","run":{"runId":"3f0b4e4e-8f9b-4a55-8f0a-0d6f0f2a%04x"},'
         '"job":{"namespace":"ns","name":"job%d"},"producer":"bench"}\n')


def write_files(folder: str, first: int, count: int, per_dir: int = 1000) -> None:
    for i in range(first, first + count):
        sub = os.path.join(folder, f"d{i // per_dir:04d}")
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, f"e{i:07d}.ndjson"), "w") as handle:
            handle.write(EVENT % (i % 65536, i))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--new", type=int, default=10)
    parser.add_argument("--ticks", type=int, default=5)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="sensor_tick_")
    try:
        drops, warehouse = os.path.join(work, "drops"), os.path.join(work, "wh")
        began = time.monotonic()
        write_files(drops, 0, args.files)
        hours_ago = time.time() - 2 * QUIET_SECONDS  # the landed files were written a while ago
        for root, _dirs, names in os.walk(drops):
            for name in names:
                os.utime(os.path.join(root, name), (hours_ago, hours_ago))
        _units, reads = plan_reads(drops, changed_files(drops, {}), "landed")
        with commits.Transaction(warehouse, "bench") as txn:
            txn.stage_arrow(pa.Table.from_pylist([r.state.as_row() for r in reads]), tables.DROP_LEDGER)
            txn.commit({"bench": True})
        print(f"{args.files} files written and recorded in the ledger in {time.monotonic() - began:.1f}s")
        write_files(drops, args.files, args.new)
        paths = LineagePaths(drop_dir=drops, warehouse=warehouse, start_date="2020-01-01")
        timings: dict[str, list[float]] = {"first ledger read (then cached per commit)": [], "full sweep: listing + a stat per file": [],
                                           "quick look: listing, stat of new and active files": [], "tick decision (next_work, quick)": []}
        for tick in range(args.ticks):
            t0 = time.perf_counter()
            ledger = Ledger(pq.read_table(commits.latest(warehouse).files(tables.DROP_LEDGER.name)))
            t1 = time.perf_counter()
            full = changed_files(drops, ledger)
            t2 = time.perf_counter()
            quick = changed_files(drops, ledger, quiet_after_ns=int((time.time() - QUIET_SECONDS) * 1e9))
            t3 = time.perf_counter()
            if tick == 0:
                next_work(paths)  # the first tick of a process is a full sweep
            t4 = time.perf_counter()
            work_item, why = next_work(paths)
            t5 = time.perf_counter()
            assert len(full) == len(quick) == args.new and work_item is not None and work_item.job == INTAKE_JOB, why
            for name, seconds in zip(timings, (t1 - t0, t2 - t1, t3 - t2, t5 - t4)):
                timings[name].append(seconds)
        print(f"{args.files} landed files, {args.new} new; p50 of {args.ticks} ticks:")
        for name, values in timings.items():
            print(f"  {name:<52} {statistics.median(values) * 1000:8.1f} ms")
        print("target: a tick well under 1 s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
