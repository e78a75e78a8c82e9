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

from lineage_assets.identity.resolver import Identity
from lineage_assets.warehouse import schemas

TRANSFORMATION = "struct<type: string, subtype: string, description: string, masking: boolean>"
INPUT_FIELD = f"struct<namespace: string, name: string, field: string, transformations: array<{TRANSFORMATION}>>"
FACET_FIELD = f"struct<inputFields: array<{INPUT_FIELD}>, transformationDescription: string, transformationType: string>"
FACET_SCHEMA = f"struct<fields: map<string, {FACET_FIELD}>, dataset: array<{INPUT_FIELD}>>"

FIELD = schemas.schema("field_path string, type string, description string, ordinal int")


def schema_items(fields_json: str | None) -> list | None:
    """The schema facet's `fields` (JSON text) parsed: a list, or None when absent or not a list."""
    if fields_json is None:
        return None
    try:
        fields = json.loads(fields_json)
    except ValueError:
        return None
    return fields if isinstance(fields, list) else None


def flatten_schema(fields_json: str | None) -> list[dict] | None:
    """The schema facet's `fields` (JSON text) as dotted paths in depth-first order; None if absent."""
    fields = schema_items(fields_json)
    if fields is None:
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


def schema_id(fields_json: Column) -> Column:
    """The identity of a schema text: its SHA-256 (binary). Equal texts flatten equally."""
    return F.unhex(F.sha2(fields_json, 256))


def schema_catalog(texts: DataFrame) -> DataFrame:
    """(schema_id, fields: array<FIELD>, types: map<field_path, type>) of each distinct schema
    text in `texts` (column `text`).

    A dataset's schema rarely changes from run to run, so a range holds far fewer distinct
    schema texts than dataset versions and declared inputs (100,000 generated events: about
    230,000 texts, 3,754 distinct). The flatten (Python) runs once per distinct text; the map
    side of the aggregation keeps one text per schema, so little is shuffled."""
    return (
        texts.filter("text is not null")
        .groupBy(schema_id(F.col("text")).alias("schema_id"))
        .agg(F.min("text").alias("text"))  # every text of one schema_id is the same text
        .select("schema_id", schema_fields(F.col("text")).alias("fields"))
        .withColumn("types", F.map_from_arrays("fields.field_path", "fields.type"))  # paths are unique
    )


def input_schemas(terminal: DataFrame) -> DataFrame:
    """(run_id, namespace, name, text): the schema text each terminal run declared for each input
    (a coalesced run names each input once: `coalesce._merge_datasets`)."""
    return terminal.select("run_id", F.explode("inputs").alias("i")).select(
        "run_id", F.col("i.namespace").alias("namespace"), F.col("i.name").alias("name"),
        F.get_json_object("i.facets", "$.schema.fields").alias("text"),
    )


def dataset_fields(dataset_versions: DataFrame, catalog: DataFrame, extra: tuple[str, ...] = ()) -> DataFrame:
    """DATASET_FIELDS rows of dataset versions (those with a schema facet), plus `extra` columns.
    catalog: `schema_catalog` of (at least) the versions' `fields` texts."""
    return (
        dataset_versions.filter("fields is not null")
        .select("version_id", "namespace", "name", *extra, schema_id(F.col("fields")).alias("schema_id"))
        .join(catalog.select("schema_id", F.col("fields").alias("_fields")), "schema_id")
        .select("version_id", "namespace", "name", *extra, F.explode("_fields").alias("f"))
        .select("version_id", "namespace", "name", "f.field_path", "f.type", "f.description", "f.ordinal", *extra)
    )


_EDGE_PARTS = (
    "output_field", "legacy_transformation_type", "legacy_transformation_description",
    "input_namespace", "input_name", "input_field",
)


def _edge_items(cll: Column) -> Column:
    """The edges of one output's facet as one array, each (input field, transformation) once:
    per output field, each input field with each of its transformations (one item with a null
    transformation when it lists none), then the dataset-wide inputs (output_field null).
    Duplicates (a facet listing an input field or a transformation twice, or by two names of one
    dataset) can only come from one facet, so `column_edges` removes them per row, once the
    inputs are canonical, with no shuffle."""
    none = F.lit(None).cast("string")

    def item(output_field, legacy_type, legacy_description, i) -> list[Column]:
        return [
            output_field.alias("output_field"), legacy_type.alias("legacy_transformation_type"),
            legacy_description.alias("legacy_transformation_description"), i["namespace"].alias("input_namespace"),
            i["name"].alias("input_name"), i["field"].alias("input_field"), i["transformations"].alias("ts"),
        ]

    empty_inputs = F.array().cast(f"array<{INPUT_FIELD}>")
    by_field = F.flatten(F.transform(
        F.coalesce(F.map_entries(cll["fields"]), F.array().cast(f"array<struct<key: string, value: {FACET_FIELD}>>")),
        lambda e: F.transform(
            F.coalesce(e["value"]["inputFields"], empty_inputs),
            lambda i: F.struct(*item(e["key"], e["value"]["transformationType"], e["value"]["transformationDescription"], i)),
        ),
    ))
    dataset_wide = F.transform(F.coalesce(cll["dataset"], empty_inputs), lambda i: F.struct(*item(none, none, none, i)))

    def with_t(x: Column, t: Column) -> Column:
        return F.struct(*[x[p].alias(p) for p in _EDGE_PARTS], t.alias("t"))

    return F.flatten(F.transform(
        F.concat(by_field, dataset_wide),
        lambda x: F.when(F.size(x["ts"]) > 0, F.transform(x["ts"], lambda t: with_t(x, t)))
        .otherwise(F.array(with_t(x, F.lit(None).cast(TRANSFORMATION)))),
    ))


def _input_keys(terminal: DataFrame) -> DataFrame:
    """(run_id, namespace, name, key): every name a run's column lineage may give each declared
    input by, its canonical name and the names the run reported it by (DESIGN.md section 10)."""
    return terminal.select("run_id", F.explode("inputs").alias("i")).select(
        "run_id", F.col("i.namespace").alias("namespace"), F.col("i.name").alias("name"),
        F.explode(F.array_union(
            F.array(F.struct(F.col("i.namespace").alias("namespace"), F.col("i.name").alias("name"))),
            F.coalesce(F.col("i.reported"), F.array().cast(T.ArrayType(schemas.NAME_PAIR))),
        )).alias("key"),
    )


def _known(types: Column, field: Column) -> Column:
    """Whether a schema (types: map<field_path, type>, null when there is none) holds `field`:
    null when there is no schema, false for a null field."""
    return F.when(types.isNull(), F.lit(None).cast("boolean")).otherwise(F.coalesce(F.map_contains_key(types, field), F.lit(False)))


def _type(types: Column, field: Column) -> Column:
    return F.when(field.isNotNull(), F.try_element_at(types, field))


def _input_dataset(item: Column) -> Column:
    """The dataset (namespace, name) an edge item (`_edge_items`) names its input by."""
    return F.struct(item["input_namespace"].alias("namespace"), item["input_name"].alias("name"))


CANONICAL_ENTRIES = T.ArrayType(T.StructType([T.StructField("key", schemas.NAME_PAIR), T.StructField("value", schemas.NAME_PAIR)]))


def _canonical_names(identity: Identity):
    """An Arrow UDF: (the names an output's facet gives inputs by that are none of its run's
    declared inputs' keys, microseconds) -> [(name, the canonical dataset it stands for as of
    then)] where that differs (an alias stated by another producer, a partition), or null. Most
    facets name inputs as the run declared them: the list is empty and Python does nothing."""

    def canonical(misses, at):
        found = []
        for miss in misses or ():
            namespace, name, _partition = identity.resolve(miss["namespace"], miss["name"], at)
            if (namespace, name) != (miss["namespace"], miss["name"]):
                found.append(((miss["namespace"], miss["name"]), (namespace, name)))
        return found or None

    return F.udf(canonical, CANONICAL_ENTRIES, useArrow=True)


def column_edges(
    terminal: DataFrame, run_versions: DataFrame, resolved_inputs: DataFrame, declared_schemas: DataFrame, catalog: DataFrame,
    derived: DataFrame | None = None, identity: Identity | None = None,
) -> DataFrame:
    """column_lineage rows of terminal runs.

    terminal: coalesced runs (inputs/outputs with facets JSON); run_versions: their output
    dataset versions; resolved_inputs: (run_id, namespace, name, version_id) of declared inputs;
    declared_schemas: `input_schemas(terminal)`; catalog: `schema_catalog` of the output
    versions' and the inputs' schema texts; derived: (run_id, output_namespace, output_name,
    cll) facets derived from a recipe (`recipe_runs`), used where an output has no facet;
    identity: the range's dataset identity: a name a facet gives an input by is taken as the
    dataset it stands for (a declared input named by another alias or by a partition is that
    input, DESIGN.md 10); only names that are none of the run's declared keys are resolved, per
    output row, with no shuffle.

    Every join is made per output or per run, and every edge is completed inside its output's
    row (its input looked up in one map per run of the inputs' versions and field types), before
    the edges are exploded: the edges (8 per event) are never shuffled, and no exploded row
    carries the run's maps.
    """
    outputs = terminal.select("run_id", "ended_at", F.explode("outputs").alias("o")).select(
        "run_id", "ended_at",
        F.col("o.namespace").alias("output_namespace"), F.col("o.name").alias("output_name"),
        F.from_json(F.get_json_object("o.facets", "$.columnLineage"), FACET_SCHEMA).alias("cll"),
    )
    if derived is not None:
        out_key = ["run_id", "output_namespace", "output_name"]
        outputs = outputs.join(derived.select(*out_key, F.col("cll").alias("_derived")), out_key, "left").select(
            "run_id", "ended_at", "output_namespace", "output_name", F.coalesce("cll", "_derived").alias("cll"))
    outputs = outputs.filter("cll is not null")
    versions = run_versions.select(
        "run_id", F.col("namespace").alias("output_namespace"), F.col("name").alias("output_name"),
        F.col("version_id").alias("output_version_id"), F.col("fields").isNotNull().alias("_has_schema"),
        schema_id(F.col("fields")).alias("schema_id"),
    ).join(catalog.select("schema_id", F.col("types").alias("_output_types")), "schema_id", "left").drop("schema_id")
    ds_key = ["run_id", "namespace", "name"]
    run_inputs = (
        resolved_inputs.select(*ds_key, F.col("version_id").alias("input_version_id"))
        .join(declared_schemas.select(*ds_key, schema_id(F.col("text")).alias("schema_id")), ds_key, "left")
        .join(catalog.select("schema_id", "types"), "schema_id", "left")
        .join(_input_keys(terminal), ds_key)
        .groupBy("run_id")
        .agg(F.map_from_entries(F.collect_list(F.struct(
            F.col("key"), F.struct("namespace", "name", "input_version_id", "types").alias("value"),
        ))).alias("_inputs"))
    )

    def looked_up(x: Column) -> Column:
        """(x, s: the dataset its input name stands for, d: the declared input it is), each map
        looked up once: lambdas are interpreted, with no common subexpressions shared, so an
        expression used five times in `complete` was evaluated five times (case a's 792,281
        edges: `column_edges` 10.7-12.5 s -> 9.3-11.0 s warm, alternating in one JVM)."""
        key = _input_dataset(x)
        stands_for = F.try_element_at(F.col("_canon"), key) if identity is not None else F.lit(None).cast(schemas.NAME_PAIR)
        return F.struct(x.alias("x"), stands_for.alias("s"), F.try_element_at(F.col("_inputs"), F.coalesce(stands_for, key)).alias("d"))

    def complete(y: Column) -> Column:
        x, stands_for, declared = y["x"], y["s"], y["d"]
        canonical = {  # an input's field names its canonical dataset, whatever name the facet gave
            "input_namespace": F.coalesce(declared["namespace"], stands_for["namespace"], x["input_namespace"]),
            "input_name": F.coalesce(declared["name"], stands_for["name"], x["input_name"]),
        }
        return F.struct(
            *[canonical.get(p, x[p]).alias(p) for p in _EDGE_PARTS], x["t"].alias("t"),
            declared["input_version_id"].alias("input_version_id"),
            F.when(x["output_field"].isNotNull(), _known(F.col("_known_types"), x["output_field"])).alias("output_field_known"),
            _known(declared["types"], x["input_field"]).alias("input_field_known"),
            _type(F.col("_output_types"), x["output_field"]).alias("output_field_type"),
            _type(declared["types"], x["input_field"]).alias("input_field_type"),
        )

    edges = (  # the facet's edge items worked out once per output row, read by the name resolution and the explode
        outputs.join(versions, ["run_id", "output_namespace", "output_name"]).join(run_inputs, "run_id", "left")
        .withColumn("_items", _edge_items(F.col("cll")))
    )
    if identity is not None:
        misses = F.filter(F.array_distinct(F.transform(F.col("_items"), _input_dataset)),
                          lambda k: F.try_element_at(F.col("_inputs"), k).isNull())
        edges = edges.withColumn("_canon", F.map_from_entries(_canonical_names(identity)(misses, F.unix_micros("ended_at"))))
    known_types = F.when(F.col("_has_schema"), F.coalesce("_output_types", F.create_map().cast("map<string, string>")))
    edges = edges.withColumn("_known_types", known_types).select(  # once per row, after the rows went through Python
        "run_id", "ended_at", "output_namespace", "output_name", "output_version_id",
        F.explode(F.array_distinct(F.transform(F.transform(F.col("_items"), looked_up), complete))).alias("e"),
    )
    return edges.select(
        "output_version_id", "output_namespace", "output_name", "e.output_field",
        "e.input_namespace", "e.input_name", "e.input_field", "e.input_version_id",
        F.col("e.t.type").alias("transformation_type"), F.col("e.t.subtype").alias("transformation_subtype"),
        F.col("e.t.description").alias("transformation_description"), F.col("e.t.masking").alias("masking"),
        "e.legacy_transformation_type", "e.legacy_transformation_description", "run_id",
        F.col("ended_at").alias("created_at"),
        F.col("e.input_version_id").isNotNull().alias("input_declared"),
        "e.output_field_known", "e.input_field_known", "e.output_field_type", "e.input_field_type",
    )
