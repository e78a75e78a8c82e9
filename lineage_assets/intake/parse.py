"""One drop file's bytes -> one row per record, accepted (an `events` row) or rejected.

Total (DESIGN.md section 11): every record gives exactly one row and no exception escapes a
record. Expected problems are specific rejects (`reasons`); anything unexpected becomes an
`internal_error` reject carrying the exception's text, as a last resort.
"""

from __future__ import annotations

import datetime as dt

from lineage_assets.intake import reasons
from lineage_assets.intake.decode import Limits, decode_drop
from lineage_assets.intake.validate import Rejection, event_row

_EMPTY_EVENT = {
    "event_id": None, "event_time": None, "event_time_raw": None, "event_date": None,
    "event_kind": None, "event_type": None, "run_id": None, "job_namespace": None,
    "job_name": None, "dataset_namespace": None, "dataset_name": None, "producer": None,
    "schema_url": None, "inputs": None, "outputs": None, "run_facets": None, "job_facets": None,
    "dataset_facets": None, "event_json": None,
}  # fmt: skip

_MAX_REASON = 4000  # characters of a reason text


def parse_drop_bytes(content: bytes, source_file: str, start_date: dt.date | None) -> list[dict]:
    limits = Limits.from_env()
    return parse_records(decode_drop(content, limits), source_file, start_date, limits)


def parse_records(records, source_file: str, start_date: dt.date | None, limits: Limits | None = None) -> list[dict]:
    limits = limits or Limits.from_env()
    rows = []
    for record in records:
        base = {"source_file": source_file, "source_line": record.source_line}
        if not record.ok:
            rows.append(_rejected(base, record.raw, record.raw_encoding, record.error_code, record.error, None))
            continue
        try:
            row = event_row(record.value, start_date, limits, record.floats)
        except Rejection as rejection:
            rows.append(_rejected(base, record.raw, record.raw_encoding, rejection.code, rejection.reason, rejection.event_time))
            continue
        except Exception as exc:  # noqa: BLE001 - last resort: a bug must not take the file (or the batch) down
            reason = f"unexpected {type(exc).__name__} while validating: {exc}"
            rows.append(_rejected(base, record.raw, record.raw_encoding, reasons.INTERNAL_ERROR, reason, None))
            continue
        rows.append({**row, **base, "accepted": True, "raw": None, "raw_encoding": None, "reason_code": None, "reason": None})
    return rows


def _text(value: str | None) -> str | None:
    """A reason as storable text: bounded, and never a lone surrogate (Arrow refuses those)."""
    if value is None:
        return None
    value = value if len(value) <= _MAX_REASON else value[:_MAX_REASON] + f"... ({len(value)} characters)"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def _rejected(base: dict, raw: str, encoding: str, code: str, reason: str, when: dt.datetime | None) -> dict:
    return {
        **_EMPTY_EVENT,
        **base,
        "accepted": False,
        "event_time": when,
        "raw": raw,
        "raw_encoding": encoding,
        "reason_code": code,
        "reason": _text(reason),
    }
