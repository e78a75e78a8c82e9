"""`lineage_assets.tagging`: tag events through the OpenLineage client, without a warehouse."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from lineage_assets.intake.validate import validate_event
from lineage_assets.tagging import TAGS_FILE, change_tag, parse_assignment, resolve_target


def _events(drop) -> list[dict]:
    return [json.loads(line) for line in (drop / TAGS_FILE).read_text().splitlines()]


def test_each_change_states_the_whole_newest_set(tmp_path):
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    change_tag(tmp_path, None, "pg://h:5432", "db.t", "a", "pii", "true", now=t0)
    change_tag(tmp_path, None, "pg://h:5432", "db.t", None, "owner", "me", now=t0 + dt.timedelta(minutes=1))
    change_tag(tmp_path, None, "pg://h:5432", "other", "x", "k", "v", now=t0 + dt.timedelta(minutes=2))
    tags = change_tag(tmp_path, None, "pg://h:5432", "db.t", "a", "pii", "false", now=t0 + dt.timedelta(minutes=3))
    assert [(t.field, t.key, t.value) for t in tags] == [(None, "owner", "me"), ("a", "pii", "false")]
    events = _events(tmp_path)
    assert len(events) == 4
    for event in events:
        validate_event(event)  # a valid DatasetEvent, as the intake reads it
    last = events[-1]["dataset"]["facets"]["tags"]["tags"]
    assert [(t.get("field"), t["key"], t["value"]) for t in last] == [(None, "owner", "me"), ("a", "pii", "false")]
    assert events[-1]["eventTime"].startswith("2026-01-01T00:03")


def test_removing_a_tag_that_is_not_there_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="has no tag 'pii'"):
        change_tag(tmp_path, None, "ns", "t", "a", "pii", remove=True)
    assert not (tmp_path / TAGS_FILE).exists()


def test_node_ids_and_assignments():
    assert resolve_target("datasetField:ns:db.t:col", None) == ("ns", "db.t", "col")
    assert resolve_target("dataset:ns:db.t", None) == ("ns", "db.t", None)
    with pytest.raises(ValueError, match="can be read 3 ways"):
        resolve_target("datasetField:s3://b:key:col", None)
    with pytest.raises(ValueError, match="dataset or a field"):
        resolve_target("job:ns:j", None)
    assert parse_assignment("pii=true") == ("pii", "true")
    assert parse_assignment("note=a=b") == ("note", "a=b")
    with pytest.raises(ValueError):
        parse_assignment("pii")


def test_an_ambiguous_id_lists_every_reading_and_says_why_it_was_not_settled(tmp_path):
    """A node id the colons let read six ways lists all six (it listed five and said six), and
    says that the warehouse which would settle it does not exist, or knows none of them."""
    node = "datasetField:postgres://warehouse.example.com:5432:public.customers:email"
    with pytest.raises(ValueError) as missing:
        resolve_target(node, str(tmp_path / "nowhere"))
    text = str(missing.value)
    assert "can be read 6 ways (the warehouse" in text and "does not exist" in text
    readings = text.split("does not exist) (", 1)[1].split("); give", 1)[0].split("; ")
    assert len(readings) == 6 and "postgres://warehouse.example.com:5432 | public.customers | email" in readings


def test_a_tag_on_a_dataset_the_warehouse_does_not_know_yet_starts_its_set(tmp_path):
    """The warehouse's tags of a dataset it does not know (dataset_tags: NodeNotFound) are none:
    setting a tag on a new dataset states that tag alone."""
    from lineage_assets.warehouse import tables as t
    from lineage_assets_tests.support import commit_rows

    at = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    warehouse = commit_rows(str(tmp_path / "wh"), {t.DATASET_VERSIONS: [
        {"version_id": "v", "namespace": "pg://h:5432", "name": "known", "created_at": at, "created_date": at.date()}]})
    tags = change_tag(tmp_path / "drops", warehouse, "pg://h:5432", "new", "a", "pii", "true", now=at)
    assert [(tag.field, tag.key, tag.value) for tag in tags] == [("a", "pii", "true")]
    assert [(e["dataset"]["name"], len(e["dataset"]["facets"]["tags"]["tags"])) for e in _events(tmp_path / "drops")] == [("new", 1)]
