"""The intake's Python parse of a batch of events, with Python's cycle collector on and off.

Not a test: it prints figures. The events come from the project's generator
(`lineage_assets.demo.platform`, about 8 KB each); each round parses the batch as a Python worker
of the intake does (`intake.spark_intake.parse_unit`: decode, validate, one row per record, then
Arrow batches: the worker's own functions) once as the intake runs it (the collector paused in
`parse_unit`, `cycle_collection.no_cycle_collection`) and once with that pause taken out, and
prints the CPU seconds of each and their ratio. The rows are compared, so both ways parse the same.

    python benchmarks/intake_parse.py [--events 5000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time

from checkout import use_this_checkout

use_this_checkout()  # before lineage_assets is imported

import pyarrow as pa  # noqa: E402

from lineage_assets.demo import platform  # noqa: E402
from lineage_assets.intake import spark_intake  # noqa: E402
from lineage_assets.intake.ledger import NDJSON  # noqa: E402
from lineage_assets.intake.read_plan import ReadUnit  # noqa: E402
from lineage_assets.warehouse import schemas  # noqa: E402

ARROW = schemas.arrow_schema(spark_intake.PARSED_UNITS)


def worker_batches(folder: str, name: str, size: int) -> list[pa.RecordBatch]:
    """What an intake worker makes of one unit of the whole file (`read_units`)."""
    return list(spark_intake.parsed_batches(spark_intake.parse_unit(folder, ReadUnit(name, "f", NDJSON, 0, size, 1), None), ARROW))


def collector_running(folder: str, name: str, size: int) -> list[pa.RecordBatch]:
    """`worker_batches` with `parse_unit`'s pause of the collector taken out."""
    paused = spark_intake.no_cycle_collection
    spark_intake.no_cycle_collection = contextlib.nullcontext
    try:
        return worker_batches(folder, name, size)
    finally:
        spark_intake.no_cycle_collection = paused


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="intake_parse_") as folder:
        path = os.path.join(folder, "events.ndjson")
        platform.generate(path, events=args.events)
        size = os.path.getsize(path)
        print(f"{args.events} generated events, {size / 1e6:.1f} MB")
        for n in range(args.rounds):
            began = time.process_time()
            on = collector_running(folder, "events.ndjson", size)
            middle = time.process_time()
            off = worker_batches(folder, "events.ndjson", size)
            ended = time.process_time()
            same = pa.Table.from_batches(on).equals(pa.Table.from_batches(off))
            print(f"round {n}: collector on {middle - began:.3f} s, paused {ended - middle:.3f} s of CPU, "
                  f"ratio {(ended - middle) / (middle - began):.3f}; the same rows: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
