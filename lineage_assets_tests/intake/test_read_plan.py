"""plan_reads: the byte ranges a landing batch parses and the ledger rows it commits, driven tick
by tick through changed_files -> plan_reads -> decode -> ledger.updated (no Spark)."""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from lineage_assets_tests.support import ByteCounter
from lineage_assets.intake import read_plan
from lineage_assets.intake.decode import decode_drop, decode_ndjson_chunk
from lineage_assets.intake.ledger import (
    ABANDONED_TAIL_SECONDS,
    GROWN,
    NDJSON,
    NEW,
    REPLACED,
    WHOLE,
    WINDOW,
    abandoned_before_ns,
    changed_files,
    updated,
)
from lineage_assets.intake.read_plan import plan_reads


@pytest.fixture
def drops(tmp_path):
    folder = tmp_path / "drops"
    folder.mkdir()
    return folder


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


def ndjson(first: int, count: int, pad: int = 0) -> bytes:
    return b"".join(json.dumps({"i": i, "pad": "x" * pad}).encode() + b"\n" for i in range(first, first + count))


def read_range(path: Path, start: int, end: int) -> bytes:
    with open(path, "rb") as handle:
        handle.seek(start)
        return handle.read(end - start)


def records_of(drops: Path, units) -> list:
    """Decode every unit the way the intake does: NDJSON chunks line by line, WHOLE files whole."""
    out = []
    for unit in units:
        data = read_range(drops / unit.path, unit.start, unit.end)
        if unit.form == WHOLE:
            out.extend(decode_drop(data))
        else:
            out.extend(decode_ndjson_chunk(data, unit.first_line))
    return out


def line_texts(data: bytes) -> list[tuple[int, str]]:
    """(line number, text) of every non-blank line: the oracle, independent of the decoder."""
    return [
        (number, line.decode("utf-8").rstrip("\r"))
        for number, line in enumerate(data.split(b"\n"), start=1)
        if line.strip()
    ]


@dataclass
class Intake:
    """The intake loop over one drop folder: ledger, every read and every record so far."""

    drops: Path
    split: int = read_plan.SPLIT_BYTES
    ledger: dict = field(default_factory=dict)
    ticks: int = 0
    reads: list = field(default_factory=list)
    records: list = field(default_factory=list)

    def tick(self, abandoned_before_ns: int | None = None):
        self.ticks += 1
        changes = changed_files(self.drops, self.ledger, abandoned_before_ns=abandoned_before_ns)
        units, reads = plan_reads(str(self.drops), changes, f"batch-{self.ticks}", split=self.split)
        records = records_of(self.drops, units)
        self.ledger = updated(self.ledger, [read.state for read in reads])
        self.reads.extend(reads)
        self.records.extend(records)
        return changes, units, reads, records


def check_units(units, reads):
    """Units of each read are non-empty and cover [bytes_from, bytes_to) contiguously."""
    for read in reads:
        mine = [u for u in units if u.path == read.path]
        assert all(u.end > u.start for u in mine)
        assert all(u.file_id == read.file_id and u.form == read.form for u in mine)
        if read.bytes_to == read.bytes_from:
            assert mine == []
            continue
        assert mine[0].start == read.bytes_from
        assert mine[-1].end == read.bytes_to
        assert all(a.end == b.start for a, b in itertools.pairwise(mine))
        assert mine[0].first_line == read.first_line


# ---------------------------------------------------------------------------------------------
# 1. appending to one NDJSON file over 50 ticks


def make_lines(rng: random.Random, count: int) -> list[bytes]:
    """Object lines of varied length (multi-byte UTF-8 too), blank and whitespace-only lines, CRLF
    lines, lines that are not JSON, and lines that are JSON but not objects (numbers, strings)."""
    lines = []
    for i in range(count):
        roll = rng.random()
        payload = "".join(rng.choice("abcdé€😀 ") for _ in range(rng.randint(0, 120)))
        obj = json.dumps({"i": i, "s": payload}, ensure_ascii=False).encode("utf-8")
        if i == 0 or roll < 0.65:
            lines.append(obj)
        elif roll < 0.72:
            lines.append(b"")
        elif roll < 0.76:
            lines.append(b"  \t ")
        elif roll < 0.82:
            lines.append(obj + b"\r")
        elif roll < 0.88:
            lines.append(b"oops {not json " + payload.encode("utf-8"))
        elif roll < 0.94:
            lines.append(str(rng.randint(10, 10**9)).encode())
        else:
            lines.append(json.dumps(payload, ensure_ascii=False).encode("utf-8"))
    return lines


def schedule(rng: random.Random, data: bytes, ticks: int) -> list[int]:
    """File sizes after each tick: some ticks append nothing, some part of a line (a line split
    across two ticks, cut anywhere, inside a UTF-8 sequence too), some one or several lines."""
    line_ends = [i + 1 for i, byte in enumerate(data) if byte == 0x0A]
    sizes, pos = [], 0
    for tick in range(ticks - 1):
        mode = ("nothing", "partial", "lines", "lines_and_partial")[tick % 4] if tick < 8 else rng.choice(
            ("nothing", "partial", "partial", "lines", "lines_and_partial")
        )
        after = [end for end in line_ends if end > pos]
        if not after:
            sizes.append(pos)
            continue
        if mode in ("lines", "lines_and_partial"):
            pos = after[min(len(after) - 1, rng.randint(0, 4))]
            after = [end for end in line_ends if end > pos]
        if mode in ("partial", "lines_and_partial") and after and after[0] - pos > 1:
            pos = rng.randint(pos + 1, after[0] - 1)  # strictly inside the next line
        sizes.append(pos)
    sizes.append(len(data))
    return sizes


@pytest.mark.parametrize("seed, split", [(1, read_plan.SPLIT_BYTES), (2, 150), (3, 400), (4, 1)])
def test_appending_over_fifty_ticks_reads_every_line_once(drops, seed, split):
    rng = random.Random(seed)
    data = b"\n".join(make_lines(rng, 160)) + b"\n"
    sizes = schedule(rng, data, 50)
    path = drops / "stream.ndjson"
    intake = Intake(drops, split=split)
    previous_size = 0
    consumed = 0  # the ledger offset: everything before it was read, nothing after it
    for tick, size in enumerate(sizes):
        if tick == 0:
            write(path, data[:size])
        elif size > previous_size:
            append(path, data[previous_size:size])
        changes, units, reads, _records = intake.tick()
        if tick > 0 and size == previous_size:
            assert changes == [] and units == [] and reads == []  # nothing appended: nothing done
        for change in changes:
            assert change.kind == (NEW if tick == 0 else GROWN)
        check_units(units, reads)
        for read in reads:
            assert read.bytes_from == consumed  # resumes exactly where the last read stopped
            assert read.bytes_to >= read.bytes_from
            assert read.range_sha256 == hashlib.sha256(data[read.bytes_from : read.bytes_to]).hexdigest()
            assert read.pending_bytes == size - read.bytes_to
            assert read.state.offset == read.bytes_to
            assert read.state.lines == data[: read.bytes_to].count(b"\n")
            assert read.first_line == data[: read.bytes_from].count(b"\n") + 1
            assert read.form == NDJSON
            consumed = read.bytes_to
        # every line whose line break has been written is read by now, and nothing else in order
        complete = [entry for entry in line_texts(data) if data.count(b"\n", 0, size) >= entry[0]]
        got = [(r.source_line, r.raw) for r in intake.records]
        assert got[: len(complete)] == complete
        assert got == line_texts(data)[: len(got)]
        previous_size = size
    # the mix of ticks actually happened
    growth = [b - a for a, b in zip([0, *sizes], sizes)]
    assert growth.count(0) >= 3
    assert any(data[a:b].count(b"\n") == 0 and b > a for a, b in zip([0, *sizes], sizes))
    assert any(data[a:b].count(b"\n") >= 3 for a, b in zip([0, *sizes], sizes))
    # every line exactly once, with its true number and content; the records are those of a
    # decode of the whole final file
    assert [(r.source_line, r.raw) for r in intake.records] == line_texts(data)
    assert intake.records == decode_drop(data)
    # every byte read once: contiguous ranges adding up to the file size
    assert sum(read.bytes_to - read.bytes_from for read in intake.reads) == len(data)
    assert all(a.bytes_to == b.bytes_from for a, b in zip(intake.reads, intake.reads[1:]))
    assert intake.ledger["stream.ndjson"].offset == len(data)
    assert intake.ledger["stream.ndjson"].pending == 0
    assert len({read.file_id for read in intake.reads}) == 1
    assert intake.tick()[0] == []


# ---------------------------------------------------------------------------------------------
# 2. a tick's cost does not depend on the file's size


def fill(path: Path, size: int) -> int:
    """An NDJSON file of at least `size` bytes; returns its line count."""
    line = json.dumps({"event": "x" * 200}).encode() + b"\n"
    count = size // len(line) + 1
    write(path, line * count)
    return count


@pytest.mark.parametrize("pending", [False, True], ids=["whole_line", "after_pending_tail"])
def test_tick_cost_does_not_depend_on_file_size(tmp_path, monkeypatch, pending):
    costs = {}
    new_line = json.dumps({"event": "appended", "n": 1}).encode() + b"\n"
    for prefix in (3 * WINDOW, 40 << 20):
        drops = tmp_path / f"drops_{prefix}"
        path = drops / "big.ndjson"
        count = fill(path, prefix)
        consumed = os.path.getsize(path)
        assert consumed >= prefix
        if pending:
            append(path, new_line[:10])  # the first part of the line is already there, waiting
        # the consumed prefix (planned, not decoded: 40 MB of JSON would only cost test time)
        _, first_reads = plan_reads(str(drops), changed_files(drops, {}), "first")
        states = updated({}, [read.state for read in first_reads])
        assert states["big.ndjson"].offset == consumed
        assert states["big.ndjson"].lines == count
        append(path, new_line[10:] if pending else new_line)

        counter = ByteCounter(monkeypatch, drops)
        changes = changed_files(drops, states)
        units, reads = plan_reads(str(drops), changes, "next")
        cost = counter.bytes
        monkeypatch.undo()
        assert counter.opens >= 2  # the counter did see the scan and the plan open the file
        assert [c.kind for c in changes] == [GROWN]
        (unit,) = units
        assert read_range(path, unit.start, unit.end) == new_line
        assert [(r.source_line, r.raw) for r in decode_ndjson_chunk(new_line, unit.first_line)] == [
            (count + 1, new_line.decode().strip())
        ]
        assert reads[0].state.offset == os.path.getsize(path)
        # a few windows (two at the scan, two for the new fingerprints) plus the new bytes
        # (found by a backward scan for the last line break, then hashed)
        assert cost <= 4 * WINDOW + 3 * len(new_line)
        costs[prefix] = cost
    assert costs[3 * WINDOW] == costs[40 << 20]


def test_unchanged_folder_costs_no_reads(tmp_path, monkeypatch):
    drops = tmp_path / "drops"
    fill(drops / "a.ndjson", 3 * WINDOW)
    fill(drops / "b.ndjson", 1000)
    intake = Intake(drops)
    intake.tick()
    counter = ByteCounter(monkeypatch, drops)
    assert changed_files(drops, intake.ledger) == []
    assert plan_reads(str(drops), [], "next") == ([], [])
    assert (counter.opens, counter.bytes) == (0, 0)


# ---------------------------------------------------------------------------------------------
# 4. the last line: taken when it already is a whole value, pending otherwise


def test_unterminated_complete_object_is_taken_once_and_numbering_continues(drops):
    path = write(drops / "a.ndjson", b'{"n": 1}\n{"n": 2}')
    intake = Intake(drops)
    _, _units, reads, records = intake.tick()
    assert [(r.source_line, r.value) for r in records] == [(1, {"n": 1}), (2, {"n": 2})]
    assert reads[0].pending_bytes == 0
    assert reads[0].bytes_to == os.path.getsize(path)
    assert reads[0].state.lines == 1  # one line break before the offset

    append(path, b'\n{"n": 3}\n\n{"n": 5}\n')
    changes, _units, reads, records = intake.tick()
    assert [c.kind for c in changes] == [GROWN]
    assert reads[0].first_line == 2  # the byte at bytes_from still belongs to line 2
    assert [(r.source_line, r.value) for r in records] == [(3, {"n": 3}), (5, {"n": 5})]
    final = path.read_bytes()
    assert intake.records == decode_drop(final)
    assert sum(r.bytes_to - r.bytes_from for r in intake.reads) == len(final)


def test_unterminated_crlf_object_is_taken_and_its_line_feed_not_counted_twice(drops):
    path = write(drops / "a.ndjson", b'{"n": 1}\r\n{"n": 2}\r')
    intake = Intake(drops)
    assert [r.source_line for r in intake.tick()[3]] == [1, 2]
    append(path, b'\n{"n": 3}\r\n')
    assert [(r.source_line, r.raw) for r in intake.tick()[3]] == [(3, '{"n": 3}')]
    assert intake.records == decode_drop(path.read_bytes())


@pytest.mark.parametrize(
    "tail, rest",
    [
        (b'{"n": 2, "s": "hal', b'f"}\n'),
        (b'{"n": 2}  {', b'"x": 1}\n'),
        (b'{"n": 2, "s": "\xe2\x82', b'\xac"}\n'),  # cut inside a UTF-8 sequence
        (b"   ", b'{"n": 2}\n'),
        (b"12", b"34\n"),  # a number is a whole value that may still be growing
        (b"-1.5", b"e3\n"),
    ],
    ids=["open_string", "two_values", "utf8_split", "blank", "number", "number_exponent"],
)
def test_incomplete_tail_is_pending_and_read_once_completed(drops, tail, rest):
    path = write(drops / "a.ndjson", b'{"n": 1}\n' + tail)
    intake = Intake(drops)
    _, _units, reads, records = intake.tick()
    assert [r.source_line for r in records] == [1]
    assert reads[0].pending_bytes == len(tail) > 0
    assert reads[0].state.offset == len(b'{"n": 1}\n')
    assert intake.tick()[0] == []  # waiting: nothing changed, nothing read
    append(path, rest)
    changes, _units, reads, records = intake.tick()
    assert [c.kind for c in changes] == [GROWN]
    assert (reads[0].bytes_from, reads[0].bytes_to) == (len(b'{"n": 1}\n'), os.path.getsize(path))
    assert [(r.source_line, r.raw) for r in records] == line_texts(path.read_bytes())[1:]
    assert intake.records == decode_drop(path.read_bytes())


@pytest.mark.parametrize("tail", [b"[" * 5000, b'{"a":' * 2000, b"[" * 3000 + b"]" * 3000], ids=["open_arrays", "open_objects", "whole_but_deep"])
def test_a_tail_nested_too_deep_to_parse_waits_and_is_then_a_too_deep_record(drops, tail):
    """Python's parser raises RecursionError (not ValueError) on a last line nested thousands
    deep: the batch must not fail on it (it would fail every batch after it too). It is pending
    like any unterminated line, and once its line ends it is a record the decoder rejects."""
    path = write(drops / "a.ndjson", b'{"n": 1}\n' + tail)
    intake = Intake(drops)
    _, _units, reads, records = intake.tick()
    assert [r.source_line for r in records] == [1]
    assert reads[0].pending_bytes == len(tail)
    append(path, b"\n")
    records = intake.tick()[3]
    assert [(r.source_line, r.error_code) for r in records] == [(2, "too_deep")]
    assert intake.records == decode_drop(path.read_bytes())


@pytest.mark.parametrize("data, expected", [
    (b'{"n": 1}\n{"n": 2, "s": "cut sho', [(2, "not_json")]),  # a producer that died mid-line
    (b'{"n": 1}\r{"n": 2}\r', [(1, "not_json")]),  # lone CR line ends: no line break at all
], ids=["dead_producer", "lone_cr"])
def test_an_unterminated_last_line_untouched_for_an_hour_is_read_as_the_last_record(drops, data, expected):
    """A last line without its line break waits while the file may still grow; once the file
    has been untouched for ABANDONED_TAIL_SECONDS it is read as it is, so it gets an outcome (a
    reject with a reason) instead of none, ever. Bytes appended later are read after it."""
    path = write(drops / "a.ndjson", data)
    intake = Intake(drops)
    mtime = os.stat(path).st_mtime_ns
    intake.tick(abandoned_before_ns=mtime)  # touched at the limit: not abandoned yet
    assert intake.reads[-1].pending_bytes > 0
    assert intake.tick(abandoned_before_ns=mtime)[0] == []
    hour_later = mtime + ABANDONED_TAIL_SECONDS * 10**9
    assert abandoned_before_ns(hour_later / 1e9 + 1) > mtime
    changes, _units, reads, records = intake.tick(abandoned_before_ns=abandoned_before_ns(hour_later / 1e9 + 1))
    assert [(c.kind, c.flush) for c in changes] == [(GROWN, True)]
    assert [(r.source_line, r.error_code) for r in records] == expected
    assert reads[0].pending_bytes == 0 and reads[0].state.offset == len(data)
    assert intake.tick(abandoned_before_ns=abandoned_before_ns(hour_later / 1e9 + 1))[0] == []  # read once
    assert [r.error_code for r in intake.records].count("not_json") == 1
    append(path, b'\n{"n": 3}\n')
    records = intake.tick()[3]
    assert [r.value for r in records] == [{"n": 3}]


def test_a_pending_last_line_whose_file_was_only_touched_is_abandoned_too(drops):
    """A file whose mtime changed but not its bytes (a `touch`) is not grown; its pending last line
    is read as it is once that mtime is an hour old, and not before."""
    path = write(drops / "a.ndjson", b'{"n": 1}\n{"n": 2, "s": "cut')
    intake = Intake(drops)
    intake.tick()
    old = os.stat(path).st_mtime - 2 * ABANDONED_TAIL_SECONDS
    os.utime(path, (old, old))
    assert intake.tick(abandoned_before_ns=int((old - 1) * 1e9))[0] == []
    changes, _units, _reads, records = intake.tick(abandoned_before_ns=int((old + 1) * 1e9))
    assert [(c.kind, c.flush) for c in changes] == [(GROWN, True)]
    assert [(r.source_line, r.error_code) for r in records] == [(2, "not_json")]


def test_tail_growing_over_several_ticks_without_a_line_break(drops):
    path = write(drops / "a.ndjson", b'{"n": 1}\n')
    intake = Intake(drops)
    intake.tick()
    for piece in (b'{"n": ', b"2, ", b'"s": "abc', b'"'):
        append(path, piece)
        changes, units, reads, records = intake.tick()
        assert [c.kind for c in changes] == [GROWN]
        assert units == [] and records == []
        assert (reads[0].bytes_from, reads[0].bytes_to) == (9, 9)
        assert reads[0].range_sha256 == hashlib.sha256(b"").hexdigest()
        assert reads[0].pending_bytes == os.path.getsize(path) - 9
    append(path, b"}")  # now a whole object, without a line break yet
    assert [(r.source_line, r.value) for r in intake.tick()[3]] == [(2, {"n": 2, "s": "abc"})]
    append(path, b"\n")
    assert intake.tick()[3] == []
    assert sum(r.bytes_to - r.bytes_from for r in intake.reads) == os.path.getsize(path)


def test_pending_tail_longer_than_several_windows(drops):
    head = b'{"n": 1}\n'
    tail = b'{"n": 2, "s": "' + b"y" * (3 * WINDOW + 17)
    path = write(drops / "a.ndjson", head + tail)
    intake = Intake(drops)
    _, _, reads, records = intake.tick()
    assert [r.source_line for r in records] == [1]
    assert reads[0].pending_bytes == len(tail)
    append(path, b'"}\n')
    _, units, reads, records = intake.tick()
    assert len(units) == 1
    assert [(r.source_line, len(r.raw)) for r in records] == [(2, len(tail) + 2)]
    assert reads[0].bytes_to == os.path.getsize(path)


def test_empty_file_then_ndjson(drops):
    path = write(drops / "a.ndjson", b"")
    intake = Intake(drops)
    _, units, reads, _ = intake.tick()
    assert units == [] and reads[0].bytes_to == 0 and reads[0].kind == NEW
    append(path, ndjson(0, 3))
    _, units, reads, records = intake.tick()
    assert reads[0].kind == GROWN and reads[0].file_id == intake.reads[0].file_id
    assert [r.value["i"] for r in records] == [0, 1, 2]


@pytest.mark.parametrize(
    "first, rest",
    [
        (b"", json.dumps({"a": 1, "b": [1, 2]}, indent=2).encode()),
        (b"{", b'\n  "a": 1,\n  "b": [1, 2]\n}\n'),
        (b"", json.dumps([{"a": 1}, {"a": 2}], indent=1).encode()),
        (b"", gzip.compress(ndjson(0, 3))),
    ],
    ids=["empty_then_pretty", "brace_then_pretty", "empty_then_array", "empty_then_gzip"],
)
def test_nothing_consumed_yet_form_is_decided_by_the_written_content(drops, first, rest):
    """A file seen before anything of it could be consumed (created empty, or only its first `{`
    written) is not locked into NDJSON: once written, a document is read whole."""
    path = write(drops / "doc.json", first)
    intake = Intake(drops)
    _, units, reads, records = intake.tick()
    assert units == [] and records == [] and reads[0].bytes_to == 0
    append(path, rest)
    _, units, reads, records = intake.tick()
    data = path.read_bytes()
    assert [(u.form, u.start, u.end) for u in units] == [(WHOLE, 0, len(data))]
    assert reads[0].form == WHOLE and reads[0].state.form == WHOLE
    assert records == decode_drop(data)
    assert all(r.ok for r in records)
    assert reads[0].file_id == intake.reads[0].file_id


def test_first_brace_of_an_ndjson_line_is_not_a_document(drops):
    path = write(drops / "a.ndjson", b"{")
    intake = Intake(drops)
    intake.tick()
    append(path, b'"n": 1}\n{"n": 2}\n')
    _, _units, reads, records = intake.tick()
    assert reads[0].form == NDJSON
    assert [(r.source_line, r.value) for r in records] == [(1, {"n": 1}), (2, {"n": 2})]


# ---------------------------------------------------------------------------------------------
# 5. chunking


def chunk_fixture(rng: random.Random, count: int) -> bytes:
    return b"\n".join(make_lines(rng, count)) + b"\n"


@pytest.mark.parametrize("split", [1, 37, 100, 1000])
@pytest.mark.parametrize("block", [None, 64, 333])
def test_small_split_cuts_whole_lines_and_decodes_the_same(drops, monkeypatch, split, block):
    if block is not None:
        monkeypatch.setattr(read_plan, "_BLOCK", block)  # cuts across read-block boundaries too
    data = chunk_fixture(random.Random(split), 120) + b'{"last": "no newline"}'
    path = write(drops / "a.ndjson", data)
    units, reads = plan_reads(str(drops), changed_files(drops, {}), "b1", split=split)
    (read,) = reads
    assert (read.bytes_from, read.bytes_to) == (0, len(data))
    check_units(units, reads)
    assert len(units) > 1
    for unit in units:
        chunk = data[unit.start : unit.end]
        assert unit.start == 0 or data[unit.start - 1 : unit.start] == b"\n"  # whole lines
        assert unit.first_line == data[: unit.start].count(b"\n") + 1
        if unit is not units[-1]:
            assert chunk.endswith(b"\n")
            # cut at the first line break after `split` bytes: not before, not later
            assert len(chunk) > split
            assert b"\n" not in chunk[split:-1]
    chunked = [r for u in units for r in decode_ndjson_chunk(data[u.start : u.end], u.first_line)]
    assert chunked == decode_ndjson_chunk(data, 1)
    assert chunked == decode_drop(data)
    assert read.range_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("block", [None, 50])
def test_chunks_of_a_grown_range_keep_file_line_numbers(drops, monkeypatch, block):
    if block is not None:
        monkeypatch.setattr(read_plan, "_BLOCK", block)
    first = chunk_fixture(random.Random(7), 40)
    path = write(drops / "a.ndjson", first)
    intake = Intake(drops, split=100)
    intake.tick()
    more = chunk_fixture(random.Random(8), 60)
    append(path, more)
    _, units, reads, records = intake.tick()
    assert reads[0].kind == GROWN
    assert len(units) > 3
    check_units(units, reads)
    assert units[0].start == len(first) and units[0].first_line == first.count(b"\n") + 1
    whole = path.read_bytes()
    assert records == decode_ndjson_chunk(more, first.count(b"\n") + 1)
    assert intake.records == decode_drop(whole)


def test_a_line_longer_than_split_is_one_unit(drops):
    long_line = json.dumps({"s": "z" * 500}).encode()
    data = b'{"a": 1}\n' + long_line + b'\n{"a": 2}\n{"a": 3}\n'
    write(drops / "a.ndjson", data)
    units, _ = plan_reads(str(drops), changed_files(drops, {}), "b1", split=50)
    spans = [data[u.start : u.end] for u in units]
    assert b"".join(spans) == data
    assert any(span.rstrip(b"\n").endswith(long_line) for span in spans)
    assert all(span.count(b"\n") >= 1 for span in spans)


def test_whole_forms_are_never_split(drops):
    data = json.dumps([{"a": i, "pad": "p" * 50} for i in range(100)], indent=2).encode()
    write(drops / "arr.json", data)
    write(drops / "g.ndjson.gz", gzip.compress(ndjson(0, 200, pad=30)))
    units, reads = plan_reads(str(drops), changed_files(drops, {}), "b1", split=100)
    assert sorted((u.path, u.form, u.start, u.end, u.first_line) for u in units) == [
        ("arr.json", WHOLE, 0, len(data), 1),
        ("g.ndjson.gz", WHOLE, 0, os.path.getsize(drops / "g.ndjson.gz"), 1),
    ]
    by_path = {r.path: r for r in reads}
    assert by_path["arr.json"].state.offset == len(data)
    assert by_path["arr.json"].pending_bytes == 0
    assert len(records_of(drops, [u for u in units if u.path == "arr.json"])) == 100
    assert [r.value["i"] for r in records_of(drops, [u for u in units if u.path == "g.ndjson.gz"])] == list(range(200))


def test_a_document_printed_with_its_first_key_on_the_brace_line_is_read_whole(drops):
    """One event pretty-printed as `{"eventType": ...,` then a key per line is one record, as
    `decode_drop` reads it; a file whose broken first line merely opens an object stays NDJSON
    (each of its lines a record of its own)."""
    event = {"eventType": "COMPLETE", "eventTime": "2024-05-01T10:00:00Z", "run": {"runId": "r"}, "job": {"namespace": "ns", "name": "j"}}
    doc = ("{" + ",\n ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in event.items()) + "}\n").encode()
    broken = b'{"eventType": "START", "run\n{"n": 2}\n{"n": 3}\n'
    write(drops / "doc.json", doc)
    write(drops / "broken.ndjson", broken)
    units, reads = plan_reads(str(drops), changed_files(drops, {}), "b1")
    assert {r.path: r.form for r in reads} == {"doc.json": WHOLE, "broken.ndjson": NDJSON}
    doc_records = records_of(drops, [u for u in units if u.path == "doc.json"])
    assert [(r.source_line, r.value) for r in doc_records] == [(1, event)] and doc_records == decode_drop(doc)
    broken_records = records_of(drops, [u for u in units if u.path == "broken.ndjson"])
    assert [(r.source_line, r.error_code) for r in broken_records] == [(1, "not_json"), (2, None), (3, None)]


# ---------------------------------------------------------------------------------------------
# 7 (reading side). BOM and leading blank lines


def test_bom_and_leading_blank_lines(drops):
    data = b'\xef\xbb\xbf\n\n  \n{"n": 1}\n{"n": 2}\n' + b"".join(b'{"n": %d}\n' % i for i in range(3, 30))
    write(drops / "a.ndjson", data)
    units, reads = plan_reads(str(drops), changed_files(drops, {}), "b1", split=40)
    assert reads[0].form == NDJSON
    assert len(units) > 1
    records = [r for u in units for r in decode_ndjson_chunk(data[u.start : u.end], u.first_line)]
    assert records == decode_drop(data)
    assert [(r.source_line, r.value["n"]) for r in records][:2] == [(4, 1), (5, 2)]


# ---------------------------------------------------------------------------------------------
# 8. range_sha256, kinds and ledger rows


def test_range_sha256_is_of_the_bytes_in_the_range(drops):
    path = write(drops / "a.ndjson", ndjson(0, 50, pad=10) + b'{"pending": ')
    gz = write(drops / "b.ndjson.gz", gzip.compress(ndjson(0, 5)))
    intake = Intake(drops, split=64)

    def check(reads):
        for read in reads:
            full = (drops / read.path).read_bytes()
            assert read.range_sha256 == hashlib.sha256(full[read.bytes_from : read.bytes_to]).hexdigest()
            assert read.pending_bytes == len(full) - read.bytes_to

    _, _, reads, _ = intake.tick()
    check(reads)
    append(path, b'1}\n{"i": 1000}\n{"half')
    _, _, grown, _ = intake.tick()
    check(grown)
    assert grown[0].range_sha256 == hashlib.sha256(b'{"pending": 1}\n{"i": 1000}\n').hexdigest()
    by_path = {r.path: r for r in reads}
    assert by_path["b.ndjson.gz"].range_sha256 == hashlib.sha256(gz.read_bytes()).hexdigest()
    assert grown[0].bytes_from == by_path["a.ndjson"].bytes_to
    assert grown[0].pending_bytes == len(b'{"half')


def test_ledger_row_after_a_read(drops):
    data = ndjson(0, 3 * WINDOW // 25) + b'{"tail": '
    path = write(drops / "a.ndjson", data)
    _, reads = plan_reads(str(drops), changed_files(drops, {}), "b1")
    state = reads[0].state
    stat = os.stat(path)
    offset = data.rindex(b"\n") + 1
    assert (state.path, state.batch_id, state.form) == ("a.ndjson", "b1", NDJSON)
    assert (state.device, state.inode, state.size, state.mtime_ns) == (
        stat.st_dev,
        stat.st_ino,
        stat.st_size,
        stat.st_mtime_ns,
    )
    assert (state.offset, state.lines) == (offset, data[:offset].count(b"\n"))
    assert state.head_sha == hashlib.sha256(data[:WINDOW]).hexdigest()
    assert state.tail_sha == hashlib.sha256(data[offset - WINDOW : offset]).hexdigest()
    assert state.file_id == reads[0].file_id


def test_replaced_file_is_reread_whole_and_counted_from_line_one(drops):
    path = drops / "a.ndjson"
    write(path, ndjson(0, 10))
    intake = Intake(drops)
    intake.tick()
    os.replace(write(drops / "a.tmp", ndjson(100, 4)), path)
    changes, _units, reads, records = intake.tick()
    assert [c.kind for c in changes] == [REPLACED]
    assert reads[0].file_id != intake.reads[0].file_id
    assert (reads[0].bytes_from, reads[0].first_line, reads[0].state.lines) == (0, 1, 4)
    assert [(r.source_line, r.value["i"]) for r in records] == [(1, 100), (2, 101), (3, 102), (4, 103)]
    append(path, ndjson(104, 1))
    _, _, reads2, records2 = intake.tick()
    assert reads2[0].kind == GROWN and reads2[0].file_id == reads[0].file_id
    assert [(r.source_line, r.value["i"]) for r in records2] == [(5, 104)]


def test_file_vanished_between_scan_and_plan_is_skipped(drops):
    write(drops / "a.ndjson", ndjson(0, 2))
    write(drops / "b.ndjson", ndjson(0, 3))
    changes = changed_files(drops, {})
    os.remove(drops / "a.ndjson")
    units, reads = plan_reads(str(drops), changes, "b1")
    assert [r.path for r in reads] == ["b.ndjson"]
    assert {u.path for u in units} == {"b.ndjson"}


def test_a_pretty_printed_event_longer_than_the_window_lands_as_one_event(tmp_path):
    """The landing path (listing, read plan, parse) reads a pretty-printed event of 238 KB whose
    first key sits on the `{` line as one document: one accepted event, as `decode_drop` reads
    the same bytes (it was 10,024 not_json rejects)."""
    from lineage_assets.intake.local_intake import parse_units

    fields = [{"name": f"col_{i:05d}", "type": "string"} for i in range(2500)]
    event = {"eventTime": "2024-05-01T10:00:00Z", "producer": "p", "eventType": "COMPLETE",
             "run": {"runId": "3f2504e0-4f89-41d3-9a0c-0305e82c3301"}, "job": {"namespace": "ns", "name": "job"},
             "inputs": [], "outputs": [{"namespace": "ns", "name": "t", "facets": {"schema": {"fields": fields}}}]}
    text = '{"eventTime": "2024-05-01T10:00:00Z",\n' + json.dumps({k: v for k, v in event.items() if k != "eventTime"}, indent=2)[2:] + "\n"
    assert json.loads(text) == event and len(text) > WINDOW
    drops = tmp_path / "drops"
    drops.mkdir()
    (drops / "event.json").write_text(text)
    units, reads = plan_reads(str(drops), changed_files(str(drops), {}), "batch1")
    rows = parse_units(str(drops), units, None)
    assert [r.form for r in reads] == [WHOLE]
    assert [(r["accepted"], r["reason_code"]) for r in rows] == [(True, None)]
