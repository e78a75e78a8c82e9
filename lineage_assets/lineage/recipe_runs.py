"""Runs whose job carries a Wrangler recipe (DESIGN.md section 9, "Into the tables").

A recipe travels in the job facet `sourceCode` with `language` `wrangler`. For each terminal run
that has one, and each of its outputs:

- `field_operations` rows: each (step, column, label) of the recipe's lineage, with the
  directive, the columns it read, and the references only the data could settle (rows with a
  null label and the reason in `note`; a rename whose old name only the data knows, such as a
  `set-headers` position among columns the data names, is such a row with its `new_name`);
- a column-lineage facet derived from the recipe, used where the producer sent no
  `columnLineage` for that output: DIRECT/IDENTITY for renames and copies, DIRECT/TRANSFORMATION
  for modifications (with `masking` for hash and mask-number), and the filters' columns as
  dataset-wide INDIRECT/FILTER dependencies. Only certain edges become rows; an edge that only
  the data could settle is a `field_operations` note, not a guessed edge.

The recipe's input columns are the top-level fields of the run's inputs' schema facets (a
column several inputs have feeds from each); its output columns are those of the output's
schema facet when it has one. The answer is computed once per distinct (recipe, input schemas,
output schema) in Python (`recipe_answer`, a plain function) and joined back to the runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lineage_assets import recipes
from lineage_assets.lineage.column_lineage import schema_items
from lineage_assets.recipes.facets import column_lineage_facet
from lineage_assets.warehouse import schemas
from lineage_assets.warehouse.tables import FIELD_OPERATIONS

LANGUAGE = "wrangler"

OPERATION = schemas.schema(
    "step int, line int, directive string, directive_name string, field string, label string, "
    "reads array<string>, new_name string, all_columns boolean, note string"
)
_TRANSFORMATION = schemas.schema("type string, subtype string, description string, masking boolean")
_INPUT_FIELD = schemas.schema("namespace string, name string, field string, transformations array<T>",
                              T=_TRANSFORMATION)
_FACET_FIELD = schemas.schema(
    "inputFields array<I>, transformationDescription string, transformationType string", I=_INPUT_FIELD)
FACET = T.StructType([  # column_lineage.FACET_SCHEMA, built without a JVM
    T.StructField("fields", T.MapType(T.StringType(), _FACET_FIELD)),
    T.StructField("dataset", T.ArrayType(_INPUT_FIELD)),
])
ANSWER = T.StructType([T.StructField("operations", T.ArrayType(OPERATION)), T.StructField("cll", FACET)])


def recipe_text(job_facets: Column) -> Column:
    """The recipe of a job facets JSON text: `sourceCode.sourceCode` when its language is
    wrangler (any case), else null."""
    language = F.lower(F.get_json_object(job_facets, "$.sourceCode.language"))
    return F.when(language == LANGUAGE, F.get_json_object(job_facets, "$.sourceCode.sourceCode"))


def _top_level(fields_json: str | None) -> list[str] | None:
    """The names of a schema facet's top-level fields (a name may hold a dot: `first.name` is one
    column, not a field of `first`), each once, in order; None without a schema."""
    items = schema_items(fields_json)
    if items is None:
        return None
    names: dict[str, None] = {}
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            names.setdefault(item["name"], None)
    return list(names)


def recipe_answer(recipe: str, inputs: Sequence[dict[str, Any]], output_fields: str | None
                  ) -> dict[str, Any]:
    """The operations and the derived column-lineage facet of one recipe run and output.

    inputs: the run's inputs as {namespace, name, text} (text: the schema facet's fields JSON);
    output_fields: the output's schema facet fields JSON, or None."""
    owners: dict[str, list[tuple[str, str]]] = {}
    for item in sorted(inputs, key=lambda i: (i["namespace"], i["name"])):
        for column in _top_level(item.get("text")) or []:
            owners.setdefault(column, []).append((item["namespace"], item["name"]))
    output_columns = _top_level(output_fields)
    try:
        lineage = recipes.lineage(recipes.parse(recipe), list(owners), output_columns)
    except recipes.RecipeError as exc:
        return {"operations": [_note(exc.line, exc.text, None, f"the recipe cannot be read: {exc}")],
                "cll": None}
    except Exception as exc:  # noqa: BLE001 - last resort: an accepted event never stops the fold (DESIGN.md 11)
        return {"operations": [_note(None, None, None, f"internal_error: the recipe's lineage could not be worked out: "
                                                       f"{type(exc).__name__}: {exc}")], "cll": None}
    steps = {s.number: s for s in lineage.recipe.steps}
    operations = [
        {"step": op.step, "line": op.line, "directive": op.directive, "directive_name": op.name,
         "field": op.column, "label": op.label, "reads": list(op.reads), "new_name": op.new_name,
         "all_columns": op.pattern, "note": None}
        for op in lineage.operations
    ]
    for note in lineage.unresolved:
        step = steps.get(note.step) if note.step is not None else None
        operations.append({**_note(note.line, note.directive, note.column, note.reason),
                           "step": note.step, "directive_name": step.name if step else None,
                           "new_name": note.new_name})
    # rows are unique: the walk labels a column once a step and records a note once
    return {"operations": sorted(operations, key=_operation_order), "cll": column_lineage_facet(lineage, owners)}


def _note(line: int | None, directive: str | None, field: str | None, reason: str
          ) -> dict[str, Any]:
    return {"step": None, "line": line, "directive": directive, "directive_name": None,
            "field": field, "label": None, "reads": [], "new_name": None, "all_columns": False,
            "note": reason}


def _operation_order(op: dict[str, Any]) -> tuple:
    return (op["step"] is None, op["step"] or 0, op["label"] is None, op["label"] or "",
            op["field"] or "", op["note"] or "")


_answer = F.udf(lambda recipe, inputs, output: recipe_answer(
    recipe, [i.asDict() for i in (inputs or [])], output), ANSWER)


def recipe_runs(terminal: DataFrame, run_versions: DataFrame, declared_schemas: DataFrame) -> DataFrame | None:
    """(run_id, job_namespace, job_name, ended_at, output_namespace, output_name,
    output_version_id, operations, cll) of each output of each terminal run with a recipe; None
    when no run of the range has one (one small Spark job finds out: most ranges carry none, and
    then neither the Python answer nor its joins are planned or written).

    terminal: coalesced runs; run_versions: their output dataset versions (with `fields`);
    declared_schemas: `column_lineage.input_schemas(terminal)`."""
    with_recipe = terminal.select(
        "run_id", "job_namespace", "job_name", "ended_at", recipe_text(F.col("job_facets")).alias("recipe"),
    ).filter("recipe is not null")
    if not with_recipe.limit(1).collect():
        return None
    inputs = declared_schemas.groupBy("run_id").agg(
        F.array_sort(F.collect_list(F.struct("namespace", "name", "text"))).alias("inputs"))
    outputs = run_versions.select(
        "run_id", F.col("namespace").alias("output_namespace"), F.col("name").alias("output_name"),
        F.col("version_id").alias("output_version_id"), F.col("fields").alias("output_fields"),
    )
    runs = with_recipe.join(inputs, "run_id", "left").join(outputs, "run_id")
    key = ["recipe", "inputs", "output_fields"]
    answers = runs.select(*key).dropDuplicates(key).withColumn(
        "answer", _answer(F.col("recipe"), F.col("inputs"), F.col("output_fields")))
    return runs.join(answers, [runs[k].eqNullSafe(answers[k]) for k in key]).select(
        runs["run_id"], "job_namespace", "job_name", "ended_at", "output_namespace", "output_name",
        "output_version_id", F.col("answer.operations").alias("operations"), F.col("answer.cll").alias("cll"),
    )


def field_operations(runs: DataFrame | None, spark) -> DataFrame:  # noqa: ANN001
    """FIELD_OPERATIONS rows of `recipe_runs` (none when it found no recipe run)."""
    if runs is None:
        return spark.createDataFrame([], FIELD_OPERATIONS.schema)
    return runs.select(
        "run_id", "job_namespace", "job_name", "output_version_id", "output_namespace", "output_name",
        F.col("ended_at").alias("created_at"), F.explode("operations").alias("op"),
    ).select(
        "run_id", "job_namespace", "job_name", "output_version_id", "output_namespace", "output_name",
        "op.*", "created_at", F.to_date("created_at").alias("created_date"),
    )
