"""Snapshot tables (current_jobs, current_lineage, ...) published atomically.

Each materialization writes a new folder `<table>/snapshot=<id>/` and then replaces the pointer
file `<table>/_CURRENT` (write to a temporary name, then rename): a reader that follows the
pointer always sees one complete snapshot, even while the next one is being written. The two
newest snapshots are kept, so a reader that just read the pointer still finds its folder.
"""

from __future__ import annotations

import os
import shutil

KEEP = 2
POINTER = "_CURRENT"
# The current-graph tables, in publishing order: readers follow current_lineage's pointer and
# read every other table of the same snapshot id, so current_lineage is published last.
TABLES = ("current_jobs", "current_column_lineage", "current_dataset_fields", "current_lineage")


def snapshot_dir(warehouse: str, table: str, snapshot_id: str) -> str:
    return os.path.join(warehouse, table, f"snapshot={snapshot_id}")


def publish(warehouse: str, table: str, snapshot_id: str) -> None:
    root = os.path.join(warehouse, table)
    tmp = os.path.join(root, f".{POINTER}.tmp")
    with open(tmp, "w") as handle:
        handle.write(f"snapshot={snapshot_id}\n")
    os.replace(tmp, os.path.join(root, POINTER))
    # Keep the published snapshot and the newest others by modification time (not by name).
    current = f"snapshot={snapshot_id}"
    others = [d for d in os.listdir(root) if d.startswith("snapshot=") and d != current]
    others.sort(key=lambda d: os.path.getmtime(os.path.join(root, d)), reverse=True)
    for old in others[KEEP - 1:]:
        shutil.rmtree(os.path.join(root, old), ignore_errors=True)


def publish_all(warehouse: str, snapshot_id: str) -> None:
    """Publish a snapshot of every current-graph table, current_lineage last."""
    for table in TABLES:
        publish(warehouse, table, snapshot_id)


def current_dir(warehouse: str, table: str) -> str | None:
    """The folder of the table's published snapshot, or None before the first one."""
    try:
        with open(os.path.join(warehouse, table, POINTER)) as handle:
            name = handle.read().strip()
    except FileNotFoundError:
        return None
    return os.path.join(warehouse, table, name)
