"""The one registry of directives: name, usage, arguments, and what each does to the schema.

Each directive's `effect` states, on a `SchemaWalk` (see `column_lineage.py`), which columns it reads,
adds, drops, renames and modifies; the labels (Read/Drop/Add/Rename/Modify) and the lineage follow
from those calls. The Spark side of each directive is in `spark_apply.py`, keyed by the same names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lineage_assets.recipes.expressions import ExpressionError, columns_read
from lineage_assets.recipes.syntax import RecipeError, Step, Word, outside_quotes, unescape

if TYPE_CHECKING:
    from lineage_assets.recipes.column_lineage import SchemaWalk


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # column | columns | text | bool | int | choice | expr | rest
    optional: bool = False
    default: Any = None
    choices: tuple[str, ...] = ()


Binder = Callable[["Directive", str, Sequence[Word], int], dict[str, Any]]
Check = Callable[[dict[str, Any], "Directive", int, str], None]


@dataclass(frozen=True)
class Directive:
    name: str
    usage: str
    params: tuple[Param, ...]
    effect: Callable[["SchemaWalk", Step], None]
    aliases: tuple[str, ...] = ()
    binder: Binder | None = None  # a syntax of its own (filter-rows-on, filter-row, send-to-error)
    check: Check | None = None  # checks (and normalises) the arguments once bound


# Hash algorithms Spark computes natively (Wrangler's names).
HASH_ALGORITHMS = {
    "MD5": ("md5", None),
    "SHA": ("sha1", None),
    "SHA1": ("sha1", None),
    "SHA-1": ("sha1", None),
    "SHA-224": ("sha2", 224),
    "SHA-256": ("sha2", 256),
    "SHA-384": ("sha2", 384),
    "SHA-512": ("sha2", 512),
}

SET_TYPES = ("int", "integer", "short", "long", "float", "double", "decimal", "string", "bytes",
             "boolean")

FILTER_KINDS = ("condition-true", "condition-false", "regex-match", "regex-not-match",
                "empty-or-null-columns")


# --- argument binding ---------------------------------------------------------------------


def _column(word: Word, directive: Directive, line: int, text: str) -> str:
    raw = word.raw
    if raw.startswith(":"):
        rest = raw[1:]
        if len(rest) >= 2 and rest[0] in "'\"" and rest[-1] == rest[0]:
            return unescape(rest[1:-1], rest[0])
        name = rest
    elif word.quoted:
        name = word.value
    else:
        name = raw
    if not name or "," in name and not word.quoted:
        raise RecipeError(f"{directive.name}: expected one column name, got `{raw}`", line=line,
                          text=text)
    return name


def _list_items(raw: str, line: int) -> list[str]:
    """A word's comma-separated items; a comma inside quotes is part of a name."""
    free = outside_quotes(raw, line)
    items, start = [], 0
    for i, ch in enumerate(raw):
        if ch == "," and free[i]:
            items.append(raw[start:i])
            start = i + 1
    items.append(raw[start:])
    return items


def _columns(words: Sequence[Word], directive: Directive, line: int, text: str) -> tuple[str, ...]:
    """Column names separated by commas (`a,b`, `:a,:b`, `a, b`, `a , b`) or, as a directive's
    last argument, by spaces; two commas with nothing between them are an error."""
    names: list[str] = []
    for word in words:
        items = _list_items(word.raw, line)
        for position, item in enumerate(items):
            if item == "":
                if 0 < position < len(items) - 1:  # a,,b
                    raise RecipeError(f"{directive.name}: empty column name in `{word.raw}`",
                                      line=line, text=text)
                continue  # a comma at a word's edge: `a, b` or `a , b`
            quoted = len(item) >= 2 and item[0] in "'\"" and item[-1] == item[0]
            names.append(_column(Word(item, word.start, quoted, unescape(item[1:-1], item[0]) if quoted
                                      else item), directive, line, text))
    if not names:
        raise RecipeError(f"{directive.name}: expected at least one column ({directive.usage})",
                          line=line, text=text)
    return tuple(names)


def _expression(text: str, directive: Directive, line: int, full: str) -> str:
    if not text.strip():
        raise RecipeError(f"{directive.name}: missing expression ({directive.usage})", line=line,
                          text=full)
    try:
        columns_read(text)
    except ExpressionError as exc:
        raise RecipeError(f"{directive.name}: {exc}", line=line, text=full) from None
    return text


def _rest(body: str, words: Sequence[Word], expression: bool = False) -> str:
    """The rest of the line from `words[0]` (the value of one quoted text or block). In an
    `expression`, only an `exp:{}` block is unwrapped: a quoted word is Spark SQL's string
    literal (`set-column :country 'US'` writes the text US, not column US)."""
    if len(words) == 1 and (words[0].block or (words[0].quoted and not expression)):
        return words[0].value
    return body[words[0].start:].strip()


def bind_arguments(directive: Directive, body: str, words: Sequence[Word], *, line: int
                   ) -> dict[str, Any]:
    if directive.binder is not None:
        return directive.binder(directive, body, words, line)
    args: dict[str, Any] = {}
    i = 0
    for index, param in enumerate(directive.params):
        last = index == len(directive.params) - 1
        if i >= len(words):
            if not param.optional:
                raise RecipeError(
                    f"{directive.name}: missing <{param.name}> ({directive.usage})", line=line,
                    text=body)
            args[param.name] = param.default
            continue
        word = words[i]
        if param.kind == "column":
            args[param.name] = _column(word, directive, line, body)
            i += 1
        elif param.kind == "columns":
            take = words[i:] if last else words[i:i + 1]
            args[param.name] = _columns(take, directive, line, body)
            i += len(take)
        elif param.kind == "text":
            args[param.name] = word.value
            i += 1
        elif param.kind == "bool":
            if word.raw.lower() not in ("true", "false"):
                raise RecipeError(f"{directive.name}: <{param.name}> is true or false, got "
                                  f"`{word.raw}`", line=line, text=body)
            args[param.name] = word.raw.lower() == "true"
            i += 1
        elif param.kind == "int":
            if not re.fullmatch(r"[+-]?\d+", word.raw):
                raise RecipeError(f"{directive.name}: <{param.name}> is a whole number, got "
                                  f"`{word.raw}`", line=line, text=body)
            args[param.name] = int(word.raw)
            i += 1
        elif param.kind == "choice":
            value = word.value.lower()
            if value not in param.choices:
                raise RecipeError(f"{directive.name}: <{param.name}> is one of "
                                  f"{', '.join(param.choices)}; got `{word.raw}`", line=line,
                                  text=body)
            args[param.name] = value
            i += 1
        elif param.kind in ("expr", "rest"):
            value = _rest(body, words[i:], expression=param.kind == "expr")
            if param.kind == "expr":
                value = _expression(value, directive, line, body)
            elif value == "":
                raise RecipeError(f"{directive.name}: <{param.name}> is empty", line=line,
                                  text=body)
            args[param.name] = value
            i = len(words)
        else:  # pragma: no cover - registry mistake
            raise AssertionError(param.kind)
    if i < len(words):
        extra = " ".join(w.raw for w in words[i:])
        raise RecipeError(f"{directive.name}: unexpected `{extra}` ({directive.usage})",
                          line=line, text=body)
    if directive.check is not None:
        directive.check(args, directive, line, body)
    return args


def _bind_filter_rows_on(directive: Directive, body: str, words: Sequence[Word], line: int
                         ) -> dict[str, Any]:
    if not words:
        raise RecipeError(f"filter-rows-on: missing <filter-type> ({directive.usage})", line=line,
                          text=body)
    kind = words[0].raw.lower()
    rest = words[1:]
    if kind in ("condition-true", "condition-false"):
        if not rest:
            raise RecipeError(f"filter-rows-on {kind}: missing <condition>", line=line, text=body)
        value = _rest(body, rest, expression=True)
        return {"kind": kind, "condition": _expression(value, directive, line, body)}
    if kind in ("regex-match", "regex-not-match"):
        if len(rest) != 2:
            raise RecipeError(f"filter-rows-on {kind}: expected <column> <regex>", line=line,
                              text=body)
        return {"kind": kind, "column": _column(rest[0], directive, line, body),
                "regex": _regex(rest[1].value, directive, line, body)}
    if kind == "empty-or-null-columns":
        return {"kind": kind, "columns": _columns(rest, directive, line, body)}
    raise RecipeError(f"filter-rows-on: <filter-type> is one of {', '.join(FILTER_KINDS)}; got "
                      f"`{words[0].raw}`", line=line, text=body)


def _bind_filter_row(directive: Directive, body: str, words: Sequence[Word], line: int
                     ) -> dict[str, Any]:
    """`filter-row <condition> [true|false]`: rows where the condition is true (or, with
    `false`, not true) are removed. A trailing true/false is read only after an `exp:{}` block."""
    if not words:
        raise RecipeError(f"filter-row: missing <condition> ({directive.usage})", line=line,
                          text=body)
    remove_when = True
    if words[0].block:
        if len(words) > 2:
            raise RecipeError("filter-row: unexpected words after <condition> [true|false]",
                              line=line, text=body)
        if len(words) == 2:
            if words[1].raw.lower() not in ("true", "false"):
                raise RecipeError(f"filter-row: expected true or false, got `{words[1].raw}`",
                                  line=line, text=body)
            remove_when = words[1].raw.lower() == "true"
        condition = words[0].value
    else:
        condition = _rest(body, words, expression=True)
    return {"condition": _expression(condition, directive, line, body),
            "remove_when": remove_when}


def _bind_send_to_error(directive: Directive, body: str, words: Sequence[Word], line: int
                        ) -> dict[str, Any]:
    """`send-to-error <condition> [metric] [message]`; metric and message only after `exp:{}`."""
    if not words:
        raise RecipeError(f"send-to-error: missing <condition> ({directive.usage})", line=line,
                          text=body)
    metric = message = None
    if words[0].block:
        if len(words) > 3:
            raise RecipeError("send-to-error: expected <condition> [metric] [message]", line=line,
                              text=body)
        metric = words[1].value if len(words) > 1 else None
        message = words[2].value if len(words) > 2 else None
        condition = words[0].value
    else:
        condition = _rest(body, words, expression=True)
    return {"condition": _expression(condition, directive, line, body), "metric": metric,
            "message": message}


def _regex(pattern: str, directive: Directive, line: int, body: str) -> str:
    try:
        re.compile(_python_regex(pattern))
    except re.error as exc:
        raise RecipeError(f"{directive.name}: bad regular expression `{pattern}`: {exc}",
                          line=line, text=body) from None
    return pattern


def _python_regex(pattern: str) -> str:
    """Java regex -> Python, for checking and counting groups (possessive/atomic forms aside)."""
    return re.sub(r"\(\?<([A-Za-z][A-Za-z0-9]*)>", r"(?P<\1>", pattern)


def regex_groups(pattern: str) -> int:
    return re.compile(_python_regex(pattern)).groups


def _check_regex(name: str) -> Check:
    def check(args: dict[str, Any], directive: Directive, line: int, body: str) -> None:
        _regex(args[name], directive, line, body)

    return check


def _one_of(args: dict[str, Any], key: str, allowed, normal: str, message: str, line: int, body: str) -> str:
    """args[key] in its normal form (str.upper or str.lower) when it is one of `allowed`."""
    value = getattr(args[key], normal)()
    if value not in allowed:
        raise RecipeError(message.format(given=args[key], allowed=", ".join(allowed)), line=line, text=body)
    args[key] = value
    return value


def _check_hash(args: dict[str, Any], directive: Directive, line: int, body: str) -> None:
    _one_of(args, "algorithm", HASH_ALGORITHMS, "upper",
            "hash: algorithm `{given}` is not supported here; use one of {allowed}", line, body)


def _check_set_type(args: dict[str, Any], directive: Directive, line: int, body: str) -> None:
    kind = _one_of(args, "type", SET_TYPES, "lower", "set-type: <type> is one of {allowed}; got `{given}`", line, body)
    if args.get("scale") is not None and kind != "decimal":
        raise RecipeError("set-type: <scale> is for decimal only", line=line, text=body)


def _check_columns_replace(args: dict[str, Any], directive: Directive, line: int, body: str
                           ) -> None:
    sed_expression(args["sed"], line=line, shown=body)


def _check_csv(args: dict[str, Any], directive: Directive, line: int, body: str) -> None:
    if args["delimiter"] == "":
        raise RecipeError("parse-as-csv: <delimiter> is empty", line=line, text=body)
    args["delimiter"] = {"\\t": "\t", "tab": "\t", "\\s": " "}.get(args["delimiter"],
                                                                    args["delimiter"])


def _check_depth(args: dict[str, Any], directive: Directive, line: int, body: str) -> None:
    if args["depth"] < 1:
        raise RecipeError("parse-as-json: <depth> is 1 or more", line=line, text=body)


@dataclass(frozen=True)
class Sed:
    pattern: str
    replacement: str
    count: int  # 0 = every match (`g`), 1 = the first


def sed_expression(text: str, *, line: int | None = None, shown: str | None = None) -> Sed:
    """`s/<regex>/<replacement>/[g]` (any delimiter after `s`)."""
    if len(text) < 4 or text[0] != "s":
        raise RecipeError(f"columns-replace: expected a sed expression s/<regex>/<replacement>/[g]"
                          f", got `{text}`", line=line, text=shown)
    delim = text[1]
    parts = re.split(r"(?<!\\)" + re.escape(delim), text[2:])
    if len(parts) != 3 or parts[2] not in ("", "g"):
        raise RecipeError(f"columns-replace: expected s{delim}<regex>{delim}<replacement>{delim}[g]"
                          f", got `{text}`", line=line, text=shown)
    try:
        re.compile(_python_regex(parts[0]))
    except re.error as exc:
        raise RecipeError(f"columns-replace: bad regular expression `{parts[0]}`: {exc}",
                          line=line, text=shown) from None
    return Sed(parts[0], parts[1], 0 if parts[2] == "g" else 1)


def cleanse_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name.strip().lower())


def replace_name(sed: Sed, name: str) -> str:
    replacement = re.sub(r"\$(\d)", r"\\\1", sed.replacement)
    return re.sub(_python_regex(sed.pattern), replacement, name, count=sed.count)


# --- effects on the schema ------------------------------------------------------------------


def _rename(w: "SchemaWalk", s: Step) -> None:
    w.rename(s, s.args["old"], s.args["new"])


def _drop(w: "SchemaWalk", s: Step) -> None:
    for column in s.args["columns"]:
        w.drop(s, column)


def _keep(w: "SchemaWalk", s: Step) -> None:
    w.keep(s, s.args["columns"])


def _copy(w: "SchemaWalk", s: Step) -> None:
    w.copy(s, s.args["source"], s.args["destination"], force=s.args["force"])


def _merge(w: "SchemaWalk", s: Step) -> None:
    w.derive(s, s.args["new_column"], (s.args["first"], s.args["second"]))


def _swap(w: "SchemaWalk", s: Step) -> None:
    w.swap(s, s.args["first"], s.args["second"])


def _set_column(w: "SchemaWalk", s: Step) -> None:
    read = columns_read(s.args["expression"])
    w.derive(s, s.args["column"], w.spark_names(read.columns), reads_all=read.reads_all)


def _set_headers(w: "SchemaWalk", s: Step) -> None:
    w.set_headers(s, s.args["columns"])


def _modify(w: "SchemaWalk", s: Step) -> None:
    w.modify(s, s.args["column"])


def _mask(w: "SchemaWalk", s: Step) -> None:
    w.modify(s, s.args["column"], masking=True)


def _parse_as_csv(w: "SchemaWalk", s: Step) -> None:
    column = s.args["column"]
    if s.args["header"]:
        w.spawn(s, column, kind="any", prefix="")
    else:
        w.spawn(s, column, kind="numbered", prefix=f"{column}_")


def _parse_as_json(w: "SchemaWalk", s: Step) -> None:
    column = s.args["column"]
    w.spawn(s, column, kind="keyed", prefix=f"{column}_")


def _split_to_columns(w: "SchemaWalk", s: Step) -> None:
    column = s.args["column"]
    w.spawn(s, column, kind="numbered", prefix=f"{column}_")


def _extract_regex_groups(w: "SchemaWalk", s: Step) -> None:
    column = s.args["column"]
    groups = regex_groups(s.args["regex"])
    if groups == 0:
        w.read(s, column)  # Wrangler ignores group 0: nothing is added
        w.note(s, column, "the regular expression has no groups: no column is added")
        return
    w.spawn(s, column, kind="numbered2", prefix=f"{column}_", groups=groups)


def _split_email(w: "SchemaWalk", s: Step) -> None:
    column = s.args["column"]
    for suffix in ("_account", "_domain"):
        w.derive(s, column + suffix, (column,))


def _filter(columns: Callable[[Step], tuple[tuple[str, ...], bool]]
            ) -> Callable[["SchemaWalk", Step], None]:
    def effect(w: "SchemaWalk", s: Step) -> None:
        names, reads_all = columns(s)
        w.filter(s, w.spark_names(names), reads_all=reads_all)

    return effect


def _condition_columns(s: Step) -> tuple[tuple[str, ...], bool]:
    read = columns_read(s.args["condition"])
    return read.columns, read.reads_all


def _filter_rows_on_columns(s: Step) -> tuple[tuple[str, ...], bool]:
    kind = s.args["kind"]
    if kind.startswith("condition"):
        return _condition_columns(s)
    if kind.startswith("regex"):
        return (s.args["column"],), False
    return tuple(s.args["columns"]), False


def _columns_replace(w: "SchemaWalk", s: Step) -> None:
    sed = sed_expression(s.args["sed"])
    w.rename_all(s, lambda name: replace_name(sed, name), idempotent=False)


def _change_column_case(w: "SchemaWalk", s: Step) -> None:
    upper = s.args["case"] == "upper"
    w.rename_all(s, (str.upper if upper else str.lower), idempotent=True)


def _cleanse(w: "SchemaWalk", s: Step) -> None:
    w.rename_all(s, cleanse_name, idempotent=True)


def _generate_uuid(w: "SchemaWalk", s: Step) -> None:
    w.derive(s, s.args["column"], ())


def _p(name: str, kind: str, optional: bool = False, default: Any = None,
       choices: tuple[str, ...] = ()) -> Param:
    return Param(name, kind, optional, default, choices)


_COL = _p("column", "column")

_REGISTRY: tuple[Directive, ...] = (
    Directive("rename", "rename <old> <new>", (_p("old", "column"), _p("new", "column")), _rename),
    Directive("drop", "drop <column>[,<column>]*", (_p("columns", "columns"),), _drop),
    Directive("keep", "keep <column>[,<column>]*", (_p("columns", "columns"),), _keep),
    Directive("copy", "copy <source> <destination> [<force>]",
              (_p("source", "column"), _p("destination", "column"),
               _p("force", "bool", True, False)), _copy),
    Directive("merge", "merge <first> <second> <new-column> <separator>",
              (_p("first", "column"), _p("second", "column"), _p("new_column", "column"),
               _p("separator", "text")), _merge),
    Directive("swap", "swap <first> <second>", (_p("first", "column"), _p("second", "column")),
              _swap),
    Directive("set-column", "set-column <column> <spark-sql-expression>",
              (_COL, _p("expression", "expr")), _set_column),
    Directive("set-headers", "set-headers <column>[,<column>]*", (_p("columns", "columns"),),
              _set_headers, aliases=("set-columns",)),
    Directive("set-type", "set-type <column> <type> [<scale>] [<rounding-mode>]",
              (_COL, _p("type", "text"), _p("scale", "int", True), _p("rounding", "text", True,
                                                                       "HALF_EVEN")),
              _modify, check=_check_set_type),
    Directive("parse-as-csv", "parse-as-csv <column> <delimiter> [<header=true|false>]",
              (_COL, _p("delimiter", "text"), _p("header", "bool", True, False)), _parse_as_csv,
              check=_check_csv),
    Directive("parse-as-json", "parse-as-json <column> [<depth>]",
              (_COL, _p("depth", "int", True, 1)), _parse_as_json,
              check=_check_depth),
    Directive("split-to-columns", "split-to-columns <column> <regex>",
              (_COL, _p("regex", "rest")), _split_to_columns,
              check=_check_regex("regex")),
    Directive("split-email", "split-email <column>", (_COL,), _split_email),
    Directive("extract-regex-groups", "extract-regex-groups <column> <regex-with-groups>",
              (_COL, _p("regex", "rest")), _extract_regex_groups,
              check=_check_regex("regex")),
    Directive("lowercase", "lowercase <column>", (_COL,), _modify),
    Directive("uppercase", "uppercase <column>", (_COL,), _modify),
    Directive("titlecase", "titlecase <column>", (_COL,), _modify),
    Directive("trim", "trim <column>", (_COL,), _modify),
    Directive("fill-null-or-empty", "fill-null-or-empty <column> <fixed-value>",
              (_COL, _p("value", "rest")), _modify),
    Directive("filter-rows-on", "filter-rows-on condition-true|condition-false <condition> | "
              "regex-match|regex-not-match <column> <regex> | empty-or-null-columns <columns>",
              (), _filter(_filter_rows_on_columns), binder=_bind_filter_rows_on),
    Directive("filter-row", "filter-row <condition> [true|false]", (),
              _filter(_condition_columns), binder=_bind_filter_row,
              aliases=("filter-row-if-true",)),
    Directive("columns-replace", "columns-replace <sed-expression>", (_p("sed", "text"),),
              _columns_replace, check=_check_columns_replace),
    Directive("change-column-case", "change-column-case lower|upper",
              (_p("case", "choice", True, "lower", ("lower", "upper")),), _change_column_case),
    Directive("cleanse-column-names", "cleanse-column-names", (), _cleanse),
    Directive("generate-uuid", "generate-uuid <column>", (_COL,), _generate_uuid),
    Directive("hash", "hash <column> <algorithm> [<encode>]",
              (_COL, _p("algorithm", "text"), _p("encode", "bool", True, True)), _mask,
              check=_check_hash),
    Directive("mask-number", "mask-number <column> <pattern>", (_COL, _p("pattern", "text")),
              _mask),
    Directive("send-to-error", "send-to-error <condition> [<metric>] [<message>]", (),
              _filter(_condition_columns), binder=_bind_send_to_error),
)

DIRECTIVES: dict[str, Directive] = {d.name: d for d in _REGISTRY}
_BY_NAME: dict[str, Directive] = {
    **DIRECTIVES, **{alias: d for d in _REGISTRY for alias in d.aliases}}


def lookup(word: str, *, line: int, text: str) -> Directive:
    directive = _BY_NAME.get(word.lower())
    if directive is None:
        raise RecipeError(f"unknown directive `{word}`; known: {', '.join(sorted(_BY_NAME))}",
                          line=line, text=text)
    return directive
