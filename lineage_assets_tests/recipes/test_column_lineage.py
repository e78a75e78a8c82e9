"""Lineage of a recipe without data (DESIGN.md section 9; lineage_assets/recipes/column_lineage.py):
backward sets and trees, forward sets, edge types, labels, families bound from the output schema,
and what only the data settles.

The expected answers are worked out from Wrangler's semantics: renames, copies, swaps, keeps and
set-headers move values unchanged (DIRECT/IDENTITY); directives that compute values are
DIRECT/TRANSFORMATION (hash and mask-number also `masking`); filters keep or remove whole rows, so
the columns they read reach every output column INDIRECT/FILTER. Each directive labels each
column it touches once: Read, Drop, Add, Rename (old and new name) or Modify.
"""

from __future__ import annotations

import pytest

from lineage_assets.recipes import DIRECTIVES, RecipeError, lineage, parse

INPUTS = ["a", "b", "c"]
ID, TR = "IDENTITY", "TRANSFORMATION"


def edge(lin, inp, out, kind="DIRECT"):
    found = [e for e in lin.edges_of(out) if e.input == inp and e.type == kind]
    assert len(found) == 1, (inp, out, lin.edges_of(out))
    return found[0]


def direct(lin) -> set[tuple]:
    return {(e.input, e.output, e.subtype, e.masking) for e in lin.edges if e.type == "DIRECT"}


def same(*columns) -> set[tuple]:
    """Columns the recipe leaves as they were: identity edges onto themselves."""
    return {(c, c, ID, False) for c in columns}


def ops(lin) -> list[tuple]:
    return [(o.step, o.column, o.label, o.reads, o.new_name) for o in lin.operations]


def labels(lin) -> list[tuple]:
    return [(o.step, o.column, o.label) for o in lin.operations]


# --- one row per directive: outputs, direct edges, filter reads, labels -------------------------

R, D, A, N, M = "Read", "Drop", "Add", "Rename", "Modify"

# (directive, recipe, inputs, output schema or None, outputs, DIRECT edges, columns a filter
#  reads (INDIRECT to every output), operations as (step, column, label, reads, new_name))
LINEAGE_CASES = [
    ("rename", "rename :a :x", INPUTS, None, ("x", "b", "c"),
     {("a", "x", ID, False)} | same("b", "c"), set(),
     [(1, "a", N, ("a",), "x")]),
    ("drop", "drop :a", INPUTS, None, ("b", "c"), same("b", "c"), set(),
     [(1, "a", D, (), None)]),
    ("keep", "keep :b", INPUTS, None, ("b",), same("b"), set(),
     [(1, "a", D, (), None), (1, "c", D, (), None)]),
    ("copy", "copy :a :x", INPUTS, None, ("a", "b", "c", "x"),
     same("a", "b", "c") | {("a", "x", ID, False)}, set(),
     [(1, "a", R, (), None), (1, "x", A, ("a",), None)]),
    ("merge", "merge :a :b :m '-'", INPUTS, None, ("a", "b", "c", "m"),
     same("a", "b", "c") | {("a", "m", TR, False), ("b", "m", TR, False)}, set(),
     [(1, "a", R, (), None), (1, "b", R, (), None), (1, "m", A, ("a", "b"), None)]),
    ("swap", "swap :a :b", INPUTS, None, ("b", "a", "c"),
     {("a", "b", ID, False), ("b", "a", ID, False)} | same("c"), set(),
     [(1, "a", N, ("a",), "b"), (1, "b", N, ("b",), "a")]),
    ("set-column", "set-column :x concat(a, c)", INPUTS, None, ("a", "b", "c", "x"),
     same("a", "b", "c") | {("a", "x", TR, False), ("c", "x", TR, False)}, set(),
     [(1, "a", R, (), None), (1, "c", R, (), None), (1, "x", A, ("a", "c"), None)]),
    ("set-headers", "set-headers x,y", INPUTS, None, ("x", "y", "c"),
     {("a", "x", ID, False), ("b", "y", ID, False)} | same("c"), set(),
     [(1, "a", N, ("a",), "x"), (1, "b", N, ("b",), "y")]),
    ("set-type", "set-type :b double", INPUTS, None, ("a", "b", "c"),
     same("a", "c") | {("b", "b", TR, False)}, set(),
     [(1, "b", M, ("b",), None)]),
    ("parse-as-csv", "parse-as-csv :a ','", INPUTS, ["a", "b", "c", "a_1", "a_2"],
     ("a", "b", "c", "a_1", "a_2"),
     same("a", "b", "c") | {("a", "a_1", TR, False), ("a", "a_2", TR, False)}, set(),
     [(1, "a", R, (), None), (1, "a_1", A, ("a",), None), (1, "a_2", A, ("a",), None)]),
    ("parse-as-json", "parse-as-json :a", INPUTS, ["a", "b", "c", "a_name"], ("a", "b", "c", "a_name"),
     same("a", "b", "c") | {("a", "a_name", TR, False)}, set(),
     [(1, "a", R, (), None), (1, "a_name", A, ("a",), None)]),
    ("split-to-columns", "split-to-columns :c '-'", INPUTS, ["a", "b", "c", "c_1", "c_2"],
     ("a", "b", "c", "c_1", "c_2"),
     same("a", "b", "c") | {("c", "c_1", TR, False), ("c", "c_2", TR, False)}, set(),
     [(1, "c", R, (), None), (1, "c_1", A, ("c",), None), (1, "c_2", A, ("c",), None)]),
    # split-email reads its column once and adds <column>_account and <column>_domain
    ("split-email", "split-email :a", INPUTS, None, ("a", "b", "c", "a_account", "a_domain"),
     same("a", "b", "c") | {("a", "a_account", TR, False), ("a", "a_domain", TR, False)}, set(),
     [(1, "a", R, (), None), (1, "a_account", A, ("a",), None), (1, "a_domain", A, ("a",), None)]),
    ("extract-regex-groups", "extract-regex-groups :a '([a-z]+)-([0-9]+)'", INPUTS,
     ["a", "b", "c", "a_1_1", "a_1_2"], ("a", "b", "c", "a_1_1", "a_1_2"),
     same("a", "b", "c") | {("a", "a_1_1", TR, False), ("a", "a_1_2", TR, False)}, set(),
     [(1, "a", R, (), None), (1, "a_1_1", A, ("a",), None), (1, "a_1_2", A, ("a",), None)]),
    ("lowercase", "lowercase :a", INPUTS, None, ("a", "b", "c"),
     {("a", "a", TR, False)} | same("b", "c"), set(), [(1, "a", M, ("a",), None)]),
    ("uppercase", "uppercase :b", INPUTS, None, ("a", "b", "c"),
     {("b", "b", TR, False)} | same("a", "c"), set(), [(1, "b", M, ("b",), None)]),
    ("titlecase", "titlecase :c", INPUTS, None, ("a", "b", "c"),
     {("c", "c", TR, False)} | same("a", "b"), set(), [(1, "c", M, ("c",), None)]),
    ("trim", "trim :a", INPUTS, None, ("a", "b", "c"),
     {("a", "a", TR, False)} | same("b", "c"), set(), [(1, "a", M, ("a",), None)]),
    ("fill-null-or-empty", "fill-null-or-empty :c 'none'", INPUTS, None, ("a", "b", "c"),
     {("c", "c", TR, False)} | same("a", "b"), set(), [(1, "c", M, ("c",), None)]),
    ("filter-rows-on", "filter-rows-on regex-match :b '^z'", INPUTS, None, ("a", "b", "c"),
     same("a", "b", "c"), {"b"}, [(1, "b", R, (), None)]),
    ("filter-row", "filter-row exp:{ a > 1 } true", INPUTS, None, ("a", "b", "c"),
     same("a", "b", "c"), {"a"}, [(1, "a", R, (), None)]),
    ("columns-replace", "columns-replace s/^data_//g", ["data_a", "data_b", "c"], None, ("a", "b", "c"),
     {("data_a", "a", ID, False), ("data_b", "b", ID, False)} | same("c"), set(),
     [(1, "data_a", N, ("data_a",), "a"), (1, "data_b", N, ("data_b",), "b")]),
    ("change-column-case", "change-column-case upper", INPUTS, None, ("A", "B", "C"),
     {("a", "A", ID, False), ("b", "B", ID, False), ("c", "C", ID, False)}, set(),
     [(1, "a", N, ("a",), "A"), (1, "b", N, ("b",), "B"), (1, "c", N, ("c",), "C")]),
    ("cleanse-column-names", "cleanse-column-names", ["First Name", "AGE", "ok"], None,
     ("first_name", "age", "ok"),
     {("First Name", "first_name", ID, False), ("AGE", "age", ID, False)} | same("ok"), set(),
     [(1, "First Name", N, ("First Name",), "first_name"), (1, "AGE", N, ("AGE",), "age")]),
    ("generate-uuid", "generate-uuid :id", INPUTS, None, ("a", "b", "c", "id"),
     same("a", "b", "c"), set(), [(1, "id", A, (), None)]),
    ("hash", "hash :a SHA-256", INPUTS, None, ("a", "b", "c"),
     {("a", "a", TR, True)} | same("b", "c"), set(), [(1, "a", M, ("a",), None)]),
    ("mask-number", "mask-number :b XXX-##", INPUTS, None, ("a", "b", "c"),
     {("b", "b", TR, True)} | same("a", "c"), set(), [(1, "b", M, ("b",), None)]),
    ("send-to-error", "send-to-error exp:{ c is null } nulls", INPUTS, None, ("a", "b", "c"),
     same("a", "b", "c"), {"c"}, [(1, "c", R, (), None)]),
]


def test_the_lineage_cases_cover_every_directive():
    assert {case[0] for case in LINEAGE_CASES} == set(DIRECTIVES)
    assert all(parse(case[1]).steps[0].name == case[0] for case in LINEAGE_CASES)


@pytest.mark.parametrize("name, text, inputs, output_schema, outputs, edges, filter_reads, operations",
                         LINEAGE_CASES, ids=[c[0] for c in LINEAGE_CASES])
def test_each_directive_lineage(name, text, inputs, output_schema, outputs, edges, filter_reads, operations):
    lin = lineage(text, inputs, output_schema)
    assert lin.outputs == outputs
    assert lin.unresolved == ()
    assert direct(lin) == edges
    for e in lin.edges:
        if e.type == "DIRECT":
            assert e.certain and e.maybe_steps == ()
            untouched = (e.input, e.output, e.subtype, e.masking) in same(*inputs)
            assert e.steps == (() if untouched else (1,))
        else:
            assert (e.type, e.subtype, e.masking, e.certain, e.steps) == ("INDIRECT", "FILTER", False, True, (1,))
    # a filter reaches every output column from every column it reads
    assert {(e.input, e.output) for e in lin.edges if e.type == "INDIRECT"} == {
        (r, o) for r in filter_reads for o in outputs}
    # backward and forward follow the edges
    for out in outputs:
        assert lin.backward(out) == {i for i, o, _s, _m in edges if o == out} | filter_reads
        assert lin.backward(out, direct_only=True) == {i for i, o, _s, _m in edges if o == out}
    for inp in inputs:
        assert lin.forward(inp) == {o for i, o, _s, _m in edges if i == inp} | (
            set(outputs) if inp in filter_reads else set())
    assert ops(lin) == operations
    assert all(o.name == name and o.directive == text and o.line == 1 for o in lin.operations)


# --- labels -------------------------------------------------------------------------------------


def test_set_column_adds_a_new_column_and_modifies_an_existing_one():
    lin = lineage("set-column :x a * 2", INPUTS)
    assert ops(lin) == [(1, "a", "Read", (), None), (1, "x", "Add", ("a",), None)]
    lin = lineage("set-column :a upper(a)", INPUTS)
    assert ops(lin) == [(1, "a", "Modify", ("a",), None)]
    assert edge(lin, "a", "a").subtype == TR
    lin = lineage("set-column :a a || b", INPUTS)
    assert ops(lin) == [(1, "b", "Read", (), None), (1, "a", "Modify", ("a", "b"), None)]
    assert lin.backward("a") == {"a", "b"} and lin.forward("b") == {"a", "b"}
    # writing over a column without reading it cuts it from its past
    lin = lineage("set-column :a upper(b)", INPUTS)
    assert lin.backward("a") == {"b"} and lin.forward("a") == frozenset()
    assert ops(lin) == [(1, "b", "Read", (), None), (1, "a", "Modify", ("b",), None)]


def test_copy_over_an_existing_column():
    lin = lineage("copy :a :b true", INPUTS)
    assert lin.backward("b") == {"a"} and lin.forward("b") == frozenset()
    assert labels(lin) == [(1, "a", "Read"), (1, "b", "Modify")]
    assert edge(lin, "a", "b").subtype == ID
    lin = lineage("copy :a :b", INPUTS)
    note, = lin.unresolved
    assert (note.step, note.column) == (1, "b")
    assert note.reason.startswith("column `b` exists and force is false")


def test_a_filter_reading_a_derived_column_reaches_back_to_its_inputs():
    lin = lineage("set-column :x a + b\nfilter-row exp:{ x > 1 } true\ndrop :x", INPUTS)
    assert lin.outputs == ("a", "b", "c")
    for out in lin.outputs:
        assert {e.input for e in lin.edges_of(out) if e.type == "INDIRECT"} == {"a", "b"}
        assert all(e.steps == (2,) for e in lin.edges_of(out) if e.type == "INDIRECT")
    assert lin.forward("a") == {"a", "b", "c"} and lin.forward("c") == {"c"}
    assert labels(lin) == [(1, "a", "Read"), (1, "b", "Read"), (1, "x", "Add"), (2, "x", "Read"), (3, "x", "Drop")]


@pytest.mark.parametrize("directive, reads", [
    ("filter-rows-on condition-true a = 'x' and b > 1", {"a", "b"}),
    ("filter-rows-on condition-false a = 'x'", {"a"}),
    ("filter-rows-on regex-match :b '^z'", {"b"}),
    ("filter-rows-on regex-not-match :b '^z'", {"b"}),
    ("filter-rows-on empty-or-null-columns :a,:c", {"a", "c"}),
    ("filter-row exp:{ a > 1 } true", {"a"}),
    ("filter-row exp:{ a > 1 } false", {"a"}),
    ("filter-row-if-true c is null", {"c"}),
    ("send-to-error exp:{ b is null } nulls 'b is missing'", {"b"}),
    ("send-to-error a > b", {"a", "b"}),
])
def test_filters_are_indirect_to_every_output(directive, reads):
    # the copy made before the filter and the column dropped after it are still filtered
    lin = lineage("copy :c :x\n" + directive + "\ndrop :c", INPUTS)
    assert lin.outputs == ("a", "b", "x")
    for out in lin.outputs:
        indirect = [e for e in lin.edges_of(out) if e.type == "INDIRECT"]
        assert {e.input for e in indirect} == reads
        assert all((e.subtype, e.masking, e.steps) == ("FILTER", False, (2,)) for e in indirect)
    assert all(lin.forward(r) == set(lin.outputs) for r in reads)
    assert lin.forward("c", direct_only=True) == {"x"}
    assert sorted((o.column, o.label) for o in lin.operations if o.step == 2) == sorted((r, "Read") for r in reads)


def test_a_filter_shows_in_the_backward_tree_of_every_output():
    lin = lineage("filter-row exp:{ a > 1 } true\nrename :a :x", INPUTS)
    for out in ("x", "b"):
        tree = lin.backward_tree(out).to_dict()
        assert tree["filters"] == [{"step": 1, "directive": "filter-row exp:{ a > 1 } true",
                                    "reads": [{"column": "a", "step": None, "directive": None, "action": "input"}]}]


@pytest.mark.parametrize("text", ["filter-row exp:{ concat_ws(',', *) = '' } true",
                                  "set-column :x concat_ws(',', *)"])
def test_labels_of_a_step_that_reads_every_column(text):
    # a filter or expression over `*` reads every column: each is labelled Read (or an
    # "all columns" Read is recorded), as the columns it names are
    lin = lineage(text, INPUTS)
    reads = [o for o in lin.operations if o.label == "Read"]
    assert {o.column for o in reads} >= set(INPUTS) or any(
        o.pattern and o.column.startswith("all columns") for o in reads), lin.operations


@pytest.mark.parametrize("text", [
    "split-email :a", "merge :a :a :m ''", "set-column :x concat(a, a, upper(a))",
    "filter-row exp:{ a > 1 and a < 5 } true", "filter-rows-on empty-or-null-columns :a,:a",
    "copy :a :x\ncopy :a :y",
])
def test_no_step_labels_a_column_twice(text):
    # "each directive states, for each column it touches, one label" (DESIGN.md 9): one
    # field_operations row per (step, column, label)
    rows = [(o.step, o.column, o.label) for o in lineage(text, INPUTS).operations]
    assert rows and len(rows) == len(set(rows)), rows


# --- renames, swaps, drops ---------------------------------------------------------------------


def test_renames_chained_through_a_swap():
    lin = lineage("rename a x\nswap x b\nrename b y", INPUTS)
    # a -> x; swap: the column called x (values of a) is now called b, the column b is called x;
    # then b (values of a) -> y
    assert lin.outputs == ("y", "x", "c")
    assert (lin.backward("y"), lin.backward("x"), lin.backward("c")) == ({"a"}, {"b"}, {"c"})
    assert (lin.forward("a"), lin.forward("b")) == ({"y"}, {"x"})
    assert edge(lin, "a", "y").steps == (1, 2, 3) and edge(lin, "b", "x").steps == (2,)
    assert {(e.subtype, e.masking) for e in lin.edges} == {(ID, False)}
    assert ops(lin) == [(1, "a", "Rename", ("a",), "x"),
                        (2, "x", "Rename", ("x",), "b"), (2, "b", "Rename", ("b",), "x"),
                        (3, "b", "Rename", ("b",), "y")]


def test_renames_chain_through_two_swaps():
    lin = lineage("rename :a :x\nswap :x :b\nrename :b :y\nswap :y :c", INPUTS)
    # after step 3 as above (y<-a, x<-b, c<-c); then y and c swap names
    assert lin.outputs == ("c", "x", "y")
    assert (lin.backward("c"), lin.backward("x"), lin.backward("y")) == ({"a"}, {"b"}, {"c"})
    assert edge(lin, "a", "c").steps == (1, 2, 3, 4) and edge(lin, "a", "c").subtype == ID
    tree = lin.backward_tree("c").to_dict()
    chain = []
    while tree.get("sources"):
        chain.append((tree["column"], tree["step"], tree["action"]))
        tree = tree["sources"][0]
    assert chain == [("c", 4, "rename"), ("y", 3, "rename"), ("b", 2, "rename"), ("x", 1, "rename")]
    assert tree == {"column": "a", "step": None, "directive": None, "action": "input"}


def test_keep_and_set_headers_chains_are_identities():
    lin = lineage("keep :c,:a\nset-headers p,q\ncopy :q :r", INPUTS)
    assert lin.outputs == ("p", "q", "r")
    assert direct(lin) == {("a", "p", ID, False), ("c", "q", ID, False), ("c", "r", ID, False)}
    assert edge(lin, "c", "r").steps == (2, 3) and lin.forward("b") == frozenset()


def test_a_column_dropped_and_added_again_is_a_new_column():
    lin = lineage("drop a\nset-column :a 1", INPUTS)
    assert lin.outputs == ("b", "c", "a")
    assert lin.backward("a") == frozenset() and lin.forward("a") == frozenset()
    assert lin.edges_of("a") == ()
    assert ops(lin) == [(1, "a", "Drop", (), None), (2, "a", "Add", (), None)]
    lin = lineage("lowercase :a\ndrop :a\nset-column :a upper(b)", INPUTS)
    assert lin.backward("a") == {"b"} and lin.forward("a") == frozenset()
    assert [(o.step, o.label) for o in lin.operations if o.column == "a"] == [(1, "Modify"), (2, "Drop"), (3, "Add")]


def test_set_headers_that_swaps_two_names_is_not_a_clash():
    # positions 1 and 2 are renamed b and a: the final names are unique, nothing is unresolved
    lin = lineage("set-headers b,a", INPUTS)
    assert lin.outputs == ("b", "a", "c")
    assert lin.backward("b") == {"a"} and lin.backward("a") == {"b"}
    assert lin.unresolved == ()


def test_set_headers_with_more_names_than_columns_is_reported():
    lin = lineage("set-columns p q r s", INPUTS)
    assert lin.outputs == ("p", "q", "r")
    note, = lin.unresolved
    assert note.column == "s" and "names 4 columns; the schema has 3" in note.reason


# --- masking ------------------------------------------------------------------------------------


@pytest.mark.parametrize("directive", ["hash :a SHA-256", "hash :a md5 false", "mask-number :a XXX-##"])
def test_masking_directives_mask_every_path_after_them(directive):
    lin = lineage(directive + "\ncopy :a :x\nmerge :x :b :m ''", INPUTS)
    assert edge(lin, "a", "a").masking and edge(lin, "a", "x").masking and edge(lin, "a", "m").masking
    assert edge(lin, "a", "x").subtype == TR  # the copy of a masked value is still a transformation of a
    assert not edge(lin, "b", "m").masking and not edge(lin, "b", "b").masking


def test_a_path_around_the_mask_is_not_masked():
    lin = lineage("copy :a :x\nhash :a MD5\nmerge :a :x :m ''", INPUTS)
    assert edge(lin, "a", "a").masking and not edge(lin, "a", "x").masking
    assert not edge(lin, "a", "m").masking  # one path to m does not pass the mask


# --- bulk renames ---------------------------------------------------------------------------


def test_bulk_renames_rename_every_column():
    lin = lineage("cleanse-column-names", ["First Name", "AGE", "ok"])
    assert lin.outputs == ("first_name", "age", "ok")
    assert [(o.label, o.column, o.new_name) for o in lin.operations] == [
        ("Rename", "First Name", "first_name"), ("Rename", "AGE", "age")]
    lin = lineage("change-column-case upper", ["id", "name"])
    assert lin.outputs == ("ID", "NAME") and lin.backward("NAME") == {"name"}
    assert [(o.label, o.column, o.new_name) for o in lin.operations] == [("Rename", "id", "ID"), ("Rename", "name", "NAME")]
    lin = lineage("columns-replace s/^data_//g", ["data_name", "data_data_id", "ssn"])
    assert lin.outputs == ("name", "data_id", "ssn")
    assert [(o.label, o.column, o.new_name) for o in lin.operations] == [
        ("Rename", "data_name", "name"), ("Rename", "data_data_id", "data_id")]
    assert all(e.subtype == ID for e in lin.edges)


def test_a_collision_from_a_bulk_rename_is_reported():
    lin = lineage("change-column-case lower", ["Id", "ID", "x"])
    note, = lin.unresolved
    assert (note.step, note.column) == (1, "id")
    assert "`Id` and `ID` would both be called `id`" in note.reason
    lin = lineage("columns-replace s/^data_//g", ["data_id", "id"])
    assert any("would both be called `id`" in u.reason for u in lin.unresolved)


# --- expressions --------------------------------------------------------------------------------


def test_set_column_reads_the_columns_its_expression_names():
    lin = lineage("set-column :name concat(last, ', ', first)", ["first", "last", "age"])
    assert lin.backward("name") == {"first", "last"}
    add, = [o for o in lin.operations if o.label == "Add"]
    assert (add.column, add.reads) == ("name", ("last", "first"))  # in order of first use
    # a string literal naming a column is not a read
    lin = lineage("set-column :x concat(first, 'last', \"age\")", ["first", "last", "age"])
    assert lin.backward("x") == {"first"} and lin.forward("last") == {"last"}
    # lambda variables are not columns, even when an input has the same name
    lin = lineage("set-column :x transform(arr, a -> a + b)", ["a", "b", "arr"])
    assert lin.backward("x") == {"arr", "b"}
    lin = lineage("set-column :x aggregate(arr, 0, (acc, v) -> acc + v + c)", ["acc", "v", "c", "arr"])
    assert lin.backward("x") == {"arr", "c"}
    # a struct field reads its column; a backquoted name is a column
    lin = lineage("set-column :x s.f + `a b`", ["s", "a b", "f"])
    assert lin.backward("x") == {"s", "a b"}


def test_set_column_with_star_reads_every_column():
    lin = lineage("set-column :x concat_ws(',', *)", INPUTS)
    assert lin.backward("x") == {"a", "b", "c"}
    assert all(edge(lin, c, "x").subtype == TR for c in INPUTS)
    add, = [o for o in lin.operations if o.label == "Add"]
    assert set(add.reads) == set(INPUTS)
    lin = lineage("drop :b\nset-column :x hash(*)", INPUTS)
    assert lin.backward("x") == {"a", "c"}  # the columns there at that step


# --- columns only the data names ------------------------------------------------------------


def test_families_stay_all_columns_forms_without_an_output_schema():
    lin = lineage("parse-as-csv :body ','", ["body"])
    assert lin.families == ("all columns formatted body_%d",)
    assert lin.outputs == ("body",)
    assert lin.backward("body_3") == {"body"}
    e = edge(lin, "body", "body_3")
    assert (e.subtype, e.certain, e.steps) == (TR, True, (1,))
    assert [(o.column, o.label, o.pattern) for o in lin.operations] == [
        ("body", "Read", False), ("all columns formatted body_%d", "Add", True)]
    assert lin.backward("body") == {"body"}  # parsing reads body and leaves it
    for not_a_member in ("body_0", "body_x", "body_03", "nope"):
        with pytest.raises(KeyError):
            lin.backward(not_a_member)


def test_several_families_without_an_output_schema():
    lin = lineage("parse-as-csv :body ','\nsplit-to-columns :t ,\nparse-as-json :js", ["body", "t", "js"])
    assert lin.families == ("all columns formatted body_%d", "all columns formatted t_%d",
                            "all columns formatted js_%s")
    assert lin.backward("body_3") == {"body"} and lin.backward("t_12") == {"t"}
    assert lin.backward("js_anything") == {"js"}
    with pytest.raises(KeyError):
        lin.backward("js_")
    assert [o.column for o in lin.operations if o.label == "Add"] == list(lin.families)


def test_a_family_member_renamed_in_bulk_keeps_its_source():
    lin = lineage("parse-as-csv :body ','\nchange-column-case upper", ["body"])
    assert lin.outputs == ("BODY",) and lin.backward("BODY_3") == {"body"}
    assert edge(lin, "body", "BODY_3").steps == (1, 2)
    with pytest.raises(KeyError):
        lin.backward("body_3")  # renamed


def test_the_output_schema_binds_family_members_by_name():
    lin = lineage("parse-as-csv :body ','\ndrop :body\nrename :body_2 :second", ["body"],
                  ["body_1", "second", "body_3"])
    assert lin.outputs == ("body_1", "second", "body_3") and lin.unresolved == ()
    assert lin.families == ()
    assert all(lin.backward(c) == {"body"} for c in lin.outputs)
    assert lin.forward("body") == {"body_1", "second", "body_3"}
    assert edge(lin, "body", "second").steps == (1, 3)
    assert sorted((o.step, o.column) for o in lin.operations if o.label == "Add") == [
        (1, "body_1"), (1, "body_2"), (1, "body_3")]
    assert not any(o.pattern for o in lin.operations)
    assert [(o.step, o.column, o.new_name) for o in lin.operations if o.label == "Rename"] == [(3, "body_2", "second")]


def test_bulk_renames_name_the_family_members_the_output_schema_binds():
    # with the output schema known, BODY_1 is the member body_1 renamed by step 2: "Rename ...
    # always names every column it touches"
    lin = lineage("parse-as-csv :body ','\nchange-column-case upper", ["body"], ["BODY", "BODY_1"])
    assert lin.backward("BODY_1") == {"body"} and lin.unresolved == ()
    assert [(o.column, o.label, o.new_name, o.pattern) for o in lin.operations if o.step == 2] == [
        ("body", "Rename", "BODY", False), ("body_1", "Rename", "BODY_1", False)]


def test_split_to_columns_binds_numbered_members():
    lin = lineage("split-to-columns :codes '\\|'\ndrop :codes", ["id", "codes"], ["id", "codes_1", "codes_2"])
    assert lin.unresolved == () and lin.families == ()
    assert lin.backward("codes_2") == {"codes"} and lin.forward("codes") == {"codes_1", "codes_2"}
    assert [(o.step, o.column, o.label) for o in lin.operations] == [
        (1, "codes", "Read"), (1, "codes_1", "Add"), (1, "codes_2", "Add"), (2, "codes", "Drop")]
    lin = lineage("split-to-columns :codes ,", ["codes"])
    assert lin.families == ("all columns formatted codes_%d",) and lin.backward("codes_9") == {"codes"}


def test_regex_groups_bind_only_the_groups_the_regex_has():
    regex = "([a-z]+)-([0-9]+)"  # two groups: title_<match>_1 and title_<match>_2
    lin = lineage(f"extract-regex-groups :title '{regex}'", ["title"], ["title", "title_1_1", "title_1_2"])
    assert lin.unresolved == () and lin.backward("title_1_2") == {"title"}
    assert [(o.column, o.label) for o in lin.operations] == [
        ("title", "Read"), ("title_1_1", "Add"), ("title_1_2", "Add")]
    lin = lineage(f"extract-regex-groups :title '{regex}'", ["title"], ["title", "title_1_2", "title_1_3"])
    note, = lin.unresolved
    assert note.column == "title_1_3" and "not made by the recipe" in note.reason
    assert lin.backward("title_1_3") == frozenset()
    lin = lineage(f"extract-regex-groups :title '{regex}'", ["title"])
    assert lin.families == ("all columns formatted title_%d_%d",)
    assert lin.backward("title_3_1") == {"title"} and lin.backward("title_1_2") == {"title"}
    for not_a_member in ("title_1_3", "title_0_1", "title_1_0", "title_1"):
        with pytest.raises(KeyError):
            lin.backward(not_a_member)


def test_a_regex_without_groups_adds_nothing():
    lin = lineage("extract-regex-groups :t [a-z]+", ["t"], ["t"])
    assert lin.outputs == ("t",) and lin.families == ()
    note, = lin.unresolved
    assert note.step == 1 and "no groups" in note.reason
    assert labels(lin) == [(1, "t", "Read")]


def test_parse_as_json_binds_keyed_members():
    lin = lineage("parse-as-json :js\ndrop :js", ["id", "js"], ["id", "js_name", "js_age"])
    assert lin.unresolved == ()
    assert lin.backward("js_name") == {"js"} and lin.backward("id") == {"id"}
    assert lin.forward("js") == {"js_name", "js_age"}
    assert [(o.column, o.label) for o in lin.operations] == [
        ("js", "Read"), ("js_name", "Add"), ("js_age", "Add"), ("js", "Drop")]
    lin = lineage("parse-as-json :js", ["js"], ["js", "name"])
    assert [u.column for u in lin.unresolved] == ["name"]  # not js_<key>: not from this family


def test_set_headers_over_a_numbered_family_at_the_end_is_certain():
    lin = lineage("parse-as-csv :b ','\ndrop :b\nset-headers x,y", ["b"], ["x", "y"])
    assert [u for u in lin.unresolved if u.column == "x"] == [] and lin.unresolved == ()
    e = edge(lin, "b", "x")
    assert e.certain and e.steps == (1, 3) and e.maybe_steps == ()
    assert lin.backward("y") == {"b"}
    assert [(o.step, o.column, o.label, o.new_name) for o in lin.operations if o.step == 3] == [
        (3, "b_1", "Rename", "x"), (3, "b_2", "Rename", "y")]


def test_set_headers_over_a_numbered_family_keeps_the_order_of_the_names():
    # b_1 and b_2 are named x and y in that order; the schema the recipe produces is x, y, ...
    lin = lineage("parse-as-csv :b ','\ndrop :b\nset-headers x,y", ["b"])
    assert lin.outputs == ("x", "y")
    assert lin.backward("x") == {"b"} and edge(lin, "b", "x").steps == (1, 3)


def test_the_designs_example_reports_what_only_the_data_knows():
    lin = lineage("parse-as-csv :body ',' true\ndrop :body\nlowercase :nameOfOwner\nset-columns A B C",
                  ["body"], ["A", "B", "C"])
    assert lin.outputs == ("A", "B", "C")
    assert lin.forward("body") == {"A", "B", "C"}
    for column, position in (("A", 1), ("B", 2), ("C", 3)):
        e, = lin.edges_of(column)
        assert (e.input, e.type, e.certain) == ("body", "DIRECT", True)
        assert 3 in e.maybe_steps and 3 not in e.steps and e.steps == (1, 4)
        note, = [u for u in lin.unresolved if u.column == column]
        assert note.step == 4 and note.directive == "set-columns A B C"
        assert "set-headers" in note.reason and f"position {position}" in note.reason
        assert "nameOfOwner" in note.reason
    tree = lin.backward_tree("A").to_dict()
    assert (tree["column"], tree["step"], tree["action"]) == ("A", 4, "rename")
    assert tree["sources"][0]["sources"] == [{"column": "body", "step": None, "directive": None, "action": "input"}]
    assert tree["possible"][0]["directive"] == "lowercase :nameOfOwner"


def test_two_families_that_may_make_a_name_are_reported_not_guessed():
    lin = lineage("parse-as-json :a\nlowercase :a\nparse-as-json :a\nuppercase :a_k", ["a"], ["a", "a_k"])
    e, = lin.edges_of("a_k")
    assert not e.certain and e.input == "a"
    assert any("more than one directive may make it" in u.reason for u in lin.unresolved)
    # the same directive on the same unchanged column makes the same columns again: no doubt
    lin = lineage("parse-as-json :a\nparse-as-json :a", ["a"], ["a", "a_k"])
    assert lin.unresolved == () and edge(lin, "a", "a_k").certain


# --- Rename and Drop name every column they touch ----------------------------------------------
# DESIGN.md 9: "Rename and Drop always name every column they touch". Over columns only the data
# names, such a step is a note in `unresolved`, never a row with an "all columns" form.


def rows(lin, step) -> list[tuple]:
    return [(o.column, o.label, o.reads, o.new_name, o.pattern) for o in lin.operations if o.step == step]


def notes(lin, step) -> list[tuple]:
    return [(u.column, u.new_name) for u in lin.unresolved if u.step == step]


@pytest.mark.parametrize("outputs", [None, ["body_1"]])
def test_keep_drops_by_name_and_reports_the_columns_only_the_data_names(outputs):
    # keep :body_1 drops body (a known column) and the parse's other columns, whose names the
    # output schema cannot give: they are gone before it
    lin = lineage("parse-as-csv :body ','\nkeep :body_1", ["body"], outputs)
    assert rows(lin, 2) == [("body", "Drop", (), None, False)]
    form = "all columns formatted body_%d"
    [keep] = [u for u in lin.unresolved if u.step == 2]
    assert keep.column == form and "keep drops the other columns parse-as-csv (step 1)" in keep.reason
    # what step 1 made: body_1 by name, and the rest only as its form (DESIGN 9 lets an Add name one)
    assert rows(lin, 1) == [("body", "Read", (), None, False), (form, "Add", ("body",), None, True),
                            ("body_1", "Add", ("body",), None, False)]
    assert lin.backward("body_1") == {"body"} and lin.outputs == ("body_1",)


def test_a_bulk_rename_over_columns_only_the_data_names_is_a_note():
    form = "all columns formatted body_%d"
    # without an output schema: body is renamed by name; which body_<n> exist only the data says
    lin = lineage("parse-as-csv :body ','\nchange-column-case upper", ["body"])
    assert rows(lin, 2) == [("body", "Rename", ("body",), "BODY", False)]
    [note] = [u for u in lin.unresolved if u.step == 2]
    assert note.column == form and note.new_name is None
    assert note.reason.startswith("change-column-case renames the columns parse-as-csv (step 1) made from the data")
    assert "no output schema names them" in note.reason
    # with it, every member is renamed by name (old and new), and nothing is left to report
    lin = lineage("parse-as-csv :body ','\nchange-column-case upper", ["body"], ["BODY", "BODY_1", "BODY_2"])
    assert rows(lin, 2) == [("body", "Rename", ("body",), "BODY", False),
                            ("body_1", "Rename", ("body_1",), "BODY_1", False),
                            ("body_2", "Rename", ("body_2",), "BODY_2", False)]
    assert lin.unresolved == ()
    # a later keep drops members the output schema never sees: the rename of those is a note
    lin = lineage("parse-as-csv :body ','\nchange-column-case upper\nkeep :BODY_1", ["body"], ["BODY_1"])
    assert rows(lin, 2) == [("body", "Rename", ("body",), "BODY", False),
                            ("body_1", "Rename", ("body_1",), "BODY_1", False)]
    [note] = [u for u in lin.unresolved if u.step == 2]
    assert note.column == form and "keep (step 3) drops those it does not name" in note.reason


def test_set_headers_at_a_position_only_the_data_knows_is_a_note_with_the_name_it_gives():
    # the header names the columns; which one is first is the data's: no Rename row can name it
    lin = lineage("parse-as-csv :body ',' true\ndrop :body\nset-headers A,B", ["body"], ["A", "B"])
    assert rows(lin, 3) == []
    assert notes(lin, 3) == [("A", "A"), ("B", "B")]
    assert all("position" in u.reason for u in lin.unresolved if u.step == 3)
    # A and B still come from body for certain: a column the parse made, renamed by step 3
    for column in ("A", "B"):
        [e] = lin.edges_of(column)
        assert (e.input, e.type, e.subtype, e.certain) == ("body", "DIRECT", TR, True)
        assert e.steps == (1, 3) and e.maybe_steps == ()


def test_a_bulk_rename_of_a_json_family_whose_earlier_names_are_lost_is_a_note():
    # columns-replace is not idempotent: j_name's name before it cannot be worked back
    lin = lineage("parse-as-json :js\ncolumns-replace s/js_/j_/g", ["js"], ["js", "j_name"])
    assert rows(lin, 2) == []
    [note] = [u for u in lin.unresolved if u.step == 2]
    assert note.column == "all columns formatted js_%s" and "`j_name`" in note.reason


# --- a read of every column names the columns the output schema binds -------------------------
# DESIGN.md 9: Read, Modify and Add may name "all columns formatted body_%d", bound later against
# the schema the recipe produces; where that schema names the members, they are read by name.


@pytest.mark.parametrize("directive, written", [
    ("set-column :n concat_ws(',', *)", "n"),
    ("filter-row exp:{ concat_ws(',', *) = '' } true", None),
])
def test_a_read_of_every_column_names_the_members_the_output_schema_binds(directive, written):
    outputs = ["body", "body_1", "body_2"] + ([written] if written else [])
    lin = lineage("parse-as-csv :body ','\n" + directive, ["body"], outputs)
    # at step 2 the schema is body and the parse's body_1, body_2: `*` reads all three
    reads = [("body", "Read", (), None, False), ("body_1", "Read", (), None, False),
             ("body_2", "Read", (), None, False)]
    assert rows(lin, 2) == reads + ([(written, "Add", ("body", "body_1", "body_2"), None, False)] if written else [])
    assert lin.unresolved == () and not any(o.pattern for o in lin.operations)
    if written:  # the edges go back to the input the members came from
        [e] = lin.edges_of(written)
        assert (e.input, e.type, e.subtype, e.certain, e.steps) == ("body", "DIRECT", TR, True, (1, 2))


def test_a_read_of_every_column_names_members_as_they_are_called_at_that_step():
    # after change-column-case the members are BODY_1, ...; before it body_1, ...
    lin = lineage("parse-as-csv :body ','\nchange-column-case upper\nset-column :n concat_ws(',', *)", ["body"],
                  ["BODY", "BODY_1", "n"])
    assert rows(lin, 3) == [("BODY", "Read", (), None, False), ("BODY_1", "Read", (), None, False),
                            ("n", "Add", ("BODY", "BODY_1"), None, False)]
    lin = lineage("parse-as-csv :body ','\nfilter-row exp:{ concat_ws(',', *) = '' } true\nchange-column-case upper",
                  ["body"], ["BODY", "BODY_1"])
    assert rows(lin, 2) == [("body", "Read", (), None, False), ("body_1", "Read", (), None, False)]
    assert lin.unresolved == ()


def test_a_read_of_every_column_names_a_member_dropped_by_name_later():
    # body_3 is gone from the output, but a later drop names it: it was there when step 2 read `*`
    lin = lineage("parse-as-csv :body ','\nset-column :n concat_ws(',', *)\ndrop :body_3", ["body"],
                  ["body", "body_1", "body_2", "n"])
    assert [c for c, label, *_ in rows(lin, 2) if label == "Read"] == ["body", "body_1", "body_2", "body_3"]
    assert [o.reads for o in lin.operations if o.column == "n"] == [("body", "body_1", "body_2", "body_3")]
    assert lin.unresolved == ()


def test_a_read_of_every_column_before_a_family_made_again_names_what_both_make():
    # the same parse of the same unchanged column makes the same columns: a_k was there at step 2
    lin = lineage("parse-as-json :a\nset-column :n concat_ws(',', *)\nparse-as-json :a", ["a"], ["a", "a_k", "n"])
    assert rows(lin, 2) == [("a", "Read", (), None, False), ("a_k", "Read", (), None, False),
                            ("n", "Add", ("a", "a_k"), None, False)]
    assert [(o.step, o.column) for o in lin.operations if o.label == "Add" and o.column == "a_k"] == [(1, "a_k"), (3, "a_k")]
    assert lin.unresolved == ()


def test_a_read_of_every_column_the_output_schema_cannot_bind_keeps_its_form_and_is_reported():
    form = "all columns formatted body_%d"
    # keep drops the members it does not name: which ones step 2 read only the data knows
    lin = lineage("parse-as-csv :body ','\nset-column :n concat_ws(',', *)\nkeep :n,body_1", ["body"], ["n", "body_1"])
    assert rows(lin, 2) == [("body", "Read", (), None, False), (form, "Read", (), None, True),
                            ("n", "Add", ("body",), None, False)]
    [note] = [u for u in lin.unresolved if u.step == 2]
    assert note.column == form and "reads the columns parse-as-csv (step 1)" in note.reason
    assert "keep (step 3) drops those it does not name" in note.reason
    # so may a column written under a member's name: whether the parse made body_1 (then read
    # by `*` before it is written over) only the data says
    lin = lineage("parse-as-csv :body ','\nset-column :body_1 concat_ws(',', *)", ["body"], ["body", "body_1", "body_2"])
    assert rows(lin, 2) == [("body", "Read", (), None, False), (form, "Read", (), None, True),
                            ("body_1", "Add", ("body",), None, False)]
    assert any(u.step == 2 and u.column == form and "`body_1` (step 2 set-column)" in u.reason for u in lin.unresolved)
    # without an output schema the form is the answer (bound later), not a doubt
    lin = lineage("parse-as-csv :body ','\nset-column :n concat_ws(',', *)", ["body"])
    assert rows(lin, 2) == [("body", "Read", (), None, False), (form, "Read", (), None, True),
                            ("n", "Add", ("body",), None, False)]
    assert lin.unresolved == ()


# --- what cannot be settled ----------------------------------------------------------------


def test_references_the_schema_cannot_settle_are_reported():
    lin = lineage("lowercase :zz\nrename :nope :x\ndrop :gone\nset-column :y q + 1", INPUTS,
                  ["a", "b", "c", "y", "extra"])
    reasons = {u.column: (u.step, u.reason) for u in lin.unresolved}
    assert reasons["zz"] == (1, "column `zz` does not exist before this directive")
    assert reasons["nope"] == (2, "column `nope` does not exist: rename does nothing")
    assert reasons["gone"] == (3, "column `gone` does not exist: nothing to drop")
    assert reasons["q"] == (4, "column `q` does not exist before this directive")
    assert reasons["extra"][0] is None and "is not made by the recipe" in reasons["extra"][1]
    assert set(reasons) == {"zz", "nope", "gone", "q", "extra"}
    assert lin.backward("extra") == frozenset() and lin.backward("y") == frozenset()
    assert lin.outputs == ("a", "b", "c", "y", "extra")


def test_a_column_the_output_schema_lacks_is_reported():
    lin = lineage("drop :a", INPUTS, ["b"])
    note, = lin.unresolved
    assert note.column == "c" and note.reason.endswith("the output schema does not have it")
    assert lin.outputs == ("b",) and lin.forward("c") == frozenset()


def test_names_with_unicode_spaces_and_quotes():
    lin = lineage("rename :'a b' :'名前'\nlowercase :é\nset-column :\"x,y\" concat(`a,b`, 'z')",
                  ["a b", "é", "a,b"])
    assert lin.outputs == ("名前", "é", "a,b", "x,y")
    assert lin.backward("名前") == {"a b"} and lin.backward("x,y") == {"a,b"}
    assert edge(lin, "é", "é").subtype == TR
    assert labels(lin) == [(1, "a b", "Rename"), (2, "é", "Modify"), (3, "a,b", "Read"), (3, "x,y", "Add")]


def test_a_quoted_name_with_a_comma_can_be_dropped():
    lin = lineage("drop :\"x,y\"", ["x,y", "z"])
    assert lin.outputs == ("z",) and lin.unresolved == ()
    assert labels(lin) == [(1, "x,y", "Drop")]


# --- trees --------------------------------------------------------------------------------------


def test_backward_tree_of_a_three_step_chain():
    lin = lineage("rename :a :x\nlowercase :x\ncopy :x :y", INPUTS)
    tree = lin.backward_tree("y")
    assert tree.inputs() == {"a"}
    d = tree.to_dict()
    assert set(d) == {"column", "step", "directive", "action", "transformation", "masking", "sources"}
    assert (d["column"], d["step"], d["directive"], d["action"], d["transformation"], d["masking"]) == (
        "y", 3, "copy :x :y", "copy", ID, False)
    lower, = d["sources"]
    assert set(lower) == {"column", "step", "directive", "action", "transformation", "masking", "sources"}
    assert (lower["column"], lower["step"], lower["directive"], lower["action"], lower["transformation"],
            lower["masking"]) == ("x", 2, "lowercase :x", "modify", TR, False)
    rename, = lower["sources"]
    assert (rename["column"], rename["step"], rename["directive"], rename["action"], rename["transformation"],
            rename["masking"]) == ("x", 1, "rename :a :x", "rename", ID, False)
    leaf, = rename["sources"]
    assert leaf == {"column": "a", "step": None, "directive": None, "action": "input"}
    # the edge sums the path up: a transformation (lowercase) through all three steps
    e = edge(lin, "a", "y")
    assert (e.subtype, e.steps) == (TR, (1, 2, 3))
    # the column x itself has the same past minus the copy
    assert lin.backward_tree("x").to_dict() == lower


def test_a_recipe_thousands_of_directives_long_is_answered_not_a_recursion_error():
    """Each directive is one more state of its column: a 5,000-line recipe is a chain 5,000
    states deep, walked without recursion (Python's limit is 1,000 frames)."""
    text = "\n".join(["rename :a :x", *(["lowercase :x"] * 4_998), "copy :x :y"])
    lin = lineage(text, INPUTS)
    e = edge(lin, "a", "y")
    assert (e.subtype, e.steps[0], e.steps[-1], len(e.steps)) == (TR, 1, 5_000, 5_000)
    assert lin.forward("a") == {"x", "y"}
    tree = lin.backward_tree("y")
    assert tree.inputs() == {"a"}
    node, depth = tree.to_dict(), 0
    while "sources" in node:
        node, depth = node["sources"][0], depth + 1
    assert (node, depth) == ({"column": "a", "step": None, "directive": None, "action": "input"}, 5_000)


def _ids_and_refs(node: dict, ids: dict[int, dict], refs: list[int]) -> None:
    """The tree dict's nodes by `id` and its references, in document order; each reference
    comes after the node it names."""
    if "ref" in node:
        assert node["ref"] in ids and set(node) == {"ref"}
        refs.append(node["ref"])
        return
    if "id" in node:
        assert node["id"] not in ids
        ids[node["id"]] = node
    for key in ("sources", "possible"):
        for child in node.get(key, []):
            _ids_and_refs(child, ids, refs)
    for condition in node.get("filters", []):
        for read in condition["reads"]:
            _ids_and_refs(read, ids, refs)


def _expanded(node: dict, ids: dict[int, dict]) -> dict:
    """The tree dict with every reference replaced by the node it names, without the ids."""
    node = ids[node["ref"]] if "ref" in node else node
    out = {k: v for k, v in node.items() if k not in ("id", "sources", "possible")}
    for key in ("sources", "possible"):
        if key in node:
            out[key] = [_expanded(child, ids) for child in node[key]]
    return out


def test_a_state_reached_by_many_paths_is_written_once_and_referred_to():
    """`set-column :a a + b` then `:b a + b`, 40 times: the tree of `a` reaches the early states
    by about 2^40 paths. Its dict holds each state once (an `id`, then `{"ref": id}`), so it is
    the size of the recipe; expanding the references gives the tree itself."""
    text = "\n".join("set-column :a a + b\nset-column :b a + b" for _ in range(40))
    lin = lineage(text, INPUTS)
    d = lin.backward_tree("a").to_dict()
    text_size = len(repr(d))
    assert text_size < 80 * 2_000, text_size
    ids: dict[int, dict] = {}
    refs: list[int] = []
    _ids_and_refs(d, ids, refs)
    assert sorted(ids) == list(range(1, len(ids) + 1)) and len(ids) <= 80 and refs
    assert (d["column"], d["step"]) == ("a", 79)
    assert [(s["column"], s["step"]) for s in d["sources"]] == [("a", 77), ("b", 78)]
    small = lineage("set-column :a a + b\nset-column :b a + b\nset-column :a a + b", INPUTS).backward_tree("a").to_dict()
    ids, refs = {}, []
    _ids_and_refs(small, ids, refs)
    assert len(ids) == 1 and refs == [1]  # step 1's `a` is read by steps 2 and 3: written once, then referred to
    # a state the tree shares with a filter is written in the tree (which comes first), the filter refers to it
    shared = lineage("set-column :w a + b\nset-column :x w + c\nfilter-row exp:{ x > 1 } true\nset-column :y w + x",
                     INPUTS).backward_tree("y").to_dict()
    shared_ids: dict[int, dict] = {}
    shared_refs: list[int] = []
    _ids_and_refs(shared, shared_ids, shared_refs)
    assert shared_refs and "id" in shared["sources"][0] and shared["filters"][0]["reads"][0] == {"ref": shared["sources"][1]["id"]}
    expanded = _expanded(small, ids)
    a1 = {"column": "a", "step": 1, "directive": "set-column :a a + b", "action": "modify", "transformation": TR,
          "masking": False, "sources": [{"column": "a", "step": None, "directive": None, "action": "input"},
                                        {"column": "b", "step": None, "directive": None, "action": "input"}]}
    assert expanded["sources"][0] == a1 and expanded["sources"][1]["sources"][0] == a1


def test_backward_tree_of_a_merge_has_both_sources():
    d = lineage("hash :b MD5\nmerge :a :b :m ''", INPUTS).backward_tree("m").to_dict()
    assert (d["column"], d["step"], d["action"], d["transformation"]) == ("m", 2, "add", TR)
    a, b = d["sources"]
    assert a == {"column": "a", "step": None, "directive": None, "action": "input"}
    assert (b["column"], b["step"], b["action"], b["masking"]) == ("b", 1, "modify", True)


# --- the interface ------------------------------------------------------------------------------


def test_forward_of_a_column_that_is_not_an_input_is_a_key_error():
    lin = lineage("rename :a :x", INPUTS)
    with pytest.raises(KeyError):
        lin.forward("x")
    with pytest.raises(KeyError):
        lin.forward("zz")
    with pytest.raises(KeyError):
        lin.backward("a")  # renamed away: not an output
    with pytest.raises(KeyError):
        lin.edges_of("zz")


def test_bad_schemas_are_errors():
    with pytest.raises(RecipeError, match="input column `a` is listed twice"):
        lineage("drop :a", ["a", "b", "a"])
    with pytest.raises(RecipeError, match="output column `b` is listed twice"):
        lineage("drop :a", INPUTS, ["b", "b"])
    with pytest.raises(RecipeError, match="not one string"):
        lineage("drop :a", "a")
    with pytest.raises(RecipeError, match="non-empty"):
        lineage("drop :a", ["a", ""])


def test_a_recipe_text_with_an_error_fails_before_any_lineage():
    with pytest.raises(RecipeError) as info:
        lineage("rename :a :b\nexplode :b", INPUTS)
    assert info.value.line == 2


CONSISTENCY_RECIPES = [
    ("rename :a :x\ncopy :x :y\nmerge :y :b :m '-'\nfilter-row exp:{ c > 1 } true\nhash :m MD5", INPUTS, None),
    ("rename a x\nswap x b\nrename b y\nsend-to-error exp:{ y is null }", INPUTS, None),
    ("parse-as-csv :body ',' true\ndrop :body\nlowercase :nameOfOwner\nset-columns A B C", ["body"], ["A", "B", "C"]),
    ("parse-as-csv :b ','\ndrop :b\nset-headers x,y", ["b"], ["x", "y"]),
    ("parse-as-json :a\nlowercase :a\nparse-as-json :a\nuppercase :a_k", ["a"], ["a", "a_k"]),
    ("set-column :x concat_ws(',', *)\nfilter-rows-on empty-or-null-columns :x\nkeep x,a", INPUTS, None),
    ("split-email :a\ncleanse-column-names\nchange-column-case upper\ncolumns-replace s/^A_//g", INPUTS, None),
    ("extract-regex-groups :a '(x)(y)'\ndrop :a\ngenerate-uuid :u", INPUTS, ["b", "c", "a_1_1", "a_2_2", "u"]),
]


@pytest.mark.parametrize("text, inputs, outputs", CONSISTENCY_RECIPES, ids=range(len(CONSISTENCY_RECIPES)))
def test_every_edge_is_seen_from_both_ends(text, inputs, outputs):
    lin = lineage(text, inputs, outputs)
    assert lin.edges
    for e in lin.edges:
        assert e.output in lin.forward(e.input) and e.input in lin.backward(e.output)
        assert e in lin.edges_of(e.output)
        assert e.type in ("DIRECT", "INDIRECT")
        assert (e.type == "INDIRECT") == (e.subtype == "FILTER")
    for inp in lin.inputs:
        assert lin.forward(inp) == {e.output for e in lin.edges if e.input == inp}
    for out in lin.outputs:
        assert lin.backward(out) == {e.input for e in lin.edges_of(out)}
        assert lin.backward(out, direct_only=True) <= lin.backward(out)
        assert lin.backward_tree(out).inputs() <= lin.backward(out)


# directives that make columns only the data names, on an input column `src` the cases do not use
FAMILY_MAKERS = ["parse-as-csv :src ','", "parse-as-csv :src ',' true", "parse-as-json :src",
                 "split-to-columns :src ','", "extract-regex-groups :src '([a-z]+)-([0-9]+)'"]


def _forms_only_on_read_or_add(lin) -> list[tuple]:
    return [(o.step, o.column, o.label) for o in lin.operations if o.pattern and o.label not in ("Read", "Add")]


@pytest.mark.parametrize("name, text, inputs, output_schema, outputs, edges, filter_reads, operations",
                         LINEAGE_CASES, ids=[c[0] for c in LINEAGE_CASES])
def test_no_rename_or_drop_row_names_an_all_columns_form(name, text, inputs, output_schema, outputs, edges,
                                                         filter_reads, operations):
    """Every directive of the catalogue, after each directive that makes columns only the data
    names: beside the known columns, and alone in the schema (the known ones dropped first, so a
    set-headers or keep meets the family's positions), with and without an output schema."""
    columns = [*inputs, "src"]
    drops = "\n".join(f"drop :'{c}'" for c in columns)
    for maker in FAMILY_MAKERS:
        for recipe in (f"{maker}\n{text}", f"{maker}\n{drops}\n{text}", f"{maker}\n{text}\n{text}"):
            lin = lineage(recipe, columns)
            assert _forms_only_on_read_or_add(lin) == [], recipe
            bound = lineage(recipe, columns, list(lin.outputs))
            assert _forms_only_on_read_or_add(bound) == [], recipe


@pytest.mark.parametrize("text, inputs, outputs", CONSISTENCY_RECIPES, ids=range(len(CONSISTENCY_RECIPES)))
def test_no_rename_or_drop_row_of_the_consistency_recipes_names_an_all_columns_form(text, inputs, outputs):
    assert _forms_only_on_read_or_add(lineage(text, inputs, outputs)) == []
    assert _forms_only_on_read_or_add(lineage(text, inputs)) == []


@pytest.mark.parametrize("expression", ["'b'", '"b"'])
def test_a_quoted_word_as_the_whole_expression_is_a_string_literal_not_a_column(expression):
    """Spark SQL reads `'b'` (and `"b"`) as the text b: `set-column :x 'b'` reads no column,
    even where a column b exists; only an `exp:{ }` block is unwrapped."""
    recipe = parse(f"set-column :x {expression}")
    assert recipe.steps[0].args["expression"] == expression
    lin = lineage(recipe, INPUTS)
    assert lin.backward("x") == set() and "x" not in lin.forward("b")
    assert lineage("set-column :x exp:{ b }", INPUTS).backward("x") == {"b"}
    assert parse("filter-row 'b' = a").steps[0].args["condition"] == "'b' = a"


def test_expressions_read_columns_as_spark_does_without_regard_to_case():
    """Spark resolves `NAME` to column `name` (`spark.sql.caseSensitive` off): the lineage of
    set-column and of a filter's condition follows it; an exact spelling wins."""
    lin = lineage("set-column :x lower(A)", INPUTS)
    assert lin.backward("x") == {"a"} and "x" in lin.forward("a")
    assert lineage("filter-row B = 'x'", INPUTS).backward("a") == {"a", "b"}  # the filter's column feeds every output
    assert lineage("set-column :x lower(A)", ["a", "A"]).backward("x") == {"A"}


def test_a_column_a_family_may_write_over_is_certain_when_both_come_from_one_input():
    """`copy :a :a_1` then `split-to-columns :a ','`: a_1 is the copy or the split's first part,
    as the data decides, and comes from a either way: a certain edge (the derived facet keeps
    it), whose directives only the data settles."""
    lin = lineage("copy :a :a_1\nsplit-to-columns :a ','", ["a"], ["a", "a_1", "a_2"])
    [edge] = lin.edges_of("a_1")
    assert (edge.input, edge.certain, edge.steps, edge.maybe_steps) == ("a", True, (), (1, 2))
    # over a column from another input, it stays a possibility
    [from_b] = [e for e in lineage("copy :b :a_1\nsplit-to-columns :a ','", ["a", "b"], ["a_1"]).edges_of("a_1") if e.input == "b"]
    assert not from_b.certain
