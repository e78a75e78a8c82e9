"""A writer for test_kill_writer.py: one materialization of prepared content, run as a process
that the test kills (LINEAGE_KILL_AT) at every fault point of the commit protocol.

The materialization stages the four current-graph tables (replaced whole) and the `runs`
partitions from a given day on (replaced, as a fold of a range replaces them), then commits.
"""

from __future__ import annotations

import os
import sys

import pyarrow.parquet as pq

from lineage_assets.warehouse import commits
from lineage_assets.warehouse import tables as t

TABLES = ("current_jobs", "current_lineage", "current_column_lineage", "current_dataset_fields", "runs")


def materialize(root: str, source: str, since: str) -> commits.Commit:
    with commits.writer(root), commits.Transaction(root, "kill_test") as txn:
        for name in TABLES:
            data = pq.read_table(os.path.join(source, f"{name}.parquet"))
            replace = (lambda p: p["end_date"] >= since) if t.get(name).partition_by else None
            txn.stage_arrow(data, name, replace=replace)
        return txn.commit({"since": since})


if __name__ == "__main__":
    materialize(*sys.argv[1:4])
