"""Snapshot publishing: the pointer always names a complete, existing snapshot."""

from __future__ import annotations

import os
import time

from lineage_assets.warehouse.snapshots import KEEP, current_dir, publish, snapshot_dir


def _make(wh, sid):
    path = snapshot_dir(str(wh), "current_lineage", sid)
    os.makedirs(path)
    with open(os.path.join(path, "part-0.parquet"), "w") as handle:
        handle.write(sid)
    return path


def test_no_pointer_before_the_first_publish(tmp_path):
    assert current_dir(str(tmp_path), "current_lineage") is None


def test_the_pointer_follows_the_latest_publish_even_when_its_name_sorts_first(tmp_path):
    for sid in ["2024-03-05_1", "2024-03-05_2", "2024-03-04_3"]:
        _make(tmp_path, sid)
        time.sleep(0.01)
        publish(str(tmp_path), "current_lineage", sid)
        assert current_dir(str(tmp_path), "current_lineage") == snapshot_dir(str(tmp_path), "current_lineage", sid)
        assert os.path.isdir(current_dir(str(tmp_path), "current_lineage"))
    kept = sorted(d for d in os.listdir(tmp_path / "current_lineage") if d.startswith("snapshot="))
    assert len(kept) == KEEP
    assert "snapshot=2024-03-04_3" in kept and "snapshot=2024-03-05_2" in kept


def test_a_snapshot_being_written_is_not_visible_until_published(tmp_path):
    _make(tmp_path, "a")
    publish(str(tmp_path), "current_lineage", "a")
    _make(tmp_path, "b")  # written, not yet published
    assert current_dir(str(tmp_path), "current_lineage").endswith("snapshot=a")
    assert not os.path.exists(tmp_path / "current_lineage" / ".\u005fCURRENT.tmp")
