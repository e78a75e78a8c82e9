"""The recipe questions (DESIGN.md section 9) over a folded stream with recipe runs
(`recipe_stream`): column_directives over a period, column_history backward and column_impact
forward through directives, jobs and datasets; section 8's field_operations naming directives;
the resource and the CLI give the same answers."""

from __future__ import annotations

import json

import pytest

from lineage_assets import NodeNotFound
from lineage_assets.cli import main
from lineage_assets.defs.resources import LineageQueryResource
from lineage_assets.query.node_ids import field_node
from lineage_assets.query.recipe_history import OpRow, paths_to_inputs, renamed_back
from lineage_assets.query.render import jsonable
from lineage_assets_tests.recipe_stream import LAKE, PG
from lineage_assets_tests.support import run_uuid

SCHEDULE_SECONDS = 8  # after test_recipe_runs (45) has built the shared recipe_stream: no wait on its lock

ALL = ("2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z")


def _steps(directives) -> list[tuple]:
    return [(d.step, d.label, d.column) for d in directives]


def test_column_directives_follow_renames_back_run_by_run(recipe_query):
    answer = recipe_query.column_directives(LAKE, "crm.clean", "contact", *ALL)
    assert [r.runId for r in answer.runs] == [run_uuid("r1"), run_uuid("r4")]
    first, second = answer.runs
    assert first.recipe and first.job.name == "prep" and first.state == "COMPLETE"
    # contact was email before step 1; hashed at step 3 (step 4 in the second recipe version)
    assert _steps(first.directives) == [(1, "Rename", "contact"), (3, "Modify", "contact")]
    assert _steps(second.directives) == [(1, "Rename", "contact"), (4, "Modify", "contact")]
    assert first.directives[1].directive == "hash :contact SHA-256" and first.directives[1].line == 4


def test_column_directives_window_selects_runs_by_end_time(recipe_query):
    answer = recipe_query.column_directives(LAKE, "crm.clean", "name", "2026-11-22T00:00:00Z", "2026-11-23T00:00:00Z")
    assert [r.runId for r in answer.runs] == [run_uuid("r4")]
    # the name was trimmed, lowercased, and read by the set-column of label
    assert _steps(answer.runs[0].directives) == [(2, "Modify", "name"), (3, "Modify", "name"), (5, "Read", "name")]


def test_column_directives_of_a_run_without_recipe(recipe_query):
    answer = recipe_query.column_directives(LAKE, "crm.report", "contact_hash", *ALL)
    assert [(r.runId, r.recipe, r.directives) for r in answer.runs] == [(run_uuid("r5"), False, [])]


def test_column_directives_unknown_dataset_is_not_found(recipe_query):
    with pytest.raises(NodeNotFound):
        recipe_query.column_directives(LAKE, "crm.nothing", "x", *ALL)


def test_column_history_goes_back_through_jobs_datasets_and_directives(recipe_query):
    trace = recipe_query.column_history(field_node(LAKE, "crm.report", "contact_hash"))
    assert trace.direction == "backward" and trace.root.field == "contact_hash"
    report, = trace.root.steps
    assert report.job.name == "report" and report.directives == [] and report.subtype == "IDENTITY"
    clean = report.node
    assert (clean.name, clean.field) == ("crm.clean", "contact")
    # crm.clean's current writer is prep's latest run (the second recipe version)
    direct = [s for s in clean.steps if s.type == "DIRECT"]
    assert [(s.runId, s.node.name, s.node.field, s.masking) for s in direct] == [(run_uuid("r4"), "crm.customers", "email", True)]
    assert _steps(direct[0].directives) == [(1, "Rename", "contact"), (4, "Modify", "contact")]
    # the filter on country reaches every field of crm.clean: an INDIRECT hop to country
    indirect = [(s.node.field, s.subtype, _steps(s.directives)) for s in clean.steps if s.type == "INDIRECT"]
    assert indirect == [("country", "FILTER", [(6, "Read", "country")])]  # the filter-row of the second version
    assert all(s.node.steps == [] for s in clean.steps)  # crm.customers has no writer


def test_column_history_of_a_column_made_from_two(recipe_query):
    trace = recipe_query.column_history(field_node(LAKE, "crm.clean", "label"))
    by_input = {s.node.field: _steps(s.directives) for s in trace.root.steps if s.type == "DIRECT"}
    assert by_input == {
        "id": [(5, "Add", "label")],
        "name": [(2, "Modify", "name"), (3, "Modify", "name"), (5, "Add", "label")],
    }


def test_column_impact_goes_forward(recipe_query):
    trace = recipe_query.column_impact(field_node(PG, "crm.customers", "email"))
    assert trace.direction == "forward"
    step, = [s for s in trace.root.steps if s.job.name == "prep"]
    assert (step.node.name, step.node.field) == ("crm.clean", "contact")
    assert _steps(step.directives) == [(1, "Rename", "contact"), (4, "Modify", "contact")]
    onward, = step.node.steps
    assert (onward.job.name, onward.node.name, onward.node.field) == ("report", "crm.report", "contact_hash")
    # a filter column impacts every field of what the recipe wrote
    country = recipe_query.column_impact(field_node(PG, "crm.customers", "country"))
    assert {(s.node.name, s.node.field, s.subtype) for s in country.root.steps if s.job.name == "prep"} == {
        ("crm.clean", "*", "FILTER")}


def test_depth_limits_the_trace(recipe_query):
    trace = recipe_query.column_history(field_node(LAKE, "crm.report", "contact_hash"), depth=1)
    clean = trace.root.steps[0].node
    assert clean.truncated and clean.steps == []
    with pytest.raises(ValueError):
        recipe_query.column_history(field_node(LAKE, "crm.report", "contact_hash"), depth=-1)
    with pytest.raises(ValueError, match="takes a field"):
        recipe_query.column_history(f"dataset:{LAKE}:crm.report")


def test_section_8_field_operations_name_the_directives(recipe_query):
    answer = recipe_query.field_operations(LAKE, "crm.clean", "contact", "2026-11-20T00:00:00Z", "2026-11-21T00:00:00Z")
    direct = [o for o in answer.operations if o.type == "DIRECT"]
    assert len(direct) == 1 and direct[0].masking
    assert [(d.step, d.directive) for d in direct[0].directives] == [(1, "rename :email :contact"), (3, "hash :contact SHA-256")]


def test_resource_and_cli_give_the_helpers_answers(recipe_query, recipe_warehouse, capsys):
    resource = LineageQueryResource(warehouse=recipe_warehouse)
    node = field_node(LAKE, "crm.report", "contact_hash")
    assert resource.column_history(node) == recipe_query.column_history(node)
    assert resource.column_directives(LAKE, "crm.clean", "contact", *ALL) == recipe_query.column_directives(LAKE, "crm.clean", "contact", *ALL)
    assert main(["query", "column-history", node, "--warehouse", recipe_warehouse]) == 0
    assert json.loads(capsys.readouterr().out) == jsonable(recipe_query.column_history(node))
    assert main(["query", "column-impact", field_node(PG, "crm.customers", "email"), "--tree", "--warehouse", recipe_warehouse]) == 0
    tree = capsys.readouterr().out
    assert "-> job lake/prep" not in tree and "-> job ns/prep" in tree
    assert "step 4 (line 5) Modify contact: hash :contact SHA-256" in tree
    assert main(["query", "column-directives", LAKE, "crm.clean", "contact", "--start", ALL[0], "--end", ALL[1],
                 "--table", "--warehouse", recipe_warehouse]) == 0
    assert "step 1 (line 2) Rename contact: rename :email :contact" in capsys.readouterr().out
    assert main(["query", "column-directives", LAKE, "crm.nothing", "x", "--warehouse", recipe_warehouse]) == 3


# ---- the walks over field_operations rows, without Spark


def _op(step, field, label, reads=(), new_name=None, all_columns=False, note=None):
    return OpRow(step, step + 1 if step else None, f"d{step}", "x", field, label, tuple(reads), new_name, all_columns, note)


def test_a_swap_is_read_as_one_step():
    ops = [_op(1, "a", "Rename", ("a",), "b"), _op(1, "b", "Rename", ("b",), "a"), _op(2, "b", "Modify", ("b",))]
    assert _steps(renamed_back(ops, "b")[0]) == [(1, "Rename", "b"), (2, "Modify", "b")]
    assert list(paths_to_inputs(ops, "b")) == ["a"]
    assert list(paths_to_inputs(ops, "a")) == ["b"]


def test_a_column_dropped_and_made_again_starts_at_its_add():
    ops = [_op(1, "a", "Modify", ("a",)), _op(2, "a", "Drop"), _op(3, "a", "Add", ("b",))]
    assert _steps(renamed_back(ops, "a")[0]) == [(3, "Add", "a")]
    assert paths_to_inputs(ops, "a") == {"b": [renamed_back(ops, "a")[0][0]]}


def test_a_set_column_that_writes_over_a_column_ends_its_history():
    ops = [_op(1, "a", "Modify", ("a",)), _op(2, "a", "Modify", ("b",))]
    assert _steps(renamed_back(ops, "a")[0]) == [(2, "Modify", "a")]
    assert set(paths_to_inputs(ops, "a")) == {"b"}


def test_a_position_only_the_data_knows_stops_with_its_note():
    # rows written before such renames were notes: a Rename row with an "all columns" form
    ops = [_op(1, "A", "Rename", (), "A", all_columns=True), _op(1, "A", None, note="set-headers names position 1")]
    directives, notes = renamed_back(ops, "A")
    assert _steps(directives) == [(1, "Rename", "A")] and notes == ["set-headers names position 1"]


def test_a_rename_only_the_data_settles_is_a_note_that_stops_the_walk_back():
    """A set-headers position among columns the data names is a note carrying the new name (no
    Rename row: its old name is unknown). The walk back stops there: the column called A before
    step 2 (modified at step 1) is another column, not the one set-headers named A."""
    note = "set-headers names position 1, which falls among columns only the data names"
    ops = [_op(1, "A", "Modify", ("A",)), _op(2, "A", None, new_name="A", note=note)]
    directives, notes = renamed_back(ops, "A")
    assert _steps(directives) == [(2, "Rename", "A")] and notes == [note]
    assert directives[0].newName == "A" and directives[0].directive == "d2"
    assert paths_to_inputs(ops, "A") == {}
    # a note without a new name (a reference, not a rename) does not stop it
    ops = [_op(1, "A", "Modify", ("A",)), _op(2, "A", None, note="`A` may have been renamed by this set-headers")]
    assert _steps(renamed_back(ops, "A")[0]) == [(1, "Modify", "A")]


def test_read_routes_answer_what_the_helper_answers(recipe_query, recipe_warehouse, tmp_path):
    from urllib.parse import quote

    import requests

    from lineage_assets_tests.http.conftest import serving

    def dataset_path(ns, name, *rest):
        return "/api/v1/namespaces/" + "/".join(quote(p, safe="") for p in (ns, "datasets", name, *rest))

    history, impact = field_node(LAKE, "crm.report", "contact_hash"), field_node(PG, "crm.customers", "email")
    asks = [
        ("/api/v1/column-history", {"nodeId": history}, recipe_query.column_history(history)),
        ("/api/v1/column-impact", {"nodeId": impact, "depth": 1}, recipe_query.column_impact(impact, depth=1)),
        (dataset_path(LAKE, "crm.clean", "fields", "contact", "directives"), {"start": ALL[0], "end": ALL[1]},
         recipe_query.column_directives(LAKE, "crm.clean", "contact", *ALL)),
        (dataset_path(PG, "crm.customers", "tags"), {}, recipe_query.dataset_tags(PG, "crm.customers")),
        ("/api/v1/tagged-fields", {"key": "pii", "propagate": "true"}, recipe_query.tagged_fields("pii", propagate=True)),
    ]
    with serving(str(tmp_path / "drops"), warehouse=recipe_warehouse) as (base, _app):
        for path, params, expected in asks:
            response = requests.get(base + path, params=params, timeout=30)
            assert response.status_code == 200, (path, response.text)
            assert response.json() == jsonable(expected), path
        assert requests.get(base + "/api/v1/column-history", params={"nodeId": f"dataset:{LAKE}:crm.clean"}, timeout=30).status_code == 400
        assert requests.get(base + "/api/v1/tagged-fields", timeout=30).status_code == 400
    assert asks[4][2].root and asks[2][2].runs  # answers with something in them


def test_backward_field_operations_include_the_filters_dataset_wide_dependency(recipe_query):
    """The filter on country feeds every field of crm.clean: backward from a field shows it, as
    forward from country and column_history do (DESIGN.md section 8)."""
    answer = recipe_query.field_operations(LAKE, "crm.clean", "contact", "2026-11-20T00:00:00Z", "2026-11-21T00:00:00Z")
    assert ("INDIRECT", "FILTER") in {(o.type, o.subtype) for o in answer.operations}
    sources = {n.label for n in answer.nodes if n.sourceEndPoint is not None and n.sourceEndPoint.name == "crm.customers"}
    assert sources == {"email", "country"}
