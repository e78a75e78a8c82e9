"""Validate one parsed JSON object as an OpenLineage 2-0-x event and flatten it to an `events` row.

pydantic checks the envelope (required fields, types, runId as a UUID, eventType from the
spec's list); its errors are mapped onto the reason codes in `reasons`. Then, in plain Python:
names (a job's or dataset's namespace and name: not blank, no control characters, at most
LINEAGE_MAX_NAME_LENGTH characters), and every facet a later stage reads, with the spec's
types, when it is present (`FACET_CHECKS`): so what is accepted never crashes the fold.
Unknown facets, and unknown keys of known facets, are kept untouched. The row keeps the whole
event as canonical JSON, so nothing of it is lost.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, StrictStr, ValidationError

from lineage_assets.ids import canonical_json, sha256_hex
from lineage_assets.intake import reasons
from lineage_assets.intake.decode import Limits, has_surrogate, limit, show_value

EVENT_TYPES = ("START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER")
LIFECYCLE_STATES = ("ALTER", "CREATE", "DROP", "OVERWRITE", "RENAME", "TRUNCATE")

# ASCII digits only (\d would take Arabic-Indic ones), and nothing after the offset (not even a
# newline). The offset's minutes are 00-59: `fromisoformat` takes +05:99 as 6 h 39 min. RFC 3339
# allows a lowercase `t` and `z`.
_DATETIME = re.compile(
    r"([0-9]{4}-[0-9]{2}-[0-9]{2})[Tt ]([0-9]{2}:[0-9]{2}(?::[0-9]{2})?)(?:\.([0-9]+))?(Z|z|[+-][0-9]{2}(?::?[0-5][0-9])?)?"
)
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# the spec's "format": "uuid": 8-4-4-4-12 hex digits (uuid.UUID() also takes braces, "urn:uuid:",
# no hyphens, underscores and non-ASCII digits)
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_INT64 = (-(1 << 63), (1 << 63) - 1)


def parse_event_time(value: str) -> dt.datetime:
    """ISO 8601 date-time to an aware UTC datetime (microseconds; finer digits are truncated).

    A time without an offset is read as UTC, as the reference server does. The UTC time must
    lie in years 1-9999 (what Python, Arrow and Spark timestamps hold).
    """
    match = _DATETIME.fullmatch(value)
    if not match:
        raise ValueError(f"eventTime {show_value(value)} is not an ISO 8601 date-time")
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
        return parsed.astimezone(dt.UTC)
    except ValueError as exc:
        raise ValueError(f"eventTime {show_value(value)} is not a valid date-time: {exc}") from None
    except OverflowError:
        raise ValueError(f"eventTime {show_value(value)} is out of range: in UTC it falls outside years 1-9999") from None


def _check_event_time(value: str) -> str:
    parse_event_time(value)
    return value


def is_uuid(value: Any) -> bool:
    return type(value) is str and _UUID.fullmatch(value) is not None


def _check_uuid(value: str) -> str:
    if not _UUID.fullmatch(value):
        raise ValueError(f"runId {show_value(value)} is not a UUID (8-4-4-4-12 hexadecimal digits)")
    return value


Facets = dict[str, Any]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class DatasetModel(_Open):
    namespace: StrictStr
    name: StrictStr
    facets: Facets | None = None
    inputFacets: Facets | None = None
    outputFacets: Facets | None = None


class JobModel(_Open):
    namespace: StrictStr
    name: StrictStr
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


def _loc(loc) -> str:
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


# ---------------------------------------------------------------------------------- names and facets


class _Bad(Exception):
    """A value that does not have its shape; `path` is filled in while the exception unwinds."""

    def __init__(self, message: str, code: str | None = None, *where: str | int):
        super().__init__(message)
        self.message = message
        self.code = code
        self.path: list[str | int] = list(reversed(where))  # innermost first

    def at(self, *where: str | int) -> _Bad:
        self.path.extend(reversed(where))
        return self

    def where(self) -> str:
        return _path(reversed(self.path))


_KEY = re.compile(r"[A-Za-z_$@][A-Za-z0-9_$@-]*")


def _path(parts) -> str:
    """A path into the event: run.facets.parent.run.runId, fields['sum(x)'].inputFields[0]."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _KEY.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{show_value(part)}]"
    return out


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


class _Names:
    """Checks names (namespaces, job/dataset/field names): a non-blank string without control
    characters, at most `limit` characters. Names repeat from event to event (a dataset, its
    fields): the good ones are remembered, so each distinct name is checked about once."""

    __slots__ = ("limit", "ok")
    _REMEMBERED = 100_000

    def __init__(self, limit: int):
        self.limit = limit
        self.ok: set[str] = set()

    def check(self, value: Any) -> None:
        if type(value) is not str:
            raise _Bad(f"must be a string, not {_json_type(value)}")
        if value in self.ok:
            return
        if len(self.ok) >= self._REMEMBERED:
            self.ok.clear()
        if len(value) > self.limit:
            raise _Bad(f"is {len(value)} characters long, more than LINEAGE_MAX_NAME_LENGTH={self.limit}", reasons.NAME_TOO_LONG)
        if not value.strip():
            raise _Bad("is empty" if not value else f"is blank ({show_value(value)})", reasons.INVALID_NAME)
        control = _CONTROL.search(value)
        if control:
            raise _Bad(
                f"holds the control character U+{ord(control.group()):04X} at position {control.start()} ({show_value(value)})",
                reasons.INVALID_NAME,
            )
        self.ok.add(value)

    def length(self, value: str) -> None:
        """An id that is any text (e.g. a storage version): only its length is limited."""
        if len(value) > self.limit:
            raise _Bad(f"is {len(value)} characters long, more than LINEAGE_MAX_NAME_LENGTH={self.limit}", reasons.NAME_TOO_LONG)


def _object(value: Any) -> dict:
    if type(value) is not dict:
        raise _Bad(f"must be an object, not {_json_type(value)}")
    return value


def _member(d: dict, key: str, required: bool) -> Any:
    value = d.get(key)
    if value is None and required:
        raise _Bad("is required" if key not in d else "is required (it is null)", None, key)
    return value


def _string(d: dict, key: str, required: bool = False) -> str | None:
    value = _member(d, key, required)
    if value is not None and type(value) is not str:
        raise _Bad(f"must be a string, not {_json_type(value)}", None, key)
    return value


def _integer(d: dict, key: str) -> None:
    value = d.get(key)
    if value is None:
        return
    if type(value) is not int:
        raise _Bad(f"must be an integer, not {_json_type(value)} ({show_value(value)})", None, key)
    if not _INT64[0] <= value <= _INT64[1]:
        raise _Bad(f"must fit in a signed 64-bit integer, not {show_value(value)}", None, key)


def _boolean(d: dict, key: str) -> None:
    value = d.get(key)
    if value is not None and type(value) is not bool:
        raise _Bad(f"must be true or false, not {_json_type(value)}", None, key)


def _name(d: dict, key: str, names: _Names) -> None:
    value = d.get(key)
    if type(value) is str and value in names.ok:
        return
    try:
        names.check(_member(d, key, True))
    except _Bad as bad:
        raise bad if bad.path else bad.at(key)


_NAMES: dict[int, _Names] = {}


def _names(limit: int) -> _Names:
    names = _NAMES.get(limit)
    if names is None:
        names = _NAMES[limit] = _Names(limit)
    return names


def _list(d: dict, key: str, required: bool = False) -> list:
    value = _member(d, key, required)
    if value is None:
        return []
    if type(value) is not list:
        raise _Bad(f"must be an array, not {_json_type(value)}", None, key)
    return value


def _child(d: dict, key: str, required: bool = False) -> dict | None:
    value = _member(d, key, required)
    if value is not None and type(value) is not dict:
        raise _Bad(f"must be an object, not {_json_type(value)}", None, key)
    return value


def _timestamp(d: dict, key: str, required: bool) -> None:
    value = _string(d, key, required)
    if value is None:
        return
    try:
        if _DATE.fullmatch(value):
            dt.date.fromisoformat(value)  # a date alone: real producers send one
        else:
            parse_event_time(value)
    except ValueError:
        raise _Bad(f"is not an ISO 8601 date-time ({show_value(value)})", None, key) from None


# Each check gets the facet (an object), the event's names and `required`: False for a facet
# marked `"_deleted": true`, whose required keys may then be absent (their types still count).


def _run_ref(run: dict) -> None:
    run_id = _member(run, "runId", True)
    if not is_uuid(run_id):
        raise _Bad(f"must be a UUID string (8-4-4-4-12 hexadecimal digits), not {show_value(run_id)}", None, "runId")
    _child(run, "facets")


def _job_ref(job: dict, names: _Names) -> None:
    _name(job, "namespace", names)
    _name(job, "name", names)
    _child(job, "facets")


def _inside(key: str, check: Callable, value: Any, *args: Any) -> None:
    """check(value, *args) for the value at `key` (which an error's path then names)."""
    try:
        check(value, *args)
    except _Bad as bad:
        raise bad.at(key)


def _run_and_job(d: dict, names: _Names) -> None:
    """The optional `run` (needs its runId) and `job` (needs namespace and name) of a parent or
    of its root, checked in that order."""
    run = _child(d, "run")
    if run is not None:
        _inside("run", _run_ref, run)
    job = _child(d, "job")
    if job is not None:
        _inside("job", _job_ref, job, names)


def _parent(facet: dict, names: _Names, required: bool) -> None:
    """ParentRunFacet. The spec requires `run` and `job`; here each of run, job and root is
    optional (a parent naming only its root still gives the root run), but a run present needs
    its runId and a job its namespace and name."""
    _run_and_job(facet, names)
    root = _child(facet, "root")
    if root is not None:
        _inside("root", _run_and_job, root, names)


def _nominal_time(facet: dict, names: _Names, required: bool) -> None:
    _timestamp(facet, "nominalStartTime", required)
    _timestamp(facet, "nominalEndTime", False)


def _job_type(facet: dict, names: _Names, required: bool) -> None:
    _string(facet, "processingType", required)
    _string(facet, "integration")
    _string(facet, "jobType")
    _child(facet, "emissionPattern")


def _source_code(facet: dict, names: _Names, required: bool) -> None:
    _string(facet, "language")
    _string(facet, "sourceCode", required)


_LOCATION_KEYS = ("type", "url", "repoUrl", "path", "version", "tag", "branch", "pullRequestNumber")


def _source_code_location(facet: dict, names: _Names, required: bool) -> None:
    for key in _LOCATION_KEYS:
        _string(facet, key)


def _tags(facet: dict, names: _Names, required: bool) -> None:
    for i, tag in enumerate(_list(facet, "tags")):
        try:
            _object(tag)
            _string(tag, "key", True)
            _string(tag, "value", True)
            _string(tag, "source")
            _string(tag, "field")
        except _Bad as bad:
            raise bad.at("tags", i)


def _statistics(facet: dict, names: _Names, required: bool) -> None:
    for key in ("rowCount", "size", "fileCount"):
        _integer(facet, key)


# The facets with many entries (schema fields, column lineage) are checked entry by entry in
# two steps: a quick test that the entry is plainly fine (what nearly every entry is), else the
# detailed check that says what is wrong. The quick test never lets through what the detailed
# check would refuse.


def _schema_field(field: Any, names: _Names) -> None:
    """One SchemaDatasetFacetFields entry (a path relative to it)."""
    _object(field)
    _name(field, "name", names)
    _string(field, "type")
    _string(field, "description")
    _integer(field, "ordinal_position")
    nested = _list(field, "fields")
    try:
        _schema_fields(nested, names)
    except _Bad as bad:
        raise bad.at("fields")


def _schema_fields(fields: list, names: _Names) -> None:
    ok = names.ok
    for i, field in enumerate(fields):
        if type(field) is dict:
            name, kind, description = field.get("name"), field.get("type"), field.get("description")
            if (
                type(name) is str and name in ok
                and (kind is None or type(kind) is str)
                and (description is None or type(description) is str)
                and field.get("ordinal_position") is None
            ):
                nested = field.get("fields")
                if nested is None:
                    continue
                if type(nested) is list:
                    try:
                        _schema_fields(nested, names)
                    except _Bad as bad:
                        raise bad.at(i, "fields")
                    continue
        try:
            _schema_field(field, names)
        except _Bad as bad:
            raise bad.at(i)


def _schema(facet: dict, names: _Names, required: bool) -> None:
    fields = _list(facet, "fields")
    try:
        _schema_fields(fields, names)
    except _Bad as bad:
        raise bad.at("fields")


def _transformation(transformation: Any) -> None:
    _object(transformation)
    _string(transformation, "type", True)
    _string(transformation, "subtype")
    _string(transformation, "description")
    _boolean(transformation, "masking")


def _input_field(item: Any, names: _Names) -> None:
    """One InputField of the columnLineage facet (a path relative to it)."""
    _object(item)
    _name(item, "namespace", names)
    _name(item, "name", names)
    _name(item, "field", names)
    for j, transformation in enumerate(_list(item, "transformations")):
        try:
            _transformation(transformation)
        except _Bad as bad:
            raise bad.at("transformations", j)


def _plain_transformations(transformations: Any) -> bool:
    if transformations is None:
        return True
    if type(transformations) is not list:
        return False
    for t in transformations:
        if type(t) is not dict or type(t.get("type")) is not str:
            return False
        subtype, description, masking = t.get("subtype"), t.get("description"), t.get("masking")
        if not ((subtype is None or type(subtype) is str) and (description is None or type(description) is str)
                and (masking is None or type(masking) is bool)):
            return False
    return True


def _input_fields(items: list, names: _Names) -> None:
    """InputField objects (fields.<f>.inputFields, dataset; a path relative to the list)."""
    ok = names.ok
    for i, item in enumerate(items):
        if type(item) is dict:
            namespace, name, field = item.get("namespace"), item.get("name"), item.get("field")
            if (
                type(namespace) is str and namespace in ok and type(name) is str and name in ok
                and type(field) is str and field in ok and _plain_transformations(item.get("transformations"))
            ):
                continue
        try:
            _input_field(item, names)
        except _Bad as bad:
            raise bad.at(i)


def _output_field(output: str, spec: Any, names: _Names) -> None:
    """fields.<output> of the columnLineage facet (a path relative to it)."""
    try:
        names.check(output)
    except _Bad as bad:
        raise _Bad(f"(an output field name) {bad.message}", bad.code) from None
    _object(spec)
    items = _list(spec, "inputFields", True)
    try:
        _input_fields(items, names)
    except _Bad as bad:
        raise bad.at("inputFields")
    _string(spec, "transformationDescription")
    _string(spec, "transformationType")


def _column_lineage(facet: dict, names: _Names, required: bool) -> None:
    ok = names.ok
    for output, spec in (_child(facet, "fields", required) or {}).items():
        try:
            if output not in ok or type(spec) is not dict or type(spec.get("inputFields")) is not list:
                _output_field(output, spec, names)
                continue
            try:
                _input_fields(spec["inputFields"], names)
            except _Bad as bad:
                raise bad.at("inputFields")
            description, kind = spec.get("transformationDescription"), spec.get("transformationType")
            if not ((description is None or type(description) is str) and (kind is None or type(kind) is str)):
                _output_field(output, spec, names)
        except _Bad as bad:
            raise bad.at("fields", output)
    items = _list(facet, "dataset")
    try:
        _input_fields(items, names)
    except _Bad as bad:
        raise bad.at("dataset")


def _version(facet: dict, names: _Names, required: bool) -> None:
    version = _string(facet, "datasetVersion", required)
    if version is not None:
        try:
            names.length(version)
        except _Bad as bad:
            raise bad.at("datasetVersion")


def _symlinks(facet: dict, names: _Names, required: bool) -> None:
    for i, identifier in enumerate(_list(facet, "identifiers")):
        try:
            _object(identifier)
            _name(identifier, "namespace", names)
            _name(identifier, "name", names)
            _string(identifier, "type", True)
        except _Bad as bad:
            raise bad.at("identifiers", i)


def _lifecycle_state_change(facet: dict, names: _Names, required: bool) -> None:
    state = _member(facet, "lifecycleStateChange", required)
    if state is not None and state not in LIFECYCLE_STATES:
        raise _Bad(f"must be one of {', '.join(LIFECYCLE_STATES)}, not {show_value(state)}", None, "lifecycleStateChange")
    previous = _child(facet, "previousIdentifier")
    if previous is not None:
        try:
            _name(previous, "namespace", names)
            _name(previous, "name", names)
        except _Bad as bad:
            raise bad.at("previousIdentifier")


FacetCheck = Callable[[dict, _Names, bool], None]

# The facets a later stage reads, by where they sit: (run facets, job facets, dataset facets,
# input facets of an input, output facets of an output). Others are kept as they are.
FACET_CHECKS: dict[str, dict[str, FacetCheck]] = {
    "run": {"parent": _parent, "nominalTime": _nominal_time, "tags": _tags},
    "job": {"jobType": _job_type, "sourceCode": _source_code, "sourceCodeLocation": _source_code_location, "tags": _tags},
    "dataset": {
        "schema": _schema, "columnLineage": _column_lineage, "version": _version, "symlinks": _symlinks,
        "lifecycleStateChange": _lifecycle_state_change, "tags": _tags,
    },
    "inputFacets": {"inputStatistics": _statistics},
    "outputFacets": {"outputStatistics": _statistics},
}


def _facets(facets: dict | None, where: str, names: _Names, *path: str | int) -> None:
    if not facets:
        return
    for name, check in FACET_CHECKS[where].items():
        facet = facets.get(name)
        if facet is None:
            continue
        try:
            _object(facet)
            check(facet, names, facet.get("_deleted") is not True)
        except _Bad as bad:
            raise bad.at(*path, name)


def _entity_names(entity: dict, names: _Names, *path: str | int) -> None:
    for key in ("namespace", "name"):
        try:
            names.check(entity[key])
        except _Bad as bad:
            raise bad.at(*path, key)


def _check_names_and_facets(event: dict, kind: str, names: _Names) -> None:
    """Raises Rejection: invalid_name / name_too_long for the event's own names, invalid_facet /
    name_too_long for a facet (its path named)."""
    try:
        run, job = event.get("run"), event.get("job")
        if job is not None:
            _entity_names(job, names, "job")
        for key in ("inputs", "outputs"):
            for i, item in enumerate(event.get(key) or ()):
                _entity_names(item, names, key, i)
        dataset = event.get("dataset") if kind == "DATASET" else None
        if dataset is not None:
            _entity_names(dataset, names, "dataset")
    except _Bad as bad:
        raise Rejection(bad.code or reasons.INVALID_NAME, f"{bad.where()} {bad.message}", _readable_time(event)) from None
    try:
        if run is not None:
            _facets(run.get("facets"), "run", names, "run", "facets")
        if job is not None:
            _facets(job.get("facets"), "job", names, "job", "facets")
        for key, io_key in (("inputs", "inputFacets"), ("outputs", "outputFacets")):
            for i, item in enumerate(event.get(key) or ()):
                _facets(item.get("facets"), "dataset", names, key, i, "facets")
                _facets(item.get(io_key), io_key, names, key, i, io_key)
        if dataset is not None:
            _facets(dataset.get("facets"), "dataset", names, "dataset", "facets")
    except _Bad as bad:
        code = reasons.NAME_TOO_LONG if bad.code == reasons.NAME_TOO_LONG else reasons.INVALID_FACET
        raise Rejection(code, f"facet {bad.where()} {bad.message}", _readable_time(event)) from None


# ---------------------------------------------------------------------------------- the event


def validate_event(event: dict, limits: Limits | None = None) -> EventModel:
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
                f"eventType {show_value(event.get('eventType'))} is not one of {', '.join(EVENT_TYPES)}",
                when,
            )
    if errors:
        details = "; ".join(f"{_loc(e['loc'])}: {e['msg']}" for e in errors[:5])
        raise Rejection(reasons.INVALID_FIELD, f"invalid field(s): {details}", when)
    assert model is not None
    _check_names_and_facets(event, kind, _names(limits.name_length if limits else limit("name_length")))
    return model


def _datasets(items: list[dict] | None, io_key: str, floats: bool = True) -> list[dict]:
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
            "facets": canonical_json(entry["facets"], floats),
            "io_facets": canonical_json(entry["io_facets"], floats),
        }
        for (ns, name), entry in sorted(merged.items())
    ]


def _surrogate_path(value: Any, path: tuple = ()) -> str | None:
    """Where a lone surrogate sits in `value` (a key or a string), as a path."""
    if isinstance(value, str):
        return (_path(path) or "(the event)") if has_surrogate(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            if has_surrogate(key):
                return f"a key of {_path(path) or 'the event'}"
            found = _surrogate_path(item, (*path, key))
            if found:
                return found
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _surrogate_path(item, (*path, i))
            if found:
                return found
    return None


def event_row(event: dict, start_date: dt.date | None = None, limits: Limits | None = None, floats: bool = True) -> dict:
    """The `events` row of a valid event; raises Rejection otherwise. `floats=False`: the
    event holds no float (the decoder saw none), so its JSON is written by the fast path of
    `canonical_json`."""
    validate_event(event, limits)
    when = parse_event_time(event["eventTime"])
    event_json = canonical_json(event, floats)
    try:
        encoded = event_json.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise Rejection(
            reasons.INVALID_UNICODE,
            f"{_surrogate_path(event) or 'a string'} holds a lone UTF-16 surrogate "
            f"({exc.object[exc.start:exc.end]!r}), which is not Unicode text and cannot be stored",
            when,
        ) from None
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
        "event_id": sha256_hex(encoded),  # = ids.event_id(event), without a second canonical_json
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
        "inputs": _datasets(event.get("inputs"), "inputFacets", floats),
        "outputs": _datasets(event.get("outputs"), "outputFacets", floats),
        "run_facets": canonical_json(run.get("facets") or {}, floats),
        "job_facets": canonical_json(job.get("facets") or {}, floats),
        "dataset_facets": canonical_json(dataset.get("facets") or {}, floats) if dataset else None,
        "event_json": event_json,
    }
