"""The intake's Python parse of a batch of events, with Python's cycle collector on and off.

Not a test: it prints figures. The events come from the project's generator
(`lineage_assets.demo.platform`, about 8 KB each); each round parses the batch as a Python worker
of the intake does (`intake.spark_intake.parse_unit`: decode, validate, one row per record, then
Arrow batches) once with the collector running throughout and once as the intake runs it
(`cycle_collection.no_cycle_collection` around each unit), and prints the CPU seconds of each
and their ratio. The rows are compared, so both ways parse the same.

    python benchmarks/intake_parse.py [--events 5000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

from checkout import use_this_checkout

use_this_checkout()  # before lineage_assets is imported

import pyarrow as pa  # noqa: E402

from lineage_assets.demo import platform  # noqa: E402
from lineage_assets.intake.decode import decode_ndjson_chunk  # noqa: E402
from lineage_assets.intake.ledger import NDJSON  # noqa: E402
from lineage_assets.intake.parse import parse_records  # noqa: E402
from lineage_assets.intake.read_plan import ReadUnit  # noqa: E402
from lineage_assets.intake.spark_intake import PARSED_UNITS, parse_unit  # noqa: E402
from lineage_assets.warehouse import schemas  # noqa: E402

ARROW = schemas.arrow_schema(PARSED_UNITS)


def batches(rows: list[dict]) -> list[pa.RecordBatch]:
    return [pa.RecordBatch.from_pylist(rows[i:i + 2000], schema=ARROW) for i in range(0, len(rows), 2000)]


def collector_on(path: str, size: int) -> list[pa.RecordBatch]:
    """What `parse_unit` and the worker's Arrow batches do, without pausing the collector."""
    with open(path, "rb") as handle:
        data = handle.read(size)
    rows = parse_records(decode_ndjson_chunk(data, 1), os.path.basename(path), None)
    for row in rows:
        row["file_id"] = "f"
    return batches(rows)


def collector_off(folder: str, name: str, size: int) -> list[pa.RecordBatch]:
    """As the intake's worker does it (`read_units`): the collector paused in `parse_unit`."""
    from lineage_assets.cycle_collection import no_cycle_collection

    with no_cycle_collection():
        return batches(parse_unit(folder, ReadUnit(name, "f", NDJSON, 0, size, 1), None))


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
            on = collector_on(path, size)
            middle = time.process_time()
            off = collector_off(folder, "events.ndjson", size)
            ended = time.process_time()
            same = pa.Table.from_batches(on).equals(pa.Table.from_batches(off))
            print(f"round {n}: collector on {middle - began:.3f} s, paused {ended - middle:.3f} s of CPU, "
                  f"ratio {(ended - middle) / (middle - began):.3f}; the same rows: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
