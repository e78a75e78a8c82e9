"""Split one drop file's bytes into JSON records with their line numbers.

Accepted forms (DESIGN.md section 2): NDJSON, one JSON object (pretty-printed or not), a JSON
array of objects; each plain or gzip-compressed. The form is sniffed from the content, not the
file name: gzip by its magic bytes, a document or an array by what its first line holds.

Totality (DESIGN.md section 11): nothing is dropped and nothing raises. Every non-blank line
that is not part of a parsed document comes back as a record, with an error when it cannot be
an event; an undecodable tail of a gzip stream comes back as one record holding the salvaged
bytes; plain bytes after the last gzip member are read as lines. JSON is parsed strictly:
NaN/Infinity, numbers beyond a double and a key twice in one object are errors, not
silently accepted (Python's parser takes them all, the last duplicate winning).

Limits, each its own reject reason (defaults below, overridable by environment variables that
are read when a file is decoded, so Spark's Python workers apply the same ones):

- LINEAGE_MAX_RECORD_BYTES (`record_too_large`): the UTF-8 size of one record (a line, an
  array element or a whole document); a larger record is not parsed, and its `raw` keeps only
  its first RAW_PREVIEW_BYTES (the drop file stays the archive of the whole text).
- LINEAGE_MAX_DEPTH (`too_deep`): nesting of objects and arrays in one record (the event
  object itself is depth 1), checked before the record is parsed.
- LINEAGE_MAX_DECOMPRESSED_BYTES (`decompressed_too_large`): the decompressed size of one gzip
  file. Decompression streams and stops at the limit, so a gzip bomb never materialises: the
  complete lines before the limit are read, the rest of the file is one reject.
- LINEAGE_MAX_NAME_LENGTH (`name_too_long`): applied by `validate` to names and ids.
"""

from __future__ import annotations

import base64
import functools
import json
import math
import os
import re
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from lineage_assets.intake import reasons

GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
_WS = " \t\r\n"  # JSON whitespace: a line holding only these is blank
_WSB = _WS.encode()

# ------------------------------------------------------------------------------------------ limits

MAX_RECORD_BYTES = 4 << 20  # 4 MiB
MAX_DEPTH = 128  # the event object is depth 1; Python's parser gives up near 1,000
MAX_DECOMPRESSED_BYTES = 256 << 20  # 256 MiB: a whole gzip file is decoded in one Python worker
MAX_NAME_LENGTH = 1024  # characters
RAW_PREVIEW_BYTES = 64 << 10  # what `raw` keeps of a record too large to store whole

LIMIT_VARIABLES = {
    "record_bytes": ("LINEAGE_MAX_RECORD_BYTES", MAX_RECORD_BYTES),
    "depth": ("LINEAGE_MAX_DEPTH", MAX_DEPTH),
    "decompressed_bytes": ("LINEAGE_MAX_DECOMPRESSED_BYTES", MAX_DECOMPRESSED_BYTES),
    "name_length": ("LINEAGE_MAX_NAME_LENGTH", MAX_NAME_LENGTH),
}


@dataclass(frozen=True)
class Limits:
    record_bytes: int = MAX_RECORD_BYTES
    depth: int = MAX_DEPTH
    decompressed_bytes: int = MAX_DECOMPRESSED_BYTES
    name_length: int = MAX_NAME_LENGTH

    @classmethod
    def from_env(cls, environ=None) -> Limits:
        """The defaults, each replaced by its environment variable when that is set (read now,
        not at import). A value that is not a positive integer is a configuration error
        (ValueError), not a record's fault."""
        environ = os.environ if environ is None else environ
        return cls(**{field: _limit(variable, default, environ.get(variable)) for field, (variable, default) in LIMIT_VARIABLES.items()})


def limit(field: str) -> int:
    """One limit (a Limits field name) as the environment sets it now."""
    variable, default = LIMIT_VARIABLES[field]
    return _limit(variable, default, os.environ.get(variable))


@functools.lru_cache(maxsize=64)
def _limit(variable: str, default: int, text: str | None) -> int:
    if text is None or not text.strip():
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise ValueError(f"{variable} must be a positive integer, got {text!r}")
    return value


# ------------------------------------------------------------------------------------------ records


@dataclass(frozen=True)
class RawRecord:
    """One line/event of a drop, parsed or not."""

    source_line: int
    raw: str
    raw_encoding: str = "utf-8"  # "base64" when the bytes are not text
    value: Any = None
    error_code: str | None = None
    error: str | None = None
    floats: bool = True  # whether `value` may hold a float (False: parsed here, and none was seen)

    @property
    def ok(self) -> bool:
        return self.error_code is None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _preview(data: bytes, size: int | None = None) -> tuple[str, str]:
    """(raw, encoding) of the first RAW_PREVIEW_BYTES of `data` (of `size` bytes in all): text
    when they are UTF-8 (a character cut at the end is dropped), base64 otherwise."""
    head = data[:RAW_PREVIEW_BYTES]
    size = len(data) if size is None else size
    for cut in range(4 if size > RAW_PREVIEW_BYTES else 1):
        try:
            return head[: len(head) - cut].decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            continue
    return _b64(head), "base64"


def _too_large(line: int, data: bytes, limits: Limits, what: str = "record", start: int = 0, end: int | None = None) -> RawRecord:
    """The reject of record data[start:end], which is larger than the record limit."""
    end = len(data) if end is None else end
    raw, encoding = _preview(data[start:min(end, start + RAW_PREVIEW_BYTES + 3)], end - start)
    return RawRecord(
        line, raw, encoding, error_code=reasons.RECORD_TOO_LARGE,
        error=f"{what} is {end - start} bytes, more than LINEAGE_MAX_RECORD_BYTES={limits.record_bytes}; "
        f"not parsed; raw keeps its first {min(end - start, RAW_PREVIEW_BYTES)} bytes (the drop file keeps the rest)",
    )


# ------------------------------------------------------------------------------------------ strict JSON


class _JsonReject(Exception):
    """Raised from the decoder's hooks: valid JSON syntax that is not acceptable."""

    def __init__(self, code: str, reason: str):
        super().__init__(reason)
        self.code = code
        self.reason = reason


def _object(pairs: list) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set = set()
        duplicate = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise _JsonReject(reasons.DUPLICATE_KEY, f"key {show_value(duplicate)} appears twice in one object (which one counts is undefined)")
    return obj


def _constant(name: str):
    raise _JsonReject(reasons.INVALID_NUMBER, f"{name} is not a JSON number")


class _FloatCount(threading.local):
    """Floats the strict decoder has made in this thread (the hook has no other context)."""

    made = 0


_FLOATS = _FloatCount()


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _JsonReject(reasons.INVALID_NUMBER, f"number {show_value(text)} is beyond the range of a double")
    if value == 0 and any(c in "123456789" for c in text.partition("e")[0].partition("E")[0]):
        # 1e-400 reads as 0.0: the stored event would say 0.0 where the producer said otherwise
        raise _JsonReject(reasons.INVALID_NUMBER, f"number {show_value(text)} is too small for a double (it reads as 0)")
    _FLOATS.made += 1
    return value


def _counting_floats(decode, *args) -> tuple[Any, bool]:
    """(what `decode(*args)` returns, whether the strict decoder made a float while it ran)."""
    before = _FLOATS.made
    result = decode(*args)
    return result, _FLOATS.made != before


_STRICT = json.JSONDecoder(object_pairs_hook=_object, parse_constant=_constant, parse_float=_float)
_LENIENT = json.JSONDecoder()


def has_surrogate(text: str) -> bool:
    """Whether `text` holds a lone surrogate (bytes that were not UTF-8, kept by
    `surrogateescape`, or a `\\ud800` escape): no UTF-8 table column can hold it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def show_value(value: Any, width: int = 80) -> str:
    """repr() of a value for a reason text, cut to `width` characters."""
    text = repr(value)
    return text if len(text) <= width else f"{text[:width]}... ({len(text)} characters)"


# Nesting depth, counted on the bytes before parsing (a parser recursing 1,000 deep raises
# RecursionError; a record a few hundred deep parses but may overflow a later stage's stack).
# Brackets inside strings do not count: escapes are removed, then strings, then the remaining
# brackets (one kind) are taken apart one level per pass.
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_QUOTE_OR_BACKSLASH_ESCAPE = re.compile(rb'\\["\\]')
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')
_ONE_BRACKET_KIND = bytes.maketrans(b"{}", b"[]")
_STRING = re.compile(rb'"[^"]*"')


def _depth_ok(data: bytes, limit: int) -> bool:
    """False when objects/arrays in `data` nest deeper than `limit`. Unbalanced brackets (not
    JSON) count as fine: the parser rejects them."""
    if data.count(b"[") + data.count(b"{") <= limit:
        return True
    if b"\\" in data and _QUOTE_OR_BACKSLASH_ESCAPE.search(data):
        data = _ESCAPE.sub(b"", data)  # only \" and \\ matter; other escapes hold no quote
    brackets = data.translate(_ONE_BRACKET_KIND, _NOT_STRUCTURE).replace(b'""', b"")
    if b'"' in brackets:
        brackets = _STRING.sub(b"", brackets)
    for _ in range(limit):
        if not brackets:
            return True
        inner = brackets.replace(b"[]", b"")
        if len(inner) == len(brackets):
            return True
        brackets = inner
    return b"[]" not in brackets


def _too_deep_reason(limits: Limits) -> str:
    return f"objects/arrays nest deeper than LINEAGE_MAX_DEPTH={limits.depth}; not parsed"


def _load(text: str, data: bytes, limits: Limits) -> tuple[Any, str | None, str | None, bool]:
    """(value, None, None, whether it holds a float) or (None, code, reason, True) for one
    record's text (`data`: its UTF-8 bytes, which are within the record size limit)."""
    if not _depth_ok(data, limits.depth):
        return None, reasons.TOO_DEEP, _too_deep_reason(limits), True
    try:
        value, floats = _counting_floats(_STRICT.decode, text)
        return value, None, None, floats
    except _JsonReject as bad:
        return None, bad.code, bad.reason, True
    except json.JSONDecodeError as exc:
        return None, reasons.NOT_JSON, f"not valid JSON: {exc}", True
    except RecursionError:
        return None, reasons.TOO_DEEP, _too_deep_reason(limits), True
    except ValueError as exc:  # int() refusing an integer of more than sys.get_int_max_str_digits() digits
        return None, reasons.INVALID_NUMBER, f"number not readable: {exc}", True


def _record(number: int, raw: str, value: Any, floats: bool = True) -> RawRecord:
    if not isinstance(value, dict):
        kind = type(value).__name__ if value is not None else "null"
        return RawRecord(number, raw, error_code=reasons.NOT_OBJECT, error=f"JSON value is a {kind}, not an object")
    return RawRecord(number, raw, value=value, floats=floats)


# ------------------------------------------------------------------------------------------ gzip


@dataclass(frozen=True)
class Gunzipped:
    data: bytearray  # what was decompressed (all of it, or what came before the problem)
    code: str | None = None  # CORRUPT_FILE or DECOMPRESSED_TOO_LARGE
    error: str | None = None
    trailing: bytes = b""  # bytes after the last gzip member that are not gzip (read as plain lines)


_IN_CHUNK = 1 << 16
_OUT_CHUNK = 1 << 23
_NULS = re.compile(rb"\x00*")


def gunzip(data: bytes, limit: int | None = None) -> Gunzipped:
    """Decompress gzip (multi-member aware), streaming into one buffer that never holds more
    than `limit` bytes (default: LINEAGE_MAX_DECOMPRESSED_BYTES)."""
    limit = limit if limit is not None else Limits.from_env().decompressed_bytes
    out = bytearray()
    pos, size = 0, len(data)
    while pos < size:
        stream = zlib.decompressobj(wbits=31)
        pending = b""
        while not stream.eof:
            if not pending and pos < size:
                pending = data[pos:pos + _IN_CHUNK]
                pos += len(pending)
            try:
                chunk = stream.decompress(pending, min(_OUT_CHUNK, limit - len(out) + 1))
            except zlib.error as exc:
                return Gunzipped(out, reasons.CORRUPT_FILE, f"bad gzip data: {exc}")
            pending = stream.unconsumed_tail
            if chunk:
                out += chunk
                if len(out) > limit:
                    del out[limit:]
                    return Gunzipped(
                        out, reasons.DECOMPRESSED_TOO_LARGE,
                        f"decompressed size passes LINEAGE_MAX_DECOMPRESSED_BYTES={limit}: decompression stopped "
                        f"at compressed byte {pos - len(pending)} of {size}; the rest of the file is not read",
                    )
            elif not pending and pos >= size:
                break
        if not stream.eof:
            return Gunzipped(out, reasons.CORRUPT_FILE, "gzip stream is truncated (no end-of-stream marker)")
        pos = _NULS.match(data, pos - len(stream.unused_data)).end()  # zero padding between members
        if pos < size and not data.startswith(GZIP_MAGIC, pos):
            return Gunzipped(out, trailing=data[pos:])
    return Gunzipped(out)


# ------------------------------------------------------------------------------------------ files


def decode_drop(data: bytes, limits: Limits | None = None) -> list[RawRecord]:
    """All records of one drop file, in file order. Never raises: an unexpected error becomes
    one `internal_error` record for the file."""
    limits = limits or Limits.from_env()
    try:
        return _decode_drop(data, limits)
    except Exception as exc:  # noqa: BLE001 - last resort: the file still gets its reject
        raw, encoding = _preview(data)
        return [RawRecord(1, raw, encoding, error_code=reasons.INTERNAL_ERROR, error=f"file could not be decoded: {type(exc).__name__}: {exc}"[:2000])]


def _decode_drop(data: bytes, limits: Limits) -> list[RawRecord]:
    if not data.startswith(GZIP_MAGIC):
        return _decode_plain(data, limits)
    unzipped = gunzip(data, limits.decompressed_bytes)
    plain = unzipped.data
    if unzipped.code is not None and not plain:
        # Nothing could be decompressed: keep the file's own bytes as the raw record.
        head = data[:RAW_PREVIEW_BYTES]
        kept = "" if len(data) <= RAW_PREVIEW_BYTES else f"; raw keeps its first {len(head)} of {len(data)} bytes"
        return [RawRecord(1, _b64(head), "base64", error_code=unzipped.code, error=f"{unzipped.error}; nothing could be decompressed{kept}")]
    if unzipped.code is not None:
        # Keep every complete line that decompressed; the partial last line is the damaged part.
        cut = plain.rfind(b"\n") + 1
        head, tail = bytes(plain[cut:cut + RAW_PREVIEW_BYTES]), len(plain) - cut
        del plain[cut:]  # in place: a buffer of up to the decompression limit is not copied
        records = _decode_plain(plain, limits)
        kept = f"{tail} bytes after the last complete line kept as raw" if len(head) == tail else (
            f"raw keeps the first {len(head)} of the {tail} bytes after the last complete line")
        records.append(
            RawRecord(plain.count(b"\n") + 1, _b64(head), "base64", error_code=unzipped.code, error=f"{unzipped.error}; {kept}")
        )
        return records
    records = _decode_plain(plain, limits)
    if unzipped.trailing:
        # Plain bytes appended after the gzip data: read as lines, numbered after the
        # decompressed ones, so none is lost.
        lines = plain.count(b"\n") + (1 if plain and not plain.endswith(b"\n") else 0)
        records.extend(_lines_of_bytes(unzipped.trailing, lines + 1, limits))
    return records


def decode_ndjson_chunk(data: bytes, first_line: int, limits: Limits | None = None) -> list[RawRecord]:
    """The records of a run of whole NDJSON lines cut from a larger file (its first line is
    `first_line` of the file); the same records the whole file gives for those lines."""
    limits = limits or Limits.from_env()
    if first_line == 1 and data.startswith(_BOM):
        data = data[3:]
    try:
        return list(_lines_of_bytes(data, first_line, limits))
    except Exception as exc:  # noqa: BLE001 - last resort, as decode_drop
        raw, encoding = _preview(data)
        return [RawRecord(first_line, raw, encoding, error_code=reasons.INTERNAL_ERROR, error=f"lines could not be decoded: {type(exc).__name__}: {exc}"[:2000])]


def _line_number(data: bytes, pos: int, first_line: int = 1) -> int:
    return first_line + data.count(b"\n", 0, pos)


_LEADING_WS = _BLANK = re.compile(rb"[ \t\r\n]*")


def _end_of_text(data: bytes, start: int) -> int:
    """The end of `data` without its trailing whitespace (not before `start`)."""
    end = len(data)
    while end > start and data[end - 1] in _WSB:
        end -= 1
    return end


def _decode_plain(data: bytes, limits: Limits) -> list[RawRecord]:
    if data.startswith(_BOM):
        data = data[3:]
    start = _LEADING_WS.match(data).end()
    if start == len(data):
        return []
    if data[start] == ord("["):
        records, problem = _array(data, start, limits)
        return records if records is not None else _fallback(data, start, limits, problem)
    if data[start] == ord("{"):
        # NDJSON, one compact object, or a multi-line document: a first line that is not a JSON
        # value by itself (e.g. a lone "{") starts a document.
        line_start = data.rfind(b"\n", 0, start) + 1
        end = data.find(b"\n", start)
        first = _line_record(_line_number(data, start), data[line_start:end if end >= 0 else len(data)], limits)
        if first.error_code == reasons.NOT_JSON:
            records, problem = _document(data, start, limits)
            return records if records is not None else _fallback(data, start, limits, problem)
    return list(_lines_of_bytes(data, 1, limits))


def _first_line_is_bracket(data: bytes, start: int) -> bool:
    end = data.find(b"\n", start)
    return data[start:end if end >= 0 else len(data)].strip(_WSB) in (b"{", b"[")


def _document(data: bytes, start: int, limits: Limits) -> tuple[list[RawRecord] | None, str | None]:
    """One multi-line JSON document starting at `start`, or (None, why not)."""
    end = _end_of_text(data, start)
    number = _line_number(data, start)
    if end - start > limits.record_bytes:
        return ([_too_large(number, data, limits, "document", start, end)], None) if _first_line_is_bracket(data, start) else (None, None)
    body = data[start:end]
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None, None
    value, code, reason, floats = _load(text, body, limits)
    if code is None:
        return [_record(number, text, value, floats)], None
    if code == reasons.NOT_JSON:
        return None, reason
    if _first_line_is_bracket(data, start) or _is_one_value(text):
        return [RawRecord(number, text, error_code=code, error=reason)], None
    return None, reason


def _is_one_value(text: str) -> bool:
    try:
        _LENIENT.decode(text)
    except (ValueError, RecursionError):
        return False
    return True


def _fallback(data: bytes, start: int, limits: Limits, problem: str | None) -> list[RawRecord]:
    """Text that is neither NDJSON-shaped nor a valid document or array. A pretty-printed
    document (its first line a lone bracket; no NDJSON line is) that does not parse is one
    record for the whole text, not one per fragment; anything else is read line by line."""
    if not _first_line_is_bracket(data, start):
        return list(_lines_of_bytes(data, 1, limits))
    end = _end_of_text(data, start)
    number = _line_number(data, start)
    if end - start > limits.record_bytes:
        return [_too_large(number, data, limits, "document (not valid JSON)", start, end)]
    body = data[start:end]
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return list(_lines_of_bytes(data, 1, limits))
    if problem is None:
        _value, _code, problem, _floats = _load(text, body, limits)
    problem = (problem or "").removeprefix("not valid JSON: ")
    return [RawRecord(number, text, error_code=reasons.NOT_JSON, error=f"document is not valid JSON (truncated?): {problem}")]


def _line_record(number: int, line: bytes, limits: Limits) -> RawRecord:
    if len(line) - line.endswith(b"\r") > limits.record_bytes:  # a CRLF line's CR is no part of its record
        return _too_large(number, line, limits, "line")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return RawRecord(
            number, _b64(line), "base64", error_code=reasons.CORRUPT_FILE,
            error=f"line is not valid UTF-8: {exc.reason} at byte {exc.start}",
        )
    if text.endswith("\r"):
        text, line = text[:-1], line[:-1]
    value, code, reason, floats = _load(text, line, limits)
    if code is None:
        return _record(number, text, value, floats)
    return RawRecord(number, text, error_code=code, error=reason)


def _lines_of_bytes(data: bytes, first_line: int, limits: Limits) -> Iterator[RawRecord]:
    """Each non-blank line as a record; lines that are not UTF-8 are kept as base64."""
    pos, size, number = 0, len(data), first_line
    while pos <= size:
        end = data.find(b"\n", pos)
        if end < 0:
            end = size
        if not _BLANK.fullmatch(data, pos, end):
            if end - pos - (data[end - 1] == 0x0D) > limits.record_bytes:  # not copied: only its first bytes are kept (a CR ending it is no part of it)
                yield _too_large(number, data, limits, "line", pos, end)
            else:
                yield _line_record(number, data[pos:end], limits)
        pos, number = end + 1, number + 1


# ------------------------------------------------------------------------------------------ arrays


def _skip_ws(text: str, pos: int) -> int:
    size = len(text)
    while pos < size and text[pos] in _WS:
        pos += 1
    return pos


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")


def _value_end(text: str, pos: int) -> int | None:
    """The end of the value starting at `pos` that the parser could not read (an object/array
    too deep, a number too long), found by its brackets or its digits."""
    if text[pos] not in "[{":
        number = _NUMBER.match(text, pos)
        return number.end() if number else None
    depth = 0
    for match in _TOKEN.finditer(text, pos):
        token = match.group()
        if token == "[" or token == "{":
            depth += 1
        elif token == "]" or token == "}":
            depth -= 1
            if depth == 0:
                return match.end()
        if depth <= 0:
            return None
    return None


def _array(data: bytes, start: int, limits: Limits) -> tuple[list[RawRecord] | None, str | None]:
    """One record per element of the JSON array at `start` (each element is a record: limits
    and strict parsing apply to it alone), or (None, why not) when the text is not one array.
    Line numbers are counted incrementally: linear in the size of the file."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, None
    shallow = _depth_ok(data, limits.depth + 1)  # one check for the whole array, usually
    records: list[RawRecord] = []
    line, counted = _line_number(data, start), start
    pos = _skip_ws(text, start + 1)
    if text.startswith("]", pos):
        pos += 1
    else:
        while True:
            line += text.count("\n", counted, pos)
            counted = pos
            code = reason = None
            floats = True
            try:
                (value, end), floats = _counting_floats(_STRICT.raw_decode, text, pos)
            except _JsonReject as bad:
                code, reason = bad.code, bad.reason
            except json.JSONDecodeError as exc:
                return None, str(exc)
            except RecursionError:
                code, reason = reasons.TOO_DEEP, _too_deep_reason(limits)
            except ValueError as exc:
                code, reason = reasons.INVALID_NUMBER, f"number not readable: {exc}"
            if code is not None:  # valid syntax, but not acceptable: find where the element ends
                try:
                    end = _LENIENT.raw_decode(text, pos)[1]
                except (ValueError, RecursionError):
                    end = _value_end(text, pos)
                if end is None:
                    return None, reason
            element = text[pos:end]
            size = len(element) if element.isascii() else len(element.encode("utf-8"))
            if size > limits.record_bytes:
                records.append(_too_large(line, element.encode("utf-8"), limits, "array element"))
            elif code is not None:
                records.append(RawRecord(line, element, error_code=code, error=reason))
            elif not shallow and not _depth_ok(element.encode("utf-8"), limits.depth):
                records.append(RawRecord(line, element, error_code=reasons.TOO_DEEP, error=_too_deep_reason(limits)))
            else:
                records.append(_record(line, element, value, floats))
            pos = _skip_ws(text, end)
            if text.startswith(",", pos):
                pos = _skip_ws(text, pos + 1)
            elif text.startswith("]", pos):
                pos += 1
                break
            else:
                return None, f"expected ',' or ']' after the array element at line {line}"
    if text[pos:].strip(_WS):
        return None, "text after the end of the array"
    return records, None
