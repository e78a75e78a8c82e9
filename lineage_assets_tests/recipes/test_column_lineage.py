"""Lineage of a recipe without data (DESIGN.md section 9): backward trees, forward sets, edge
types, labels, families bound from the output schema, and what only the data settles."""

from __future__ import annotations

import pytest

from lineage_assets.recipes import RecipeError, lineage, parse

INPUTS = ["a", "b", "c"]


def edge(lin, inp, out, kind="DIRECT"):
    found = [e for e in lin.edges_of(out) if e.input == inp and e.type == kind]
    assert len(found) == 1, (inp, out, lin.edges_of(out))
    return found[0]


def labels(lin) -> list[tuple]:
    return [(o.step, o.column, o.label) for o in lin.operations]


def test_rename_is_an_identity_under_a_new_name():
    lin = lineage("rename :a :x", INPUTS)
    assert lin.outputs == ("x", "b", "c")
    assert lin.backward("x") == {"a"} and lin.forward("a") == {"x"}
    e = edge(lin, "a", "x")
    assert (e.subtype, e.masking, e.certain, e.steps) == ("IDENTITY", False, True, (1,))
    op, = lin.operations
    assert (op.column, op.label, op.new_name) == ("a", "Rename", "x")


def test_drop_and_keep_name_every_column_they_remove():
    lin = lineage("drop :a,:b", INPUTS)
    assert lin.outputs == ("c",) and lin.forward("a") == frozenset()
    assert labels(lin) == [(1, "a", "Drop"), (1, "b", "Drop")]
    lin = lineage("keep c,a", INPUTS)
    assert lin.outputs == ("a", "c") and labels(lin) == [(1, "b", "Drop")]


def test_copy_reads_the_source_and_adds_an_identity():
    lin = lineage("copy :a :x", INPUTS)
    assert lin.forward("a") == {"a", "x"} and edge(lin, "a", "x").subtype == "IDENTITY"
    assert labels(lin) == [(1, "a", "Read"), (1, "x", "Add")]
    lin = lineage("copy :a :b true", INPUTS)
    assert lin.backward("b") == {"a"} and labels(lin) == [(1, "a", "Read"), (1, "b", "Modify")]
    assert lineage("copy :a :b", INPUTS).unresolved[0].reason.startswith("column `b` exists and force is false")


def test_merge_and_set_column_are_transformations_of_what_they_read():
    lin = lineage("merge :a :b :m ' '", INPUTS)
    assert lin.backward("m") == {"a", "b"} and edge(lin, "b", "m").subtype == "TRANSFORMATION"
    add = [o for o in lin.operations if o.label == "Add"][0]
    assert (add.column, add.reads) == ("m", ("a", "b"))
    # the columns an expression reads are found by parsing it: not a literal, not a lambda variable
    lin = lineage("set-column :x concat(b, 'a', transform(array(c), a -> a))", INPUTS)
    assert lin.backward("x") == {"b", "c"}
    lin = lineage("set-column :a a || b", INPUTS)
    assert lin.backward("a") == {"a", "b"} and labels(lin) == [(1, "b", "Read"), (1, "a", "Modify")]
    # writing over a column without reading it cuts it from its past
    lin = lineage("set-column :a upper(b)", INPUTS)
    assert lin.backward("a") == {"b"} and lin.forward("a") == frozenset()
    assert lineage("set-column :x concat_ws(',', *)", INPUTS).backward("x") == {"a", "b", "c"}


def test_set_headers_renames_by_position():
    lin = lineage("set-headers x,y", INPUTS)
    assert lin.outputs == ("x", "y", "c") and lin.backward("y") == {"b"}
    assert edge(lin, "a", "x").subtype == "IDENTITY"
    lin = lineage("set-columns p q r s", INPUTS)
    assert lin.outputs == ("p", "q", "r")
    assert any("names 4 columns; the schema has 3" in u.reason for u in lin.unresolved)


@pytest.mark.parametrize("directive", ["lowercase :a", "uppercase :a", "titlecase :a", "trim :a", "set-type :a long",
                                       "fill-null-or-empty :a 'none'"])
def test_in_place_changes_are_transformations(directive):
    lin = lineage(directive, INPUTS)
    e = edge(lin, "a", "a")
    assert (e.subtype, e.masking) == ("TRANSFORMATION", False)
    op, = lin.operations
    assert (op.column, op.label, op.reads) == ("a", "Modify", ("a",))


@pytest.mark.parametrize("directive", ["hash :a SHA-256", "mask-number :a XXX-##"])
def test_hash_and_mask_number_mask(directive):
    lin = lineage(directive + "\ncopy :a :x", INPUTS)
    assert edge(lin, "a", "a").masking and edge(lin, "a", "x").masking
    assert edge(lin, "a", "x").subtype == "TRANSFORMATION"


@pytest.mark.parametrize("directive, reads", [
    ("filter-rows-on condition-true a = 'x' and b > 1", {"a", "b"}),
    ("filter-rows-on condition-false a = 'x'", {"a"}),
    ("filter-rows-on regex-match :b '^z'", {"b"}),
    ("filter-rows-on regex-not-match :b '^z'", {"b"}),
    ("filter-rows-on empty-or-null-columns :a,:c", {"a", "c"}),
    ("filter-row exp:{ a > 1 } true", {"a"}),
    ("filter-row-if-true c is null", {"c"}),
    ("send-to-error exp:{ b is null } nulls 'b is missing'", {"b"}),
])
def test_filters_are_indirect_to_every_output(directive, reads):
    lin = lineage("copy :c :x\n" + directive + "\ndrop :c", INPUTS)
    for out in lin.outputs:
        indirect = {e.input for e in lin.edges_of(out) if e.type == "INDIRECT"}
        assert indirect == reads
        assert all(e.subtype == "FILTER" and e.steps == (2,) for e in lin.edges_of(out) if e.type == "INDIRECT")
    assert all(lin.forward(r) == set(lin.outputs) for r in reads)
    assert {o.column for o in lin.operations if o.step == 2} == reads
    assert {o.label for o in lin.operations if o.step == 2} == {"Read"}


def test_bulk_renames_rename_every_column():
    lin = lineage("cleanse-column-names", ["First Name", "AGE", "ok"])
    assert lin.outputs == ("first_name", "age", "ok")
    assert [(o.column, o.new_name) for o in lin.operations] == [("First Name", "first_name"), ("AGE", "age")]
    assert edge(lin, "AGE", "age").subtype == "IDENTITY"
    lin = lineage("change-column-case upper", ["id", "name"])
    assert lin.outputs == ("ID", "NAME") and lin.backward("NAME") == {"name"}
    lin = lineage("columns-replace s/^data_//g", ["data_name", "data_data_id", "ssn"])
    assert lin.outputs == ("name", "data_id", "ssn")
    lin = lineage("change-column-case lower", ["Id", "ID"])
    assert any("would both be called `id`" in u.reason for u in lin.unresolved)


def test_generate_uuid_and_split_email():
    lin = lineage("generate-uuid :id\nsplit-email :b", INPUTS)
    assert lin.backward("id") == frozenset() and [o.label for o in lin.operations if o.column == "id"] == ["Add"]
    assert lin.backward("b_account") == {"b"} == lin.backward("b_domain")
    assert edge(lin, "b", "b_domain").subtype == "TRANSFORMATION"


def test_renames_chain_through_swaps():
    lin = lineage("rename :a :x\nswap :x :b\nrename :b :y\nswap :y :c", INPUTS)
    # x (from a) and b swap names: column `b` now holds a, `x` holds b; then b -> y; y and c swap
    assert lin.outputs == ("c", "x", "y")
    assert (lin.backward("c"), lin.backward("x"), lin.backward("y")) == ({"a"}, {"b"}, {"c"})
    assert edge(lin, "a", "c").steps == (1, 2, 3, 4) and edge(lin, "a", "c").subtype == "IDENTITY"
    tree = lin.backward_tree("c").to_dict()
    chain = []
    while tree.get("sources"):
        chain.append((tree["column"], tree["step"]))
        tree = tree["sources"][0]
    assert chain == [("c", 4), ("y", 3), ("b", 2), ("x", 1)] and tree == {
        "column": "a", "step": None, "directive": None, "action": "input"}


def test_a_column_dropped_and_added_again_is_a_new_column():
    lin = lineage("lowercase :a\ndrop :a\nset-column :a 1", INPUTS)
    assert lin.backward("a") == frozenset() and lin.forward("a") == frozenset()
    assert [(o.step, o.label) for o in lin.operations if o.column == "a"] == [(1, "Modify"), (2, "Drop"), (3, "Add")]


def test_families_stay_all_columns_forms_without_an_output_schema():
    lin = lineage("parse-as-csv :body ','\nsplit-to-columns :t ,\nparse-as-json :js", ["body", "t", "js"])
    assert lin.families == ("all columns formatted body_%d", "all columns formatted t_%d", "all columns formatted js_%s")
    assert lin.backward("body_3") == {"body"} and lin.backward("js_anything") == {"js"}
    assert edge(lin, "body", "body_7").subtype == "TRANSFORMATION"
    with pytest.raises(KeyError):
        lin.backward("nope")
    assert [o.column for o in lin.operations if o.label == "Add"] == [
        "all columns formatted body_%d", "all columns formatted t_%d", "all columns formatted js_%s"]


def test_the_output_schema_binds_family_members_by_name():
    lin = lineage("parse-as-csv :body ','\ndrop :body\nrename :body_2 :second", ["body"], ["body_1", "second", "body_3"])
    assert lin.outputs == ("body_1", "second", "body_3") and lin.unresolved == ()
    assert all(lin.backward(c) == {"body"} for c in lin.outputs)
    assert sorted(o.column for o in lin.operations if o.label == "Add") == ["body_1", "body_2", "body_3"]
    assert [o.new_name for o in lin.operations if o.label == "Rename"] == ["second"]


def test_regex_groups_bind_only_the_groups_the_regex_has():
    lin = lineage("extract-regex-groups :t ([a-z]+)-([0-9]+)", ["t"])
    assert lin.backward("t_1_2") == {"t"} and lin.backward("t_3_1") == {"t"}
    with pytest.raises(KeyError):
        lin.backward("t_1_3")
    lin = lineage("extract-regex-groups :t [a-z]+", ["t"], ["t"])
    assert lin.outputs == ("t",) and "no groups" in lin.unresolved[0].reason


def test_set_headers_over_a_numbered_family_at_the_end_is_certain():
    lin = lineage("parse-as-csv :b ','\ndrop :b\nset-headers x,y", ["b"], ["x", "y"])
    assert lin.unresolved == ()
    e = edge(lin, "b", "x")
    assert e.certain and e.steps == (1, 3)


def test_the_designs_example_reports_what_only_the_data_knows():
    lin = lineage("parse-as-csv :body ',' true\ndrop :body\nlowercase :nameOfOwner\nset-columns A B C", ["body"], ["A", "B", "C"])
    for column, position in (("A", 1), ("B", 2), ("C", 3)):
        e, = lin.edges_of(column)
        assert (e.input, e.certain, e.steps, e.maybe_steps) == ("body", True, (1, 4), (3,))
        note, = [u for u in lin.unresolved if u.column == column]
        assert note.step == 4 and f"position {position}" in note.reason and "nameOfOwner" in note.reason
    tree = lin.backward_tree("A").to_dict()
    assert tree["possible"][0]["directive"] == "lowercase :nameOfOwner"


def test_two_families_that_may_make_a_name_are_reported_not_guessed():
    lin = lineage("parse-as-json :a\nlowercase :a\nparse-as-json :a\nuppercase :a_k", ["a"], ["a", "a_k"])
    e, = lin.edges_of("a_k")
    assert not e.certain and e.input == "a"
    assert any("more than one directive may make it" in u.reason for u in lin.unresolved)
    # the same directive on the same unchanged column makes the same columns again: no doubt
    lin = lineage("parse-as-json :a\nparse-as-json :a", ["a"], ["a", "a_k"])
    assert lin.unresolved == () and edge(lin, "a", "a_k").certain


def test_references_the_schema_cannot_settle_are_reported():
    lin = lineage("lowercase :zz\nrename :nope :x\ndrop :gone", INPUTS, ["a", "b", "c", "extra"])
    reasons = {u.column: u.reason for u in lin.unresolved}
    assert reasons["zz"] == "column `zz` does not exist before this directive"
    assert reasons["nope"] == "column `nope` does not exist: rename does nothing"
    assert reasons["gone"] == "column `gone` does not exist: nothing to drop"
    assert "is not made by the recipe" in reasons["extra"]
    lin = lineage("drop :a", INPUTS, ["b"])
    assert {u.column: u.reason for u in lin.unresolved}["c"].endswith("the output schema does not have it")


def test_every_edge_is_seen_from_both_ends():
    lin = lineage("rename :a :x\ncopy :x :y\nmerge :y :b :m '-'\nfilter-row exp:{ c > 1 } true\nhash :m MD5", INPUTS)
    for e in lin.edges:
        assert e.output in lin.forward(e.input) and e.input in lin.backward(e.output)
    assert lin.backward("m", direct_only=True) == {"a", "b"} and lin.backward("m") == {"a", "b", "c"}


def test_bad_schemas_are_errors():
    with pytest.raises(RecipeError, match="listed twice"):
        lineage("drop :a", ["a", "a"])
    with pytest.raises(RecipeError, match="not one string"):
        lineage("drop :a", "a")
    with pytest.raises(KeyError):
        lineage(parse("drop :a"), INPUTS).forward("zz")
