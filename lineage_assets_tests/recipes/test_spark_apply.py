"""`recipes.apply` runs each directive on a Spark DataFrame as Wrangler's documentation says."""

from __future__ import annotations

import hashlib
import re
from decimal import Decimal

import pytest

from lineage_assets import recipes
from lineage_assets.recipes.directives import DIRECTIVES
from lineage_assets.recipes.spark_apply import APPLY

SCHEDULE_SECONDS = 25


def run(spark, rows, columns, recipe):
    df = spark.createDataFrame(rows, ", ".join(f"`{c}` string" for c in columns))
    out = recipes.apply(df, recipe)
    return out.columns, [tuple(r) for r in out.collect()]


CASES = [
    # (id, input columns, rows, recipe, expected columns, expected rows)
    ("rename", ["x", "y"], [("6.3", "187")], "rename x height\nrename :y :weight",
     ["height", "weight"], [("6.3", "187")]),
    ("rename-missing-is-ignored", ["x"], [("1",)], "rename :nope :other", ["x"], [("1",)]),
    ("rename-over-existing", ["a", "b"], [("1", "2")], "rename :a :b", ["b"], [("1",)]),
    ("drop", ["id", "ts", "m", "ok"], [("1", "2", "3", "4")], "drop ok,m", ["id", "ts"],
     [("1", "2")]),
    ("keep", ["id", "ts", "m", "ok"], [("1", "2", "3", "4")], "keep :id,:m", ["id", "m"],
     [("1", "3")]),
    ("copy", ["ts"], [("12",)], "copy :ts :dt", ["ts", "dt"], [("12", "12")]),
    ("copy-force", ["a", "b"], [("1", "2")], "copy :a :b true", ["a", "b"], [("1", "1")]),
    ("merge", ["first", "last"], [("Root", "Joltie")], "merge :first :last :full '---'",
     ["first", "last", "full"], [("Root", "Joltie", "Root---Joltie")]),
    ("merge-unicode-separator", ["a", "b"], [("x", "y")], "merge a b c '\\u000A'",
     ["a", "b", "c"], [("x", "y", "x\ny")]),
    ("swap", ["a", "b"], [("1", "s")], "swap :a :b", ["b", "a"], [("1", "s")]),
    ("set-column", ["first", "last", "age"], [("Root", "Joltie", "32")],
     "set-column :name concat(last, ', ', first)\n"
     "set-column :adult exp:{ case when cast(age as int) > 21 then 'yes' else 'no' end }",
     ["first", "last", "age", "name", "adult"], [("Root", "Joltie", "32", "Joltie, Root", "yes")]),
    ("set-column-replaces-in-place", ["a", "b"], [("2", "x")], "set-column :a a * 10",
     ["a", "b"], [(20.0, "x")]),
    ("set-headers", ["body", "body_1", "body_2"], [("1,2", "1", "2")], "set-headers a,b",
     ["a", "b", "body_2"], [("1,2", "1", "2")]),
    ("set-columns-spaces", ["p", "q"], [("1", "2")], "set-columns A B C", ["A", "B"],
     [("1", "2")]),
    ("set-type-int", ["n", "bad"], [("42", "x")], "set-type :n int\nset-type :bad long",
     ["n", "bad"], [(42, None)]),
    ("set-type-decimal-half-even", ["d"], [("2.345",), ("2.355",)],
     "set-type :d decimal 2", ["d"], [(Decimal("2.34"),), (Decimal("2.36"),)]),
    ("set-type-decimal-half-up", ["d"], [("2.345",)], "set-type :d decimal 2 HALF_UP", ["d"],
     [(Decimal("2.35"),)]),
    ("parse-as-csv", ["body"], [("a,,c",), ('x,"y,z"',)], "parse-as-csv :body ','",
     ["body", "body_1", "body_2", "body_3"],
     [("a,,c", "a", None, "c"), ('x,"y,z"', "x", "y,z", None)]),
    ("parse-as-csv-header", ["body"], [("Date,Type",), ("07/29,Loan",), ("08/01,Card",)],
     "parse-as-csv :body ',' true\ndrop :body", ["Date", "Type"],
     [("07/29", "Loan"), ("08/01", "Card")]),
    ("parse-as-csv-tab", ["b"], [("1\t2",)], "parse-as-csv :b '\\t'", ["b", "b_1", "b_2"],
     [("1\t2", "1", "2")]),
    ("parse-as-json", ["js"], [('{"id": 1, "name": {"first": "R"}}',), ('{"x": "y"}',)],
     "parse-as-json :js", ["js", "js_id", "js_name", "js_x"],
     [('{"id": 1, "name": {"first": "R"}}', "1", '{"first":"R"}', None),
      ('{"x": "y"}', None, None, "y")]),
    ("parse-as-json-depth-2", ["js"], [('{"name": {"first": "R", "last": "J"}}',)],
     "parse-as-json :js 2\ndrop :js", ["js_name", "js_name_first", "js_name_last"],
     [('{"first":"R","last":"J"}', "R", "J")]),
    ("split-to-columns", ["codes"], [("USD|AUD|AMD",), ("X",)], "split-to-columns :codes \\|",
     ["codes", "codes_1", "codes_2", "codes_3"],
     [("USD|AUD|AMD", "USD", "AUD", "AMD"), ("X", "X", None, None)]),
    ("split-email", ["e"], [("root@example.com",), ("Joltie, Root <jr@hotmail.com>",),
                            ("not an email",), (None,)],
     "split-email :e", ["e", "e_account", "e_domain"],
     [("root@example.com", "root", "example.com"),
      ("Joltie, Root <jr@hotmail.com>", "jr", "hotmail.com"), ("not an email", None, None),
      (None, None, None)]),
    # a column a directive makes that exists already is replaced in place, so a later
    # set-headers names what static lineage says it names (the data of `x` stays `b`'s)
    ("split-email-onto-an-existing-column", ["email", "email_account", "x"], [("u@d.com", "old", "X")],
     "split-email :email\nset-headers a,b,c,d", ["a", "b", "c", "d"], [("u@d.com", "u", "X", "d.com")]),
    ("split-to-columns-over-an-existing-member", ["body", "body_1", "x"], [("p|q", "old", "X")],
     "split-to-columns :body \\|\nset-headers a,b,c", ["a", "b", "c", "body_2"], [("p|q", "p", "X", "q")]),
    ("extract-regex-groups", ["title"], [("Toy Story (1995)",), ("none",)],
     "extract-regex-groups :title [^(]+\\(([0-9]{4})\\).*", ["title", "title_1_1"],
     [("Toy Story (1995)", "1995"), ("none", None)]),
    ("extract-regex-groups-many", ["t"], [("a1 b2",)], "extract-regex-groups :t ([a-z])([0-9])",
     ["t", "t_1_1", "t_1_2", "t_2_1", "t_2_2"], [("a1 b2", "a", "1", "b", "2")]),
    ("case", ["g", "f", "a"], [("male", "jOLTIE", "67 MARS Ave")],
     "uppercase :g\ntitlecase :f\nlowercase :a", ["g", "f", "a"],
     [("MALE", "Joltie", "67 mars ave")]),
    ("trim-unicode", ["s"], [("\u00a0 root\u2003 ",)], "trim :s", ["s"], [("root",)]),
    ("fill-null-or-empty", ["m", "a", "k"], [(None, "", "x")],
     "fill-null-or-empty :m NA\nfill-null-or-empty :a No address specified\n"
     "fill-null-or-empty :k 'z'", ["m", "a", "k"], [("NA", "No address specified", "x")]),
    ("filter-rows-on-condition-true", ["c", "w"], [("US", "12"), ("FR", "9"), ("US", "13")],
     "filter-rows-on condition-true c != 'US'", ["c", "w"], [("US", "12"), ("US", "13")]),
    ("filter-rows-on-condition-false", ["c"], [("US",), ("FR",)],
     "filter-rows-on condition-false c = 'US'", ["c"], [("US",)]),
    ("filter-rows-on-regex-match", ["c"], [("US",), ("USA",), (None,)],
     "filter-rows-on regex-match :c 'US'", ["c"], [("USA",), (None,)]),
    ("filter-rows-on-regex-not-match", ["c"], [("US",), ("USA",), (None,)],
     "filter-rows-on regex-not-match :c US.*", ["c"], [("US",), ("USA",)]),
    ("filter-rows-on-empty-or-null", ["a", "b"], [(None, ""), ("x", None), ("", "y")],
     "filter-rows-on empty-or-null-columns :a,:b", ["a", "b"], [("x", None), ("", "y")]),
    ("filter-row", ["n"], [("1",), ("5",)], "filter-row exp:{ cast(n as int) > 2 } true", ["n"],
     [("1",)]),
    ("filter-row-false", ["n"], [("1",), ("5",)], "filter-row exp:{ cast(n as int) > 2 } false",
     ["n"], [("5",)]),
    ("filter-row-if-true", ["n"], [("1",), ("5",)], "filter-row-if-true cast(n as int) > 2",
     ["n"], [("1",)]),
    ("send-to-error", ["age"], [("30",), ("200",), (None,)],
     "send-to-error exp:{ cast(age as int) > 130 } age_range 'Age out of range'", ["age"],
     [("30",), (None,)]),
    ("columns-replace", ["data_name", "data_data_id", "mars_ssn"], [("r", "1", "s")],
     "columns-replace s/^data_//g", ["name", "data_id", "mars_ssn"], [("r", "1", "s")]),
    ("change-column-case", ["Id", "FNAME"], [("1", "R")], "change-column-case lower",
     ["id", "fname"], [("1", "R")]),
    ("change-column-case-upper", ["id"], [("1",)], "change-column-case upper", ["ID"], [("1",)]),
    ("cleanse-column-names", ["COL1", "col:2", " Col 3 "], [("1", "2", "3")],
     "cleanse-column-names", ["col1", "col_2", "col_3"], [("1", "2", "3")]),
    ("hash", ["m"], [("secret message",)], "hash :m SHA-256", ["m"],
     [(hashlib.sha256(b"secret message").hexdigest(),)]),
    ("hash-md5", ["m"], [("x",)], "hash :m md5", ["m"], [(hashlib.md5(b"x").hexdigest(),)]),
    ("hash-binary", ["m"], [("x",)], "hash :m SHA-1 false", ["m"],
     [(bytearray(hashlib.sha1(b"x").digest()),)]),
    # Wrangler's MaskNumber writes `x` for `X`, copies a digit for `#` (none past the value's
    # end), and writes any other pattern character, consuming it from the value if equal
    ("mask-number", ["ssn", "cc"], [("000-00-0000", "4929790943424701"), (None, "12"),
                                    ("123456789", "1")],
     "mask-number :ssn XXX-XX-####\nmask-number :cc XXXXXXXXXXXX####", ["ssn", "cc"],
     [("xxx-xx-0000", "xxxxxxxxxxxx4701"), (None, "xxxxxxxxxxxx"), ("xxx-xx-6789", "xxxxxxxxxxxx")]),
    ("unicode-and-quoted-names", ["prénom", "a b"], [("é", "1")],
     "rename :prénom :'nom complet'\ncopy :'a b' :\"c,d\"", ["nom complet", "a b", "c,d"],
     [("é", "1", "1")]),
]


def test_every_directive_has_a_spark_implementation_and_a_case():
    assert set(APPLY) == set(DIRECTIVES)
    covered = {recipes.parse(case[3]).steps[0].name for case in CASES}
    covered |= {s.name for case in CASES for s in recipes.parse(case[3]).steps}
    assert set(DIRECTIVES) - covered == {"generate-uuid"}  # random: tested on its own below


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_directive_on_spark(spark, case):
    _id, columns, rows, recipe, expected_columns, expected_rows = case
    got_columns, got_rows = run(spark, rows, columns, recipe)
    assert got_columns == expected_columns
    assert got_rows == expected_rows


@pytest.mark.parametrize("recipe, columns", [
    ("split-email :email\nset-headers a,b,c,d", ["email", "email_account", "x"]),
    ("split-to-columns :body \\|\nset-headers a,b,c", ["body", "body_1", "x"]),
])
def test_a_directive_writing_over_a_column_keeps_its_place_as_static_lineage_says(spark, recipe, columns):
    """What ran and what static lineage says agree when a directive makes a column that exists:
    `c` is `x`'s value (a certain identity edge), and `b` is made from the column parsed."""
    values = {"email": "u@d.com", "body": "p|q", "x": "X", "email_account": "old", "body_1": "old"}
    got_columns, [row] = run(spark, [tuple(values[c] for c in columns)], columns, recipe)
    assert dict(zip(got_columns, row))["c"] == "X" and dict(zip(got_columns, row))["b"] != "old"
    lin = recipes.lineage(recipe, columns)
    assert [(e.input, e.subtype, e.certain) for e in lin.edges_of("c")] == [("x", "IDENTITY", True)]
    assert columns[0] in {e.input for e in lin.edges_of("b")} and "x" not in {e.input for e in lin.edges_of("b")}


def test_generate_uuid_gives_a_distinct_version_4_uuid_per_row(spark):
    columns, rows = run(spark, [("a",), ("b",), ("c",)], ["x"], "generate-uuid :id")
    assert columns == ["x", "id"]
    ids = [r[1] for r in rows]
    assert len(set(ids)) == 3
    assert all(re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
                            i) for i in ids)


@pytest.mark.parametrize("recipe, message, line", [
    ("copy :a :b", "column `b` exists", 1),
    ("rename :a :z\ncopy :a :q", "column `a` does not exist", 2),
    ("set-column :x nosuch + 1", "Spark cannot run it", 1),
    ("// lower them\nchange-column-case lower\nset-column :B 1", "two columns would be called", 3),
    ("set-type :a decimal 2 CEILING", "rounding mode CEILING", 1),
    ("parse-as-csv :b ',' true", "header field 2 of `b` is empty", 1),
])
def test_errors_name_the_line(spark, recipe, message, line):
    df = spark.createDataFrame([("1", "x,")], "a string, b string")
    with pytest.raises(recipes.RecipeError) as info:
        recipes.apply(df, recipe).collect()
    assert message in str(info.value)
    assert info.value.line == line


def test_design_example_runs_and_its_lineage_agrees_with_what_ran(spark):
    """The designs' own example: `set-columns A B C` after a directive naming a column only the
    data knows. Spark shows which column `nameOfOwner` was; the static lineage, without data,
    says A, B and C come from `body` for certain and reports the position it cannot know."""
    text = ("parse-as-csv :body ',' true\ndrop :body\nlowercase :nameOfOwner\n"
            "set-columns A,B,C")
    df = spark.createDataFrame([("id,nameOfOwner,city",), ("1,ROOT,Mars",), ("2,JOLTIE,Moon",)],
                               "body string")
    out = recipes.apply(df, text)
    assert out.columns == ["A", "B", "C"]
    assert [tuple(r) for r in out.collect()] == [("1", "root", "Mars"), ("2", "joltie", "Moon")]
    lineage = recipes.lineage(text, ["body"], out.columns)
    for column in out.columns:
        assert lineage.backward(column) == {"body"}
        edge, = lineage.edges_of(column)
        assert edge.certain and 3 not in edge.steps and 3 in edge.maybe_steps
    assert {u.column for u in lineage.unresolved if u.step == 4} >= {"A", "B", "C"}


def test_apply_takes_text_or_a_parsed_recipe(spark):
    df = spark.createDataFrame([("a",)], "x string")
    parsed = recipes.parse("uppercase :x")
    assert recipes.apply(df, parsed).collect()[0][0] == "A"
    assert recipes.apply(df, "uppercase :x").collect()[0][0] == "A"
