"""Landing batches (pipeline.landing.land_batch): many files in one run, files that grow, files
that change while they are read, with per-file accounting (DESIGN.md sections 2, 7 and 11)."""

from __future__ import annotations

import datetime as dt
import json
import os
import time

import duckdb
import pytest

from lineage_assets.ids import event_id
from lineage_assets.intake import ledger as ledger_module
from lineage_assets.intake import local_intake
from lineage_assets.pipeline import landing
from lineage_assets.pipeline.landing import land_batch, read_ledger
from lineage_assets.warehouse import commits
from lineage_assets_tests.support import land_by, run_event, run_uuid

SCHEDULE_SECONDS = 45  # measured (--durations); conftest runs long files first

START = dt.date(2024, 1, 1)
QUIET = lambda _m: None  # noqa: E731


def _rows(root: str, table: str, columns: str, where: str = "true") -> list[tuple]:
    relation = commits.duckdb_relation_sql(commits.latest(root), table)
    return duckdb.sql(f"select {columns} from ({relation}) where {where} order by all").fetchall()


def _event(i: int, day: str = "2024-05-01") -> dict:
    return run_event(f"{day}T10:{i % 60:02d}:{i % 59:02d}Z", "COMPLETE", f"run{i}", f"job{i % 97}", ["in"], [f"out{i % 13}"])


def test_ten_thousand_one_event_files_land_in_one_batch(spark, tmp_path):
    drops, root = tmp_path / "drops", str(tmp_path / "wh")
    events = [_event(i) for i in range(10_000)]
    for i, event in enumerate(events):  # openlineage-python's default: one file per event
        folder = drops / f"{i // 1000:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"event-{i:05d}.json").write_text(json.dumps(event))
    report = land_batch(spark, root, str(drops), START, QUIET)
    assert report.check.passed and report.commit_seq == commits.latest(root).seq == 1
    assert (report.read, report.accepted, report.rejected, report.duplicates) == (10_000, 10_000, 0, 0)
    assert len(report.files) == 10_000 and all(f.records == f.accepted == 1 for f in report.files)
    per_file = _rows(root, "drop_files", "count(*), count(distinct path), sum(read), sum(accepted), min(bytes_from), count(distinct batch_id)")
    assert per_file == [(10_000, 10_000, 10_000, 10_000, 0, 1)]
    landed = {r[0] for r in _rows(root, "landed_events", "event_id")}
    assert landed == {event_id(e) for e in events}
    assert len(read_ledger(commits.latest(root))) == 10_000
    again = land_batch(spark, root, str(drops), START, QUIET)  # nothing new: nothing read, nothing committed
    assert again.batch_id is None and commits.latest(root).seq == 1


def test_a_growing_file_is_read_from_where_it_stopped_and_a_partial_line_waits(spark, tmp_path):
    drops, root = tmp_path / "drops", str(tmp_path / "wh")
    drops.mkdir()
    path = drops / "listener.ndjson"  # the Java client's file transport appends to one file
    lines = [json.dumps(_event(i)) for i in range(5)]
    path.write_text(lines[0] + "\n" + lines[1] + "\n" + lines[2][:40])  # the third line is being written
    first = land_batch(spark, root, str(drops), START, QUIET)
    assert (first.read, first.accepted) == (2, 2)
    [read] = first.files
    assert (read.read.bytes_from, read.read.pending_bytes) == (0, 40)
    with open(path, "a") as handle:
        handle.write(lines[2][40:] + "\n" + lines[3] + "\n")
    second = land_batch(spark, root, str(drops), START, QUIET)
    [read] = second.files
    assert (second.read, second.accepted, second.duplicates) == (2, 2, 0)  # the completed line once, then line 4
    assert (read.read.kind, read.read.bytes_from, read.read.first_line) == ("grown", first.files[0].read.bytes_to, 3)
    with open(path, "a") as handle:
        handle.write(lines[4] + "\n")
    land_batch(spark, root, str(drops), START, QUIET)
    landed = _rows(root, "landed_events", "source_line, event_id")
    assert landed == sorted((n, event_id(json.loads(line))) for n, line in enumerate(lines, start=1))
    spans = _rows(root, "drop_files", "bytes_from, bytes_to, read")
    assert [s[2] for s in spans] == [2, 2, 1]
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:])) and spans[-1][1] == os.path.getsize(path)


@pytest.mark.parametrize("way", ["local", "spark"])
def test_a_file_changed_while_it_is_read_waits_for_the_next_batch(spark, tmp_path, monkeypatch, way):
    drops, root = tmp_path / "drops", str(tmp_path / "wh")
    drops.mkdir()
    (drops / "a.ndjson").write_text(json.dumps(_event(1)) + "\n")
    (drops / "b.ndjson").write_text(json.dumps(_event(2)) + "\n")
    land_by(monkeypatch, way)
    owner, name = (landing, "read_units") if way == "spark" else (local_intake, "parse_units")
    real = getattr(owner, name)

    def read_then_replace_b(*args, **kwargs):
        parsed = real(*args, **kwargs)
        if way == "spark":
            parsed.count()  # the bytes are read: now the producer replaces b.ndjson
        replacement = drops / "b.tmp"
        replacement.write_text(json.dumps(_event(3)) + "\n" + json.dumps(_event(4)) + "\n")
        os.replace(replacement, drops / "b.ndjson")
        return parsed

    monkeypatch.setattr(owner, name, read_then_replace_b)
    first = land_batch(spark, root, str(drops), START, QUIET)
    assert first.changed_while_read == ["b.ndjson"]
    assert [f.read.path for f in first.files] == ["a.ndjson"] and first.read == 1
    assert set(read_ledger(commits.latest(root))) == {"a.ndjson"}  # b is not recorded as read
    monkeypatch.setattr(owner, name, real)
    second = land_batch(spark, root, str(drops), START, QUIET)
    assert [(f.read.path, f.read.kind, f.records) for f in second.files] == [("b.ndjson", "new", 2)]
    assert {r[0] for r in _rows(root, "landed_events", "event_id")} == {event_id(_event(i)) for i in (1, 3, 4)}
    assert run_uuid("run2") not in {r[0] for r in _rows(root, "landed_events", "run_id")}  # b's old content never landed


def _no_spark():
    raise AssertionError("a small batch asked for a Spark session")


def test_a_file_removed_after_the_plan_is_left_out_and_the_others_commit(tmp_path, monkeypatch):
    """A file renamed away between the read plan and its read (a retention job, a producer
    moving it): the batch leaves it out as one changed while read (not read, not in the
    ledger, no rows counted for it), the other files land and commit, and when the file comes
    back it is read."""
    drops, root = tmp_path / "drops", str(tmp_path / "wh")
    drops.mkdir()
    for i, name in enumerate("abc", start=1):
        (drops / f"{name}.ndjson").write_text(json.dumps(_event(i)) + "\n" + json.dumps(_event(i + 10)) + "\n")
    land_by(monkeypatch, "local")
    real = local_intake.parse_units

    def rename_b_away_then_read(*args):
        os.rename(drops / "b.ndjson", tmp_path / "b.away")
        return real(*args)

    monkeypatch.setattr(local_intake, "parse_units", rename_b_away_then_read)
    first = land_batch(_no_spark, root, str(drops), START, QUIET)
    assert first.changed_while_read == ["b.ndjson"]
    assert [(f.read.path, f.records, f.accepted, f.rejected, f.duplicates) for f in first.files] == [
        ("a.ndjson", 2, 2, 0, 0), ("c.ndjson", 2, 2, 0, 0)]
    assert first.check.passed and first.check.problems == []
    assert first.check.details == {"files": 2, "read": 4, "accepted": 4, "rejected": 0, "duplicates": 0}
    assert first.commit_seq == commits.latest(root).seq == 1
    assert set(read_ledger(commits.latest(root))) == {"a.ndjson", "c.ndjson"}  # b is not recorded as read
    assert _rows(root, "drop_files", "path, read, accepted") == [("a.ndjson", 2, 2), ("c.ndjson", 2, 2)]
    assert {r[0] for r in _rows(root, "landed_events", "event_id")} == {event_id(_event(i)) for i in (1, 11, 3, 13)}

    monkeypatch.setattr(local_intake, "parse_units", real)
    os.rename(tmp_path / "b.away", drops / "b.ndjson")  # back, the same inode and bytes: read now
    second = land_batch(_no_spark, root, str(drops), START, QUIET)
    assert [(f.read.path, f.read.kind, f.records, f.accepted) for f in second.files] == [("b.ndjson", "new", 2, 2)]
    assert second.changed_while_read == [] and second.commit_seq == 2
    assert {r[0] for r in _rows(root, "landed_events", "event_id")} == {event_id(_event(i)) for i in (1, 11, 2, 12, 3, 13)}


def _count_fingerprints(monkeypatch) -> list[int]:
    """The offsets of every fingerprint a look at the drop folder takes (two window reads each)."""
    calls: list[int] = []
    real = ledger_module.prefix_fingerprints
    monkeypatch.setattr(ledger_module, "prefix_fingerprints", lambda handle, offset: calls.append(offset) or real(handle, offset))
    return calls


def _touch(paths, seconds: float = 5) -> None:
    later = time.time() + seconds
    for path in paths:
        os.utime(path, (later, later))


def test_touched_files_are_fingerprinted_by_one_look_then_not_again(tmp_path, monkeypatch):
    """Files whose mtime moved with nothing new: the first look fingerprints each once and
    commits their refreshed ledger rows (a commit of the ledger alone); later looks read none
    of them (DESIGN.md section 7: a tick costs what is new)."""
    drops, root = tmp_path / "drops", str(tmp_path / "wh")
    drops.mkdir()
    paths = [drops / f"f{i:02d}.ndjson" for i in range(12)]
    for i, path in enumerate(paths):
        path.write_text(json.dumps(_event(i)) + "\n")
    landed = land_batch(_no_spark, root, str(drops), START, QUIET)
    assert landed.commit_seq == 1
    before = commits.latest(root)
    rows_before = {p: read_ledger(before)[p] for p in read_ledger(before)}
    _touch(paths)
    calls = _count_fingerprints(monkeypatch)

    first = land_batch(_no_spark, root, str(drops), START, QUIET)
    assert len(calls) == 12  # each touched file fingerprinted once
    assert (first.files, first.read, first.ledger_refreshed, first.check.passed) == ([], 0, 12, True)
    after = commits.latest(root)
    assert first.commit_seq == after.seq == 2 and after.info["operation"] == landing.OPERATION
    assert {n: parts for n, parts in after.tables.items() if n != "drop_ledger"} == {
        n: parts for n, parts in before.tables.items() if n != "drop_ledger"}  # only the ledger changed
    assert after.tables["drop_ledger"] != before.tables["drop_ledger"] and after.props == before.props
    rows_after = read_ledger(after)
    for path in paths:
        old, new = rows_before[path.name], rows_after[path.name]
        assert new.mtime_ns == os.stat(path).st_mtime_ns != old.mtime_ns
        assert (new.file_id, new.offset, new.lines, new.head_sha, new.tail_sha, new.batch_id) == (
            old.file_id, old.offset, old.lines, old.head_sha, old.tail_sha, old.batch_id)

    calls.clear()
    assert ledger_module.changed_files(str(drops), read_ledger(commits.latest(root))) == [] and calls == []
    second = land_batch(_no_spark, root, str(drops), START, QUIET)
    assert second.batch_id is None and second.commit_seq is None and calls == []
    assert commits.latest(root).seq == 2
    # a refreshed row still tells growth: an append is read from where the file stopped
    with open(paths[3], "a") as handle:
        handle.write(json.dumps(_event(40)) + "\n")
    grown = land_batch(_no_spark, root, str(drops), START, QUIET)
    assert [(f.read.path, f.read.kind, f.read.bytes_from, f.records, f.accepted) for f in grown.files] == [
        ("f03.ndjson", "grown", rows_before["f03.ndjson"].offset, 1, 1)]


def test_touched_files_are_refreshed_by_the_commit_of_a_batch_that_reads_new_ones(tmp_path, monkeypatch):
    """Touched files beside a new one: their refreshed rows go into the batch's own commit."""
    drops, root = tmp_path / "drops", str(tmp_path / "wh")
    drops.mkdir()
    (drops / "a.ndjson").write_text(json.dumps(_event(1)) + "\n")
    (drops / "b.ndjson").write_text(json.dumps(_event(2)) + "\n")
    land_batch(_no_spark, root, str(drops), START, QUIET)
    _touch([drops / "a.ndjson", drops / "b.ndjson"])
    (drops / "c.ndjson").write_text(json.dumps(_event(3)) + "\n")
    batch = land_batch(_no_spark, root, str(drops), START, QUIET)
    assert [(f.read.path, f.read.kind, f.records) for f in batch.files] == [("c.ndjson", "new", 1)]
    assert batch.ledger_refreshed == 2 and batch.commit_seq == commits.latest(root).seq == 2
    rows = read_ledger(commits.latest(root))
    assert {p: rows[p].mtime_ns for p in rows} == {p: os.stat(drops / p).st_mtime_ns for p in ("a.ndjson", "b.ndjson", "c.ndjson")}
    calls = _count_fingerprints(monkeypatch)
    assert land_batch(_no_spark, root, str(drops), START, QUIET).batch_id is None and calls == []


def test_touched_files_are_refreshed_when_every_file_read_is_left_out(tmp_path, monkeypatch):
    """The only new file is gone when read (left out, unrecorded): the touched files' rows are
    still committed, by a commit of the ledger alone."""
    drops, root = tmp_path / "drops", str(tmp_path / "wh")
    drops.mkdir()
    (drops / "a.ndjson").write_text(json.dumps(_event(1)) + "\n")
    land_batch(_no_spark, root, str(drops), START, QUIET)
    before = commits.latest(root)
    _touch([drops / "a.ndjson"])
    (drops / "b.ndjson").write_text(json.dumps(_event(2)) + "\n")
    real = local_intake.parse_units

    def remove_b_then_read(*args):
        os.remove(drops / "b.ndjson")
        return real(*args)

    monkeypatch.setattr(local_intake, "parse_units", remove_b_then_read)
    batch = land_batch(_no_spark, root, str(drops), START, QUIET)
    assert (batch.files, batch.changed_while_read, batch.ledger_refreshed) == ([], ["b.ndjson"], 1)
    after = commits.latest(root)
    assert batch.commit_seq == after.seq == 2 and after.info["files"] == 0 and after.info["ledger_refreshed"] == 1
    assert {n: p for n, p in after.tables.items() if n != "drop_ledger"} == {n: p for n, p in before.tables.items() if n != "drop_ledger"}
    assert list(read_ledger(after)) == ["a.ndjson"] and read_ledger(after)["a.ndjson"].mtime_ns == os.stat(drops / "a.ndjson").st_mtime_ns


_DROP_FILES = "path, kind, form, bytes_from, bytes_to, first_line, pending_bytes, read, accepted, rejected, duplicates, rejected_by_reason"


def test_a_shrunk_ndjson_file_is_a_replaced_file_read_from_its_first_byte(tmp_path):
    """Rewritten in place, shorter (same inode): a new file (`replaced`, a new file_id), read from
    byte 0, the events it repeats counted as duplicates, in `drop_files` and in the report."""
    drops, root = tmp_path / "drops", str(tmp_path / "wh")
    drops.mkdir()
    path = drops / "a.ndjson"
    lines = [json.dumps(_event(i)) + "\n" for i in range(3)]
    path.write_text("".join(lines))
    first = land_batch(_no_spark, root, str(drops), START, QUIET)
    first_id = first.files[0].read.file_id
    inode = os.stat(path).st_ino
    shrunk = lines[0] + json.dumps(_event(10)) + "\n"
    with open(path, "r+") as handle:
        handle.truncate(0)
        handle.write(shrunk)
    assert os.stat(path).st_ino == inode and os.path.getsize(path) < sum(map(len, lines))
    second = land_batch(_no_spark, root, str(drops), START, QUIET)
    assert second.check.passed and second.commit_seq == 2
    [f] = second.files
    assert (f.read.kind, f.read.bytes_from, f.read.bytes_to, f.records, f.accepted, f.rejected, f.duplicates) == (
        "replaced", 0, len(shrunk), 2, 1, 0, 1)
    assert f.read.file_id != first_id and (second.duplicate_events, second.duplicate_rejects) == (1, 0)
    assert _rows(root, "drop_files", _DROP_FILES, f"batch_id = '{second.batch_id}'") == [
        ("a.ndjson", "replaced", "ndjson", 0, len(shrunk), 1, 0, 2, 1, 0, 1, "{}")]
    assert _rows(root, "drop_files", "kind, file_id", f"batch_id = '{first.batch_id}'") == [("new", first_id)]
    ledger_row = read_ledger(commits.latest(root))["a.ndjson"]
    assert (ledger_row.file_id, ledger_row.offset, ledger_row.lines) == (f.read.file_id, len(shrunk), 2)
    assert {r[0] for r in _rows(root, "landed_events", "event_id")} == {event_id(_event(i)) for i in (0, 1, 2, 10)}


def test_rejects_are_counted_by_reason_for_each_file(tmp_path):
    """`rejected_by_reason` per file: a truncated gzip is one `corrupt_file` reject; an NDJSON
    file's rejects are split by their own reasons; the batch sums them."""
    import gzip

    drops, root = tmp_path / "drops", str(tmp_path / "wh")
    drops.mkdir()
    whole = gzip.compress(("\n".join(json.dumps(_event(i)) for i in range(3)) + "\n").encode(), mtime=0)
    (drops / "h.ndjson.gz").write_bytes(whole[: len(whole) // 2])  # cut short (a copy interrupted)
    (drops / "m.ndjson").write_text(json.dumps(_event(5)) + "\nnot json\n" + '{"eventTime": 1}\n' + "[1,\n")
    report = land_batch(_no_spark, root, str(drops), START, QUIET)
    assert report.check.passed and report.commit_seq == 1
    assert [(f.read.path, f.read.form, f.records, f.accepted, f.rejected_by_reason) for f in report.files] == [
        ("h.ndjson.gz", "whole", 1, 0, {"corrupt_file": 1}),
        ("m.ndjson", "ndjson", 4, 1, {"missing_field": 1, "not_json": 2}),
    ]
    assert report.rejected_by_reason == {"corrupt_file": 1, "missing_field": 1, "not_json": 2}
    assert _rows(root, "drop_files", "path, read, accepted, rejected, duplicates, rejected_by_reason") == [
        ("h.ndjson.gz", 1, 0, 1, 0, '{"corrupt_file": 1}'),
        ("m.ndjson", 4, 1, 3, 0, '{"missing_field": 1, "not_json": 2}'),
    ]
    assert _rows(root, "rejected_events", "source_file, source_line, reason_code") == [
        ("h.ndjson.gz", 1, "corrupt_file"), ("m.ndjson", 2, "not_json"), ("m.ndjson", 3, "missing_field"), ("m.ndjson", 4, "not_json")]


def test_a_batch_whose_totals_do_not_balance_is_reported_and_not_committed(tmp_path, monkeypatch):
    """The batch-level balance check (every file balancing is not enough): records counted for
    the batch that no file of it accounts for (injected here: a source read but never staged)
    fail the blocking check, and nothing is committed; the next batch reads the file again."""
    drops, root = tmp_path / "drops", str(tmp_path / "wh")
    drops.mkdir()
    (drops / "a.ndjson").write_text(json.dumps(_event(1)) + "\n" + json.dumps(_event(2)) + "\n")
    real = landing._read_locally

    def read_with_a_lost_record(*args):
        found = real(*args)
        found.records["elsewhere.ndjson"] += 1  # counted as read, neither accepted, rejected nor a duplicate
        return found

    monkeypatch.setattr(landing, "_read_locally", read_with_a_lost_record)
    report = land_batch(_no_spark, root, str(drops), START, QUIET)
    assert [(f.read.path, f.records, f.accepted, f.balanced) for f in report.files] == [("a.ndjson", 2, 2, True)]
    assert not report.check.passed
    assert report.check.problems == ["the batch's totals do not balance"]  # the batch-level check alone
    assert report.check.details == {"files": 1, "read": 3, "accepted": 2, "rejected": 0, "duplicates": 0}
    assert report.commit_seq is None and commits.latest(root).seq == 0
    assert len(read_ledger(commits.latest(root))) == 0  # a.ndjson is not recorded as read

    monkeypatch.setattr(landing, "_read_locally", real)
    again = land_batch(_no_spark, root, str(drops), START, QUIET)
    assert again.check.passed and again.commit_seq == 1
    assert [(f.read.path, f.read.kind, f.records) for f in again.files] == [("a.ndjson", "new", 2)]
