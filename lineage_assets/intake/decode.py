"""Split one drop file's bytes into JSON records with their line numbers.

Accepted forms (DESIGN.md section 2): NDJSON, one JSON object (pretty-printed or not), a JSON
array of objects; each plain or gzip-compressed. The form is sniffed from the content, not the
file name: gzip by its magic bytes, a single document by parsing the whole text first.

Nothing is dropped: every non-blank line that is not part of a parsed document comes back as a
record with an error, and an undecodable tail of a corrupt gzip stream comes back as one
`corrupt_file` record holding the salvaged bytes.
"""

from __future__ import annotations

import base64
import json
import zlib
from dataclasses import dataclass
from typing import Any, Iterator

from lineage_assets.intake import reasons

GZIP_MAGIC = b"\x1f\x8b"
_DECODER = json.JSONDecoder()
_WS = " \t\r\n"


@dataclass(frozen=True)
class RawRecord:
    """One line/event of a drop, parsed or not."""

    source_line: int
    raw: str
    raw_encoding: str = "utf-8"  # "base64" when the bytes are not text
    value: Any = None
    error_code: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error_code is None


def gunzip(data: bytes) -> tuple[bytes, str | None]:
    """Decompress gzip (multi-member aware). Returns (bytes salvaged, error or None)."""
    out = []
    rest = data
    while rest:
        d = zlib.decompressobj(wbits=31)
        try:
            out.append(d.decompress(rest))
            out.append(d.flush())
        except zlib.error as exc:
            return b"".join(out), f"bad gzip data: {exc}"
        if not d.eof:
            return b"".join(out), "gzip stream is truncated (no end-of-stream marker)"
        rest = d.unused_data.lstrip(b"\x00")
        if rest and not rest.startswith(GZIP_MAGIC):
            return b"".join(out), "trailing bytes after gzip stream are not gzip"
    return b"".join(out), None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def decode_drop(data: bytes) -> list[RawRecord]:
    """All records of one drop file, in file order."""
    records: list[RawRecord] = []
    corrupt_tail: str | None = None
    original = data
    if data.startswith(GZIP_MAGIC):
        data, corrupt_tail = gunzip(data)
    if corrupt_tail is not None and not data:
        # Nothing could be decompressed: keep the file's own bytes as the raw record.
        return [
            RawRecord(1, _b64(original), "base64", error_code=reasons.CORRUPT_FILE, error=f"{corrupt_tail}; nothing could be decompressed")
        ]
    if corrupt_tail is not None:
        # Keep every complete line that decompressed; the partial last line is the corrupt part.
        cut = data.rfind(b"\n") + 1
        good, tail = data[:cut], data[cut:]
        records.extend(_decode_bytes(good))
        line = good.count(b"\n") + 1
        records.append(
            RawRecord(
                source_line=line,
                raw=_b64(tail),
                raw_encoding="base64",
                error_code=reasons.CORRUPT_FILE,
                error=f"{corrupt_tail}; {len(tail)} bytes after the last complete line kept as raw",
            )
        )
        return records
    records.extend(_decode_bytes(data))
    return records


def _decode_bytes(data: bytes) -> list[RawRecord]:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return list(_lines_of_bytes(data))
    return _decode_text(text)


def decode_ndjson_chunk(data: bytes, first_line: int) -> list[RawRecord]:
    """The records of a run of whole NDJSON lines cut from a larger file (its first line is
    `first_line` of the file); the same records the whole file gives for those lines."""
    if first_line == 1 and data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return list(_lines_of_bytes(data, first_line))


def _lines_of_bytes(data: bytes, first_line: int = 1) -> Iterator[RawRecord]:
    """Decode line by line (a file that is not valid UTF-8 as a whole, or a chunk of NDJSON);
    lines that are not UTF-8 are kept as base64."""
    for number, line in enumerate(data.split(b"\n"), start=first_line):
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield RawRecord(
                number,
                _b64(line),
                "base64",
                error_code=reasons.CORRUPT_FILE,
                error=f"line is not valid UTF-8: {exc.reason} at byte {exc.start}",
            )
            continue
        yield _parse_line(number, text)


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _decode_text(text: str) -> list[RawRecord]:
    stripped = text.lstrip(_WS)
    if not stripped:
        return []
    start = len(text) - len(stripped)
    try:
        value = json.loads(text)
    except ValueError:
        value = _NOT_A_DOCUMENT
    if value is not _NOT_A_DOCUMENT:
        if isinstance(value, list) and stripped.startswith("["):
            return list(_array_elements(text, start))
        return [_record(_line_of(text, start), stripped.rstrip(_WS), value)]
    first_line = stripped.split("\n", 1)[0].strip(_WS)
    if first_line in ("{", "["):
        # A pretty-printed document (no NDJSON line is a lone bracket) that does not parse:
        # one record for the whole text, not one per fragment.
        try:
            json.loads(text)
        except ValueError as exc:
            reason = f"document is not valid JSON (truncated?): {exc}"
        return [RawRecord(_line_of(text, start), stripped.rstrip(_WS), error_code=reasons.NOT_JSON, error=reason)]
    return [_parse_line(n, line) for n, line in enumerate(text.split("\n"), start=1) if line.strip(_WS)]


_NOT_A_DOCUMENT = object()


def _array_elements(text: str, start: int) -> Iterator[RawRecord]:
    pos = start + 1
    while True:
        while pos < len(text) and text[pos] in _WS:
            pos += 1
        if text[pos] == "]":
            return
        value, end = _DECODER.raw_decode(text, pos)
        yield _record(_line_of(text, pos), text[pos:end], value)
        pos = end
        while text[pos] in _WS:
            pos += 1
        if text[pos] == ",":
            pos += 1


def _parse_line(number: int, line: str) -> RawRecord:
    raw = line.rstrip("\r")
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return RawRecord(number, raw, error_code=reasons.NOT_JSON, error=f"not valid JSON: {exc}")
    return _record(number, raw, value)


def _record(number: int, raw: str, value: Any) -> RawRecord:
    if not isinstance(value, dict):
        kind = type(value).__name__ if value is not None else "null"
        return RawRecord(
            number, raw, error_code=reasons.NOT_OBJECT, error=f"JSON value is a {kind}, not an object"
        )
    return RawRecord(number, raw, value=value)
