"""Validate one parsed JSON object as an OpenLineage 2-0-x event and flatten it to an `events` row.

pydantic checks the structure (required fields, types, runId as UUID, eventType from the
spec's list); its errors are mapped onto the reason codes in `reasons`. The row keeps the whole
event as canonical JSON, so unknown facets and unknown top-level keys are never lost.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictStr, ValidationError

from lineage_assets.ids import canonical_json, event_id
from lineage_assets.intake import reasons

EVENT_TYPES = ("START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER")

_DATETIME = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2})?)(?:\.(\d+))?(Z|z|[+-]\d{2}(?::?\d{2})?)?$"
)


def parse_event_time(value: str) -> dt.datetime:
    """ISO 8601 date-time to an aware UTC datetime (microseconds; finer digits are truncated).

    A time without an offset is read as UTC, as the reference server does.
    """
    match = _DATETIME.match(value)
    if not match:
        raise ValueError(f"eventTime {value!r} is not an ISO 8601 date-time")
    date, clock, fraction, zone = match.groups()
    text = f"{date}T{clock}"
    if fraction:
        text += "." + fraction[:6].ljust(6, "0")
    if zone in (None, "Z", "z"):
        zone = "+00:00"
    elif len(zone) == 3:
        zone += ":00"
    elif ":" not in zone:
        zone = zone[:3] + ":" + zone[3:]
    try:
        parsed = dt.datetime.fromisoformat(text + zone)
    except ValueError as exc:
        raise ValueError(f"eventTime {value!r} is not a valid date-time: {exc}") from None
    return parsed.astimezone(dt.timezone.utc)


def _check_event_time(value: str) -> str:
    parse_event_time(value)
    return value


def _check_uuid(value: str) -> str:
    try:
        uuid.UUID(value)
    except ValueError:
        raise ValueError(f"runId {value!r} is not a UUID") from None
    return value


Name = Annotated[StrictStr, Field(min_length=1)]
Facets = dict[str, Any]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class DatasetModel(_Open):
    namespace: Name
    name: Name
    facets: Facets | None = None
    inputFacets: Facets | None = None
    outputFacets: Facets | None = None


class JobModel(_Open):
    namespace: Name
    name: Name
    facets: Facets | None = None


class RunModel(_Open):
    runId: Annotated[StrictStr, AfterValidator(_check_uuid)]
    facets: Facets | None = None


class EventModel(_Open):
    eventTime: Annotated[StrictStr, AfterValidator(_check_event_time)]
    producer: StrictStr
    schemaURL: StrictStr | None = None
    eventType: Literal[EVENT_TYPES] | None = None  # type: ignore[valid-type]
    run: RunModel | None = None
    job: JobModel | None = None
    dataset: DatasetModel | None = None
    inputs: list[DatasetModel] | None = None
    outputs: list[DatasetModel] | None = None


class Rejection(Exception):
    def __init__(self, code: str, reason: str, event_time: dt.datetime | None = None):
        super().__init__(f"{code}: {reason}")
        self.code = code
        self.reason = reason
        self.event_time = event_time


def _loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _readable_time(event: dict) -> dt.datetime | None:
    value = event.get("eventTime")
    if isinstance(value, str):
        try:
            return parse_event_time(value)
        except ValueError:
            return None
    return None


def _kind(event: dict) -> str | None:
    if event.get("run") is not None and event.get("job") is not None:
        return "RUN"
    if event.get("job") is not None and event.get("run") is None:
        return "JOB"
    if event.get("dataset") is not None and event.get("run") is None:
        return "DATASET"
    return None


def validate_event(event: dict) -> EventModel:
    """Raise Rejection with a reason code, or return the validated model."""
    when = _readable_time(event)
    kind = _kind(event)
    try:
        model = EventModel.model_validate(event)
        errors: list[dict] = []
    except ValidationError as exc:
        model = None
        errors = exc.errors(include_url=False, include_input=False)
    missing = [_loc(e["loc"]) for e in errors if e["type"] == "missing"]
    if kind is None:
        present = [k for k in ("run", "job", "dataset") if event.get(k) is not None]
        shape = f"has only {', '.join(present)}" if present else "has none of them"
        kind_text = f"an event needs run+job (RunEvent), job (JobEvent) or dataset (DatasetEvent); it {shape}"
        if missing:
            raise Rejection(
                reasons.MISSING_FIELD,
                f"missing required field(s): {', '.join(missing)}; and {kind_text}",
                when,
            )
        raise Rejection(reasons.AMBIGUOUS_KIND, f"event kind ambiguous: {kind_text}", when)
    if missing:
        raise Rejection(reasons.MISSING_FIELD, f"missing required field(s): {', '.join(missing)}", when)
    for error in errors:
        where = _loc(error["loc"])
        if where == "eventTime":
            raise Rejection(reasons.INVALID_EVENT_TIME, error["msg"].removeprefix("Value error, "), when)
    for error in errors:
        if _loc(error["loc"]) == "run.runId":
            raise Rejection(reasons.INVALID_RUN_ID, error["msg"].removeprefix("Value error, "), when)
    for error in errors:
        if _loc(error["loc"]) == "eventType":
            raise Rejection(
                reasons.INVALID_EVENT_TYPE,
                f"eventType {event.get('eventType')!r} is not one of {', '.join(EVENT_TYPES)}",
                when,
            )
    if errors:
        details = "; ".join(f"{_loc(e['loc'])}: {e['msg']}" for e in errors[:5])
        raise Rejection(reasons.INVALID_FIELD, f"invalid field(s): {details}", when)
    assert model is not None
    return model


def _datasets(items: list[dict] | None, io_key: str) -> list[dict]:
    """Sorted by (namespace, name) and unique; a dataset listed twice has its facets merged."""
    merged: dict[tuple[str, str], dict] = {}
    for item in items or []:
        key = (item["namespace"], item["name"])
        entry = merged.setdefault(key, {"facets": {}, "io_facets": {}})
        entry["facets"].update(item.get("facets") or {})
        entry["io_facets"].update(item.get(io_key) or {})
    return [
        {
            "namespace": ns,
            "name": name,
            "facets": canonical_json(entry["facets"]),
            "io_facets": canonical_json(entry["io_facets"]),
        }
        for (ns, name), entry in sorted(merged.items())
    ]


def event_row(event: dict, start_date: dt.date | None = None) -> dict:
    """The `events` row of a valid event; raises Rejection otherwise."""
    validate_event(event)
    when = parse_event_time(event["eventTime"])
    if start_date is not None and when.date() < start_date:
        raise Rejection(
            reasons.BEFORE_START_DATE,
            f"eventTime {event['eventTime']} is before LINEAGE_START_DATE {start_date.isoformat()}",
            when,
        )
    kind = _kind(event)
    run = event.get("run") or {}
    job = event.get("job") or {}
    dataset = event.get("dataset") if kind == "DATASET" else None
    return {
        "event_id": event_id(event),
        "event_time": when,
        "event_time_raw": event["eventTime"],
        "event_date": when.date().isoformat(),
        "event_kind": kind,
        "event_type": event.get("eventType"),
        "run_id": str(uuid.UUID(run["runId"])) if kind == "RUN" else None,
        "job_namespace": job.get("namespace"),
        "job_name": job.get("name"),
        "dataset_namespace": dataset["namespace"] if dataset else None,
        "dataset_name": dataset["name"] if dataset else None,
        "producer": event["producer"],
        "schema_url": event.get("schemaURL"),
        "inputs": _datasets(event.get("inputs"), "inputFacets"),
        "outputs": _datasets(event.get("outputs"), "outputFacets"),
        "run_facets": canonical_json(run.get("facets") or {}),
        "job_facets": canonical_json(job.get("facets") or {}),
        "dataset_facets": canonical_json(dataset.get("facets") or {}) if dataset else None,
        "event_json": canonical_json(event),
    }
