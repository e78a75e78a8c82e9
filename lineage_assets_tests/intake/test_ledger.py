"""The drop ledger: listing and ignore rules, form sniffing, and the cheap NEW / GROWN / REPLACED
classification of `changed_files`, against real folders in tmp_path (no Spark)."""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os

import pytest

from lineage_assets.intake import ledger
from lineage_assets.intake.ledger import (
    GROWN,
    NDJSON,
    NEW,
    REPLACED,
    WHOLE,
    WINDOW,
    FileState,
    changed_files,
    file_id,
    list_drop_folder,
    prefix_fingerprints,
    sniff_form,
    updated,
)
from lineage_assets.intake.read_plan import plan_reads
from lineage_assets_tests.support import ByteCounter

LOGGER_NAME = "lineage_assets_tests.ledger"


@pytest.fixture
def drops(tmp_path):
    folder = tmp_path / "drops"
    folder.mkdir()
    return folder


def write(path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def append(path, data: bytes):
    with open(path, "ab") as handle:
        handle.write(data)


def bump_mtime(path, seconds: int = 5):
    """Move a file's mtime forward explicitly: an edit made within the same clock tick as the
    write before it would otherwise keep the same mtime (and the same cheap identity)."""
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + seconds * 1_000_000_000))


def ndjson(first: int, count: int, pad: int = 0) -> bytes:
    return b"".join(json.dumps({"i": i, "pad": "x" * pad}).encode() + b"\n" for i in range(first, first + count))


def consume(drops, states: dict, batch_id: str) -> tuple[dict, list]:
    """One intake tick: scan, plan, commit the ledger rows. Returns (ledger, changes)."""
    changes = changed_files(drops, states)
    _, reads = plan_reads(str(drops), changes, batch_id)
    return updated(states, [read.state for read in reads]), changes


def kinds(changes) -> dict[str, str]:
    return {change.path: change.kind for change in changes}


# ---------------------------------------------------------------------------------------------
# list_drop_folder


def test_listing_ignores_dot_names_temp_names_and_uses_posix_relpaths(drops):
    write(drops / "a.ndjson", b"{}\n")
    write(drops / "sub" / "deeper" / "b.json", b"{}\n")
    write(drops / "sub" / "c.ndjson", b"{}\n")
    write(drops / ".hidden.ndjson", b"{}\n")
    write(drops / ".dotdir" / "inside.ndjson", b"{}\n")
    write(drops / "sub" / ".dotdir" / "inside.ndjson", b"{}\n")
    write(drops / "sub" / ".x.ndjson", b"{}\n")
    write(drops / "w.ndjson.tmp", b"{}\n")
    write(drops / "sub" / "w.ndjson.partial", b"{}\n")
    found = list_drop_folder(drops)
    assert set(found) == {"a.ndjson", "sub/c.ndjson", "sub/deeper/b.json"}
    # the values are the files' own stat results
    for rel, stat in found.items():
        real = os.stat(drops / rel)
        assert (stat.st_ino, stat.st_size) == (real.st_ino, real.st_size)


def test_listing_symlinks(drops, tmp_path, caplog):
    outside = write(tmp_path / "outside" / "secret.ndjson", b'{"secret": 1}\n')
    outside_dir = tmp_path / "outside"
    write(drops / "real.ndjson", b'{"a": 1}\n')
    write(drops / "writing.ndjson.tmp", b'{"a": 1}\n')
    write(drops / ".dotdir" / "hidden.ndjson", b'{"a": 1}\n')
    write(drops / "sub" / "nested.ndjson", b'{"a": 1}\n')
    os.symlink(outside, drops / "to_outside.ndjson")
    os.symlink(drops / "writing.ndjson.tmp", drops / "to_tmp.ndjson")
    os.symlink(drops / ".dotdir" / "hidden.ndjson", drops / "to_dotdir.ndjson")
    os.symlink(drops / "real.ndjson", drops / "to_real.ndjson")
    os.symlink("../real.ndjson", drops / "sub" / "relative_to_real.ndjson")
    os.symlink(drops / "sub", drops / "linked_sub")  # a folder inside: not followed
    os.symlink(outside_dir, drops / "linked_outside")  # a folder outside: not followed
    os.symlink(drops / "missing.ndjson", drops / "dangling.ndjson")
    with caplog.at_level(logging.WARNING, logger=LOGGER_NAME):
        found = list_drop_folder(drops, logging.getLogger(LOGGER_NAME))
    assert set(found) == {"real.ndjson", "to_real.ndjson", "sub/nested.ndjson", "sub/relative_to_real.ndjson"}
    # a link is listed under its own name with its target's stat
    assert found["to_real.ndjson"].st_ino == os.stat(drops / "real.ndjson").st_ino
    assert found["sub/relative_to_real.ndjson"].st_size == len(b'{"a": 1}\n')
    messages = " ".join(record.getMessage() for record in caplog.records)
    assert "to_outside.ndjson" in messages
    assert "linked_sub" in messages


def test_a_file_whose_name_is_not_utf8_is_left_out_with_a_warning_and_the_others_are_read(drops, caplog):
    """A name in another encoding (latin-1 `caf\\xe9.ndjson`, in a folder of that name too) cannot
    be stored in any table: listing it failed every landing batch, so the files beside it never
    landed. It is left out, and every listing says so."""
    write(drops / "good.ndjson", b'{"a": 1}\n')
    bad_dir = os.path.join(os.fsencode(drops), b"d\xe9p\xf4t")
    os.makedirs(bad_dir)
    for folder in (os.fsencode(drops), bad_dir):
        with open(os.path.join(folder, b"caf\xe9.ndjson"), "wb") as handle:
            handle.write(b'{"a": 2}\n')
    with caplog.at_level(logging.WARNING, logger=LOGGER_NAME):
        found = list_drop_folder(drops, logging.getLogger(LOGGER_NAME))
        changes = changed_files(drops, {}, logging.getLogger(LOGGER_NAME))
    assert set(found) == {"good.ndjson"} and [c.path for c in changes] == ["good.ndjson"]
    warnings = [r.getMessage() for r in caplog.records if "not valid UTF-8" in r.getMessage()]
    assert any("caf\\xe9.ndjson" in m and "d\\xe9p" not in m for m in warnings)
    assert any("d\\xe9p\\xf4t/caf\\xe9.ndjson" in m for m in warnings)


def test_listing_missing_folder_is_empty(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER_NAME):
        assert list_drop_folder(tmp_path / "nope", logging.getLogger(LOGGER_NAME)) == {}
    assert any("nope" in record.getMessage() for record in caplog.records)
    assert changed_files(tmp_path / "nope", {}) == []


def test_listing_skips_non_regular_files(drops):
    write(drops / "a.ndjson", b"{}\n")
    os.mkfifo(drops / "pipe.ndjson")
    assert set(list_drop_folder(drops)) == {"a.ndjson"}


# ---------------------------------------------------------------------------------------------
# sniff_form


@pytest.mark.parametrize(
    "head, form",
    [
        (gzip.compress(b'{"a": 1}\n{"a": 2}\n', mtime=0), WHOLE),  # mtime=0: the same test id in every worker
        (b'[{"a": 1}, {"a": 2}]', WHOLE),
        (b'  \n[\n  {"a": 1}\n]\n', WHOLE),
        (json.dumps({"a": 1, "b": [1, 2]}, indent=2).encode(), WHOLE),
        (b'{\r\n  "a": 1\r\n}\r\n', WHOLE),
        (b'\xef\xbb\xbf{\n  "a": 1\n}\n', WHOLE),
        (b'{"a": 1}\n{"a": 2}\n', NDJSON),
        (b'{"a": {\n', NDJSON),  # an NDJSON line that happens to end in a brace is not a lone "{"
        (b'\xef\xbb\xbf\n\n  \r\n{"a": 1}\n{"a": 2}\n', NDJSON),
        (b'{"a": 1}', NDJSON),
        (b"", NDJSON),
    ],
)
def test_sniff_form(head, form):
    assert sniff_form(head) == form


def test_sniff_form_lone_open_brace_without_line_break_is_not_yet_whole():
    """`{` with nothing after it yet is the first byte of an NDJSON line being appended as much as
    the first line of a pretty-printed document: it must not be taken (and read) as a document."""
    assert sniff_form(b"{") == NDJSON
    assert sniff_form(b"\n{ ") == NDJSON
    assert sniff_form(b"{\n") == WHOLE


# ---------------------------------------------------------------------------------------------
# FileState / helpers


def test_file_state_row_round_trip_and_pending(drops):
    write(drops / "a.ndjson", b'{"a": 1}\n{"a": 2')
    states, _ = consume(drops, {}, "b1")
    state = states["a.ndjson"]
    assert state.pending == len(b'{"a": 2')
    assert FileState.from_row(state.as_row()) == state
    assert FileState.from_row({**state.as_row(), "extra": 1}) == state


def test_updated_replaces_rows_by_path_and_leaves_its_input_alone(drops):
    write(drops / "a.ndjson", b"{}\n")
    write(drops / "b.ndjson", b"{}\n")
    first, _ = consume(drops, {}, "b1")
    append(drops / "a.ndjson", b"{}\n")
    second, _ = consume(drops, first, "b2")
    assert first["a.ndjson"].offset == 3
    assert second["a.ndjson"].offset == 6
    assert second["b.ndjson"] is first["b.ndjson"]


def test_file_id_depends_on_path_and_batch():
    assert file_id("a", "b1") == file_id("a", "b1")
    assert len({file_id("a", "b1"), file_id("a", "b2"), file_id("b", "b1"), file_id("a\0b", "1")}) == 4


def test_prefix_fingerprints_hash_the_first_and_last_window(tmp_path):
    data = os.urandom(3 * WINDOW + 123)
    path = write(tmp_path / "f", data)
    with open(path, "rb") as handle:
        for offset in (0, 10, WINDOW, WINDOW + 1, len(data)):
            head, tail = prefix_fingerprints(handle, offset)
            assert head == hashlib.sha256(data[: min(offset, WINDOW)]).hexdigest()
            assert tail == hashlib.sha256(data[max(0, offset - WINDOW) : offset]).hexdigest()


# ---------------------------------------------------------------------------------------------
# changed_files: NEW, unchanged, touched, GROWN


def test_new_files_are_new_in_path_order(drops):
    write(drops / "b.ndjson", b"{}\n")
    write(drops / "a" / "z.ndjson", b"{}\n")
    write(drops / "c.json", b'[{"a": 1}]')
    changes = changed_files(drops, {})
    assert [c.path for c in changes] == ["a/z.ndjson", "b.ndjson", "c.json"]
    for change in changes:
        stat = os.stat(drops / change.path)
        assert change.kind == NEW
        assert change.previous is None
        assert (change.device, change.inode, change.size, change.mtime_ns) == (
            stat.st_dev,
            stat.st_ino,
            stat.st_size,
            stat.st_mtime_ns,
        )


def test_unchanged_files_are_not_reported(drops):
    write(drops / "a.ndjson", ndjson(0, 5))
    write(drops / "b.json", json.dumps([{"a": 1}]).encode())
    write(drops / "c.ndjson.gz", gzip.compress(ndjson(0, 5)))
    write(drops / "d.ndjson", b'{"a": 1}\n{"pending": ')
    states, changes = consume(drops, {}, "b1")
    assert len(changes) == 4
    assert changed_files(drops, states) == []


def test_a_file_removed_from_the_folder_is_not_reported(drops):
    write(drops / "a.ndjson", ndjson(0, 5))
    states, _ = consume(drops, {}, "b1")
    os.remove(drops / "a.ndjson")
    assert changed_files(drops, states) == []


@pytest.mark.parametrize("tail", [b"", b'{"pending": tr'], ids=["complete", "pending_tail"])
def test_touching_mtime_without_new_bytes_is_not_a_change(drops, tail):
    path = write(drops / "a.ndjson", ndjson(0, 3 * WINDOW // 20) + tail)  # > 2 windows
    states, _ = consume(drops, {}, "b1")
    assert states["a.ndjson"].pending == len(tail)
    bump_mtime(path)
    assert os.stat(path).st_mtime_ns != states["a.ndjson"].mtime_ns  # the cheap identity moved
    assert changed_files(drops, states) == []
    # the scan hands back the refreshed row (ledger.touched): with it the next scan does not even open the file
    refreshed: list = []
    assert changed_files(drops, states, refreshed=refreshed) == []
    assert refreshed == [ledger.touched(states["a.ndjson"], os.stat(path))]
    touched_states = updated(states, refreshed)
    assert touched_states["a.ndjson"].mtime_ns == os.stat(path).st_mtime_ns
    assert touched_states["a.ndjson"].offset == states["a.ndjson"].offset and touched_states["a.ndjson"].pending == len(tail)
    opened = []
    real = ledger.prefix_fingerprints
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ledger, "prefix_fingerprints", lambda handle, offset: opened.append(offset) or real(handle, offset))
        again: list = []
        assert changed_files(drops, touched_states, refreshed=again) == []
    assert again == [] and opened == []


def test_a_file_that_cannot_be_fingerprinted_is_not_refreshed(drops, monkeypatch):
    """Gone between the listing and its fingerprints: not a change, and no row recorded for it."""
    path = write(drops / "a.ndjson", ndjson(0, 5))
    states, _ = consume(drops, {}, "b1")
    bump_mtime(path)

    def gone(handle, offset):
        raise FileNotFoundError(str(path))

    monkeypatch.setattr(ledger, "prefix_fingerprints", gone)
    refreshed: list = []
    assert changed_files(drops, states, refreshed=refreshed) == [] and refreshed == []


def test_appended_file_is_grown_with_its_ledger_row(drops):
    path = write(drops / "a.ndjson", ndjson(0, 10))
    states, _ = consume(drops, {}, "b1")
    append(path, ndjson(10, 2))
    changes = changed_files(drops, states)
    assert kinds(changes) == {"a.ndjson": GROWN}
    assert changes[0].previous == states["a.ndjson"]
    assert changes[0].size == os.stat(path).st_size


def test_pending_tail_rewritten_shorter_is_still_grown(drops):
    """Size may drop below the last size but not below the offset: the consumed prefix is intact."""
    path = write(drops / "a.ndjson", ndjson(0, 10) + b'{"i": 10, "long pending tail": ')
    states, _ = consume(drops, {}, "b1")
    offset = states["a.ndjson"].offset
    with open(path, "r+b") as handle:
        handle.truncate(offset)
        handle.seek(offset)
        handle.write(b"{}")
    bump_mtime(path)
    assert kinds(changed_files(drops, states)) == {"a.ndjson": GROWN}


def test_multiple_files_only_changed_ones_reported(drops):
    write(drops / "a.ndjson", ndjson(0, 3))
    write(drops / "b.ndjson", ndjson(0, 3))
    write(drops / "c.ndjson", ndjson(0, 3))
    states, _ = consume(drops, {}, "b1")
    append(drops / "b.ndjson", ndjson(3, 1))
    write(drops / "d.ndjson", ndjson(0, 1))
    os.replace(write(drops / "c.tmp", ndjson(100, 3)), drops / "c.ndjson")
    assert kinds(changed_files(drops, states)) == {"b.ndjson": GROWN, "c.ndjson": REPLACED, "d.ndjson": NEW}


# ---------------------------------------------------------------------------------------------
# changed_files: REPLACED


@pytest.fixture
def big(drops):
    """An NDJSON file of > 3 windows, fully consumed: (path, data, ledger)."""
    data = ndjson(0, 4 * WINDOW // 40, pad=20)
    assert len(data) > 3 * WINDOW
    path = write(drops / "a.ndjson", data)
    states, _ = consume(drops, {}, "b1")
    assert states["a.ndjson"].offset == len(data)
    return path, data, states


def overwrite_in_place(path, at: int, data: bytes):
    ino = os.stat(path).st_ino
    with open(path, "r+b") as handle:
        handle.seek(at)
        handle.write(data)
    bump_mtime(path)
    assert os.stat(path).st_ino == ino


def test_truncated_below_offset_is_replaced(drops, big):
    path, data, states = big
    with open(path, "r+b") as handle:
        handle.truncate(len(data) - 1)
    assert kinds(changed_files(drops, states)) == {"a.ndjson": REPLACED}


def test_truncated_and_regrown_past_offset_is_replaced(drops, big):
    """Truncated then rewritten longer than before: the size alone looks like growth."""
    path, data, states = big
    with open(path, "wb") as handle:  # same inode
        handle.write(ndjson(1000, len(data) // 20 + 10, pad=5))
    assert os.stat(path).st_size > len(data)
    assert kinds(changed_files(drops, states)) == {"a.ndjson": REPLACED}


def test_renamed_over_is_replaced_even_with_the_same_bytes(drops, big):
    path, data, states = big
    os.replace(write(drops / "incoming.tmp", data + ndjson(9999, 1)), path)
    assert os.stat(path).st_ino != states["a.ndjson"].inode
    change = changed_files(drops, states)
    assert kinds(change) == {"a.ndjson": REPLACED}
    assert change[0].previous == states["a.ndjson"]


def test_change_in_first_window_is_replaced(drops, big):
    path, data, states = big
    at = data.index(b'"i": 1') + len(b'"i": ')
    overwrite_in_place(path, at, b"7")
    assert at < WINDOW
    assert kinds(changed_files(drops, states)) == {"a.ndjson": REPLACED}


def test_change_in_last_window_before_offset_is_replaced(drops, big):
    path, data, states = big
    at = data.index(b"x", len(data) - WINDOW + 100)  # a padding byte in the last window only
    assert WINDOW < at < len(data)
    overwrite_in_place(path, at, b"Y")
    assert kinds(changed_files(drops, states)) == {"a.ndjson": REPLACED}


def test_change_in_last_window_with_growth_is_replaced(drops, big):
    path, data, states = big
    with open(path, "r+b") as handle:
        handle.seek(len(data) - 2)
        handle.write(b"!\n" + ndjson(5000, 3))
    assert kinds(changed_files(drops, states)) == {"a.ndjson": REPLACED}


def test_change_in_small_consumed_prefix_is_replaced(drops):
    """A prefix shorter than a window: head and tail windows both cover all of it."""
    path = write(drops / "a.ndjson", b'{"a": 1}\n{"a": 2}\n')
    states, _ = consume(drops, {}, "b1")
    overwrite_in_place(path, len(b'{"a": 1}\n{"a": '), b"9")
    assert kinds(changed_files(drops, states)) == {"a.ndjson": REPLACED}
    overwrite_in_place(path, len(b'{"a": 1}\n{"a": '), b"2")
    append(path, b'{"a": 3}\n')
    assert kinds(changed_files(drops, states)) == {"a.ndjson": GROWN}


@pytest.mark.parametrize(
    "name, data, change",
    [
        ("g.ndjson.gz", gzip.compress(ndjson(0, 20)), lambda p: append(p, gzip.compress(ndjson(20, 1)))),
        ("arr.json", json.dumps([{"a": i} for i in range(20)]).encode(), lambda p: append(p, b"\n")),
        (
            "arr2.json",
            json.dumps([{"a": i} for i in range(20)]).encode(),
            lambda p: overwrite_in_place(p, 2, b"b"),
        ),
        ("doc.json", json.dumps({"a": 1, "b": list(range(50))}, indent=2).encode(), lambda p: append(p, b" ")),
        (
            "doc2.json",
            json.dumps({"a": 1, "b": list(range(50))}, indent=2).encode(),
            lambda p: overwrite_in_place(p, 8, b"7"),
        ),
    ],
    ids=["gzip_appended", "array_appended", "array_edited", "pretty_appended", "pretty_edited"],
)
def test_any_change_to_a_whole_form_file_is_replaced(drops, name, data, change):
    path = write(drops / name, data)
    states, _ = consume(drops, {}, "b1")
    assert states[name].form == WHOLE
    assert states[name].offset == len(data)
    change(path)
    assert kinds(changed_files(drops, states)) == {name: REPLACED}


def test_replaced_file_is_read_from_its_first_byte_under_a_new_file_id(drops, big):
    path, _data, states = big
    new_data = ndjson(0, 5)
    with open(path, "wb") as handle:
        handle.write(new_data)
    changes = changed_files(drops, states)
    units, reads = plan_reads(str(drops), changes, "b2")
    (read,) = reads
    assert read.kind == REPLACED
    assert read.file_id != states["a.ndjson"].file_id
    assert (read.bytes_from, read.bytes_to, read.first_line) == (0, len(new_data), 1)
    assert read.state.lines == 5
    assert [(u.start, u.end) for u in units] == [(0, len(new_data))]


def test_changed_files_reads_no_more_than_two_windows_per_file(drops, big, monkeypatch):
    """The scan opens a changed file once and reads its two fingerprint windows: nothing else."""
    path, _data, states = big
    append(path, ndjson(777, 1))
    counter = ByteCounter(monkeypatch, drops)
    assert kinds(changed_files(drops, states)) == {"a.ndjson": GROWN}
    assert counter.sizes == [WINDOW, WINDOW]
    counter.sizes.clear()
    write(drops / "b.ndjson", ndjson(0, 1))  # a NEW file is not opened by the scan at all
    assert kinds(changed_files(drops, states)) == {"a.ndjson": GROWN, "b.ndjson": NEW}
    assert counter.sizes == [WINDOW, WINDOW]


def test_a_quick_look_skips_files_consumed_whole_and_quiet_but_a_full_look_does_not(drops):
    """Between the sensor's full sweeps, landed files untouched for long are not stat'ed: new
    files and files with a pending line still are; a full look finds an append to a quiet one."""
    import time

    write(drops / "old.ndjson", ndjson(0, 2))
    write(drops / "partial.ndjson", ndjson(0, 1) + b'{"half": ')
    hours_ago = time.time() - 7200
    for name in ("old.ndjson", "partial.ndjson"):
        os.utime(drops / name, (hours_ago, hours_ago))
    states, _ = consume(drops, {}, "b1")
    assert states["partial.ndjson"].pending > 0 and states["old.ndjson"].pending == 0
    append(drops / "old.ndjson", ndjson(2, 1))
    append(drops / "partial.ndjson", b'1}\n')
    write(drops / "new.ndjson", ndjson(0, 1))
    cutoff = int((time.time() - 3600) * 1e9)
    quick = kinds(changed_files(drops, states, quiet_after_ns=cutoff))
    assert quick == {"partial.ndjson": GROWN, "new.ndjson": NEW}  # old.ndjson was not even stat'ed
    assert kinds(changed_files(drops, states)) == {"old.ndjson": GROWN, "partial.ndjson": GROWN, "new.ndjson": NEW}


def test_a_document_longer_than_the_window_with_its_first_key_on_the_brace_line_is_whole():
    """A pretty-printed event whose first key sits on the `{` line and that is longer than
    WINDOW: the window cannot tell it from an NDJSON file with a broken first line, so the file is
    read further (up to the record limit); being one JSON value, it is a document (read line by
    line it became a not_json reject per line). An NDJSON file whose first line is broken stays
    NDJSON, and so does a file longer than the record limit (it is not parsed as one record)."""
    fields = [{"name": f"col_{i:05d}", "type": "string"} for i in range(2500)]
    body = json.dumps({"producer": "p", "outputs": [{"facets": {"schema": {"fields": fields}}}]}, indent=2)
    document = ('{"eventTime": "2024-05-01T10:00:00Z",\n' + body[2:] + "\n").encode()
    assert len(document) > WINDOW and json.loads(document)
    reads: list[int] = []

    def more(size: int, data: bytes = document) -> bytes:
        reads.append(size)
        return data[:size]

    assert sniff_form(document[:WINDOW], more) == WHOLE and reads
    assert sniff_form(document[:WINDOW]) == NDJSON  # without a way to read more, as before
    broken = b'{"a": 1,\n' + b'{"a": 2}\n' * (WINDOW // 9 + 1)
    assert sniff_form(broken[:WINDOW], lambda size: broken[:size]) == NDJSON
    small_limit = {"LINEAGE_MAX_RECORD_BYTES": str(WINDOW)}
    import os
    from unittest import mock

    with mock.patch.dict(os.environ, small_limit):
        assert sniff_form(document[:WINDOW], more) == NDJSON  # longer than the record limit: not read as one record
