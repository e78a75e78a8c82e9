"""Field tags (DESIGN.md section 9): the tags facet lands in field_tags with its history; a
dataset's tags are its newest facet's; `tagged_fields` follows DIRECT edges and stops at masking."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from lineage_assets import LineageQuery, NodeNotFound
from lineage_assets.cli import main
from lineage_assets.query.node_ids import field_node
from lineage_assets.query.render import jsonable
from lineage_assets_tests.recipe_stream import LAKE, PG

SCHEDULE_SECONDS = 6  # see test_recipe_questions


def test_field_tags_keep_every_facet_with_its_version(recipe_stream):
    recipe_stream_folded = recipe_stream.folded
    rows = [r for r in recipe_stream_folded.field_tags if r["name"] == "crm.customers"]
    by_version: dict[str, set] = {}
    for r in rows:
        by_version.setdefault(r["version_id"], set()).add((r["field"], r["tag_key"], r["tag_value"]))
    # four events, four versions; the third stated the note, the fourth removed it again
    assert sorted(by_version.values(), key=len) == [
        {("email", "pii", "true")},
        {("email", "pii", "true"), ("name", "pii", "true")},
        {("email", "pii", "true"), ("name", "pii", "true")},
        {("email", "pii", "true"), ("name", "note", "check"), ("name", "pii", "true")},
    ]
    report = {(r["field"], r["tag_key"], r["tag_value"], r["source"]) for r in recipe_stream_folded.field_tags
              if r["name"] == "crm.report"}
    assert report == {(None, "owner", "reporting", "spark"), ("who", "sensitivity", "low", "spark")}
    assert all(r["run_id"] for r in recipe_stream_folded.field_tags if r["name"] == "crm.report")


def test_a_datasets_tags_are_its_newest_facets(recipe_query):
    tags = recipe_query.dataset_tags(PG, "crm.customers")
    assert [(t.field, t.key, t.value) for t in tags.tags] == [("email", "pii", "true"), ("name", "pii", "true")]
    assert tags.asOf.startswith("2026-11-20T11:00")
    assert [(t.field, t.key) for t in recipe_query.dataset_tags(LAKE, "crm.report").tags] == [(None, "owner"), ("who", "sensitivity")]


def test_tagged_fields_directly(recipe_query):
    answer = recipe_query.tagged_fields("pii")
    assert [(t.name, t.field, t.direct) for t in answer.root] == [("crm.customers", "email", True), ("crm.customers", "name", True)]
    assert recipe_query.tagged_fields("pii", value="false").root == []
    assert recipe_query.tagged_fields("note").root == []  # removed by the newest facet


def test_tags_propagate_along_direct_edges_and_stop_at_masking(recipe_query):
    answer = {(t.name, t.field): t for t in recipe_query.tagged_fields("pii", propagate=True).root}
    # email -> contact is a hash (masking): the tag stops there, so contact_hash is not reached either
    assert ("crm.clean", "contact") not in answer and ("crm.report", "contact_hash") not in answer
    assert set(answer) == {("crm.customers", "email"), ("crm.customers", "name"), ("crm.clean", "name"),
                           ("crm.clean", "label"), ("crm.report", "who")}
    who = answer[("crm.report", "who")]
    assert not who.direct and who.taggedField == field_node(PG, "crm.customers", "name")
    assert [(h.to, h.job.name) for h in who.path] == [
        (field_node(LAKE, "crm.clean", "name"), "prep"), (field_node(LAKE, "crm.report", "who"), "report")]
    # the filter's INDIRECT edges carry no tag: country is not tagged, and nothing derives from it
    assert all(h.subtype != "FILTER" for t in answer.values() for h in t.path)


def test_cli_lists_what_the_helper_answers(recipe_query, recipe_warehouse, capsys):
    assert main(["tag", "list", "pii", "--propagate", "--warehouse", recipe_warehouse]) == 0
    assert json.loads(capsys.readouterr().out) == jsonable(recipe_query.tagged_fields("pii", propagate=True))
    assert main(["tag", "list", "pii", "--table", "--warehouse", recipe_warehouse]) == 0
    assert f"{field_node(PG, 'crm.customers', 'email')}\tpii=true\tdirect" in capsys.readouterr().out


def test_cli_tag_set_reads_the_warehouses_tags_and_drops_the_whole_set(recipe_warehouse, tmp_path, capsys):
    drop = tmp_path / "drops"
    drop.mkdir()
    node = field_node(PG, "crm.customers", "id")
    assert main(["tag", "set", node, "pii=false", "--warehouse", recipe_warehouse, "--drop-dir", str(drop)]) == 0
    event = json.loads((drop / "tags" / "tags.ndjson").read_text().splitlines()[-1])
    assert (event["dataset"]["namespace"], event["dataset"]["name"]) == (PG, "crm.customers")
    stated = {(t["field"], t["key"], t["value"]) for t in event["dataset"]["facets"]["tags"]["tags"]}
    assert stated == {("email", "pii", "true"), ("name", "pii", "true"), ("id", "pii", "false")}
    assert main(["tag", "remove", node, "pii", "--warehouse", recipe_warehouse, "--drop-dir", str(drop)]) == 0
    event = json.loads((drop / "tags" / "tags.ndjson").read_text().splitlines()[-1])
    assert {t["field"] for t in event["dataset"]["facets"]["tags"]["tags"]} == {"email", "name"}
    capsys.readouterr()
    assert main(["tag", "remove", node, "pii", "--warehouse", recipe_warehouse, "--drop-dir", str(drop)]) == 2  # gone already
    assert "has no tag 'pii'" in capsys.readouterr().err


def test_dataset_tags_takes_a_urn_and_an_unknown_dataset_is_not_found(tmp_path):
    """DESIGN.md sections 5 and 8: every query accepts a URN wherever it accepts a node id, and an
    unknown node raises NodeNotFound (it answered no tags, so HTTP said 200). Pyarrow, no Spark."""
    from lineage_assets.identity.datahub import dataset_urn
    from lineage_assets.warehouse import tables as t
    from lineage_assets_tests.support import commit_rows

    ns, at = "postgres://db.example.com:5432", dt.datetime(2024, 6, 1, 1, tzinfo=dt.timezone.utc)
    rows = {
        t.DATASET_VERSIONS: [{"version_id": "O@tags", "namespace": ns, "name": "O", "created_at": at, "created_date": at.date()}],
        t.FIELD_TAGS: [{"version_id": "O@tags", "namespace": ns, "name": "O", "field": f, "tag_key": k, "tag_value": v, "source": "test",
                        "created_at": at, "created_date": at.date()} for f, k, v in (("x", "pii", "true"), (None, "owner", "hr"))],
    }
    root = commit_rows(str(tmp_path / "wh"), rows)
    with LineageQuery(root) as query:
        by_name = query.dataset_tags(ns, "O")
        assert {(tag.field, tag.key, tag.value) for tag in by_name.tags} == {(r["field"], r["tag_key"], r["tag_value"]) for r in rows[t.FIELD_TAGS]}
        assert query.dataset_tags(dataset_urn(ns, "O")) == by_name
        assert query.dataset_tags(namespace=ns, name="O") == by_name
        with pytest.raises(NodeNotFound):
            query.dataset_tags(ns, "nobody")
        with pytest.raises(NodeNotFound):
            query.dataset_tags(dataset_urn(ns, "nobody"))
        with pytest.raises(ValueError):
            query.dataset_tags(ns)  # a namespace alone names no dataset
