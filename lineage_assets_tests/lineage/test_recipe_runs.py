"""Runs whose job carries a Wrangler recipe: field_operations rows and column edges derived from
the recipe where the producer sent no columnLineage (DESIGN.md section 9)."""

from __future__ import annotations

import json

import pytest

from lineage_assets.lineage.recipe_runs import recipe_answer

SCHEDULE_SECONDS = 45  # builds the recipe_stream fixture when it runs first

from lineage_assets_tests.recipe_stream import RECIPE
from lineage_assets_tests.support import run_uuid

R1 = run_uuid("r1")

def text(*names: str) -> str:
    return json.dumps([{"name": n, "type": "string"} for n in names])


def by_field(cll: dict) -> dict[str, list[tuple]]:
    return {
        out: sorted((i["namespace"], i["name"], i["field"], t["type"], t["subtype"], t["masking"])
                    for i in spec["inputFields"] for t in i["transformations"])
        for out, spec in cll["fields"].items()
    }


def test_recipe_answer_derives_typed_edges_masking_and_dataset_wide_filters():
    answer = recipe_answer(RECIPE, [{"namespace": "pg://db:5432", "name": "crm.customers",
                                     "text": text("id", "name", "email", "country")}],
                           text("id", "name", "contact", "label"))
    src = ("pg://db:5432", "crm.customers")
    assert by_field(answer["cll"]) == {
        "id": [(*src, "id", "DIRECT", "IDENTITY", False)],
        "name": [(*src, "name", "DIRECT", "TRANSFORMATION", False)],
        "contact": [(*src, "email", "DIRECT", "TRANSFORMATION", True)],
        "label": sorted([(*src, "id", "DIRECT", "TRANSFORMATION", False),
                         (*src, "name", "DIRECT", "TRANSFORMATION", False)]),
    }
    wide = answer["cll"]["dataset"]
    assert [(d["field"], d["transformations"][0]["type"], d["transformations"][0]["subtype"])
            for d in wide] == [("country", "INDIRECT", "FILTER")]
    labels = [(o["step"], o["field"], o["label"]) for o in answer["operations"]]
    assert (1, "email", "Rename") in labels and (3, "contact", "Modify") in labels
    assert (4, "label", "Add") in labels and (5, "country", "Read") in labels
    assert (6, "country", "Drop") in labels
    rename = next(o for o in answer["operations"] if o["label"] == "Rename")
    assert rename["new_name"] == "contact" and rename["line"] == 2
    assert rename["directive"] == "rename :email :contact"
    assert all(o["note"] is None for o in answer["operations"])


def test_a_column_two_inputs_have_feeds_from_both():
    answer = recipe_answer("uppercase :id", [
        {"namespace": "a", "name": "left", "text": text("id", "x")},
        {"namespace": "b", "name": "right", "text": text("id")},
    ], None)
    assert by_field(answer["cll"])["id"] == [("a", "left", "id", "DIRECT", "TRANSFORMATION", False),
                                            ("b", "right", "id", "DIRECT", "TRANSFORMATION", False)]


def test_a_recipe_its_lineage_fails_on_is_a_note_and_the_fold_goes_on(monkeypatch):
    """DESIGN.md section 11: what is accepted never crashes a later stage. A recipe the walk
    fails on (a defect of ours, not a RecipeError) gives the run an internal_error note and no
    derived edges, instead of failing the fold's Spark job on every retry."""
    from lineage_assets import recipes

    def broken(*_args, **_kwargs):
        raise RuntimeError("walk broke")

    monkeypatch.setattr(recipes, "lineage", broken)
    answer = recipe_answer("uppercase :id", [{"namespace": "a", "name": "t", "text": text("id")}], None)
    assert answer["cll"] is None
    [note] = answer["operations"]
    assert note["note"] == "internal_error: the recipe's lineage could not be worked out: RuntimeError: walk broke"


def test_a_recipe_longer_than_pythons_recursion_limit_derives_its_edges():
    recipe = "\n".join(["lowercase :id"] * 3_000)
    answer = recipe_answer(recipe, [{"namespace": "a", "name": "t", "text": text("id")}], text("id"))
    assert by_field(answer["cll"]) == {"id": [("a", "t", "id", "DIRECT", "TRANSFORMATION", False)]}
    assert sum(1 for o in answer["operations"] if o["label"] == "Modify") == 3_000


def test_what_only_the_data_settles_is_a_note_not_an_edge():
    recipe = "parse-as-csv :body ',' true\ndrop :body\nlowercase :owner\nset-columns A,B"
    answer = recipe_answer(recipe, [{"namespace": "s3://b", "name": "raw", "text": text("body")}],
                           text("A", "B"))
    notes = [o for o in answer["operations"] if o["label"] is None]
    assert {(o["step"], o["field"]) for o in notes} >= {(4, "A"), (4, "B")}
    assert all("position" in o["note"] or "renamed" in o["note"] or "output" in o["note"]
               for o in notes if o["step"] == 4)
    # A and B come from body for certain: those edges stay
    assert set(by_field(answer["cll"])) == {"A", "B"}


def test_a_rename_only_the_data_settles_is_a_note_row_with_its_new_name():
    """set-headers over columns a CSV header names: which column becomes A is the data's, so
    the row is a note (label null) that keeps the name it gives in `new_name`."""
    recipe = "parse-as-csv :body ',' true\ndrop :body\nset-headers A,B"
    answer = recipe_answer(recipe, [{"namespace": "s3://b", "name": "raw", "text": text("body")}],
                           text("A", "B"))
    notes = [o for o in answer["operations"] if o["step"] == 3 and o["label"] is None]
    assert sorted((o["field"], o["new_name"]) for o in notes) == [("A", "A"), ("B", "B")]
    assert all("position" in o["note"] for o in notes)
    # the other notes are references, not renames: no new name
    assert all(o["new_name"] is None for o in answer["operations"] if o["label"] is None and o["step"] != 3)
    # and no Rename row names a column it cannot know (DESIGN 9: Rename names old and new)
    assert [o for o in answer["operations"] if o["step"] == 3 and o["label"] is not None] == []


def test_field_operations_never_rename_or_drop_an_all_columns_form():
    """A keep and a bulk rename over columns a CSV parse made: the members the output schema
    binds are renamed by name, the rest is a note; `all_columns` rows are only Read or Add."""
    recipe = "parse-as-csv :body ','\nchange-column-case upper\nkeep :BODY_1,BODY_2"
    answer = recipe_answer(recipe, [{"namespace": "s3://b", "name": "raw", "text": text("body")}],
                           text("BODY_1", "BODY_2"))
    ops = answer["operations"]
    assert {o["label"] for o in ops if o["all_columns"]} <= {"Read", "Add"}
    assert [(o["field"], o["new_name"]) for o in ops if o["step"] == 2 and o["label"] == "Rename"] == [
        ("body", "BODY"), ("body_1", "BODY_1"), ("body_2", "BODY_2")]
    assert [(o["field"], o["label"]) for o in ops if o["step"] == 3 and o["label"]] == [("BODY", "Drop")]
    form = "all columns formatted body_%d"
    assert {(o["step"], o["field"]) for o in ops if o["label"] is None} == {(1, form), (2, form), (3, form)}
    assert by_field(answer["cll"]) == {c: [("s3://b", "raw", "body", "DIRECT", "TRANSFORMATION", False)]
                                       for c in ("BODY_1", "BODY_2")}


def test_a_read_of_every_column_names_the_members_in_field_operations_and_its_edge():
    """`*` after a CSV parse, the output schema naming the parse's columns: step 2 read body,
    body_1 and body_2 (rows by name, no "all columns" row), n was made from all three, and its
    derived edge from body passes through the parse (step 1) and the set-column (step 2)."""
    recipe = "parse-as-csv :body ','\nset-column :n concat_ws(',', *)"
    answer = recipe_answer(recipe, [{"namespace": "s3://b", "name": "raw", "text": text("body")}],
                           text("body", "body_1", "body_2", "n"))
    ops = answer["operations"]
    assert sorted((o["field"], o["label"], o["reads"], o["all_columns"]) for o in ops if o["step"] == 2) == [
        ("body", "Read", [], False), ("body_1", "Read", [], False), ("body_2", "Read", [], False),
        ("n", "Add", ["body", "body_1", "body_2"], False)]
    assert [o for o in ops if o["label"] is None] == []
    [field] = answer["cll"]["fields"]["n"]["inputFields"]
    assert (field["field"], field["transformations"]) == ("body", [{
        "type": "DIRECT", "subtype": "TRANSFORMATION", "description": "recipe steps 1 parse-as-csv, 2 set-column",
        "masking": False}])


def test_a_recipe_that_cannot_be_read_is_a_note_naming_the_line():
    answer = recipe_answer("rename :a :b\nexplode-everything :a", [
        {"namespace": "n", "name": "t", "text": text("a")}], None)
    assert answer["cll"] is None
    note, = answer["operations"]
    assert note["label"] is None and note["line"] == 2
    assert "unknown directive `explode-everything`" in note["note"]


@pytest.fixture(scope="module")
def folded(recipe_stream):
    return recipe_stream.folded


def test_fold_derives_column_edges_from_the_recipe(folded):
    edges = {(e["output_name"], e["output_field"], e["input_field"], e["transformation_type"],
              e["transformation_subtype"], e["masking"])
             for e in folded.column_lineage if e["output_name"] == "crm.clean" and e["run_id"] == R1}
    assert ("crm.clean", "contact", "email", "DIRECT", "TRANSFORMATION", True) in edges
    assert ("crm.clean", "id", "id", "DIRECT", "IDENTITY", False) in edges
    assert ("crm.clean", None, "country", "INDIRECT", "FILTER", False) in edges
    assert all(e[1] != "country" for e in edges)
    row = next(e for e in folded.column_lineage if e["output_field"] == "contact" and e["run_id"] == R1)
    assert row["input_version_id"] is not None and row["input_field_known"] is True
    assert row["transformation_description"] == "recipe steps 1 rename, 3 hash"


def test_the_producers_column_lineage_wins_over_the_recipe(folded):
    edges = [(e["output_field"], e["input_field"]) for e in folded.column_lineage
             if e["output_name"] == "crm.clean2"]
    assert edges == [("id", "name")]


def test_fold_fills_field_operations_for_recipe_runs_only(folded):
    ops = folded.field_operations
    assert {o["job_name"] for o in ops} == {"prep", "prep2", "prepare_customers"}  # not py: python sourceCode
    prep = sorted((o["step"], o["field"], o["label"]) for o in ops if o["run_id"] == R1)
    assert prep == sorted([
        (1, "email", "Rename"), (2, "name", "Modify"), (3, "contact", "Modify"),
        (4, "id", "Read"), (4, "name", "Read"), (4, "label", "Add"), (5, "country", "Read"),
        (6, "country", "Drop"),
    ])
    version = next(v for v in folded.dataset_versions if v["name"] == "crm.clean" and v["run_id"] == R1)
    assert {o["output_version_id"] for o in ops if o["run_id"] == R1} == {version["version_id"]}
    assert {o["run_id"] for o in ops if o["job_name"] == "prep"} == {R1, run_uuid("r4")}
    add = next(o for o in ops if o["label"] == "Add" and o["run_id"] == R1)
    assert add["reads"] == ["name", "id"] and add["directive_name"] == "set-column"
    assert str(add["created_date"]) == "2026-11-20"


def test_a_top_level_field_whose_name_holds_a_dot_is_a_column_of_the_recipe():
    """`first.name` at the top of the schema is one column (Spark renames it), not a field of a
    struct `first`: the recipe's lineage follows it."""
    answer = recipe_answer("rename :first.name :given", [{"namespace": "pg", "name": "people", "text": text("id", "first.name")}],
                           text("id", "given"))
    assert by_field(answer["cll"])["given"] == [("pg", "people", "first.name", "DIRECT", "IDENTITY", False)]
    assert all(o["note"] is None for o in answer["operations"])
