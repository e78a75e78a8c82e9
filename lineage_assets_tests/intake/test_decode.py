"""decode_drop: every accepted drop form, and every way a drop can be unreadable."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import zlib

import pytest

from lineage_assets.intake import reasons
from lineage_assets.intake.decode import decode_drop


def _event(i: int, **extra) -> dict:
    return {
        "eventType": "START",
        "eventTime": f"2024-03-01T10:{i % 60:02d}:00Z",
        "run": {"runId": f"00000000-0000-4000-8000-{i:012d}"},
        "job": {"namespace": "ns", "name": f"job_{i}"},
        "producer": "test",
        **extra,
    }


def _ndjson_with_blanks() -> tuple[bytes, dict[int, dict]]:
    """NDJSON with blank and whitespace-only lines; returns (bytes, {1-based line: event})."""
    layout = ["", "E", "", "   ", "E", "E", "\t", "", "E", ""]
    expected: dict[int, dict] = {}
    lines = []
    for number, slot in enumerate(layout, start=1):
        if slot == "E":
            event = _event(number)
            expected[number] = event
            lines.append(json.dumps(event))
        else:
            lines.append(slot)
    return "\n".join(lines).encode("utf-8"), expected


def _pretty_array(events: list[dict]) -> tuple[str, list[int]]:
    """A pretty-printed JSON array, and the 1-based line where each element's '{' is."""
    text = json.dumps(events, indent=2)
    starts = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line == "  {":  # elements of the top-level array are indented by exactly two spaces
            starts.append(number)
    assert len(starts) == len(events)
    return text, starts


def _assert_ok(records, expected: dict[int, dict]) -> None:
    assert [r.source_line for r in records] == sorted(expected)
    for record in records:
        assert record.ok, record
        assert record.error_code is None
        assert record.raw_encoding == "utf-8"
        assert record.value == expected[record.source_line]


# --- accepted forms ---------------------------------------------------------------------------


def test_ndjson_with_blank_lines_keeps_real_line_numbers():
    data, expected = _ndjson_with_blanks()
    records = decode_drop(data)
    _assert_ok(records, expected)
    lines = data.decode().split("\n")
    for record in records:
        assert record.raw == lines[record.source_line - 1]


def test_ndjson_with_crlf_line_endings():
    events = [_event(1), _event(2), _event(3)]
    data = "\r\n".join(json.dumps(e) for e in events).encode() + b"\r\n"
    records = decode_drop(data)
    _assert_ok(records, {n: e for n, e in enumerate(events, start=1)})
    assert all(not r.raw.endswith("\r") for r in records)


def test_one_compact_object():
    event = _event(7)
    records = decode_drop(json.dumps(event, separators=(",", ":")).encode())
    _assert_ok(records, {1: event})


def test_one_compact_object_after_leading_blank_lines():
    event = _event(7)
    records = decode_drop(b"\n\n  \n" + json.dumps(event).encode() + b"\n\n")
    _assert_ok(records, {4: event})


def test_one_pretty_printed_object():
    event = _event(3, inputs=[{"namespace": "db", "name": "t1"}])
    text = json.dumps(event, indent=2)
    assert text.count("\n") > 5
    records = decode_drop(text.encode())
    _assert_ok(records, {1: event})
    assert json.loads(records[0].raw) == event


def test_pretty_printed_array_of_objects_gives_each_element_its_start_line():
    events = [_event(i, outputs=[{"namespace": "db", "name": f"t{i}"}]) for i in range(1, 5)]
    text, starts = _pretty_array(events)
    records = decode_drop(text.encode())
    _assert_ok(records, dict(zip(starts, events)))
    for record, event in zip(records, events):
        assert json.loads(record.raw) == event


def test_array_on_one_line():
    events = [_event(1), _event(2)]
    records = decode_drop(json.dumps(events).encode())
    assert [r.value for r in records] == events
    assert [r.source_line for r in records] == [1, 1]


def test_array_with_a_non_object_element():
    events = [_event(1), 42, _event(2)]
    text = json.dumps(events, indent=2)
    records = decode_drop(text.encode())
    assert len(records) == 3
    assert records[0].ok and records[2].ok
    assert records[1].error_code == reasons.NOT_OBJECT
    assert records[1].raw == "42"
    assert records[1].source_line == text.split("\n").index("  42,") + 1


@pytest.mark.parametrize("form", ["ndjson", "compact", "pretty", "array"])
def test_each_form_gzip_compressed_decodes_like_plain(form):
    if form == "ndjson":
        plain, expected = _ndjson_with_blanks()
    elif form == "compact":
        event = _event(5)
        plain, expected = json.dumps(event).encode(), {1: event}
    elif form == "pretty":
        event = _event(5, inputs=[{"namespace": "a", "name": "b"}])
        plain, expected = json.dumps(event, indent=4).encode(), {1: event}
    else:
        events = [_event(i) for i in range(3)]
        text, starts = _pretty_array(events)
        plain, expected = text.encode(), dict(zip(starts, events))
    records = decode_drop(gzip.compress(plain))
    _assert_ok(records, expected)
    assert records == decode_drop(plain)


def test_multi_member_gzip():
    events = [_event(i) for i in range(1, 6)]
    first = "".join(json.dumps(e) + "\n" for e in events[:2]).encode()
    second = "".join(json.dumps(e) + "\n" for e in events[2:]).encode()
    data = gzip.compress(first) + gzip.compress(second)
    records = decode_drop(data)
    _assert_ok(records, {n: e for n, e in enumerate(events, start=1)})


def test_bom_prefixed_ndjson():
    events = [_event(1), _event(2)]
    data = b"\xef\xbb\xbf" + "\n".join(json.dumps(e) for e in events).encode()
    records = decode_drop(data)
    _assert_ok(records, {1: events[0], 2: events[1]})
    assert not records[0].raw.startswith("\ufeff")


def test_bom_prefixed_pretty_object_and_gzip():
    event = _event(9)
    data = b"\xef\xbb\xbf" + json.dumps(event, indent=2).encode()
    _assert_ok(decode_drop(data), {1: event})
    _assert_ok(decode_drop(gzip.compress(data)), {1: event})


# --- rejected lines and files -------------------------------------------------------------------


def test_non_json_line_in_ndjson_is_not_json_and_others_survive():
    events = {1: _event(1), 3: _event(3), 4: _event(4)}
    lines = [json.dumps(events[1]), "this is { not json", json.dumps(events[3]), json.dumps(events[4])]
    records = decode_drop("\n".join(lines).encode())
    assert [r.source_line for r in records] == [1, 2, 3, 4]
    bad = records[1]
    assert bad.error_code == reasons.NOT_JSON
    assert bad.raw == "this is { not json"
    assert bad.error
    _assert_ok([r for r in records if r.source_line != 2], events)


def test_truncated_json_line_in_ndjson():
    event = _event(1)
    full = json.dumps(_event(2))
    lines = [json.dumps(event), full[: len(full) // 2]]
    records = decode_drop("\n".join(lines).encode())
    assert records[0].ok and records[0].value == event
    assert (records[1].source_line, records[1].error_code, records[1].raw) == (2, reasons.NOT_JSON, lines[1])


@pytest.mark.parametrize("line,kind", [("42", "int"), ('"text"', "str"), ("[1, 2]", "list"), ("null", "null"),
                                       ("true", "bool"), ('[{"a": 1}]', "list")])
def test_scalar_or_array_line_in_ndjson_is_not_object(line, kind):
    events = [_event(1), _event(3)]
    text = "\n".join([json.dumps(events[0]), line, json.dumps(events[1])])
    records = decode_drop(text.encode())
    assert [r.source_line for r in records] == [1, 2, 3]
    assert records[1].error_code == reasons.NOT_OBJECT
    assert records[1].raw == line
    assert kind in records[1].error
    assert records[0].value == events[0] and records[2].value == events[1]


def test_single_scalar_document_is_not_object():
    records = decode_drop(b'"just a string"')
    assert len(records) == 1
    assert records[0].error_code == reasons.NOT_OBJECT


def test_truncated_pretty_printed_object_is_one_not_json_record():
    event = _event(1, inputs=[{"namespace": "db", "name": "t1"}], outputs=[{"namespace": "db", "name": "t2"}])
    text = json.dumps(event, indent=2)
    cut = text[: int(len(text) * 0.6)]
    records = decode_drop(b"\n" + cut.encode())
    assert len(records) == 1
    assert records[0].error_code == reasons.NOT_JSON
    assert records[0].source_line == 2
    assert records[0].raw == cut.rstrip()


@pytest.mark.parametrize(
    "extra,last_kept",
    [
        # a list of strings: the last element '"b"' is a JSON value on its own line
        ({"run": {"runId": "00000000-0000-4000-8000-000000000001", "facets": {"tags": {"values": ["a", "b"]}}}}, '"b"'),
        # a list holding an empty object: '{}' on its own line is even a JSON object
        ({"inputs": [{}]}, "{}"),
    ],
    ids=["list-of-strings", "empty-object-element"],
)
def test_truncated_pretty_printed_object_with_a_one_line_value_is_one_not_json_record(extra, last_kept):
    """json.dumps(indent=2) puts each list element on its own line; a line like '"b"' or '{}' parses by
    itself, but it is still part of the truncated document, not an NDJSON line."""
    event = _event(1, **extra)
    text = json.dumps(event, indent=2)
    cut = text[: text.index(last_kept) + len(last_kept)]
    assert cut.count("\n") > 3
    records = decode_drop(cut.encode())
    assert [(r.source_line, r.error_code) for r in records] == [(1, reasons.NOT_JSON)]
    assert records[0].raw == cut


def _incompressible_ndjson(count: int) -> tuple[bytes, list[dict]]:
    events = [_event(i, pad=hashlib.sha256(str(i).encode()).hexdigest() * 4) for i in range(count)]
    return "".join(json.dumps(e) + "\n" for e in events).encode(), events


def test_gzip_truncated_in_the_middle_keeps_complete_lines_then_one_corrupt_record():
    plain, events = _incompressible_ndjson(200)
    compressed = gzip.compress(plain)
    truncated = compressed[: len(compressed) // 2]
    # What an independent decompressor salvages from the cut stream.
    salvaged = zlib.decompressobj(wbits=31).decompress(truncated)
    complete = salvaged.count(b"\n")
    assert 0 < complete < len(events)
    tail = salvaged[salvaged.rfind(b"\n") + 1:]

    records = decode_drop(truncated)
    assert len(records) == complete + 1
    _assert_ok(records[:-1], {n: e for n, e in enumerate(events[:complete], start=1)})
    last = records[-1]
    assert last.error_code == reasons.CORRUPT_FILE
    assert last.raw_encoding == "base64"
    assert last.source_line == complete + 1
    assert base64.b64decode(last.raw) == tail
    assert plain.split(b"\n")[complete].startswith(tail)
    assert "truncated" in last.error


def test_gzip_truncated_second_member_keeps_the_first_member():
    events = [_event(i) for i in range(1, 4)]
    first = "".join(json.dumps(e) + "\n" for e in events).encode()
    second_plain, _ = _incompressible_ndjson(50)
    second = gzip.compress(second_plain)
    records = decode_drop(gzip.compress(first) + second[:20])
    assert [r.value for r in records[:3]] == events
    assert records[-1].error_code == reasons.CORRUPT_FILE
    assert records[-1].raw_encoding == "base64"


def test_garbage_after_gzip_magic_is_corrupt_file():
    data = b"\x1f\x8b" + b"this is definitely not deflate data" * 3
    records = decode_drop(data)
    assert len(records) == 1
    record = records[0]
    assert record.error_code == reasons.CORRUPT_FILE
    assert record.raw_encoding == "base64"
    assert base64.b64decode(record.raw, validate=True) == data  # nothing decompressed: the file's own bytes
    assert "gzip" in record.error
    assert not record.ok


def test_invalid_utf8_in_one_line_of_a_plain_file():
    events = {1: _event(1), 3: _event(3), 4: _event(4)}
    bad_line = b'{"job": "caf\xe9 \xff\xfe"}'
    data = b"\n".join([json.dumps(events[1]).encode(), bad_line, json.dumps(events[3]).encode(),
                       json.dumps(events[4], ensure_ascii=False).encode()])
    records = decode_drop(data)
    assert [r.source_line for r in records] == [1, 2, 3, 4]
    bad = records[1]
    assert bad.error_code == reasons.CORRUPT_FILE
    assert bad.raw_encoding == "base64"
    assert base64.b64decode(bad.raw) == bad_line
    _assert_ok([r for r in records if r.source_line != 2], events)


def test_invalid_utf8_line_in_gzip_file():
    good = _event(1, job={"namespace": "ns", "name": "jöb"})
    data = json.dumps(good, ensure_ascii=False).encode() + b"\n\xc3\x28\n"
    records = decode_drop(gzip.compress(data))
    assert records[0].value == good
    assert (records[1].source_line, records[1].error_code, records[1].raw_encoding) == (2, reasons.CORRUPT_FILE, "base64")
    assert base64.b64decode(records[1].raw) == b"\xc3\x28"


def test_empty_file_has_no_records():
    assert decode_drop(b"") == []


@pytest.mark.parametrize("data", [b" ", b"\n\n\n", b" \t\r\n  \n\t", b"\xef\xbb\xbf\n  \n"])
def test_whitespace_only_file_has_no_records(data):
    assert decode_drop(data) == []
    assert decode_drop(gzip.compress(data)) == []


def test_empty_gzip_has_no_records():
    assert decode_drop(gzip.compress(b"")) == []


def test_ndjson_whose_lines_are_all_bad_gives_one_record_per_line():
    records = decode_drop(b"{bad\n{worse\nnope\n")
    assert [(r.source_line, r.error_code, r.raw) for r in records] == [
        (1, reasons.NOT_JSON, "{bad"),
        (2, reasons.NOT_JSON, "{worse"),
        (3, reasons.NOT_JSON, "nope"),
    ]


# --------------------------------------------------------------------------- large NDJSON in chunks


def _plan(folder, split: int):
    from lineage_assets.intake.ledger import changed_files
    from lineage_assets.intake.read_plan import plan_reads

    return plan_reads(str(folder), changed_files(str(folder), {}), "batch", split=split)


def test_a_large_ndjson_file_in_chunks_gives_the_records_of_the_whole_file(tmp_path):
    from lineage_assets.intake.decode import decode_ndjson_chunk

    lines = [json.dumps({"i": i, "pad": "é" * (i % 37)}, ensure_ascii=False) for i in range(3000)]
    lines[5], lines[700], lines[701] = "not json", "", "   "
    path = tmp_path / "big.ndjson"
    data = ("\ufeff" + "\n".join(lines) + "\n").encode("utf-8") + b"\xff\xfe broken utf-8\n" + json.dumps({"last": 1}).encode()
    path.write_bytes(data)
    units, reads = _plan(tmp_path, 4096)
    assert len(units) > 10
    assert units[0].start == 0 and units[-1].end == len(data) == reads[0].bytes_to  # the unterminated last line is whole JSON
    assert all(a.end == b.start for a, b in zip(units, units[1:]))  # contiguous, nothing skipped or read twice
    assert all(data[u.end - 1:u.end] == b"\n" for u in units[:-1])  # cut after whole lines only
    pieces = [r for u in units for r in decode_ndjson_chunk(data[u.start:u.end], u.first_line)]
    whole = decode_drop(data)
    assert [(r.source_line, r.raw, r.raw_encoding, r.error_code) for r in pieces] == [
        (r.source_line, r.raw, r.raw_encoding, r.error_code) for r in whole
    ]
    assert pieces[-1].source_line == 3002 and pieces[-2].error_code == "corrupt_file"


def test_only_plain_ndjson_is_cut(tmp_path):
    (tmp_path / "pretty.json").write_text(json.dumps([{"a": i} for i in range(2000)], indent=2))
    (tmp_path / "array.json").write_text(json.dumps([{"a": i} for i in range(2000)]))
    (tmp_path / "doc.json").write_text(json.dumps({"a": list(range(2000))}, indent=2))
    (tmp_path / "big.ndjson.gz").write_bytes(gzip.compress(("\n".join(json.dumps({"a": i}) for i in range(2000))).encode()))
    units, reads = _plan(tmp_path, 1024)
    assert sorted(u.path for u in units) == ["array.json", "big.ndjson.gz", "doc.json", "pretty.json"]
    assert all(u.form == "whole" and u.start == 0 and u.end == (tmp_path / u.path).stat().st_size for u in units)


def test_a_crlf_lines_cr_is_no_part_of_its_record_size(monkeypatch):
    """LINEAGE_MAX_RECORD_BYTES is the UTF-8 size of one record: a record of exactly the limit is
    accepted whether its line ends in LF or CRLF (the CR counted, CRLF lines were rejected as
    record_too_large), and one byte more is rejected either way."""
    event = _event(1)
    text = json.dumps(event)
    monkeypatch.setenv("LINEAGE_MAX_RECORD_BYTES", str(len(text)))
    for ending in (b"\n", b"\r\n"):
        assert [r.ok for r in decode_drop((text.encode() + ending) * 2)] == [True, True], ending
        assert [r.error_code for r in decode_drop((text.encode() + b" " + ending) * 2)] == ["record_too_large"] * 2, ending
