"""Totality of the intake (DESIGN.md section 11).

Every record of every drop file becomes an accepted event or a reject with its specific reason;
no exception escapes a record; the limits (record size, nesting depth, decompressed size, name
length) are each a reject reason; what is accepted never crashes the fold.

The corpus below is a table of bad drop files, each with the outcome of every one of its records.
Each file goes through the code the intake runs (`spark_intake.read_units`: whole forms through
`parse_drop_bytes`, NDJSON through `parse_records(decode_ndjson_chunk(...))`), and for each file
read == accepted + rejected + duplicates, and its rows are storable as the intake stores them.
"""

from __future__ import annotations

import datetime as dt
import gzip
import itertools
import json
import time
import uuid
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pytest

from lineage_assets.intake import decode, reasons
from lineage_assets.intake.decode import (
    LIMIT_VARIABLES,
    RAW_PREVIEW_BYTES,
    Limits,
    decode_drop,
    decode_ndjson_chunk,
    gunzip,
)
from lineage_assets.intake.ledger import WHOLE, WINDOW, sniff_form
from lineage_assets.intake.parse import parse_drop_bytes, parse_records
from lineage_assets.intake.spark_intake import PARSED_UNITS
from lineage_assets.intake.validate import Rejection, event_row
from lineage_assets.lineage import column_lineage as cl
from lineage_assets.lineage.coalesce import TERMINAL, coalesce_range, code_version
from lineage_assets.lineage.fold import SEGMENT_ROWS
from lineage_assets.lineage.versioning import FoldItem, JobState, fold_job_by_day
from lineage_assets.warehouse import schemas

OK = None  # the expected reason code of an accepted record
PARSED_ARROW = schemas.arrow_schema(PARSED_UNITS)
_ids = itertools.count(1)

# ------------------------------------------------------------------------------------------ builders


def event(**top) -> dict:
    """A valid RunEvent, different from every other one this module builds."""
    n = next(_ids)
    value = {
        "eventType": "COMPLETE",
        "eventTime": "2024-05-01T10:00:00Z",
        "run": {"runId": str(uuid.UUID(int=n)), "facets": {}},
        "job": {"namespace": "scheduler", "name": f"job_{n}", "facets": {}},
        "inputs": [{"namespace": "db", "name": "in_table", "facets": {}, "inputFacets": {}}],
        "outputs": [{"namespace": "db", "name": "out_table", "facets": {}, "outputFacets": {}}],
        "producer": "https://example.com/producer",
    }
    value.update(top)
    return value


def put(value: dict, path: tuple, item) -> dict:
    target = value
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = item
    return value


def run_facet(name: str, facet) -> dict:
    return put(event(), ("run", "facets", name), facet)


def job_facet(name: str, facet) -> dict:
    return put(event(), ("job", "facets", name), facet)


def output_facet(name: str, facet) -> dict:
    return put(event(), ("outputs", 0, "facets", name), facet)


def output_io_facet(name: str, facet) -> dict:
    return put(event(), ("outputs", 0, "outputFacets", name), facet)


def line(value) -> bytes:
    return value if isinstance(value, bytes) else json.dumps(value).encode()


def ndjson(*lines) -> bytes:
    return b"\n".join(line(x) for x in lines) + b"\n"


def good() -> bytes:
    return line(event())


def nest(depth: int, inner="x") -> dict:
    """Objects nested `depth` deep: {"a": {"a": ... inner}}."""
    value = inner
    for _ in range(depth):
        value = {"a": value}
    return value


def tricky_nest(depth: int) -> list:
    """Arrays nested `depth` deep whose strings hold brackets that would pair with the real
    ones if strings were not told apart: ["]", ["]", ... "["], "["]."""
    value: list = []
    for _ in range(depth):
        value = ["]", value, "["]
    return value


@dataclass
class Case:
    id: str
    content: bytes
    expect: list[tuple[int, str | None]]  # (source_line, reason_code) of every record, in order
    says: str = ""  # a piece of every rejected record's reason
    env: dict = field(default_factory=dict)
    duplicates: int = 0
    start_date: dt.date | None = None


def sandwich(id: str, bad, code: str, says: str = "", **kwargs) -> Case:
    """A bad record between two good ones: the good ones still land."""
    return Case(id, ndjson(good(), bad, good()), [(1, OK), (2, code), (3, OK)], says, **kwargs)


def gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def pretty(value) -> bytes:
    return json.dumps(value, indent=2).encode()


UUID_TEXT = "3f5e83fa-3480-44ff-99c5-ff943904e5e8"
SMALL_RECORDS = {"LINEAGE_MAX_RECORD_BYTES": "20000"}


def _gzip_bomb(good_lines: bytes, megabytes: int) -> bytes:
    """gzip of some good lines, then `megabytes` MiB of one endless line: a few hundred KB on disk."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = packer.compress(good_lines)
    block = b"A" * (1 << 20)
    for _ in range(megabytes):
        out += packer.compress(block)
    return out + packer.flush()


def _truncated_gzip() -> tuple[bytes, int]:
    """A gzip of 60 distinct good lines cut in half, and the number of lines that survive whole."""
    lines = [line(event(run={"runId": str(uuid.uuid4()), "facets": {"pad": {"x": uuid.uuid4().hex * 8}}})) for _ in range(60)]
    data = gz(b"\n".join(lines) + b"\n")
    cut = data[: len(data) // 2]
    salvaged = zlib.decompressobj(wbits=31).decompress(cut)
    return cut, salvaged.count(b"\n")


def element_lines(text: bytes) -> list[int]:
    """The line where each element of a json.dumps(indent=2) array starts."""
    return [n for n, row in enumerate(text.split(b"\n"), start=1) if row in (b"  {", b"  [")]


_TRUNCATED, _WHOLE_LINES = _truncated_gzip()
_TWICE = line(event())
_BIG_ELEMENT = pretty([event(), run_facet("custom", {"blob": "z" * 30_000}), event()])
_BOMB_GOOD = ndjson(good(), good())
_BOMB_GOOD_BYTES = len(_BOMB_GOOD)
_BOMB = _gzip_bomb(_BOMB_GOOD, 64)  # 64 MiB of decompressed data in ~65 KB

# ------------------------------------------------------------------------------------------ the corpus

CORPUS: list[Case] = [
    # --- JSON that is not acceptable JSON
    sandwich("not-json", b"{this is not json", reasons.NOT_JSON),
    sandwich("truncated-line", good()[:40], reasons.NOT_JSON),
    sandwich("nan", b'{"eventTime": NaN}', reasons.INVALID_NUMBER, "NaN"),
    sandwich("infinity", line(event()).replace(b'"producer"', b'"x": Infinity, "producer"'), reasons.INVALID_NUMBER, "Infinity"),
    sandwich("minus-infinity", line(event()).replace(b'"producer"', b'"x": [-Infinity], "producer"'), reasons.INVALID_NUMBER),
    sandwich("number-beyond-double", line(event()).replace(b'"producer"', b'"x": 1e400, "producer"'), reasons.INVALID_NUMBER, "1e400"),
    sandwich("number-below-double", line(event()).replace(b'"producer"', b'"x": [0.0, 0e5, 1e-400], "producer"'), reasons.INVALID_NUMBER, "1e-400"),
    sandwich("integer-of-5000-digits", line(event()).replace(b'"producer"', b'"x": ' + b"9" * 5000 + b', "producer"'), reasons.INVALID_NUMBER),
    sandwich("duplicate-top-level-key", line(event()).replace(b'"producer"', b'"eventTime": "2024-05-02T00:00:00Z", "producer"'),
             reasons.DUPLICATE_KEY, "'eventTime'"),
    sandwich("duplicate-key-in-a-facet", line(run_facet("custom", {"a": 1})).replace(b'"a": 1', b'"a": 1, "a": 2'),
             reasons.DUPLICATE_KEY, "'a'"),
    sandwich("lone-surrogate-in-a-name", line(event(job={"namespace": "n", "name": "\ud800"})), reasons.INVALID_UNICODE, "job.name"),
    sandwich("lone-surrogate-in-a-facet-key", line(run_facet("custom", {"\udfff": 1})), reasons.INVALID_UNICODE, "run.facets.custom"),
    sandwich("scalar-line", b"42", reasons.NOT_OBJECT),
    sandwich("array-line", b"[1, 2]", reasons.NOT_OBJECT),
    sandwich("invalid-utf8-line", b'{"job": "caf\xe9"}', reasons.CORRUPT_FILE, "UTF-8"),
    sandwich("form-feed-line", b"\x0c", reasons.NOT_JSON),  # not JSON whitespace, so not a blank line
    # --- nesting depth (LINEAGE_MAX_DEPTH, default 128)
    sandwich("nested-990-deep", b"[" * 990 + b"]" * 990, reasons.TOO_DEEP, "LINEAGE_MAX_DEPTH"),
    sandwich("nested-100000-deep", b"[" * 100_000 + b"]" * 100_000, reasons.TOO_DEEP),
    sandwich("unclosed-100000-deep", b'{"a":' * 100_000, reasons.TOO_DEEP),
    sandwich("nested-200-deep-in-a-facet", line(run_facet("custom", nest(200))), reasons.TOO_DEEP),
    sandwich("one-past-the-depth-limit", line(run_facet("custom", nest(126))), reasons.TOO_DEEP),  # 3 + 126 = 129
    sandwich("brackets-in-strings-hide-no-depth", line(run_facet("custom", tricky_nest(300))), reasons.TOO_DEEP),
    Case("too-deep-per-limit-variable", ndjson(good(), run_facet("custom", nest(10)), good()), [(1, OK), (2, reasons.TOO_DEEP), (3, OK)],
         "LINEAGE_MAX_DEPTH=12", env={"LINEAGE_MAX_DEPTH": "12"}),
    # --- record size (LINEAGE_MAX_RECORD_BYTES)
    Case("line-too-large", ndjson(good(), run_facet("custom", {"blob": "z" * 30_000}), good()),
         [(1, OK), (2, reasons.RECORD_TOO_LARGE), (3, OK)], "LINEAGE_MAX_RECORD_BYTES=20000", env=SMALL_RECORDS),
    Case("binary-line-too-large", ndjson(good(), b"\xff" * 30_000, good()),
         [(1, OK), (2, reasons.RECORD_TOO_LARGE), (3, OK)], "30000 bytes", env=SMALL_RECORDS),
    Case("pretty-document-too-large", pretty(run_facet("custom", {"blob": "z" * 30_000})),
         [(1, reasons.RECORD_TOO_LARGE)], "document is", env=SMALL_RECORDS),
    Case("array-element-too-large", _BIG_ELEMENT, list(zip(element_lines(_BIG_ELEMENT), [OK, reasons.RECORD_TOO_LARGE, OK])),
         "array element", env=SMALL_RECORDS),
    # --- arrays and documents: one bad element does not take the others down
    Case("array-with-a-non-object", b'[\n  ' + good() + b',\n  42,\n  ' + good() + b"\n]\n",
         [(2, OK), (3, reasons.NOT_OBJECT), (4, OK)]),
    Case("array-with-nan", b'[\n  ' + good() + b',\n  {"x": NaN},\n  ' + good() + b"\n]\n",
         [(2, OK), (3, reasons.INVALID_NUMBER), (4, OK)], "NaN"),
    Case("array-with-a-duplicate-key", b'[\n  ' + good() + b',\n  ' + line(event()).replace(b'"producer"', b'"producer": "x", "producer"')
         + b',\n  ' + good() + b"\n]\n", [(2, OK), (3, reasons.DUPLICATE_KEY), (4, OK)], "'producer'"),
    Case("array-with-a-990-deep-element", b'[\n  ' + good() + b',\n  ' + b"[" * 990 + b"]" * 990 + b',\n  ' + good() + b"\n]\n",
         [(2, OK), (3, reasons.TOO_DEEP), (4, OK)]),
    Case("array-with-a-200-deep-element", b'[\n  ' + good() + b',\n  ' + line(run_facet("custom", nest(200))) + b',\n  ' + good() + b"\n]\n",
         [(2, OK), (3, reasons.TOO_DEEP), (4, OK)]),
    Case("truncated-pretty-document", pretty(event())[:300], [(1, reasons.NOT_JSON)], "truncated"),
    Case("pretty-document-with-nan", pretty(event()).replace(b'"producer"', b'"x": NaN,\n  "producer"'), [(1, reasons.INVALID_NUMBER)]),
    Case("pretty-document-990-deep", b"[\n" + b"[" * 990 + b"]" * 990 + b"\n]\n", [(2, reasons.TOO_DEEP)]),
    # --- gzip: damage, bombs, and what follows the compressed data
    Case("truncated-gzip", _TRUNCATED, [*[(n, OK) for n in range(1, _WHOLE_LINES + 1)], (_WHOLE_LINES + 1, reasons.CORRUPT_FILE)],
         "truncated"),
    Case("garbage-after-gzip-magic", b"\x1f\x8b" + b"not deflate data at all" * 4, [(1, reasons.CORRUPT_FILE)], "nothing could be decompressed"),
    Case("gzip-bomb", _BOMB, [(1, OK), (2, OK), (3, reasons.DECOMPRESSED_TOO_LARGE)],
         "LINEAGE_MAX_DECOMPRESSED_BYTES=1048576", env={"LINEAGE_MAX_DECOMPRESSED_BYTES": str(1 << 20)}),
    Case("plain-lines-after-gzip", gz(ndjson(good(), good())) + ndjson(good(), b"oops"), [(1, OK), (2, OK), (3, OK), (4, reasons.NOT_JSON)]),
    Case("gzip-line-with-nan", gz(ndjson(good(), b'{"eventTime": NaN}')), [(1, OK), (2, reasons.INVALID_NUMBER)]),
    # --- the envelope
    sandwich("event-time-ending-in-newline", line(event(eventTime="2024-05-01T10:00:00Z\n")), reasons.INVALID_EVENT_TIME, "ISO 8601"),
    sandwich("event-time-overflows-before-year-1", line(event(eventTime="0001-01-01T00:00:00+01:00")), reasons.INVALID_EVENT_TIME, "out of range"),
    sandwich("event-time-overflows-after-9999", line(event(eventTime="9999-12-31T23:59:59-01:00")), reasons.INVALID_EVENT_TIME, "out of range"),
    sandwich("event-time-arabic-indic-digits", line(event(eventTime="٢٠٢٤-05-01T10:00:00Z")), reasons.INVALID_EVENT_TIME),
    sandwich("run-id-arabic-indic-digits", line(event(run={"runId": "٣f5e83fa-3480-44ff-99c5-ff943904e5e8"})), reasons.INVALID_RUN_ID),
    sandwich("run-id-with-underscores", line(event(run={"runId": UUID_TEXT.replace("-", "_")})), reasons.INVALID_RUN_ID),
    sandwich("run-id-in-braces", line(event(run={"runId": "{" + UUID_TEXT + "}"})), reasons.INVALID_RUN_ID),
    sandwich("run-id-urn", line(event(run={"runId": "urn:uuid:" + UUID_TEXT})), reasons.INVALID_RUN_ID),
    sandwich("run-id-without-hyphens", line(event(run={"runId": UUID_TEXT.replace("-", "")})), reasons.INVALID_RUN_ID),
    sandwich("missing-producer", line({k: v for k, v in event().items() if k != "producer"}), reasons.MISSING_FIELD, "producer"),
    sandwich("inputs-not-a-list", line(event(inputs={"namespace": "db", "name": "t"})), reasons.INVALID_FIELD, "inputs"),
    sandwich("unknown-event-type", line(event(eventType="DONE")), reasons.INVALID_EVENT_TYPE),
    sandwich("run-without-job", line({k: v for k, v in event().items() if k != "job"}), reasons.AMBIGUOUS_KIND),
    sandwich("before-the-start-date", line(event(eventTime="2019-12-31T23:59:59Z")), reasons.BEFORE_START_DATE,
             start_date=dt.date(2020, 1, 1)),
    # --- names (LINEAGE_MAX_NAME_LENGTH, default 1024)
    sandwich("job-name-only-whitespace", line(event(job={"namespace": "n", "name": " \t\u3000"})), reasons.INVALID_NAME, "job.name is blank"),
    sandwich("job-name-empty", line(event(job={"namespace": "n", "name": ""})), reasons.INVALID_NAME, "job.name is empty"),
    sandwich("job-namespace-with-a-newline", line(event(job={"namespace": "a\nb", "name": "j"})), reasons.INVALID_NAME, "U+000A"),
    sandwich("dataset-name-with-nul", line(event(inputs=[{"namespace": "db", "name": "t\x00"}])), reasons.INVALID_NAME, "inputs[0].name"),
    sandwich("dataset-name-with-c1-control", line(event(outputs=[{"namespace": "db", "name": "t\x85"}])), reasons.INVALID_NAME, "outputs[0].name"),
    sandwich("dataset-event-blank-namespace", line({"eventTime": "2024-05-01T00:00:00Z", "producer": "p", "dataset": {"namespace": " ", "name": "d"}}),
             reasons.INVALID_NAME, "dataset.namespace"),
    sandwich("job-name-too-long", line(event(job={"namespace": "n", "name": "j" * 1025})), reasons.NAME_TOO_LONG, "LINEAGE_MAX_NAME_LENGTH=1024"),
    sandwich("input-namespace-too-long", line(event(inputs=[{"namespace": "n" * 5000, "name": "t"}])), reasons.NAME_TOO_LONG, "inputs[0].namespace"),
    # --- facets the fold reads, with the spec's types
    sandwich("parent-run-a-string", line(run_facet("parent", {"run": "x", "job": {"namespace": "a", "name": "b"}})), reasons.INVALID_FACET,
             "run.facets.parent.run must be an object"),
    sandwich("parent-run-id-a-number", line(run_facet("parent", {"run": {"runId": 7}, "job": {"namespace": "a", "name": "b"}})),
             reasons.INVALID_FACET, "run.facets.parent.run.runId"),
    sandwich("parent-root-run-id-not-a-uuid", line(run_facet("parent", {"run": {"runId": UUID_TEXT}, "job": {"namespace": "a", "name": "b"},
                                                                         "root": {"run": {"runId": "root"}, "job": {"namespace": "a", "name": "r"}}})),
             reasons.INVALID_FACET, "parent.root.run.runId"),
    sandwich("parent-job-without-name", line(run_facet("parent", {"run": {"runId": UUID_TEXT}, "job": {"namespace": "a"}})),
             reasons.INVALID_FACET, "parent.job.name is required"),
    sandwich("parent-a-list", line(run_facet("parent", [UUID_TEXT])), reasons.INVALID_FACET, "run.facets.parent must be an object"),
    sandwich("nominal-time-not-a-time", line(run_facet("nominalTime", {"nominalStartTime": "yesterday"})), reasons.INVALID_FACET,
             "nominalStartTime"),
    sandwich("nominal-time-without-start", line(run_facet("nominalTime", {"nominalEndTime": "2024-05-01T00:00:00Z"})), reasons.INVALID_FACET,
             "nominalStartTime is required"),
    sandwich("job-type-processing-type-a-number", line(job_facet("jobType", {"processingType": 1, "integration": "SPARK"})),
             reasons.INVALID_FACET, "job.facets.jobType.processingType"),
    sandwich("source-code-without-code", line(job_facet("sourceCode", {"language": "python"})), reasons.INVALID_FACET,
             "sourceCode.sourceCode is required"),
    sandwich("source-code-location-version-a-number", line(job_facet("sourceCodeLocation", {"type": "git", "url": "u", "version": 3})),
             reasons.INVALID_FACET, "sourceCodeLocation.version"),
    sandwich("symlinks-identifiers-an-object", line(output_facet("symlinks", {"identifiers": {"namespace": "a"}})), reasons.INVALID_FACET,
             "symlinks.identifiers must be an array"),
    sandwich("symlink-without-type", line(output_facet("symlinks", {"identifiers": [{"namespace": "hive", "name": "t"}]})),
             reasons.INVALID_FACET, "symlinks.identifiers[0].type is required"),
    sandwich("column-lineage-fields-a-list", line(output_facet("columnLineage", {"fields": []})), reasons.INVALID_FACET,
             "columnLineage.fields must be an object"),
    sandwich("column-lineage-input-without-field", line(output_facet("columnLineage", {"fields": {"a": {"inputFields": [{"namespace": "db", "name": "t"}]}}})),
             reasons.INVALID_FACET, "columnLineage.fields.a.inputFields[0].field is required"),
    sandwich("column-lineage-masking-a-string", line(output_facet("columnLineage", {"fields": {"a": {"inputFields": [
        {"namespace": "db", "name": "t", "field": "a", "transformations": [{"type": "DIRECT", "masking": "no"}]}]}}})),
        reasons.INVALID_FACET, "transformations[0].masking"),
    sandwich("column-lineage-dataset-namespace-a-number", line(output_facet("columnLineage", {"fields": {}, "dataset": [
        {"namespace": 5, "name": "t", "field": "a"}]})), reasons.INVALID_FACET, "columnLineage.dataset[0].namespace"),
    sandwich("column-lineage-output-field-too-long", line(output_facet("columnLineage", {"fields": {"f" * 2000: {"inputFields": []}}})),
             reasons.NAME_TOO_LONG),
    sandwich("schema-fields-a-string", line(output_facet("schema", {"fields": "a,b"})), reasons.INVALID_FACET, "schema.fields must be an array"),
    sandwich("schema-field-without-name", line(output_facet("schema", {"fields": [{"type": "int"}]})), reasons.INVALID_FACET,
             "schema.fields[0].name is required"),
    sandwich("nested-schema-field-type-a-number", line(output_facet("schema", {"fields": [{"name": "s", "fields": [{"name": "x", "type": 4}]}]})),
             reasons.INVALID_FACET, "schema.fields[0].fields[0].type"),
    sandwich("schema-field-name-with-a-newline", line(output_facet("schema", {"fields": [{"name": "a\nb"}]})), reasons.INVALID_FACET,
             "schema.fields[0].name holds the control character"),
    sandwich("dataset-version-a-number", line(output_facet("version", {"datasetVersion": 12})), reasons.INVALID_FACET, "version.datasetVersion"),
    sandwich("dataset-version-too-long", line(output_facet("version", {"datasetVersion": "v" * 1025})), reasons.NAME_TOO_LONG, "datasetVersion"),
    sandwich("lifecycle-state-unknown", line(output_facet("lifecycleStateChange", {"lifecycleStateChange": "MOVE"})), reasons.INVALID_FACET, "'MOVE'"),
    sandwich("row-count-a-string", line(output_io_facet("outputStatistics", {"rowCount": "12"})), reasons.INVALID_FACET,
             "outputs[0].outputFacets.outputStatistics.rowCount"),
    sandwich("row-count-a-fraction", line(output_io_facet("outputStatistics", {"rowCount": 1.5})), reasons.INVALID_FACET, "rowCount"),
    sandwich("row-count-a-boolean", line(output_io_facet("outputStatistics", {"rowCount": True})), reasons.INVALID_FACET, "rowCount"),
    sandwich("row-count-beyond-64-bits", line(output_io_facet("outputStatistics", {"rowCount": 2**64})), reasons.INVALID_FACET, "64-bit"),
    sandwich("tag-without-value", line(output_facet("tags", {"tags": [{"key": "pii"}]})), reasons.INVALID_FACET, "tags.tags[0].value"),
    sandwich("known-facet-a-string", line(output_facet("schema", "id:int")), reasons.INVALID_FACET, "schema must be an object"),
    sandwich("dataset-event-bad-schema", line({"eventTime": "2024-05-01T00:00:00Z", "producer": "p",
                                               "dataset": {"namespace": "s3", "name": "d", "facets": {"schema": {"fields": [1]}}}}),
             reasons.INVALID_FACET, "dataset.facets.schema.fields[0]"),
    # --- the same event twice is one event and one duplicate
    Case("duplicate-event", ndjson(_TWICE, _TWICE, good()), [(1, OK), (2, OK), (3, OK)], duplicates=1),
]


# ------------------------------------------------------------------------------------------ running a case


def intake_rows(content: bytes, start_date: dt.date | None = None) -> list[dict]:
    """The rows the intake makes of one whole drop file (as `spark_intake.read_units`)."""
    if sniff_form(content[:WINDOW]) == WHOLE:
        return parse_drop_bytes(content, "drop.json", start_date)
    return parse_records(decode_ndjson_chunk(content, 1), "drop.json", start_date)


def balance(rows: list[dict]) -> tuple[int, int, int]:
    """(accepted, rejected, duplicates) as the intake counts them: an accepted record whose
    event_id was accepted before is a duplicate."""
    seen: set[str] = set()
    accepted = rejected = duplicates = 0
    for row in rows:
        if not row["accepted"]:
            rejected += 1
        elif row["event_id"] in seen:
            duplicates += 1
        else:
            seen.add(row["event_id"])
            accepted += 1
    return accepted, rejected, duplicates


def test_the_corpus_is_large_and_covers_every_record_level_reason():
    assert len(CORPUS) >= 40
    assert len({case.id for case in CORPUS}) == len(CORPUS)
    covered = {code for case in CORPUS for _line, code in case.expect if code}
    not_record_level = {reasons.JOB_MISMATCH, reasons.INTERNAL_ERROR}  # the fold's reason; a bug's
    assert covered == set(reasons.ALL) - not_record_level


@pytest.mark.parametrize("case", CORPUS, ids=[case.id for case in CORPUS])
def test_every_record_gets_its_outcome_and_every_file_balances(case: Case, monkeypatch):
    for variable, value in case.env.items():
        monkeypatch.setenv(variable, value)
    try:
        rows = intake_rows(case.content, case.start_date)
    except BaseException as exc:  # noqa: BLE001 - the point of the test
        pytest.fail(f"an exception escaped the intake: {type(exc).__name__}: {exc}")
    assert [(row["source_line"], row["reason_code"]) for row in rows] == case.expect
    assert all(row["reason"] for row in rows if not row["accepted"])
    if case.says:
        for row in rows:
            if not row["accepted"]:
                assert case.says in row["reason"], row["reason"]
    read = len(case.expect)  # the records the file holds, as the case declares them
    accepted, rejected, duplicates = balance(rows)
    assert read == accepted + rejected + duplicates
    assert duplicates == case.duplicates
    # storable as the intake stores them (no lone surrogate, timestamp out of range, ...)
    batch = pa.RecordBatch.from_pylist([{**row, "file_id": "f"} for row in rows], schema=PARSED_ARROW)
    assert batch.num_rows == read
    for row in rows:
        assert (row["raw"] is None) == row["accepted"]
        if row["raw_encoding"] == "utf-8":
            assert len(row["raw"].encode("utf-8")) <= max(RAW_PREVIEW_BYTES, Limits.from_env().record_bytes)


PLAIN_NDJSON = [case for case in CORPUS if sniff_form(case.content[:WINDOW]) != WHOLE]


@pytest.mark.parametrize("case", PLAIN_NDJSON, ids=[case.id for case in PLAIN_NDJSON])
def test_an_ndjson_file_read_whole_or_in_chunks_gives_the_same_rows(case: Case, monkeypatch):
    for variable, value in case.env.items():
        monkeypatch.setenv(variable, value)
    in_chunks = []
    for number, piece in enumerate(case.content.split(b"\n")[:-1], start=1):  # one chunk per line
        in_chunks += parse_records(decode_ndjson_chunk(piece + b"\n", number), "drop.json", case.start_date)
    whole = parse_drop_bytes(case.content, "drop.json", case.start_date)
    key = lambda r: (r["source_line"], r["reason_code"], r["raw"], r["event_id"])
    assert [key(r) for r in in_chunks] == [key(r) for r in whole]
    assert [(r["source_line"], r["reason_code"]) for r in whole] == case.expect


# ------------------------------------------------------------------------------------------ limits


def test_limits_have_documented_defaults_and_are_read_from_the_environment_when_applied(monkeypatch):
    for variable, _default in LIMIT_VARIABLES.values():
        monkeypatch.delenv(variable, raising=False)
    assert Limits.from_env() == Limits(record_bytes=4 << 20, depth=128, decompressed_bytes=256 << 20, name_length=1024)
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    limits_section = readme[readme.index("### Limits"):]
    for variable, default in LIMIT_VARIABLES.values():
        row = next(r for r in limits_section.splitlines() if f"`{variable}`" in r)
        assert f"`{default}`" in row, row
    monkeypatch.setenv("LINEAGE_MAX_NAME_LENGTH", "5")
    assert Limits.from_env().name_length == 5
    with pytest.raises(Rejection) as info:
        event_row(event(job={"namespace": "n", "name": "sixsix"}))
    assert info.value.code == reasons.NAME_TOO_LONG
    monkeypatch.setenv("LINEAGE_MAX_NAME_LENGTH", "many")
    with pytest.raises(ValueError, match="LINEAGE_MAX_NAME_LENGTH must be a positive integer"):
        Limits.from_env()


def test_every_reason_code_is_in_the_readme_table():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    table = readme[readme.index("### Reject reasons"):readme.index("Checked facets")]
    documented = {cell.strip().strip("`") for row in table.splitlines() if row.startswith("| `") for cell in row.split("|")[1:2]}
    assert documented == set(reasons.ALL)


def test_a_gzip_bomb_is_stopped_without_being_decompressed(monkeypatch):
    limit = 1 << 20
    assert len(_BOMB) < 1 << 20
    unzipped = gunzip(_BOMB, limit)
    assert unzipped.code == reasons.DECOMPRESSED_TOO_LARGE and len(unzipped.data) == limit
    stopped_at = int(unzipped.error.split("compressed byte ")[1].split(" ")[0])
    assert stopped_at < len(_BOMB) // 20  # stopped after reading a sliver of the input
    monkeypatch.setenv("LINEAGE_MAX_DECOMPRESSED_BYTES", str(limit))
    rows = parse_drop_bytes(_BOMB, "bomb.json.gz", None)
    assert [(r["source_line"], r["reason_code"]) for r in rows] == [(1, OK), (2, OK), (3, reasons.DECOMPRESSED_TOO_LARGE)]
    assert rows[-1]["raw_encoding"] == "base64" and len(rows[-1]["raw"]) <= RAW_PREVIEW_BYTES * 4 // 3 + 4
    assert f"of the {limit - _BOMB_GOOD_BYTES} bytes after the last complete line" in rows[-1]["reason"]


def test_the_rest_of_a_gzip_file_is_not_lost_plain_lines_after_it_are_read():
    first = ndjson(event(), event())
    after = ndjson(event(), b"[not an event")
    records = decode_drop(gz(first) + b"\x00\x00" + gz(first) + after)  # padding and a second member, then plain text
    assert [(r.source_line, r.error_code) for r in records] == [(1, OK), (2, OK), (3, OK), (4, OK), (5, OK), (6, reasons.NOT_JSON)]
    assert records[4].value == json.loads(after.split(b"\n")[0])
    assert records[5].raw == "[not an event"


def test_a_too_large_record_keeps_a_preview_and_says_the_file_keeps_the_rest(monkeypatch):
    monkeypatch.setenv("LINEAGE_MAX_RECORD_BYTES", "100000")
    big = json.dumps(run_facet("custom", {"blob": "é" * 200_000}), ensure_ascii=False).encode()  # 2-byte characters
    [row] = intake_rows(big + b"\n")
    assert row["reason_code"] == reasons.RECORD_TOO_LARGE
    assert row["raw_encoding"] == "utf-8" and big.decode().startswith(row["raw"])
    assert RAW_PREVIEW_BYTES - 3 <= len(row["raw"].encode()) <= RAW_PREVIEW_BYTES
    assert f"{len(big)} bytes" in row["reason"] and "drop file" in row["reason"]


def test_depth_at_the_limit_is_accepted_and_brackets_in_strings_do_not_count():
    at_limit = run_facet("custom", nest(125))  # event 1 + run 2 + facets 3 + 125 objects = 128
    brackets = run_facet("custom", {"sql": "[{" * 500, "more": "]]]]" * 300, "quote": 'say "[[[["'})
    escaped = run_facet("custom", {"path": "C:\\dir\\", "other": "[[[[\\\\", "q": '\\"[[['})
    rows = intake_rows(ndjson(at_limit, brackets, escaped))
    assert [(r["source_line"], r["reason_code"]) for r in rows] == [(1, OK), (2, OK), (3, OK)]
    assert not decode._depth_ok(line(run_facet("custom", nest(126))), 128)
    assert decode._depth_ok(line(run_facet("custom", nest(125))), 128)


def test_a_pretty_printed_array_is_split_in_linear_time():
    def split_time(count: int) -> float:
        events = [{"eventTime": "2024-05-01T00:00:00Z", "producer": "p", "job": {"namespace": "n", "name": f"j{i}"}} for i in range(count)]
        data = pretty(events)
        best = float("inf")
        for _ in range(3):
            start = time.process_time()
            records = decode_drop(data)
            best = min(best, time.process_time() - start)
        assert [r.source_line for r in records] == element_lines(data) and all(r.ok for r in records)
        return best

    small, large = split_time(2_000), split_time(16_000)  # 8x the elements
    assert large < small * 24, (small, large)  # linear: ~8x; the per-element line count made it ~64x


def test_no_exception_escapes_even_from_a_bug(monkeypatch):
    def broken(*_args, **_kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr("lineage_assets.intake.parse.event_row", broken)
    first = good()
    rows = intake_rows(ndjson(first, b"not json", good()))
    assert [(r["source_line"], r["reason_code"]) for r in rows] == [(1, reasons.INTERNAL_ERROR), (2, reasons.NOT_JSON), (3, reasons.INTERNAL_ERROR)]
    assert "KeyError" in rows[0]["reason"] and rows[0]["raw"] == first.decode()
    monkeypatch.setattr("lineage_assets.intake.decode._decode_drop", broken)
    [row] = parse_drop_bytes(gz(ndjson(good())), "drop.json.gz", None)
    assert row["reason_code"] == reasons.INTERNAL_ERROR and row["raw_encoding"] == "base64"


# ------------------------------------------------------------------------------------------ the fold never crashes

RUN_A, RUN_B, RUN_C = (str(uuid.uuid5(uuid.NAMESPACE_URL, n)) for n in ("odd-a", "odd-b", "odd-c"))


def _odd(run_id: str, event_type: str, time: str, job: str = "odd_job", **parts) -> dict:
    value = {
        "eventType": event_type, "eventTime": time, "producer": "p",
        "run": {"runId": run_id, "facets": parts.get("run_facets", {})},
        "job": {"namespace": "ns", "name": job, "facets": parts.get("job_facets", {})},
        "inputs": parts.get("inputs", []), "outputs": parts.get("outputs", []),
    }
    return value


ODD_BUT_ACCEPTED = [
    # facets with extra fields, an empty schema, a parent naming only its root, nulls as absent values
    _odd(RUN_A, "START", "2024-05-01T08:00:00Z",
         run_facets={"parent": {"root": {"run": {"runId": UUID_TEXT.upper()}, "job": {"namespace": "af", "name": "dag", "extra": 1}}},
                     "nominalTime": {"nominalStartTime": "2024-05-01", "nominalEndTime": None}, "unknown": "a string facet"},
         job_facets={"jobType": {"processingType": "batch", "extra": [1]}, "sourceCode": {"sourceCode": "select 1"},
                     "sourceCodeLocation": None},
         inputs=[{"namespace": "db", "name": "in", "facets": {"schema": {"fields": []}, "version": {"datasetVersion": "7"}}}]),
    _odd(RUN_A, "COMPLETE", "2024-05-01T11:00:00.123456789+02:00",  # 09:00 UTC: after the START
         job_facets={"sourceCodeLocation": {"url": "https://git/x.py"}},
         outputs=[{"namespace": "db", "name": "out " + "x" * 1020, "facets": {
             "schema": {"fields": [{"name": "a", "type": "struct", "fields": [{"name": "b", "fields": [{"name": "c", "tags": ["x"]}]}]},
                                   {"name": "a", "type": None}, {"name": "d", "description": "dup name", "ordinal_position": 4}]},
             "columnLineage": {"fields": {"a": {"inputFields": [{"namespace": "db", "name": "in", "field": "a", "extra": True}], "x": 1},
                                          "d": {"inputFields": []}},
                               "dataset": [{"namespace": "db", "name": "in", "field": "z", "transformations": []}]},
             "version": {"_deleted": True}, "lifecycleStateChange": {"lifecycleStateChange": "OVERWRITE"},
             "symlinks": {"identifiers": []}, "tags": {"tags": [{"key": "pii", "value": "true", "field": "a"}]}},
             "outputFacets": {"outputStatistics": {"rowCount": 2**63 - 1, "size": 0}}}]),
    # a streaming job versioned at each event with inputs/outputs; a parent with neither run nor job
    _odd(RUN_B, "RUNNING", "2024-05-02T00:00:00Z", job="stream",
         run_facets={"parent": {}}, job_facets={"jobType": {"processingType": "STREAMING"}},
         outputs=[{"namespace": "kafka", "name": "topic", "facets": {"columnLineage": {"fields": {}}},
                   "outputFacets": {"outputStatistics": {}}}]),
    _odd(RUN_B, "FAIL", "2024-05-03T00:00:00Z", job="stream", job_facets={"jobType": {"processingType": "STREAMING"}},
         run_facets={"parent": {"run": {"runId": UUID_TEXT}, "job": {"namespace": "af", "name": "task"}, "note": "extra"}}),
    # the earliest and latest representable times
    _odd(RUN_C, "START", "0001-01-01T00:00:00Z", job="ancient", run_facets={"parent": {"run": None, "job": None}}),
    _odd(RUN_C, "ABORT", "9999-12-31T23:59:59.999999Z", job="ancient"),
]
ODD_JOB_EVENT = {"eventTime": "2024-05-01T00:00:00Z", "producer": "p", "job": {"namespace": "ns", "name": "static", "facets": {
    "sourceCode": {"language": "wrangler", "sourceCode": "rename :a :b"}}}, "outputs": [{"namespace": "db", "name": "o"}]}
ODD_DATASET_EVENT = {"eventTime": "2024-05-01T00:00:00Z", "producer": "p", "dataset": {"namespace": "s3://b", "name": "d", "facets": {
    "schema": {"fields": [{"name": "x"}]}, "lifecycleStateChange": {"lifecycleStateChange": "DROP", "previousIdentifier": {"namespace": "s3://b", "name": "old"}}}}}


def _typed(spec, value) -> bool:
    """Does `value` read as Spark's from_json reads it with the type `spec` (a mirror of
    column_lineage.FACET_SCHEMA: a dict is a struct, ("map", t) a map, [t] an array)?"""
    if value is None:
        return True
    if spec is str:
        return isinstance(value, str)
    if spec is bool:
        return isinstance(value, bool)
    if isinstance(spec, list):
        return isinstance(value, list) and all(_typed(spec[0], v) for v in value)
    if isinstance(spec, tuple):
        return isinstance(value, dict) and all(_typed(spec[1], v) for v in value.values())
    return isinstance(value, dict) and all(_typed(t, value.get(k)) for k, t in spec.items())


_INPUT_FIELD = {"namespace": str, "name": str, "field": str, "transformations": [{"type": str, "subtype": str, "description": str, "masking": bool}]}
_FACET_SCHEMA = {"fields": ("map", {"inputFields": [_INPUT_FIELD], "transformationDescription": str, "transformationType": str}), "dataset": [_INPUT_FIELD]}


def _spark_reads(facets_text: str, io_facets_text: str) -> None:
    """What the fold's Spark SQL reads of a dataset's facets, as Spark (ANSI) would read it."""
    facets, io_facets = json.loads(facets_text), json.loads(io_facets_text)
    version = (facets.get("version") or {}).get("datasetVersion")
    assert version is None or isinstance(version, str)  # $.version.datasetVersion: storage_version
    state = (facets.get("lifecycleStateChange") or {}).get("lifecycleStateChange")
    assert state is None or isinstance(state, str)
    fields = (facets.get("schema") or {}).get("fields")
    flat = cl.flatten_schema(None if fields is None else json.dumps(fields))  # $.schema.fields -> dataset_fields
    assert flat is None or all(isinstance(f["field_path"], str) for f in flat)
    assert _typed(_FACET_SCHEMA, facets.get("columnLineage"))  # from_json($.columnLineage, FACET_SCHEMA)
    rows = (io_facets.get("outputStatistics") or {}).get("rowCount")  # cast("long") fails on anything else
    assert rows is None or (type(rows) is int and -(2**63) <= rows < 2**63)


def test_the_fold_never_crashes_on_what_the_intake_accepts():
    for name in ("fields", "inputFields", "transformations", "masking", "dataset", "transformationType"):
        assert name in cl.FACET_SCHEMA  # the mirror above follows the real schema
    rows = intake_rows(ndjson(*ODD_BUT_ACCEPTED, ODD_JOB_EVENT, ODD_DATASET_EVENT))
    assert [r["reason_code"] for r in rows] == [OK] * 8, [r["reason"] for r in rows if r["reason"]]
    for row in rows:
        row["event_date"] = dt.date.fromisoformat(row["event_date"])
    by_run = defaultdict(list)
    for row in rows:
        if row["event_kind"] == "RUN":
            by_run[row["run_id"]].append(row)
    first_day = min(r["event_date"] for r in rows)
    segments = [out for run_rows in by_run.values() for out in coalesce_range(run_rows, first_day)]
    pa.RecordBatch.from_pylist(segments, schema=schemas.arrow_schema(SEGMENT_ROWS))  # what map_groups stores
    runs = [s for s in segments if s["kind"] == "run"]
    assert {r["run_id"] for r in runs} == {RUN_A, RUN_B, RUN_C} and all(r["state"] in TERMINAL for r in runs)
    run_a, run_b, run_c = (next(r for r in runs if r["run_id"] == run) for run in (RUN_A, RUN_B, RUN_C))
    assert (run_a["parent_run_id"], run_a["root_run_id"]) == (None, UUID_TEXT)  # a parent naming only its root (in capitals), stored as run ids are
    assert (run_b["parent_run_id"], run_b["root_run_id"]) == (UUID_TEXT, UUID_TEXT)
    assert (run_c["parent_run_id"], run_c["root_run_id"]) == (None, None)
    assert run_a["code_version"] == "https://git/x.py"
    assert run_c["ended_at"].year == 9999 and run_c["started_at"].year == 1
    assert any(s["kind"] == "item" and s["run_id"] == RUN_B for s in segments)  # streaming: versioned per event
    for run in runs:
        for dataset in run["inputs"] + run["outputs"]:
            _spark_reads(dataset["facets"], dataset["io_facets"])
    for row in rows:
        if row["event_kind"] == "DATASET":
            _spark_reads(row["dataset_facets"], "{}")
    # the job-versioning fold over the terminal runs, streaming items and the JobEvent
    pairs = lambda items: [(d["namespace"], d["name"]) for d in items]
    items = defaultdict(list)
    for s in segments:
        if (s["kind"] == "run" and not s["streaming"]) or s["kind"] == "item":  # as the fold picks its items
            source = s if s["kind"] == "run" else next(r for r in rows if r["event_id"] == s["event_id"])
            items[(s["job_namespace"], s["job_name"])].append(
                FoldItem(s["run_id"], s["ended_at"], s["state"], pairs(source["inputs"]), pairs(source["outputs"]), s["code_version"]))
    job_event = next(r for r in rows if r["event_kind"] == "JOB")
    version = code_version(json.loads(job_event["job_facets"]))
    assert version == code_version({"sourceCode": {"sourceCode": "rename :a :b"}}) and len(version) == 64
    items[("ns", "static")].append(FoldItem(job_event["event_id"], job_event["event_time"], "COMPLETE", [], pairs(job_event["outputs"]), version))
    for (namespace, name), job_items in items.items():
        versions, assignment, states = fold_job_by_day(JobState(namespace, name), job_items, lambda i: i.ended_at.astimezone(dt.UTC).date())
        assert versions and set(assignment) == {i.run_id for i in job_items} and states
