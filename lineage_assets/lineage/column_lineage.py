"""Column-level lineage of one day (DESIGN.md sections 3 and 4, "Column edges").

Every layout of the OpenLineage `columnLineage` dataset facet is read by one Spark schema:

- 1-0-0: `fields.<out>.inputFields[] = {namespace, name, field}`;
- 1-0-1: adds `fields.<out>.transformationDescription/transformationType` (kept as the
  `legacy_*` columns);
- 1-1-0: adds `inputFields[].transformations[] = {type, subtype, description, masking}`;
- 1-2-0: adds dataset-wide dependencies `dataset[]` (stored with `output_field` null).

The facet is the run's last instance of it (runs are coalesced by facet name, last by
eventTime), so a facet repeated on START/RUNNING/COMPLETE yields one set of edges. Edges are
never dropped: an input the run did not declare keeps `input_version_id` null and
`input_declared = false`; a field missing from a known schema gets `*_field_known = false`.

`dataset_fields` flattens the schema facet of each dataset version (nested fields as dotted
paths, depth-first ordinal). The current column lineage is carried as day state: for each (job,
output dataset), the edges of the job's latest terminal run that wrote it.
"""

from __future__ import annotations

import json

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lineage_assets.warehouse import schemas

TRANSFORMATION = "struct<type: string, subtype: string, description: string, masking: boolean>"
INPUT_FIELD = f"struct<namespace: string, name: string, field: string, transformations: array<{TRANSFORMATION}>>"
FACET_SCHEMA = (
    f"struct<fields: map<string, struct<inputFields: array<{INPUT_FIELD}>, transformationDescription: string, "
    f"transformationType: string>>, dataset: array<{INPUT_FIELD}>>"
)

FIELD = schemas.schema("field_path string, type string, description string, ordinal int")

COLUMN_LINEAGE = schemas.schema(
    "output_version_id string, output_namespace string, output_name string, output_field string, "
    "input_namespace string, input_name string, input_field string, input_version_id string, "
    "transformation_type string, transformation_subtype string, transformation_description string, masking boolean, "
    "legacy_transformation_type string, legacy_transformation_description string, run_id string, created_at timestamp, "
    "input_declared boolean, output_field_known boolean, input_field_known boolean, output_field_type string, "
    "input_field_type string"
)
COLUMN_LINEAGE_TABLE = T.StructType([*COLUMN_LINEAGE.fields, T.StructField("created_date", T.DateType())])
DATASET_FIELDS = schemas.schema(
    "version_id string, namespace string, name string, field_path string, type string, description string, ordinal int"
)
DATASET_FIELDS_TABLE = T.StructType([*DATASET_FIELDS.fields, T.StructField("created_date", T.DateType())])

# day state: current column edges per (job, output dataset); current fields per dataset
COLUMN_STATE = T.StructType(
    [T.StructField("job_namespace", T.StringType()), T.StructField("job_name", T.StringType()), *COLUMN_LINEAGE.fields]
)
FIELDS_STATE = T.StructType(
    [*DATASET_FIELDS.fields, T.StructField("created_at", T.TimestampType()), T.StructField("rank", T.IntegerType())]
)


def flatten_schema(fields_json: str | None) -> list[dict] | None:
    """The schema facet's `fields` (JSON text) as dotted paths in depth-first order; None if absent."""
    if fields_json is None:
        return None
    try:
        fields = json.loads(fields_json)
    except ValueError:
        return None
    if not isinstance(fields, list):
        return None
    out: list[dict] = []
    seen: set[str] = set()

    def walk(items: list, prefix: str) -> None:
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                continue
            path = prefix + item["name"]
            if path not in seen:  # a repeated name keeps its first occurrence
                seen.add(path)
                kind = item.get("type")
                description = item.get("description")
                out.append({
                    "field_path": path,
                    "type": kind if isinstance(kind, str) else None,
                    "description": description if isinstance(description, str) else None,
                    "ordinal": len(out),
                })
            if isinstance(item.get("fields"), list):
                walk(item["fields"], path + ".")

    walk(fields, "")
    return out


_flatten = F.udf(flatten_schema, T.ArrayType(FIELD), useArrow=True)


def schema_fields(fields_json: Column) -> Column:
    """array<FIELD> of a schema facet's `fields` JSON (null when there is no schema)."""
    return _flatten(fields_json)


def dataset_fields(dataset_versions: DataFrame) -> DataFrame:
    """DATASET_FIELDS rows of the day's dataset versions (those with a schema facet)."""
    return dataset_versions.select(
        "version_id", "namespace", "name", F.explode(schema_fields(F.col("fields"))).alias("f")
    ).select("version_id", "namespace", "name", "f.field_path", "f.type", "f.description", "f.ordinal")


def column_edges(terminal: DataFrame, run_versions: DataFrame, resolved_inputs: DataFrame, fields: DataFrame) -> DataFrame:
    """COLUMN_LINEAGE rows of the day's terminal runs.

    terminal: coalesced runs (inputs/outputs with facets JSON); run_versions: their output
    dataset versions; resolved_inputs: (run_id, namespace, name, version_id) of declared inputs;
    fields: the day's DATASET_FIELDS.
    """
    outputs = terminal.select("run_id", "ended_at", F.explode("outputs").alias("o")).select(
        "run_id", "ended_at",
        F.col("o.namespace").alias("output_namespace"), F.col("o.name").alias("output_name"),
        F.from_json(F.get_json_object("o.facets", "$.columnLineage"), FACET_SCHEMA).alias("cll"),
    ).filter("cll is not null")
    by_field = outputs.select(
        "run_id", "ended_at", "output_namespace", "output_name", F.explode("cll.fields").alias("output_field", "spec")
    ).select(
        "run_id", "ended_at", "output_namespace", "output_name", "output_field",
        F.col("spec.transformationType").alias("legacy_transformation_type"),
        F.col("spec.transformationDescription").alias("legacy_transformation_description"),
        F.explode("spec.inputFields").alias("i"),
    )
    dataset_wide = outputs.select(
        "run_id", "ended_at", "output_namespace", "output_name", F.lit(None).cast("string").alias("output_field"),
        F.lit(None).cast("string").alias("legacy_transformation_type"),
        F.lit(None).cast("string").alias("legacy_transformation_description"),
        F.explode("cll.dataset").alias("i"),
    )
    edges = by_field.unionByName(dataset_wide).select(
        "run_id", "ended_at", "output_namespace", "output_name", "output_field",
        "legacy_transformation_type", "legacy_transformation_description",
        F.col("i.namespace").alias("input_namespace"), F.col("i.name").alias("input_name"), F.col("i.field").alias("input_field"),
        F.explode_outer("i.transformations").alias("t"),
    )
    versions = run_versions.select(
        "run_id", F.col("namespace").alias("output_namespace"), F.col("name").alias("output_name"),
        F.col("version_id").alias("output_version_id"), F.col("fields").isNotNull().alias("_has_schema"),
    )
    inputs = resolved_inputs.select(
        "run_id", F.col("namespace").alias("input_namespace"), F.col("name").alias("input_name"),
        F.col("version_id").alias("input_version_id"),
    )
    input_schemas = terminal.select("run_id", F.explode("inputs").alias("i")).select(
        "run_id", F.col("i.namespace").alias("input_namespace"), F.col("i.name").alias("input_name"),
        schema_fields(F.get_json_object("i.facets", "$.schema.fields")).alias("_input_fields"),
    ).dropDuplicates(["run_id", "input_namespace", "input_name"])
    out_fields = fields.select(
        F.col("version_id").alias("output_version_id"), F.col("field_path").alias("output_field"),
        F.col("type").alias("output_field_type"), F.lit(True).alias("_out_known"),
    )
    joined = (
        edges.join(versions, ["run_id", "output_namespace", "output_name"])
        .join(inputs, ["run_id", "input_namespace", "input_name"], "left")
        .join(input_schemas, ["run_id", "input_namespace", "input_name"], "left")
        .join(out_fields, ["output_version_id", "output_field"], "left")
    )
    input_type = F.filter("_input_fields", lambda f: f["field_path"] == F.col("input_field"))
    return joined.select(
        "output_version_id", "output_namespace", "output_name", "output_field",
        "input_namespace", "input_name", "input_field", "input_version_id",
        F.col("t.type").alias("transformation_type"), F.col("t.subtype").alias("transformation_subtype"),
        F.col("t.description").alias("transformation_description"), F.col("t.masking").alias("masking"),
        "legacy_transformation_type", "legacy_transformation_description", "run_id",
        F.col("ended_at").alias("created_at"),
        F.col("input_version_id").isNotNull().alias("input_declared"),
        F.when(F.col("output_field").isNull() | ~F.col("_has_schema"), F.lit(None).cast("boolean"))
        .otherwise(F.coalesce("_out_known", F.lit(False)))
        .alias("output_field_known"),
        F.when(F.col("_input_fields").isNull(), F.lit(None).cast("boolean"))
        .otherwise(F.size(input_type) > 0).alias("input_field_known"),
        "output_field_type",
        F.try_element_at(input_type, F.lit(1))["type"].alias("input_field_type"),
    ).dropDuplicates()


def current_column_state(prev: DataFrame, terminal: DataFrame, edges: DataFrame) -> DataFrame:
    """COLUMN_STATE after the day: for each (job, output dataset) that a run of today wrote, the
    edges of the latest such run (none if it reported no column lineage); others carry on."""
    written = terminal.select(
        "job_namespace", "job_name", "run_id", "ended_at", F.explode("outputs").alias("o")
    ).select(
        "job_namespace", "job_name", "run_id", "ended_at",
        F.col("o.namespace").alias("output_namespace"), F.col("o.name").alias("output_name"),
    )
    pair = ["job_namespace", "job_name", "output_namespace", "output_name"]
    latest = (
        written.withColumn("_n", F.row_number().over(Window.partitionBy(*pair).orderBy(F.col("ended_at").desc(), F.col("run_id").desc())))
        .filter("_n = 1")
        .select(*pair, "run_id")
    )
    today = edges.join(latest, ["run_id", "output_namespace", "output_name"]).select(*COLUMN_STATE.fieldNames())
    return prev.join(latest.select(*pair), pair, "left_anti").select(*COLUMN_STATE.fieldNames()).unionByName(today)


def current_fields_state(prev: DataFrame, dataset_versions: DataFrame, fields: DataFrame) -> DataFrame:
    """FIELDS_STATE after the day: each dataset's fields from its newest version with a schema,
    versions of FAIL/ABORT runs only when nothing better exists."""
    ranked = dataset_versions.filter("fields is not null").select(
        "version_id", "created_at",
        F.when(F.col("run_state").isin("FAIL", "ABORT"), 1).otherwise(0).alias("rank"),
    )
    today = fields.join(ranked, "version_id").select(*FIELDS_STATE.fieldNames())
    both = prev.select(*FIELDS_STATE.fieldNames()).unionByName(today)
    best = (
        both.select("namespace", "name", "version_id", "created_at", "rank").distinct()
        .withColumn(
            "_n",
            F.row_number().over(
                Window.partitionBy("namespace", "name").orderBy("rank", F.col("created_at").desc(), F.col("version_id").desc())
            ),
        )
        .filter("_n = 1")
        .select("version_id")
    )
    return both.join(best, "version_id", "left_semi")
