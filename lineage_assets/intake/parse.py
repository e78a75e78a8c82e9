"""One drop file's bytes -> one row per record, accepted (an `events` row) or rejected."""

from __future__ import annotations

import datetime as dt

from lineage_assets.intake.decode import decode_drop
from lineage_assets.intake.validate import Rejection, event_row

_EMPTY_EVENT = {
    "event_id": None, "event_time": None, "event_time_raw": None, "event_date": None,
    "event_kind": None, "event_type": None, "run_id": None, "job_namespace": None,
    "job_name": None, "dataset_namespace": None, "dataset_name": None, "producer": None,
    "schema_url": None, "inputs": None, "outputs": None, "run_facets": None, "job_facets": None,
    "dataset_facets": None, "event_json": None,
}  # fmt: skip


def parse_drop_bytes(content: bytes, source_file: str, start_date: dt.date | None) -> list[dict]:
    return parse_records(decode_drop(content), source_file, start_date)


def parse_records(records, source_file: str, start_date: dt.date | None) -> list[dict]:
    rows = []
    for record in records:
        base = {"source_file": source_file, "source_line": record.source_line}
        if record.ok:
            try:
                row = event_row(record.value, start_date)
            except Rejection as rejection:
                rows.append(_rejected(base, record.raw, record.raw_encoding, rejection.code, rejection.reason, rejection.event_time))
                continue
            rows.append({**row, **base, "accepted": True, "raw": None, "raw_encoding": None, "reason_code": None, "reason": None})
        else:
            rows.append(_rejected(base, record.raw, record.raw_encoding, record.error_code, record.error, None))
    return rows


def _rejected(base: dict, raw: str, encoding: str, code: str, reason: str, when: dt.datetime | None) -> dict:
    return {
        **_EMPTY_EVENT,
        **base,
        "accepted": False,
        "event_time": when,
        "raw": raw,
        "raw_encoding": encoding,
        "reason_code": code,
        "reason": reason,
    }
