"""A small landing batch read and staged in this process, without Spark.

The same rules as `spark_intake.stage_drop`, over the parsed rows of a batch small enough to
hold in memory (`settings.local_intake_max_bytes`): one row per event_id, the earliest by
(source_file, source_line); events already landed on their day are duplicates; rejects stored
from an earlier read of a replaced file are not stored twice. A landing run of a few files then
costs no JVM. `lineage_assets_tests/intake/test_local_intake.py` lands the same drops both ways
and compares the tables.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lineage_assets.intake.read_plan import ReadUnit
from lineage_assets.intake.spark_intake import parse_unit
from lineage_assets.warehouse import commits, schemas
from lineage_assets.warehouse import tables as t

EVENT_COLUMNS = [f.name for f in schemas.EVENT_FIELDS]
REJECT_COLUMNS = [f.name for f in schemas.REJECTED_FIELDS]
REJECT_KEY = ("source_file", "source_line", "raw")


def parse_units(drop_dir: str, units: list[ReadUnit], start_date: dt.date | None) -> list[dict]:
    """Every record of the units, as `spark_intake.read_units` gives them (PARSED rows + file_id)."""
    return [row for unit in units for row in parse_unit(drop_dir, unit, start_date)]


@dataclass
class StagedRows:
    events: list[dict]  # new accepted events, LANDED_EVENTS columns
    rejected: list[dict]  # new rejected records, REJECTED_EVENTS columns
    duplicate_events: list[dict]  # accepted records already known (in this batch or landed before)
    duplicate_rejects: list[dict]  # rejects stored from an earlier read of the file

    def tables(self) -> tuple[pa.Table, pa.Table]:
        """(landed_events, rejected_events) rows as Arrow tables of the registry's schemas."""
        return (
            pa.Table.from_pylist(self.events, schema=schemas.arrow_schema(t.LANDED_EVENTS.schema)),
            pa.Table.from_pylist(self.rejected, schema=schemas.arrow_schema(t.REJECTED_EVENTS.schema)),
        )


def stage_rows(
    parsed: list[dict], batch_id: str, read_date: dt.date, known_event_ids: set[str], known_rejects: set[tuple] | None,
) -> StagedRows:
    firsts: dict[str, dict] = {}
    for row in parsed:
        if row["accepted"]:
            best = firsts.get(row["event_id"])
            if best is None or (row["source_file"], row["source_line"]) < (best["source_file"], best["source_line"]):
                firsts[row["event_id"]] = row
    new = {id(row) for event_id, row in firsts.items() if event_id not in known_event_ids}
    events, duplicates, rejected, duplicate_rejects = [], [], [], []
    for row in parsed:
        if row["accepted"]:
            if id(row) in new:
                events.append({
                    **{c: row[c] for c in EVENT_COLUMNS}, "file_id": row["file_id"],
                    "event_date": dt.date.fromisoformat(row["event_date"]), "batch_id": batch_id,
                })
            else:
                duplicates.append(row)
        elif known_rejects is not None and tuple(row[c] for c in REJECT_KEY) in known_rejects:
            duplicate_rejects.append(row)
        else:
            rejected.append({**{c: row[c] for c in REJECT_COLUMNS}, "read_date": read_date, "batch_id": batch_id})
    return StagedRows(events, rejected, duplicates, duplicate_rejects)


def _column(files: list[str], columns: list[str]) -> pa.Table | None:
    parts = [pq.ParquetFile(f).read(columns=columns) for f in files]
    return pa.concat_tables(parts) if parts else None


def known_event_ids(commit: commits.Commit, days: set[str], among: set[str]) -> set[str]:
    """The event_ids of `among` already landed on `days` (ISO dates) in `commit`: one
    multi-threaded read of the days' event_id column, matched in Arrow (no Python set of every
    id the days hold)."""
    files = commit.files(t.LANDED_EVENTS.name, where=lambda p: p["event_date"] in days)
    if not files or not among:
        return set()
    landed = pq.read_table(files, columns=["event_id"]).column("event_id").combine_chunks()
    candidates = pa.array(sorted(among), pa.string())
    return set(candidates.filter(pc.is_in(candidates, value_set=landed)).to_pylist())


def known_rejects(commit: commits.Commit, paths: list[str]) -> set[tuple]:
    """(source_file, source_line, raw) of the rejects stored in `commit` for the files `paths`."""
    files = commit.files(t.REJECTED_EVENTS.name)
    if not files or not paths:
        return set()
    rows = pq.read_table(files, columns=list(REJECT_KEY), filters=[("source_file", "in", sorted(set(paths)))])
    return {tuple(r.values()) for r in rows.to_pylist()}


def staged_column_values(txn: commits.Transaction, table: str, column: str) -> list[tuple[str, str]]:
    """(source_file, value of `column`) of every staged row of `table`, read back from the files
    (a partition column's value comes from the partition path)."""
    out: list[tuple[str, str]] = []
    for partition, files in txn.staged_files(table).items():
        values = commits.parse_partition(partition)
        for f in files:
            read = pq.ParquetFile(f).read(columns=["source_file"] + ([] if column in values else [column]))
            sources = read.column("source_file").to_pylist()
            keys = [values[column]] * len(sources) if column in values else [str(v) for v in read.column(column).to_pylist()]
            out.extend(zip(sources, keys))
    return out


def staged_reject_preview(txn: commits.Transaction, limit: int = 10) -> list[dict]:
    files = txn.staged_paths(t.REJECTED_EVENTS.name)
    rows = _column(files, ["source_file", "source_line", "reason_code", "reason"])
    if rows is None:
        return []
    first = sorted(rows.to_pylist(), key=lambda r: (r["source_file"], r["source_line"]))[:limit]
    return [{"file": r["source_file"], "line": r["source_line"], "reason": r["reason_code"], "detail": r["reason"]} for r in first]
