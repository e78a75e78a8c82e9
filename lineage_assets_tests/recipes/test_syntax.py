"""Wrangler recipe syntax: every directive read into typed arguments; every problem a
RecipeError naming its line."""

from __future__ import annotations

import pytest

from lineage_assets.recipes import DIRECTIVES, RecipeError, parse

# (line, canonical name, arguments) - one row at least per directive
CASES = [
    ("rename :old :new", "rename", {"old": "old", "new": "new"}),
    ("rename old new", "rename", {"old": "old", "new": "new"}),
    ("drop :a,:b", "drop", {"columns": ("a", "b")}),
    ("drop a,b c", "drop", {"columns": ("a", "b", "c")}),
    ("keep id,measurement", "keep", {"columns": ("id", "measurement")}),
    ("copy :ts :dt", "copy", {"source": "ts", "destination": "dt", "force": False}),
    ("copy :ts :dt true", "copy", {"source": "ts", "destination": "dt", "force": True}),
    ("merge :first :last :full ' '", "merge", {"first": "first", "second": "last", "new_column": "full", "separator": " "}),
    ("merge a b c '\\u000A'", "merge", {"first": "a", "second": "b", "new_column": "c", "separator": "\n"}),
    ("swap :a :b", "swap", {"first": "a", "second": "b"}),
    ("set-column :name concat(last, ', ', first)", "set-column", {"column": "name", "expression": "concat(last, ', ', first)"}),
    ("set-column :x exp:{ a + b }", "set-column", {"column": "x", "expression": "a + b"}),
    ("set-headers a,b,c", "set-headers", {"columns": ("a", "b", "c")}),
    ("set-columns A B C", "set-headers", {"columns": ("A", "B", "C")}),
    ("set-type :n int", "set-type", {"column": "n", "type": "int", "scale": None, "rounding": "HALF_EVEN"}),
    ("set-type :d DECIMAL 2 HALF_UP", "set-type", {"column": "d", "type": "decimal", "scale": 2, "rounding": "HALF_UP"}),
    ("parse-as-csv :body ',' true", "parse-as-csv", {"column": "body", "delimiter": ",", "header": True}),
    ("parse-as-csv body ,", "parse-as-csv", {"column": "body", "delimiter": ",", "header": False}),
    ("parse-as-csv :b '\\t'", "parse-as-csv", {"column": "b", "delimiter": "\t", "header": False}),
    ("parse-as-json :body", "parse-as-json", {"column": "body", "depth": 1}),
    ("parse-as-json body 3", "parse-as-json", {"column": "body", "depth": 3}),
    ("split-to-columns :codes \\|", "split-to-columns", {"column": "codes", "regex": "\\|"}),
    ("split-email :email", "split-email", {"column": "email"}),
    ("extract-regex-groups :title [^(]+\\(([0-9]{4})\\).*", "extract-regex-groups",
     {"column": "title", "regex": "[^(]+\\(([0-9]{4})\\).*"}),
    ("extract-regex-groups :t '([a-z]+) ([0-9]+)'", "extract-regex-groups", {"column": "t", "regex": "([a-z]+) ([0-9]+)"}),
    ("lowercase :a", "lowercase", {"column": "a"}),
    ("uppercase :a", "uppercase", {"column": "a"}),
    ("titlecase :a", "titlecase", {"column": "a"}),
    ("trim :a", "trim", {"column": "a"}),
    ("fill-null-or-empty :address No address specified", "fill-null-or-empty", {"column": "address", "value": "No address specified"}),
    ("fill-null-or-empty :m 'N A'", "fill-null-or-empty", {"column": "m", "value": "N A"}),
    ("filter-rows-on condition-true country != 'US'", "filter-rows-on", {"kind": "condition-true", "condition": "country != 'US'"}),
    ("filter-rows-on regex-match :c '^US$'", "filter-rows-on", {"kind": "regex-match", "column": "c", "regex": "^US$"}),
    ("filter-rows-on empty-or-null-columns :a,:b", "filter-rows-on", {"kind": "empty-or-null-columns", "columns": ("a", "b")}),
    ("filter-row exp:{ age > 3 } false", "filter-row", {"condition": "age > 3", "remove_when": False}),
    ("filter-row-if-true age > 3", "filter-row", {"condition": "age > 3", "remove_when": True}),
    ("columns-replace s/^data_//g", "columns-replace", {"sed": "s/^data_//g"}),
    ("change-column-case upper", "change-column-case", {"case": "upper"}),
    ("change-column-case", "change-column-case", {"case": "lower"}),
    ("cleanse-column-names", "cleanse-column-names", {}),
    ("generate-uuid :id", "generate-uuid", {"column": "id"}),
    ("hash :m SHA-256", "hash", {"column": "m", "algorithm": "SHA-256", "encode": True}),
    ("hash :m md5 false", "hash", {"column": "m", "algorithm": "MD5", "encode": False}),
    ("mask-number :ssn XXX-XX-####", "mask-number", {"column": "ssn", "pattern": "XXX-XX-####"}),
    ("send-to-error exp:{ age > 130 } age_range 'Age out of range'", "send-to-error",
     {"condition": "age > 130", "metric": "age_range", "message": "Age out of range"}),
    ("send-to-error Name is null", "send-to-error", {"condition": "Name is null", "metric": None, "message": None}),
]


def test_the_cases_cover_every_directive():
    assert {name for _line, name, _args in CASES} == set(DIRECTIVES)


@pytest.mark.parametrize("line, name, args", CASES, ids=[c[0][:40] for c in CASES])
def test_each_directive_reads_its_arguments(line, name, args):
    step, = parse(line).steps
    assert (step.name, dict(step.args)) == (name, args)
    assert step.text == line and step.number == 1 and step.line == 1


def test_comments_blank_lines_and_terminators_keep_line_numbers():
    recipe = parse("// a comment\n\n# another\n  rename :a :b;  \n\ndrop :b\n")
    assert [(s.number, s.line, s.text) for s in recipe.steps] == [(1, 4, "rename :a :b"), (2, 6, "drop :b")]
    assert len(recipe) == 2 and [s.name for s in recipe] == ["rename", "drop"]


def test_quoted_column_names_and_texts():
    step, = parse("rename :'full name' :\"a,b\"").steps
    assert dict(step.args) == {"old": "full name", "new": "a,b"}
    step, = parse("merge a b c 'it\\'s'").steps
    assert step.args["separator"] == "it's"
    step, = parse("rename :prénom :名前").steps
    assert dict(step.args) == {"old": "prénom", "new": "名前"}


@pytest.mark.parametrize("text, line, message", [
    ("rename :a :b\nexplode :a", 2, "unknown directive `explode`"),
    ("\n\nrename :a", 3, "missing <new>"),
    ("rename :a :b :c", 1, "unexpected `:c`"),
    ("copy :a :b maybe", 1, "<force> is true or false"),
    ("parse-as-json :a deep", 1, "<depth> is a whole number"),
    ("parse-as-json :a 0", 1, "<depth> is 1 or more"),
    ("split-to-columns :a (unclosed", 1, "bad regular expression"),
    ("filter-rows-on regex-match :a '(x'", 1, "bad regular expression"),
    ("columns-replace data_", 1, "expected a sed expression"),
    ("columns-replace s/a/b/x", 1, "expected s/<regex>/<replacement>/[g]"),
    ("hash :a WHIRLPOOL", 1, "algorithm `WHIRLPOOL` is not supported"),
    ("set-type :a varchar", 1, "<type> is one of"),
    ("set-type :a int 2", 1, "<scale> is for decimal only"),
    ("// ok\nset-column :x upper(a", 2, "not a Spark SQL expression"),
    ("set-column :x select 1", 1, "a column expression is expected"),
    ("set-column :x", 1, "missing <expression>"),
    ("rename :a 'b", 1, "unterminated quote"),
    ("set-column :x exp:{ a + b", 1, "unbalanced '{'"),
    ("rename :a :b; drop :b", 1, "one directive a line"),
    ("change-column-case sideways", 1, "<case> is one of lower, upper"),
    ("filter-rows-on sometimes x", 1, "<filter-type> is one of"),
    ("drop :a,,:b", 1, "empty column name"),
    ("rename :a,:b :c", 1, "expected one column name"),
    ("filter-row exp:{ a > 1 } perhaps", 1, "expected true or false"),
])
def test_problems_name_their_line(text, line, message):
    with pytest.raises(RecipeError) as info:
        parse(text)
    assert info.value.line == line
    assert message in str(info.value)
    assert str(info.value).startswith(f"line {line}: ")


def test_a_recipe_is_text():
    with pytest.raises(RecipeError, match="a recipe is text"):
        parse(["rename :a :b"])
