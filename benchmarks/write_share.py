"""How much of a fold's `write` step is writing: the same refold staged as Parquet or sent to
Spark's `noop` sink (every output computed, nothing written), alternating in one JVM. Not a test;
it folds a copy of the warehouse and commits nothing (each pass stops after its `write` step).

    python benchmarks/write_share.py WAREHOUSE FIRST LAST [--passes 6] [--sample 0.1]

Case c's refold: WAREHOUSE a copy of case b's warehouse (`benchmarks/pipeline.py --cases b
--work DIR` leaves DIR/wh_b before case c lands), FIRST its late day (2025-10-27), LAST the last
day (2025-12-31). The first pass runs in a new JVM: compare the later ones.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time

from checkout import use_this_checkout

use_this_checkout()  # before lineage_assets is imported

from fold_jobs import quiet_session, refold_parser  # noqa: E402 (beside this script)
from lineage_assets.identity.partitions import load_rules  # noqa: E402
from lineage_assets.pipeline import fold  # noqa: E402
from lineage_assets.warehouse import commits  # noqa: E402


class _Written(Exception):
    """Raised where the fold first reads back what it staged: the pass ends after `write`."""


def _noop_stage(_txn, df, table, *_args, **_kwargs) -> None:
    frame = df.select(*table.column_names)
    if table.partition_by:
        frame = frame.sortWithinPartitions(*table.partition_by)
    frame.write.format("noop").mode("overwrite").save()


def _stop(*_args, **_kwargs):
    raise _Written()


def main() -> int:
    args = refold_parser(__doc__, passes=6).parse_args()
    spark = quiet_session()
    parquet = commits.Transaction.stage
    commits.Transaction.read_staged = _stop
    work = tempfile.mkdtemp(prefix="write_share_")
    copy = os.path.join(work, "wh")
    shutil.copytree(args.warehouse, copy)
    try:
        for n in range(args.passes):
            sink = ("parquet", "noop")[n % 2]
            commits.Transaction.stage = parquet if sink == "parquet" else _noop_stage
            laps, began = fold.Laps(), time.monotonic()
            try:
                with commits.writer(copy):
                    base = commits.latest(copy)
                    first = fold.fold_start(base, args.first, args.last, log=print)  # as `run_fold` starts it
                    fold._fold_and_commit(spark, copy, base, first, args.last, args.last,
                                          args.sample, load_rules(), fold.WHOLE_CHECK_EVENTS, laps)
            except _Written:
                pass
            print(f"pass {n} ({sink}): {time.monotonic() - began:.1f} s; write {laps.seconds.get('write', 0):.1f} s; "
                  + ", ".join(f"{step} {s:.1f}" for step, s in laps.seconds.items() if step != "write"), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
