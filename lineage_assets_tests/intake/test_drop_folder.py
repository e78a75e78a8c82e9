"""scan_drop_folder, drop_key and drop_id against real folders in tmp_path."""

from __future__ import annotations

import hashlib
import logging
import os

import pytest

from lineage_assets.intake.drop_folder import DropFile, drop_id, drop_key, scan_drop_folder

LOGGER_NAME = "lineage_assets_tests.drop_folder"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def drops(tmp_path):
    folder = tmp_path / "drops"
    folder.mkdir()
    return folder


def write(path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def by_relpath(files: list[DropFile]) -> dict[str, DropFile]:
    return {f.relpath: f for f in files}


def test_new_files_are_reported_with_sha256(drops):
    contents = {"a.ndjson": b'{"a": 1}\n', "b.json": b'{"b": 2}', "c.ndjson.gz": b"\x1f\x8b\x08binary"}
    for name, data in contents.items():
        write(drops / name, data)
    changed, known = scan_drop_folder(drops, {})
    found = by_relpath(changed)
    assert set(found) == set(contents)
    for name, data in contents.items():
        stat = os.stat(drops / name)
        assert found[name].sha256 == sha(data)
        assert found[name].size == len(data)
        assert found[name].mtime_ns == stat.st_mtime_ns
        assert known[name] == (len(data), stat.st_mtime_ns, sha(data))
        assert found[name].key == drop_key(name, sha(data))


def test_second_scan_with_known_reports_nothing(drops):
    write(drops / "a.ndjson", b"{}\n")
    write(drops / "sub" / "b.ndjson", b"{}\n{}\n")
    changed, known = scan_drop_folder(drops, {})
    assert len(changed) == 2
    again, known_again = scan_drop_folder(drops, known)
    assert again == []
    assert known_again == known


def test_changed_content_is_reported_with_a_new_sha(drops):
    path = write(drops / "a.ndjson", b'{"n": 1}\n')
    first, known = scan_drop_folder(drops, {})
    new_data = b'{"n": 1}\n{"n": 2}\n'
    path.write_bytes(new_data)
    changed, known2 = scan_drop_folder(drops, known)
    assert [f.relpath for f in changed] == ["a.ndjson"]
    assert changed[0].sha256 == sha(new_data) != first[0].sha256
    assert changed[0].size == len(new_data)
    assert changed[0].key != first[0].key
    assert known2["a.ndjson"][2] == sha(new_data)


def test_same_content_with_new_mtime_is_not_changed_but_known_is_updated(drops):
    data = b'{"same": true}\n'
    path = write(drops / "a.ndjson", data)
    _, known = scan_drop_folder(drops, {})
    old_mtime = known["a.ndjson"][1]
    path.write_bytes(data)  # rewritten, same bytes
    new_mtime = old_mtime + 5_000_000_000
    os.utime(path, ns=(new_mtime, new_mtime))
    changed, known2 = scan_drop_folder(drops, known)
    assert changed == []
    assert known2["a.ndjson"] == (len(data), new_mtime, sha(data))
    # and with the updated table the next scan is still quiet
    assert scan_drop_folder(drops, known2)[0] == []


def test_removed_files_leave_known(drops):
    write(drops / "a.ndjson", b"{}\n")
    gone = write(drops / "b.ndjson", b"{}\n")
    _, known = scan_drop_folder(drops, {})
    gone.unlink()
    changed, known2 = scan_drop_folder(drops, known)
    assert changed == []
    assert set(known2) == {"a.ndjson"}


def test_ignored_names_are_never_reported(drops):
    write(drops / "good.ndjson", b"{}\n")
    ignored = [
        "writing.ndjson.tmp",
        "upload.json.partial",
        ".hidden.ndjson",
        ".DS_Store",
        "sub/also.tmp",
        "sub/.dotfile",
        ".staging/inside.ndjson",
        "sub/.cache/deep/inside.json",
    ]
    for rel in ignored:
        write(drops / rel, b'{"never": "read"}\n')
    changed, known = scan_drop_folder(drops, {})
    assert [f.relpath for f in changed] == ["good.ndjson"]
    assert set(known) == {"good.ndjson"}


def test_symlink_pointing_outside_is_ignored_and_logged(tmp_path, drops, caplog):
    outside = write(tmp_path / "secret" / "outside.ndjson", b'{"outside": 1}\n')
    write(drops / "real.ndjson", b"{}\n")
    (drops / "link.ndjson").symlink_to(outside)
    log = logging.getLogger(LOGGER_NAME)
    with caplog.at_level(logging.WARNING, logger=LOGGER_NAME):
        changed, known = scan_drop_folder(drops, {}, log)
    assert [f.relpath for f in changed] == ["real.ndjson"]
    assert "link.ndjson" not in known
    warnings = [r for r in caplog.records if r.name == LOGGER_NAME and r.levelno >= logging.WARNING]
    assert any("link.ndjson" in r.getMessage() for r in warnings)


def test_symlink_pointing_outside_is_logged_by_the_default_logger(tmp_path, drops, caplog):
    outside = write(tmp_path / "elsewhere.json", b"{}")
    (drops / "out.json").symlink_to(outside)
    with caplog.at_level(logging.WARNING):
        changed, known = scan_drop_folder(drops, {})
    assert changed == [] and known == {}
    assert any("out.json" in r.getMessage() and r.levelno >= logging.WARNING for r in caplog.records)


def test_symlink_to_a_file_inside_is_accepted(drops):
    data = b'{"inside": 1}\n'
    write(drops / "archive" / "real.ndjson", data)
    (drops / "alias.ndjson").symlink_to(drops / "archive" / "real.ndjson")
    changed, _ = scan_drop_folder(drops, {})
    found = by_relpath(changed)
    assert set(found) == {"alias.ndjson", "archive/real.ndjson"}
    assert found["alias.ndjson"].sha256 == sha(data)


def test_symlinked_folder_is_not_followed(tmp_path, drops):
    outside = tmp_path / "outside_dir"
    write(outside / "x.ndjson", b"{}\n")
    (drops / "linked").symlink_to(outside, target_is_directory=True)
    changed, known = scan_drop_folder(drops, {})
    assert changed == [] and known == {}


def test_files_in_subfolders_get_posix_relpaths(drops):
    write(drops / "sub" / "a.ndjson", b"1\n")
    write(drops / "sub" / "deeper" / "b.json", b"2")
    write(drops / "top.json", b"3")
    changed, known = scan_drop_folder(drops, {})
    assert sorted(f.relpath for f in changed) == ["sub/a.ndjson", "sub/deeper/b.json", "top.json"]
    assert set(known) == {"sub/a.ndjson", "sub/deeper/b.json", "top.json"}
    assert all("\\" not in f.relpath and not f.relpath.startswith("/") for f in changed)


def test_drop_dir_given_as_string(drops):
    write(drops / "a.ndjson", b"{}\n")
    changed, _ = scan_drop_folder(str(drops), {})
    assert [f.relpath for f in changed] == ["a.ndjson"]


def test_missing_drop_folder_returns_nothing(tmp_path):
    assert scan_drop_folder(tmp_path / "does-not-exist", {"old.ndjson": (1, 2, "ab")}) == ([], {})


def test_drop_key_contains_relpath_and_sha_prefix():
    digest = sha(b"content")
    key = drop_key("sub/a.ndjson", digest)
    assert key.startswith("sub/a.ndjson")
    assert digest[:12] in key
    assert key != drop_key("sub/a.ndjson", sha(b"other content"))
    assert key != drop_key("sub/b.ndjson", digest)


def test_drop_id_is_stable_and_distinct():
    key1 = drop_key("a.ndjson", sha(b"1"))
    key2 = drop_key("a.ndjson", sha(b"2"))
    assert drop_id(key1) == drop_id(key1)
    assert drop_id(key1) != drop_id(key2)
    assert drop_id(key1) != drop_id(drop_key("b.ndjson", sha(b"1")))
    # folder-safe: no separators or spaces
    for value in (drop_id(key1), drop_id("sub dir/x y.json@0123")):
        assert value and all(c.isalnum() for c in value)
