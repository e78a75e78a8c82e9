"""Run a recipe's directives on a PySpark DataFrame, with Spark's own functions (no Python UDFs).

Each directive's implementation is keyed by the same name as in `directives.DIRECTIVES`.
Directives whose output columns depend on the data (`parse-as-csv`, `parse-as-json`,
`split-to-columns`, `extract-regex-groups`) run one small aggregation to learn them (how many
fields, which keys), as Wrangler learns them from each record. Conditions and `set-column`
expressions are Spark SQL. Problems are `RecipeError`s naming the line.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lineage_assets.recipes.directives import (
    DIRECTIVES,
    HASH_ALGORITHMS,
    cleanse_name,
    regex_groups,
    replace_name,
    sed_expression,
)
from lineage_assets.recipes.syntax import Recipe, RecipeError, Step, parse

Projection = list[tuple[str, Column]]


def col(name: str) -> Column:
    return F.col("`" + name.replace("`", "``") + "`")


def _text(name: str) -> Column:
    return col(name).cast("string")


def _require(df: DataFrame, step: Step, *names: str) -> None:
    for name in names:
        if name not in df.columns:
            raise step.error(f"column `{name}` does not exist; columns: {', '.join(df.columns)}")


def _project(df: DataFrame, step: Step, projection: Projection) -> DataFrame:
    names = [name for name, _ in projection]
    seen: dict[str, str] = {}
    insensitive = df.sparkSession.conf.get("spark.sql.caseSensitive", "false").lower() != "true"
    for name in names:
        key = name.lower() if insensitive else name
        if key in seen:
            why = (" (Spark resolves names without regard to case: spark.sql.caseSensitive is "
                   "false)") if seen[key] != name else ""
            raise step.error(f"two columns would be called `{name}`" + (
                f" and `{seen[key]}`" if seen[key] != name else "") + why)
        seen[key] = name
    return df.select(*[column.alias(name) for name, column in projection])


def _put(df: DataFrame, step: Step, name: str, value: Column) -> DataFrame:
    """Replace column `name` in place, or add it at the end."""
    projection = [(n, value if n == name else col(n)) for n in df.columns]
    if name not in df.columns:
        projection.append((name, value))
    return _project(df, step, projection)


def _add_many(df: DataFrame, step: Step, added: Projection) -> DataFrame:
    """Columns `added`: one that exists is replaced in place (Wrangler's `addOrSet`, and what
    static lineage assumes: a later set-headers renames by position), the others added at the
    end in order."""
    values = dict(added)
    return _project(df, step, [(n, values.pop(n, col(n))) for n in df.columns] + list(values.items()))


def _rename_map(df: DataFrame, step: Step, mapping: dict[str, str]) -> DataFrame:
    return _project(df, step, [(mapping.get(n, n), col(n)) for n in df.columns])


# --- directives -----------------------------------------------------------------------------


def _rename(df: DataFrame, s: Step) -> DataFrame:
    old, new = s.args["old"], s.args["new"]
    if old not in df.columns or old == new:
        return df  # Wrangler ignores a rename of a missing column
    return _project(df, s, [(new if n == old else n, col(n)) for n in df.columns if n != new])


def _drop(df: DataFrame, s: Step) -> DataFrame:
    gone = set(s.args["columns"])
    return _project(df, s, [(n, col(n)) for n in df.columns if n not in gone])


def _keep(df: DataFrame, s: Step) -> DataFrame:
    kept = set(s.args["columns"])
    return _project(df, s, [(n, col(n)) for n in df.columns if n in kept])


def _copy(df: DataFrame, s: Step) -> DataFrame:
    source, destination = s.args["source"], s.args["destination"]
    _require(df, s, source)
    if destination in df.columns and not s.args["force"]:
        raise s.error(f"column `{destination}` exists; use `copy {source} {destination} true` "
                      "to replace it")
    return _put(df, s, destination, col(source))


def _merge(df: DataFrame, s: Step) -> DataFrame:
    first, second = s.args["first"], s.args["second"]
    _require(df, s, first, second)
    return _put(df, s, s.args["new_column"],
                F.concat(_text(first), F.lit(s.args["separator"]), _text(second)))


def _swap(df: DataFrame, s: Step) -> DataFrame:
    first, second = s.args["first"], s.args["second"]
    _require(df, s, first, second)
    return _rename_map(df, s, {first: second, second: first})


def _set_column(df: DataFrame, s: Step) -> DataFrame:
    return _put(df, s, s.args["column"], F.expr(s.args["expression"]))


def _set_headers(df: DataFrame, s: Step) -> DataFrame:
    names = s.args["columns"]
    return _project(df, s, [(names[i] if i < len(names) else n, col(n))
                            for i, n in enumerate(df.columns)])


_SPARK_TYPES = {"int": "int", "integer": "int", "short": "smallint", "long": "bigint",
                "float": "float", "double": "double", "string": "string", "bytes": "binary",
                "boolean": "boolean"}


def _set_type(df: DataFrame, s: Step) -> DataFrame:
    name, kind = s.args["column"], s.args["type"]
    _require(df, s, name)
    if kind != "decimal":
        return _put(df, s, name, col(name).try_cast(_SPARK_TYPES[kind]))
    scale = s.args["scale"]
    rounding = (s.args["rounding"] or "HALF_EVEN").upper()
    if scale is None:
        return _put(df, s, name, col(name).try_cast("decimal(38,18)"))
    if rounding not in ("HALF_EVEN", "HALF_UP"):
        raise s.error(f"rounding mode {rounding} is not supported here; use HALF_EVEN or HALF_UP")
    wide = col(name).try_cast("decimal(38,18)")
    rounded = F.bround(wide, scale) if rounding == "HALF_EVEN" else F.round(wide, scale)
    return _put(df, s, name, rounded.try_cast(f"decimal(38,{scale})"))


def _quoted_split(delimiter: str) -> str:
    """A Java regex matching the delimiter outside double-quoted fields."""
    escaped = "".join("\\" + ch if not ch.isalnum() else ch for ch in delimiter)
    return escaped + '(?=(?:[^"]*"[^"]*")*[^"]*$)'


def _csv_fields(name: str, count: int, delimiter: str) -> Column:
    schema = ", ".join(f"`f{i}` STRING" for i in range(1, count + 1))
    return F.from_csv(_text(name), schema, {"sep": delimiter, "mode": "PERMISSIVE"})


def _parse_as_csv(df: DataFrame, s: Step) -> DataFrame:
    name, delimiter = s.args["column"], s.args["delimiter"]
    _require(df, s, name)
    if s.args["header"]:
        rid = "__recipe_row__"
        while rid in df.columns:
            rid += "_"
        numbered = df.withColumn(rid, F.monotonically_increasing_id())
        first = numbered.orderBy(col(rid)).select(_text(name).alias("v"), col(rid)).limit(1) \
            .collect()
        if not first or first[0]["v"] is None:
            raise s.error(f"header=true, but the first row of `{name}` has no header line")
        headers = next(csv.reader([first[0]["v"]], delimiter=delimiter[0])) \
            if len(delimiter) == 1 else first[0]["v"].split(delimiter)
        for i, header in enumerate(headers):
            if header == "":
                raise s.error(f"header field {i + 1} of `{name}` is empty")
        body = numbered.filter(col(rid) != F.lit(first[0][rid])).drop(rid)
        parsed = _csv_fields(name, len(headers), delimiter)
        return _add_many(body, s, [(h, parsed[f"f{i + 1}"]) for i, h in enumerate(headers)])
    pattern = _quoted_split(delimiter)
    count = df.select(F.max(F.size(F.split(_text(name), pattern, -1))).alias("n")).collect()[0]["n"]
    count = max(int(count or 0), 0)
    if count == 0:
        return df
    parsed = _csv_fields(name, count, delimiter)
    return _add_many(df, s, [(f"{name}_{i}", parsed[f"f{i}"]) for i in range(1, count + 1)])


_JSON_MAP = T.MapType(T.StringType(), T.StringType())


def _json_keys(df: DataFrame, name: str) -> list[str]:
    keys = df.select(F.explode(F.json_object_keys(_text(name))).alias("k")).distinct().collect()
    return sorted(row["k"] for row in keys)


def _parse_as_json(df: DataFrame, s: Step) -> DataFrame:
    name = s.args["column"]
    _require(df, s, name)
    level = [name]
    for _ in range(s.args["depth"]):
        added: Projection = []
        for parent in level:
            as_map = F.from_json(_text(parent), _JSON_MAP)
            added.extend((f"{parent}_{key}", as_map[key]) for key in _json_keys(df, parent))
        if not added:
            break
        df = _add_many(df, s, added)
        level = [n for n, _ in added]
    return df


def _split_to_columns(df: DataFrame, s: Step) -> DataFrame:
    name = s.args["column"]
    _require(df, s, name)
    parts = F.split(_text(name), s.args["regex"], -1)
    count = df.select(F.max(F.size(parts)).alias("n")).collect()[0]["n"]
    count = max(int(count or 0), 0)
    return _add_many(df, s, [(f"{name}_{i}", F.try_element_at(parts, F.lit(i)))
                             for i in range(1, count + 1)])


_EMAIL = r"^\s*(?:.*<\s*)?([^<>@\s]+)@([^<>@\s]+?)\s*>?\s*$"


def _split_email(df: DataFrame, s: Step) -> DataFrame:
    name = s.args["column"]
    _require(df, s, name)
    value = _text(name)
    ok = value.rlike(_EMAIL)
    return _add_many(df, s, [
        (f"{name}_account", F.when(ok, F.regexp_extract(value, _EMAIL, 1))),
        (f"{name}_domain", F.when(ok, F.regexp_extract(value, _EMAIL, 2)))])


def _extract_regex_groups(df: DataFrame, s: Step) -> DataFrame:
    name, regex = s.args["column"], s.args["regex"]
    _require(df, s, name)
    groups = regex_groups(regex)
    if groups == 0:
        return df
    arrays = [F.regexp_extract_all(_text(name), F.lit(regex), F.lit(g))
              for g in range(1, groups + 1)]
    count = df.select(F.max(F.size(arrays[0])).alias("n")).collect()[0]["n"]
    count = max(int(count or 0), 0)
    return _add_many(df, s, [(f"{name}_{m}_{g}", F.try_element_at(arrays[g - 1], F.lit(m)))
                             for m in range(1, count + 1) for g in range(1, groups + 1)])


def _in_place(function: Callable[[Column], Column]) -> Callable[[DataFrame, Step], DataFrame]:
    def run(df: DataFrame, s: Step) -> DataFrame:
        name = s.args["column"]
        _require(df, s, name)
        return _put(df, s, name, function(_text(name)))

    return run


def _fill(df: DataFrame, s: Step) -> DataFrame:
    name = s.args["column"]
    _require(df, s, name)
    value = _text(name)
    return _put(df, s, name, F.when(value.isNull() | (value == ""), F.lit(s.args["value"]))
                .otherwise(value))


def _true(condition: Column) -> Column:
    return F.coalesce(condition, F.lit(False))


def _full_match(value: Column, regex: str) -> Column:
    return value.rlike(f"^(?:{regex})$")


def _filter_rows_on(df: DataFrame, s: Step) -> DataFrame:
    kind = s.args["kind"]
    if kind == "condition-true":
        return df.filter(~_true(F.expr(s.args["condition"])))
    if kind == "condition-false":
        return df.filter(_true(F.expr(s.args["condition"])))
    if kind in ("regex-match", "regex-not-match"):
        _require(df, s, s.args["column"])
        matched = _true(_full_match(_text(s.args["column"]), s.args["regex"]))
        return df.filter(~matched if kind == "regex-match" else matched)
    names = s.args["columns"]
    _require(df, s, *names)
    empty = [_text(n).isNull() | (_text(n) == "") for n in names]
    all_empty = empty[0]
    for e in empty[1:]:
        all_empty = all_empty & e
    return df.filter(~all_empty)


def _filter_row(df: DataFrame, s: Step) -> DataFrame:
    condition = _true(F.expr(s.args["condition"]))
    return df.filter(~condition if s.args["remove_when"] else condition)


def _send_to_error(df: DataFrame, s: Step) -> DataFrame:
    return df.filter(~_true(F.expr(s.args["condition"])))


def _columns_replace(df: DataFrame, s: Step) -> DataFrame:
    sed = sed_expression(s.args["sed"], line=s.line, shown=s.text)
    return _rename_map(df, s, {n: replace_name(sed, n) for n in df.columns})


def _change_column_case(df: DataFrame, s: Step) -> DataFrame:
    change = str.upper if s.args["case"] == "upper" else str.lower
    return _rename_map(df, s, {n: change(n) for n in df.columns})


def _cleanse(df: DataFrame, s: Step) -> DataFrame:
    return _rename_map(df, s, {n: cleanse_name(n) for n in df.columns})


def _generate_uuid(df: DataFrame, s: Step) -> DataFrame:
    return _put(df, s, s.args["column"], F.expr("uuid()"))


def _hash(df: DataFrame, s: Step) -> DataFrame:
    name = s.args["column"]
    _require(df, s, name)
    function, bits = HASH_ALGORITHMS[s.args["algorithm"]]
    value = _text(name)
    digest = F.sha2(value, bits) if function == "sha2" else getattr(F, function)(value)
    return _put(df, s, name, digest if s.args["encode"] else F.unhex(digest))


def _mask_number(df: DataFrame, s: Step) -> DataFrame:
    """Wrangler's MaskNumber, walking the pattern over the value (Spark's `aggregate`): `#`
    copies the value's next character (none past its end), `x`/`X` writes `x` in place of it,
    any other character is written and consumes the value's next character if they are equal."""
    name, pattern = s.args["column"], s.args["pattern"]
    _require(df, s, name)
    value = _text(name)

    def step(acc: Column, ch: Column) -> Column:
        i, out = acc["i"], acc["out"]
        current = F.substring(value, i, 1)
        return (F.when(ch == "#", F.when(i > F.length(value), acc).otherwise(
                    F.struct((i + 1).alias("i"), F.concat(out, current).alias("out"))))
                .when(ch.isin("x", "X"), F.struct((i + 1).alias("i"),
                                                  F.concat(out, F.lit("x")).alias("out")))
                .otherwise(F.struct(F.when((i <= F.length(value)) & (current == ch), i + 1)
                                    .otherwise(i).alias("i"), F.concat(out, ch).alias("out"))))

    start = F.struct(F.lit(1).alias("i"), F.lit("").alias("out"))
    chars = F.array(*[F.lit(ch) for ch in pattern]) if pattern else F.array().cast("array<string>")
    masked = F.aggregate(chars, start, step, lambda acc: acc["out"])
    return _put(df, s, name, F.when(value.isNotNull(), masked))


_TRIM = r"(?U)^\s+|\s+$"

APPLY: dict[str, Callable[[DataFrame, Step], DataFrame]] = {
    "rename": _rename,
    "drop": _drop,
    "keep": _keep,
    "copy": _copy,
    "merge": _merge,
    "swap": _swap,
    "set-column": _set_column,
    "set-headers": _set_headers,
    "set-type": _set_type,
    "parse-as-csv": _parse_as_csv,
    "parse-as-json": _parse_as_json,
    "split-to-columns": _split_to_columns,
    "split-email": _split_email,
    "extract-regex-groups": _extract_regex_groups,
    "lowercase": _in_place(F.lower),
    "uppercase": _in_place(F.upper),
    "titlecase": _in_place(F.initcap),
    "trim": _in_place(lambda v: F.regexp_replace(v, _TRIM, "")),
    "fill-null-or-empty": _fill,
    "filter-rows-on": _filter_rows_on,
    "filter-row": _filter_row,
    "columns-replace": _columns_replace,
    "change-column-case": _change_column_case,
    "cleanse-column-names": _cleanse,
    "generate-uuid": _generate_uuid,
    "hash": _hash,
    "mask-number": _mask_number,
    "send-to-error": _send_to_error,
}

assert set(APPLY) == set(DIRECTIVES), set(APPLY) ^ set(DIRECTIVES)


def apply(df: DataFrame, recipe: Recipe | str | Sequence[Step]) -> DataFrame:
    """The DataFrame after the recipe's directives, in order."""
    steps = parse(recipe).steps if isinstance(recipe, str) else tuple(recipe)
    for step in steps:
        try:
            df = APPLY[step.name](df, step)
        except RecipeError:
            raise
        except AnalysisException as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise step.error(f"Spark cannot run it: {first}") from exc
    return df
