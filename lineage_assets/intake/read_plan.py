"""What a landing batch reads: byte ranges of the changed files, and the ledger rows after it.

A grown NDJSON file is read from its ledger offset to the end of its last complete line; an
incomplete last line waits for the next batch unless it already is a whole JSON value (a file
written without a final newline). A new or replaced file is read from its first byte; WHOLE
forms (gzip, arrays, pretty-printed documents) are read whole. Ranges larger than `split` are
cut into chunks of whole lines, parsed in parallel. One sequential pass over the new bytes
counts lines (the first line number of each chunk) and hashes the range (`drop_files`).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from lineage_assets.intake.ledger import GROWN, NDJSON, WHOLE, WINDOW, FileChange, FileState, file_id, is_json_value, prefix_fingerprints, sniff_form

SPLIT_BYTES = 32 << 20  # NDJSON ranges larger than this are parsed in chunks, in parallel
_BLOCK = 16 << 20


@dataclass(frozen=True)
class ReadUnit:
    """Bytes [start, end) of one file, parsed by one task; `first_line` is the line number of
    the byte at `start`."""

    path: str
    file_id: str
    form: str
    start: int
    end: int
    first_line: int


@dataclass(frozen=True)
class FileRead:
    """What a batch reads of one file (a `drop_files` row before its counts)."""

    path: str
    file_id: str
    kind: str  # NEW, GROWN or REPLACED
    form: str
    bytes_from: int
    bytes_to: int
    first_line: int
    range_sha256: str  # of bytes [bytes_from, bytes_to)
    pending_bytes: int  # an incomplete last line left for the next batch
    state: FileState  # the ledger row once this read commits


def plan_reads(drop_dir: str, changes: list[FileChange], batch_id: str, split: int = SPLIT_BYTES) -> tuple[list[ReadUnit], list[FileRead]]:
    units: list[ReadUnit] = []
    reads: list[FileRead] = []
    for change in changes:
        try:
            planned = _plan_file(os.path.join(drop_dir, change.path), change, batch_id, split)
        except OSError:
            continue  # vanished since the scan: the ledger keeps what it had
        units.extend(planned[0])
        reads.append(planned[1])
    return units, reads


def _sniff(handle) -> str:
    """The form of an open drop file (`sniff_form` on its first WINDOW bytes, more when they
    cannot tell)."""
    handle.seek(0)

    def more(size: int) -> bytes:
        handle.seek(0)
        return handle.read(size)

    return sniff_form(handle.read(WINDOW), more)


def _plan_file(full: str, change: FileChange, batch_id: str, split: int) -> tuple[list[ReadUnit], FileRead]:
    with open(full, "rb") as handle:
        stat = os.fstat(handle.fileno())
        size = stat.st_size
        if change.kind == GROWN and change.previous is not None:
            prev = change.previous
            fid, start, lines = prev.file_id, prev.offset, prev.lines
            # nothing consumed yet (seen empty, or only part of its first line): the form is
            # decided by what has been written since, not locked into NDJSON
            form = NDJSON if start else _sniff(handle)
        else:
            fid, start, lines = file_id(change.path, batch_id), 0, 0
            form = _sniff(handle)
        digest = hashlib.sha256()
        if form == WHOLE:
            handle.seek(0)
            while block := handle.read(_BLOCK):
                digest.update(block)
            end, bounds, newlines = size, [(0, 1)], 0
        else:
            end, bounds, newlines = _ndjson_range(handle, start, size, lines + 1, split, digest, change.flush)
        head, tail = prefix_fingerprints(handle, end)
    units = [
        ReadUnit(change.path, fid, form, b_start, b_end, b_line)
        for (b_start, b_line), (b_end, _) in zip(bounds, [*bounds[1:], (end, 0)])
        if b_end > b_start
    ]
    state = FileState(
        change.path, fid, stat.st_dev, stat.st_ino, size, stat.st_mtime_ns, end, lines + newlines, head, tail, form, batch_id,
    )
    read = FileRead(change.path, fid, change.kind, form, start, end, lines + 1, digest.hexdigest(), size - end, state)
    return units, read


def _ndjson_range(
    handle, start: int, size: int, first_line: int, split: int, digest, flush: bool = False,
) -> tuple[int, list[tuple[int, int]], int]:
    """(end, [(chunk start, its first line)], line breaks in [start, end)) of an NDJSON range,
    hashing [start, end) into `digest`. `end` is after the last line break, or `size` when the
    bytes after it are already a whole JSON value or `flush` (an abandoned last line) is set."""
    end = size if flush else _after_last_break(handle, start, size)
    if end < size:
        handle.seek(end)
        if _is_whole_value(handle.read(size - end)):
            end = size
    handle.seek(start)
    bounds = [(start, first_line)]
    pos, newlines = start, 0
    while pos < end:
        block = handle.read(min(_BLOCK, end - pos))
        digest.update(block)
        search = 0
        while bounds[-1][0] + split < pos + len(block):  # cut at the first line break after every `split` bytes
            cut = block.find(b"\n", max(search, bounds[-1][0] + split - pos))
            if cut < 0 or pos + cut + 1 >= end:
                break
            bounds.append((pos + cut + 1, first_line + newlines + block.count(b"\n", 0, cut + 1)))
            search = cut + 1
        newlines += block.count(b"\n")
        pos += len(block)
    return end, bounds, newlines


def _after_last_break(handle, start: int, size: int) -> int:
    """The offset after the last line break in [start, size), or `start` when there is none."""
    pos = size
    while pos > start:
        step = min(WINDOW, pos - start)
        handle.seek(pos - step)
        found = handle.read(step).rfind(b"\n")
        if found >= 0:
            return pos - step + found + 1
        pos -= step
    return start


def _is_whole_value(tail: bytes) -> bool:
    """An unterminated last line that is already one JSON value (not half of one). A number is
    not: `12` may be the first half of `1234`. Nor is a tail nested too deep for Python's parser
    (a RecursionError, whole or not): it waits for its line break, and is then a `too_deep` record."""
    text = tail.strip()
    return bool(text) and not text[-1:].isdigit() and is_json_value(text)
