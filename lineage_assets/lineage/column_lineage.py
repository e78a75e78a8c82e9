"""Column-level lineage of a range of days (DESIGN.md sections 3 and 4, "Column edges").

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
paths, depth-first ordinal). The current column lineage (for each (job, output dataset), the
edges of the job's latest terminal run that wrote it) is carried by the fold's state.
"""

from __future__ import annotations

import json

from pyspark.sql import Column, DataFrame
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


def dataset_fields(dataset_versions: DataFrame, extra: tuple[str, ...] = ()) -> DataFrame:
    """DATASET_FIELDS rows of dataset versions (those with a schema facet), plus `extra` columns."""
    return dataset_versions.select(
        "version_id", "namespace", "name", *extra, F.explode(schema_fields(F.col("fields"))).alias("f")
    ).select("version_id", "namespace", "name", "f.field_path", "f.type", "f.description", "f.ordinal", *extra)


def column_edges(terminal: DataFrame, run_versions: DataFrame, resolved_inputs: DataFrame, fields: DataFrame) -> DataFrame:
    """column_lineage rows of terminal runs.

    terminal: coalesced runs (inputs/outputs with facets JSON); run_versions: their output
    dataset versions; resolved_inputs: (run_id, namespace, name, version_id) of declared inputs;
    fields: dataset_fields rows of those versions.
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
    # a coalesced run names each input once (`coalesce._merge_datasets`): one row per (run, input)
    input_schemas = terminal.select("run_id", F.explode("inputs").alias("i")).select(
        "run_id", F.col("i.namespace").alias("input_namespace"), F.col("i.name").alias("input_name"),
        schema_fields(F.get_json_object("i.facets", "$.schema.fields")).alias("_input_fields"),
    )
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
