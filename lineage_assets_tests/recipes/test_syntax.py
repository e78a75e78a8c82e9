"""Wrangler recipe syntax (lineage_assets/recipes/syntax.py, directives.py): every directive read
into typed arguments; every problem a RecipeError naming its line and the problem.

Expected values come from the grammar as the syntax module documents it: one directive a line,
`//` and `#` comment lines, a trailing `;`, `:col` or bare column names, `:'a name'` for names
with spaces, comma lists (and space-separated lists as the last argument), quoted texts with
`\\'`/`\\"` and `\\uXXXX` escapes, and Spark SQL expressions either as `exp:{...}` or the rest of
the line.
"""

from __future__ import annotations

import pytest

from lineage_assets.recipes import DIRECTIVES, Recipe, RecipeError, Step, parse


def only_step(text: str) -> Step:
    steps = parse(text).steps
    assert len(steps) == 1, steps
    return steps[0]


# --- every directive, with its arguments ------------------------------------------------------

# (recipe line, canonical name, arguments) - at least one row per directive in DIRECTIVES
CASES = [
    ("rename :old :new", "rename", {"old": "old", "new": "new"}),
    ("rename old new", "rename", {"old": "old", "new": "new"}),
    ("drop :a,:b", "drop", {"columns": ("a", "b")}),
    ("drop a,b c", "drop", {"columns": ("a", "b", "c")}),
    ("drop :a", "drop", {"columns": ("a",)}),
    ("keep id,measurement", "keep", {"columns": ("id", "measurement")}),
    ("keep :id :measurement", "keep", {"columns": ("id", "measurement")}),
    ("copy :ts :dt", "copy", {"source": "ts", "destination": "dt", "force": False}),
    ("copy :ts :dt true", "copy", {"source": "ts", "destination": "dt", "force": True}),
    ("copy ts dt FALSE", "copy", {"source": "ts", "destination": "dt", "force": False}),
    ("merge :first :last :full ' '", "merge",
     {"first": "first", "second": "last", "new_column": "full", "separator": " "}),
    ("merge a b c '\\u000A'", "merge", {"first": "a", "second": "b", "new_column": "c", "separator": "\n"}),
    ("merge a b c \"-\"", "merge", {"first": "a", "second": "b", "new_column": "c", "separator": "-"}),
    ("swap :a :b", "swap", {"first": "a", "second": "b"}),
    ("set-column :name concat(last, ', ', first)", "set-column",
     {"column": "name", "expression": "concat(last, ', ', first)"}),
    ("set-column :x exp:{ a + b }", "set-column", {"column": "x", "expression": "a + b"}),
    ("set-column x a * 2", "set-column", {"column": "x", "expression": "a * 2"}),
    ("set-headers a,b,c", "set-headers", {"columns": ("a", "b", "c")}),
    ("set-headers :a,:b", "set-headers", {"columns": ("a", "b")}),
    ("set-columns A B C", "set-headers", {"columns": ("A", "B", "C")}),
    ("set-type :n int", "set-type", {"column": "n", "type": "int", "scale": None, "rounding": "HALF_EVEN"}),
    ("set-type :d DECIMAL 2 HALF_UP", "set-type",
     {"column": "d", "type": "decimal", "scale": 2, "rounding": "HALF_UP"}),
    ("set-type :d decimal 3", "set-type", {"column": "d", "type": "decimal", "scale": 3, "rounding": "HALF_EVEN"}),
    ("parse-as-csv :body ',' true", "parse-as-csv", {"column": "body", "delimiter": ",", "header": True}),
    ("parse-as-csv body ,", "parse-as-csv", {"column": "body", "delimiter": ",", "header": False}),
    ("parse-as-csv :b '\\t'", "parse-as-csv", {"column": "b", "delimiter": "\t", "header": False}),
    ("parse-as-csv :b '\\u0009' false", "parse-as-csv", {"column": "b", "delimiter": "\t", "header": False}),
    ("parse-as-json :body", "parse-as-json", {"column": "body", "depth": 1}),
    ("parse-as-json body 3", "parse-as-json", {"column": "body", "depth": 3}),
    ("split-to-columns :codes \\|", "split-to-columns", {"column": "codes", "regex": "\\|"}),
    ("split-to-columns :codes ','", "split-to-columns", {"column": "codes", "regex": ","}),
    ("split-email :email", "split-email", {"column": "email"}),
    ("extract-regex-groups :title [^(]+\\(([0-9]{4})\\).*", "extract-regex-groups",
     {"column": "title", "regex": "[^(]+\\(([0-9]{4})\\).*"}),
    ("extract-regex-groups :t '([a-z]+) ([0-9]+)'", "extract-regex-groups",
     {"column": "t", "regex": "([a-z]+) ([0-9]+)"}),
    ("lowercase :a", "lowercase", {"column": "a"}),
    ("uppercase :a", "uppercase", {"column": "a"}),
    ("titlecase :a", "titlecase", {"column": "a"}),
    ("trim :a", "trim", {"column": "a"}),
    ("fill-null-or-empty :address No address specified", "fill-null-or-empty",
     {"column": "address", "value": "No address specified"}),
    ("fill-null-or-empty :m 'N A'", "fill-null-or-empty", {"column": "m", "value": "N A"}),
    ("filter-rows-on condition-true country != 'US'", "filter-rows-on",
     {"kind": "condition-true", "condition": "country != 'US'"}),
    ("filter-rows-on condition-false exp:{ age > 3 }", "filter-rows-on",
     {"kind": "condition-false", "condition": "age > 3"}),
    ("filter-rows-on regex-match :c '^US$'", "filter-rows-on", {"kind": "regex-match", "column": "c", "regex": "^US$"}),
    ("filter-rows-on regex-not-match c ^US$", "filter-rows-on",
     {"kind": "regex-not-match", "column": "c", "regex": "^US$"}),
    ("filter-rows-on empty-or-null-columns :a,:b", "filter-rows-on",
     {"kind": "empty-or-null-columns", "columns": ("a", "b")}),
    ("filter-row exp:{ age > 3 } false", "filter-row", {"condition": "age > 3", "remove_when": False}),
    ("filter-row exp:{ age > 3 }", "filter-row", {"condition": "age > 3", "remove_when": True}),
    ("filter-row-if-true age > 3", "filter-row", {"condition": "age > 3", "remove_when": True}),
    ("columns-replace s/^data_//g", "columns-replace", {"sed": "s/^data_//g"}),
    ("columns-replace 's|a|b|'", "columns-replace", {"sed": "s|a|b|"}),
    ("change-column-case upper", "change-column-case", {"case": "upper"}),
    ("change-column-case LOWER", "change-column-case", {"case": "lower"}),
    ("change-column-case", "change-column-case", {"case": "lower"}),
    ("cleanse-column-names", "cleanse-column-names", {}),
    ("generate-uuid :id", "generate-uuid", {"column": "id"}),
    ("hash :m SHA-256", "hash", {"column": "m", "algorithm": "SHA-256", "encode": True}),
    ("hash :m md5 false", "hash", {"column": "m", "algorithm": "MD5", "encode": False}),
    ("mask-number :ssn XXX-XX-####", "mask-number", {"column": "ssn", "pattern": "XXX-XX-####"}),
    ("send-to-error exp:{ age > 130 } age_range 'Age out of range'", "send-to-error",
     {"condition": "age > 130", "metric": "age_range", "message": "Age out of range"}),
    ("send-to-error exp:{ age > 130 } age_range", "send-to-error",
     {"condition": "age > 130", "metric": "age_range", "message": None}),
    ("send-to-error Name is null", "send-to-error", {"condition": "Name is null", "metric": None, "message": None}),
]


def test_the_cases_cover_every_directive():
    assert len(DIRECTIVES) == 28
    assert {name for _line, name, _args in CASES} == set(DIRECTIVES)


@pytest.mark.parametrize("line, name, args", CASES, ids=[c[0][:48] for c in CASES])
def test_each_directive_reads_its_arguments(line, name, args):
    step = only_step(line)
    assert (step.name, dict(step.args)) == (name, args)
    assert (step.text, step.number, step.line) == (line, 1, 1)
    assert step.directive is DIRECTIVES[name]


# --- layout: comments, blank lines, terminators, line numbers ----------------------------------


def test_comments_blank_lines_and_terminators_keep_line_numbers():
    recipe = parse("// a comment\n\n# another\n  rename :a :b;  \n\n   // indented comment\ndrop :b\n")
    assert isinstance(recipe, Recipe)
    assert [(s.number, s.line, s.text) for s in recipe.steps] == [(1, 4, "rename :a :b"), (2, 7, "drop :b")]
    assert len(recipe) == 2 and [s.name for s in recipe] == ["rename", "drop"]


def test_an_empty_recipe_or_only_comments_has_no_steps():
    assert parse("").steps == ()
    assert parse("\n  \n// nothing\n# here\n").steps == ()


def test_windows_line_endings_keep_line_numbers():
    recipe = parse("rename :a :b\r\n\r\n// c\r\ndrop :b;\r\n")
    assert [(s.line, s.text) for s in recipe.steps] == [(1, "rename :a :b"), (4, "drop :b")]


def test_a_semicolon_or_comment_marker_inside_quotes_or_blocks_is_text():
    assert only_step("merge a b c ';'").args["separator"] == ";"
    assert only_step("merge a b c ';';").args["separator"] == ";"
    assert only_step("merge a b c '//'").args["separator"] == "//"
    assert only_step("merge a b c '#'").args["separator"] == "#"
    step = only_step("set-column :x exp:{ concat(a, ';', '}') };")
    assert step.args["expression"] == "concat(a, ';', '}')"
    assert step.text == "set-column :x exp:{ concat(a, ';', '}') }"


def test_a_trailing_semicolon_is_not_part_of_the_last_argument():
    step = only_step("set-headers a,b,c;")
    assert step.args["columns"] == ("a", "b", "c") and step.text == "set-headers a,b,c"
    assert only_step("set-column :x a + 1 ;").args["expression"] == "a + 1"


def test_a_line_separator_character_inside_a_quoted_text_does_not_end_the_line():
    # "one directive a line": lines are the recipe's newline-separated lines; a U+2028 (or NEL)
    # inside a quoted separator is a character of the text, not a line break.
    assert only_step("merge a b c '\u2028'").args["separator"] == "\u2028"
    recipe = parse("merge a b c '\x85'\ndrop :c")
    assert [(s.line, s.name) for s in recipe.steps] == [(1, "merge"), (2, "drop")]


# --- columns and texts ----------------------------------------------------------------------


def test_columns_with_and_without_colons():
    assert dict(only_step("rename :a b").args) == {"old": "a", "new": "b"}
    assert dict(only_step("swap a :b").args) == {"first": "a", "second": "b"}
    assert only_step("drop a,:b").args["columns"] == ("a", "b")


def test_column_lists_comma_or_space_separated_as_the_last_argument():
    assert only_step("keep :a,:b").args["columns"] == ("a", "b")
    assert only_step("keep a,b").args["columns"] == ("a", "b")
    assert only_step("keep a b c").args["columns"] == ("a", "b", "c")
    assert only_step("set-columns A B C").args["columns"] == ("A", "B", "C")
    assert only_step("keep a , b").args["columns"] == ("a", "b")
    # a single-column argument is never a list
    with pytest.raises(RecipeError, match="expected one column name"):
        parse("lowercase a,b")


def test_a_comma_followed_by_a_space_still_separates_a_list():
    # Wrangler's grammar skips whitespace around the commas of a column list; the module's own
    # `keep a , b` is accepted, so `drop :a, :b` must read the same two columns.
    assert only_step("drop :a, :b").args["columns"] == ("a", "b")
    assert only_step("keep a, b").args["columns"] == ("a", "b")


def test_quoted_column_names_and_texts():
    assert dict(only_step("rename :'full name' :\"a,b\"").args) == {"old": "full name", "new": "a,b"}
    assert dict(only_step("rename 'full name' \"x y\"").args) == {"old": "full name", "new": "x y"}
    assert only_step("drop :'a b' :\"c d\"").args["columns"] == ("a b", "c d")
    assert only_step("merge a b c 'it\\'s'").args["separator"] == "it's"
    assert only_step("merge a b c \"say \\\"hi\\\"\"").args["separator"] == 'say "hi"'
    assert only_step("merge a b c \"it's\"").args["separator"] == "it's"
    assert only_step("merge a b c '\"'").args["separator"] == '"'
    assert only_step("merge a b c \"\\u002C\\u00e9\"").args["separator"] == ",é"
    assert only_step("merge a b c '\\u20AC'").args["separator"] == "€"
    # other backslashes stay: regular expressions keep \d
    assert only_step("split-to-columns :a '\\d+'").args["regex"] == "\\d+"


def test_unicode_column_names():
    assert dict(only_step("rename :prénom :名前").args) == {"old": "prénom", "new": "名前"}
    assert only_step("drop :größe,:ä").args["columns"] == ("größe", "ä")


def test_a_quoted_column_name_honours_the_escapes_of_quoted_texts():
    # `:'...'` is a quoted name: the documented escapes (\\' and \\uXXXX) apply as they do to
    # the bare quoted form `'it\\'s'`.
    assert only_step("rename 'it\\'s' :x").args["old"] == "it's"
    assert only_step("rename :'it\\'s' :x").args["old"] == "it's"
    assert only_step("rename :'caf\\u00e9' :x").args["old"] == "café"


def test_a_comma_inside_a_quoted_name_does_not_split_a_list():
    assert only_step("drop :\"x,y\"").args["columns"] == ("x,y",)
    assert only_step("drop :'a,b',:c").args["columns"] == ("a,b", "c")


def test_exp_blocks_keep_braces_quotes_and_spaces_inside():
    step = only_step("set-column :x exp:{ named_struct('k', map('a', 1)['a']) }")
    assert step.args["expression"] == "named_struct('k', map('a', 1)['a'])"
    step = only_step("set-column :x exp:{a+b}")
    assert step.args["expression"] == "a+b"
    step = only_step("filter-row exp:{ name = 'a b' } true")
    assert dict(step.args) == {"condition": "name = 'a b'", "remove_when": True}


def test_aliases_resolve_to_their_canonical_directive():
    assert only_step("set-columns x,y").name == "set-headers"
    assert only_step("set-headers x,y").name == "set-headers"
    step = only_step("filter-row-if-true a > 1")
    assert step.name == "filter-row" and step.directive is DIRECTIVES["filter-row"]
    assert step.text == "filter-row-if-true a > 1"  # the text stays as written
    assert "set-columns" not in DIRECTIVES and "filter-row-if-true" not in DIRECTIVES


def test_steps_are_numbered_among_directives_not_lines():
    recipe = parse("# header\nrename :a :b\n\n// x\ncopy :b :c\nlowercase :c")
    assert [(s.number, s.line, s.name) for s in recipe] == [
        (1, 2, "rename"), (2, 5, "copy"), (3, 6, "lowercase")]


# --- problems ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text, line, message", [
    # unknown directive
    ("rename :a :b\nexplode :a", 2, "unknown directive `explode`"),
    ("// c\n\n# c\nexplode :a", 4, "unknown directive `explode`"),
    # missing argument
    ("\n\nrename :a", 3, "missing <new>"),
    ("keep", 1, "missing <columns>"),
    ("hash :a", 1, "missing <algorithm>"),
    ("merge a b c", 1, "missing <separator>"),
    ("fill-null-or-empty :a", 1, "missing <value>"),
    ("split-to-columns :a", 1, "missing <regex>"),
    ("generate-uuid", 1, "missing <column>"),
    ("filter-row", 1, "missing <condition>"),
    ("send-to-error", 1, "missing <condition>"),
    ("filter-rows-on condition-true", 1, "missing <condition>"),
    ("filter-rows-on regex-match :c", 1, "expected <column> <regex>"),
    ("set-column :x", 1, "missing <expression>"),
    ("set-column :x exp:{ }", 1, "missing expression"),
    # too many arguments
    ("rename :a :b :c", 1, "unexpected `:c`"),
    ("split-email :a :b", 1, "unexpected `:b`"),
    ("cleanse-column-names now", 1, "unexpected `now`"),
    ("lowercase :a\nlowercase :a :b", 2, "unexpected `:b`"),
    ("filter-row exp:{ a > 1 } true extra", 1, "unexpected words"),
    # bad bool / int / choice
    ("copy :a :b maybe", 1, "<force> is true or false"),
    ("parse-as-csv :a , yes", 1, "<header> is true or false"),
    ("filter-row exp:{ a > 1 } perhaps", 1, "expected true or false"),
    ("parse-as-json :a deep", 1, "<depth> is a whole number"),
    ("set-type :a decimal two", 1, "<scale> is a whole number"),
    ("parse-as-json :a 0", 1, "<depth> is 1 or more"),
    ("change-column-case sideways", 1, "<case> is one of lower, upper"),
    ("filter-rows-on sometimes x", 1, "<filter-type> is one of"),
    # bad regex
    ("split-to-columns :a (unclosed", 1, "bad regular expression"),
    ("extract-regex-groups :a ((", 1, "bad regular expression `((`"),
    ("filter-rows-on regex-match :a '(x'", 1, "bad regular expression"),
    # bad sed expression
    ("columns-replace data_", 1, "expected a sed expression"),
    ("columns-replace s/a/b/x", 1, "expected s/<regex>/<replacement>/[g]"),
    ("columns-replace s/a/b", 1, "expected s/<regex>/<replacement>/[g]"),
    ("columns-replace s/(a/b/g", 1, "bad regular expression `(a`"),
    # unsupported hash algorithm
    ("hash :a WHIRLPOOL", 1, "algorithm `WHIRLPOOL` is not supported"),
    # bad set-type type
    ("set-type :a varchar", 1, "<type> is one of"),
    ("set-type :a int 2", 1, "<scale> is for decimal only"),
    # expressions that are not Spark SQL
    ("// ok\nset-column :x upper(a", 2, "not a Spark SQL expression"),
    ("set-column :x exp:{ upper(a }", 1, "not a Spark SQL expression"),
    ("filter-row exp:{ a > } true", 1, "not a Spark SQL expression"),
    ("set-column :x select 1", 1, "a column expression is expected"),
    # unterminated quote
    ("rename :a 'b", 1, "unterminated quote ' at column 11"),
    ("rename :a :b\nrename :a \"b", 2, "unterminated quote \" at column 11"),
    ("merge a b c 'x\\'", 1, "unterminated quote"),
    # unbalanced braces
    ("set-column :x exp:{ a + b", 1, "unbalanced '{'"),
    ("set-column :x exp:{ a } }", 1, "unbalanced '}'"),
    ("rename :a :b\n\nset-column :x a + b }", 3, "unbalanced '}'"),
    # two directives on one line
    ("rename :a :b; drop :b", 1, "one directive a line"),
    ("lowercase :a\nrename :a :b ; drop :b;", 2, "one directive a line"),
    # column lists
    ("drop :a,,:b", 1, "empty column name"),
    ("rename :a,:b :c", 1, "expected one column name"),
    ("rename : :c", 1, "expected one column name"),
])
def test_problems_name_their_line(text, line, message):
    with pytest.raises(RecipeError) as info:
        parse(text)
    assert info.value.line == line
    assert message in str(info.value)
    assert str(info.value).startswith(f"line {line}: ")


def test_an_error_carries_the_directive_text_and_reason():
    with pytest.raises(RecipeError) as info:
        parse("rename :a :b\n  hash :m WHIRLPOOL;  ")
    err = info.value
    assert (err.line, err.text) == (2, "hash :m WHIRLPOOL")
    assert err.reason.startswith("hash: algorithm `WHIRLPOOL` is not supported")
    assert "MD5" in err.reason and "SHA-256" in err.reason  # the supported ones are named


def test_the_first_problem_stops_the_parse():
    with pytest.raises(RecipeError) as info:
        parse("rename :a :b\nexplode :a\nhash :m WHIRLPOOL")
    assert info.value.line == 2 and "explode" in str(info.value)


def test_an_unknown_directive_lists_the_known_ones():
    with pytest.raises(RecipeError) as info:
        parse("explode :a")
    for name in ("rename", "set-columns", "filter-row-if-true", "send-to-error"):
        assert name in info.value.reason


def test_a_recipe_is_text():
    with pytest.raises(RecipeError, match="a recipe is text"):
        parse(["rename :a :b"])
