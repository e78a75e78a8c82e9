"""One day of the lineage fold in PySpark: events of day D + the state after D-1 -> tables of D.

The state carried from day to day is compact: the events of runs still open at midnight, each
job's current version (plus the ids it ever had), each dataset's latest COMPLETE version, the
storage-version -> version map, the current column edges and the current fields. A day therefore
reads its own events and that state, never the whole history. The sequential parts (coalescing a
run, folding a job's runs) are pure Python functions applied per group through Arrow
(`applyInArrow`); everything else is Spark SQL. The day's intermediates are local checkpoints:
later steps start from their rows, which keeps the Spark plans short (analysing the deep plans
cost more than computing a small day).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lineage_assets.ids import canonical_json, content_uuid
from lineage_assets.lineage import column_lineage as cl
from lineage_assets.lineage.coalesce import code_version, coalesce_run
from lineage_assets.lineage.versioning import FoldItem, JobState, fold_job
from lineage_assets.warehouse import schemas

NAME_PAIR = T.StructType([T.StructField("namespace", T.StringType()), T.StructField("name", T.StringType())])
VERSIONED = T.StructType([*NAME_PAIR.fields, T.StructField("version_id", T.StringType())])

COALESCED = schemas.schema(
    "run_id string, job_namespace string, job_name string, state string, started_at timestamp, ended_at timestamp, "
    "inputs array<IO_DATASET>, outputs array<IO_DATASET>, run_facets string, job_facets string, code_version string, "
    "parent_run_id string, root_run_id string, event_count int, streaming boolean, mismatched_event_ids array<string>",
    IO_DATASET=schemas.IO_DATASET,
)

JOB_STATE = schemas.schema(
    "job_namespace string, job_name string, version_id string, inputs array<NAME_PAIR>, outputs array<NAME_PAIR>, "
    "code_version string, lineage_unknown boolean, known_versions array<string>, latest_run_id string, latest_state string, "
    "latest_ended_at timestamp",
    NAME_PAIR=NAME_PAIR,
)
DATASET_STATE = T.StructType(
    [*NAME_PAIR.fields, T.StructField("version_id", T.StringType()), T.StructField("created_at", T.TimestampType()),
     T.StructField("storage_version", T.StringType())]
)

FOLD_INPUT = schemas.schema(
    "job_namespace string, job_name string, state_json string, run_id string, ended_at timestamp, state string, "
    "inputs array<NAME_PAIR>, outputs array<NAME_PAIR>, code_version string",
    NAME_PAIR=NAME_PAIR,
)
FOLD_OUTPUT = schemas.schema(
    "kind string, job_namespace string, job_name string, run_id string, version_id string, payload string",
)

JOB_VERSIONS = schemas.schema(
    "job_namespace string, job_name string, version_id string, inputs array<NAME_PAIR>, outputs array<NAME_PAIR>, "
    "code_version string, lineage_unknown boolean, created_by_run_id string, created_at timestamp",
    NAME_PAIR=NAME_PAIR,
)


@dataclass
class FoldState:
    open_events: DataFrame  # schemas.EVENTS rows of runs not yet terminal
    jobs: DataFrame  # JOB_STATE
    datasets: DataFrame  # DATASET_STATE: latest COMPLETE version per dataset
    storage_versions: DataFrame  # DATASET_STATE: latest version per (dataset, storage_version)
    columns: DataFrame  # column_lineage.COLUMN_STATE: current column edges per (job, output dataset)
    fields: DataFrame  # column_lineage.FIELDS_STATE: current fields per dataset

    @classmethod
    def empty(cls, spark: SparkSession) -> "FoldState":
        return cls(
            spark.createDataFrame([], schemas.EVENTS),
            spark.createDataFrame([], JOB_STATE),
            spark.createDataFrame([], DATASET_STATE),
            spark.createDataFrame([], DATASET_STATE),
            spark.createDataFrame([], cl.COLUMN_STATE),
            spark.createDataFrame([], cl.FIELDS_STATE),
        )


@dataclass
class DayTables:
    runs: DataFrame
    job_versions: DataFrame
    dataset_versions: DataFrame
    run_lineage: DataFrame
    column_lineage: DataFrame
    dataset_fields: DataFrame
    job_mismatch: DataFrame  # events rejected as job_mismatch (EVENTS columns + reason)
    state: FoldState


# --------------------------------------------------------------------------- Python per group


def _coalesce_groups(table: pa.Table) -> pa.Table:
    events = table.to_pylist()
    run, mismatched = coalesce_run(events)
    for key in ("inputs", "outputs"):
        run[key] = [
            {"namespace": d["namespace"], "name": d["name"], "facets": canonical_json(d["facets"]), "io_facets": canonical_json(d["io_facets"])}
            for d in run[key]
        ]
    run["run_facets"] = canonical_json(run["run_facets"])
    run["job_facets"] = canonical_json(run["job_facets"])
    run["mismatched_event_ids"] = [e["event_id"] for e in mismatched]
    run.pop("last_event_time")
    return pa.Table.from_pylist([run], schema=schemas.arrow_schema(COALESCED))


def _pairs(items) -> list[tuple[str, str]]:
    return [(i["namespace"], i["name"]) for i in items or []]


def _fold_groups(table: pa.Table) -> pa.Table:
    rows = table.to_pylist()
    first = rows[0]
    state = JobState(first["job_namespace"], first["job_name"])
    items = []
    for row in rows:
        if row["state_json"] is not None:
            state = JobState.from_dict(json.loads(row["state_json"]))
            if state.latest_ended_at is not None:
                state.latest_ended_at = dt.datetime.fromisoformat(state.latest_ended_at)
        else:
            items.append(
                FoldItem(row["run_id"], row["ended_at"], row["state"], _pairs(row["inputs"]), _pairs(row["outputs"]), row["code_version"])
            )
    versions, assignment, state = fold_job(state, items)
    out = []
    for version in versions:
        payload = {**version, "created_at": version["created_at"].isoformat()}
        out.append({"kind": "version", "job_namespace": state.job_namespace, "job_name": state.job_name,
                    "run_id": version["created_by_run_id"], "version_id": version["version_id"], "payload": json.dumps(payload)})
    for run_id, vid in assignment.items():
        out.append({"kind": "assign", "job_namespace": state.job_namespace, "job_name": state.job_name,
                    "run_id": run_id, "version_id": vid, "payload": None})
    data = state.to_dict()
    if data["latest_ended_at"] is not None:
        data["latest_ended_at"] = data["latest_ended_at"].isoformat()
    out.append({"kind": "state", "job_namespace": state.job_namespace, "job_name": state.job_name,
                "run_id": None, "version_id": state.version_id, "payload": json.dumps(data)})
    return pa.Table.from_pylist(out, schema=schemas.arrow_schema(FOLD_OUTPUT))


@F.udf(returnType=T.StringType(), useArrow=True)
def code_version_of(job_facets: str | None) -> str | None:
    return code_version(json.loads(job_facets or "{}"))


@F.udf(returnType=T.StringType(), useArrow=True)
def _dataset_version_uuid(namespace: str, name: str, key: str, value: str | None) -> str:
    return content_uuid({"dataset": [namespace, name], key: value})


def dataset_version_id(namespace: Column, name: Column, key: str, value: Column) -> Column:
    """uuid5 of {"dataset": [ns, name], key: value}: key is run_id, event_id or source (DESIGN.md 4)."""
    return _dataset_version_uuid(namespace, name, F.lit(key), value)


# --------------------------------------------------------------------------- Spark assembly


def _names(col: str) -> Column:
    return F.transform(F.col(col), lambda d: F.struct(d["namespace"].alias("namespace"), d["name"].alias("name")))


def _state_json(jobs: DataFrame) -> DataFrame:
    """JOB_STATE rows -> FOLD_INPUT rows carrying the state as JSON."""
    payload = F.to_json(
        F.struct(
            "job_namespace", "job_name", "version_id",
            F.when(F.col("version_id").isNull(), F.lit(None)).otherwise(
                F.struct(
                    F.array("job_namespace", "job_name").alias("job"),
                    F.transform("inputs", lambda d: F.array(d["namespace"], d["name"])).alias("inputs"),
                    F.transform("outputs", lambda d: F.array(d["namespace"], d["name"])).alias("outputs"),
                    F.col("code_version"), F.col("lineage_unknown"),
                )
            ).alias("content"),
            "known_versions", "latest_run_id", "latest_state",
            F.date_format("latest_ended_at", "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX").alias("latest_ended_at"),
        ),
        {"ignoreNullFields": "false"},
    )
    return jobs.select(
        "job_namespace", "job_name", payload.alias("state_json"),
        *[F.lit(None).cast(f.dataType).alias(f.name) for f in FOLD_INPUT.fields[3:]],
    )


def _facet(col: str, path: str) -> Column:
    return F.get_json_object(F.col(col), path)


def fold_day(day: dt.date, events: DataFrame, prev: FoldState, earlier_versions: DataFrame | None = None) -> DayTables:
    """The tables of `day` from its events and the state after the previous processed day.

    `earlier_versions` (DATASET_STATE rows) holds COMPLETE dataset versions of the days on which
    runs ending today started, for input resolution of runs that span days.
    """
    spark = events.sparkSession
    day_lit = F.lit(day).cast("date")
    run_events = events.filter("event_kind = 'RUN'").unionByName(prev.open_events.select(*events.columns))

    coalesced = run_events.groupBy("run_id").applyInArrow(_coalesce_groups, COALESCED).localCheckpoint()
    mismatched_ids = coalesced.select(F.explode("mismatched_event_ids").alias("event_id"))
    job_mismatch = run_events.join(mismatched_ids, "event_id", "left_semi")
    terminal = coalesced.filter("state is not null").localCheckpoint()
    open_ids = coalesced.filter("state is null").select("run_id")
    open_events = run_events.join(open_ids, "run_id", "left_semi").join(mismatched_ids, "event_id", "left_anti")

    # ---- fold items: terminal batch runs, JobEvents, io-reporting events of streaming runs
    batch_items = terminal.filter("not streaming").select(
        "job_namespace", "job_name", "run_id", "ended_at", "state",
        _names("inputs").alias("inputs"), _names("outputs").alias("outputs"), "code_version",
    )
    job_events = events.filter("event_kind = 'JOB'")
    job_event_items = job_events.select(
        "job_namespace", "job_name", F.col("event_id").alias("run_id"), F.col("event_time").alias("ended_at"),
        F.coalesce("event_type", F.lit("COMPLETE")).alias("state"),
        _names("inputs").alias("inputs"), _names("outputs").alias("outputs"), code_version_of("job_facets").alias("code_version"),
    )
    streaming_runs = coalesced.filter("streaming").select("run_id", F.col("code_version").alias("run_code_version"))
    streaming_items = (
        events.filter("event_kind = 'RUN' and (size(inputs) > 0 or size(outputs) > 0)")
        .join(mismatched_ids, "event_id", "left_anti")
        .join(streaming_runs, "run_id")
        .select(
            "job_namespace", "job_name", "run_id", F.col("event_time").alias("ended_at"),
            F.coalesce("event_type", F.lit("RUNNING")).alias("state"),
            _names("inputs").alias("inputs"), _names("outputs").alias("outputs"), F.col("run_code_version").alias("code_version"),
        )
    )
    items = batch_items.unionByName(job_event_items).unionByName(streaming_items)
    fold_input = _state_json(prev.jobs).unionByName(
        items.select("job_namespace", "job_name", F.lit(None).cast("string").alias("state_json"), *[f.name for f in FOLD_INPUT.fields[3:]])
    )
    folded = fold_input.groupBy("job_namespace", "job_name").applyInArrow(_fold_groups, FOLD_OUTPUT).localCheckpoint()

    version_payload = F.from_json("payload", JOB_VERSIONS_JSON)
    job_versions = folded.filter("kind = 'version'").select(version_payload.alias("v")).select(
        "v.job_namespace", "v.job_name", "v.version_id",
        F.transform("v.inputs", lambda p: F.struct(p[0].alias("namespace"), p[1].alias("name"))).alias("inputs"),
        F.transform("v.outputs", lambda p: F.struct(p[0].alias("namespace"), p[1].alias("name"))).alias("outputs"),
        "v.code_version", "v.lineage_unknown", "v.created_by_run_id", F.to_timestamp("v.created_at").alias("created_at"),
    ).withColumn("created_date", day_lit)
    assignments = folded.filter("kind = 'assign'").select("run_id", F.col("version_id").alias("job_version_id"))
    state_rows = folded.filter("kind = 'state'").select(F.from_json("payload", STATE_JSON).alias("s")).select(
        "s.job_namespace", "s.job_name", "s.version_id",
        F.transform("s.content.inputs", lambda p: F.struct(p[0].alias("namespace"), p[1].alias("name"))).alias("inputs"),
        F.transform("s.content.outputs", lambda p: F.struct(p[0].alias("namespace"), p[1].alias("name"))).alias("outputs"),
        F.col("s.content.code_version").alias("code_version"), F.col("s.content.lineage_unknown").alias("lineage_unknown"),
        "s.known_versions", "s.latest_run_id", "s.latest_state", F.to_timestamp("s.latest_ended_at").alias("latest_ended_at"),
    )
    job_current = state_rows.select("job_namespace", "job_name", F.col("version_id").alias("current_version_id"))

    # ---- runs
    runs = terminal.drop("mismatched_event_ids", "streaming").withColumn("end_date", day_lit)

    # ---- dataset versions: each output of each terminal run, and each DatasetEvent
    outputs = terminal.select(
        "run_id", F.col("state").alias("run_state"), "job_namespace", "job_name", "ended_at", F.explode("outputs").alias("o")
    ).join(assignments, "run_id", "left").join(job_current, ["job_namespace", "job_name"], "left")
    run_versions = outputs.select(
        dataset_version_id(F.col("o.namespace"), F.col("o.name"), "run_id", F.col("run_id")).alias("version_id"),
        F.col("o.namespace").alias("namespace"), F.col("o.name").alias("name"), "run_id", "run_state",
        "job_namespace", "job_name", F.coalesce("job_version_id", "current_version_id").alias("job_version_id"),
        F.col("ended_at").alias("created_at"),
        _facet("o.facets", "$.version.datasetVersion").alias("storage_version"),
        _facet("o.facets", "$.schema.fields").alias("fields"),
        _facet("o.facets", "$.lifecycleStateChange.lifecycleStateChange").alias("lifecycle_state"),
        _facet("o.io_facets", "$.outputStatistics.rowCount").cast("long").alias("row_count"),
    )
    dataset_events = events.filter("event_kind = 'DATASET'").select(
        dataset_version_id(F.col("dataset_namespace"), F.col("dataset_name"), "event_id", F.col("event_id")).alias("version_id"),
        F.col("dataset_namespace").alias("namespace"), F.col("dataset_name").alias("name"),
        F.lit(None).cast("string").alias("run_id"), F.lit(None).cast("string").alias("run_state"),
        F.lit(None).cast("string").alias("job_namespace"), F.lit(None).cast("string").alias("job_name"),
        F.lit(None).cast("string").alias("job_version_id"), F.col("event_time").alias("created_at"),
        _facet("dataset_facets", "$.version.datasetVersion").alias("storage_version"),
        _facet("dataset_facets", "$.schema.fields").alias("fields"),
        _facet("dataset_facets", "$.lifecycleStateChange.lifecycleStateChange").alias("lifecycle_state"),
        F.lit(None).cast("long").alias("row_count"),
    )
    run_versions = run_versions.localCheckpoint()
    dataset_versions = run_versions.unionByName(dataset_events).withColumn("created_date", day_lit)

    # ---- input resolution
    complete_today = run_versions.filter("run_state = 'COMPLETE'").select(
        "namespace", "name", "version_id", "created_at", "storage_version", F.col("run_id").alias("writer_run_id")
    )
    history = prev.datasets
    if earlier_versions is not None:
        history = history.unionByName(earlier_versions)
    candidates = history.withColumn("writer_run_id", F.lit(None).cast("string")).unionByName(complete_today)
    reads = terminal.select("run_id", "started_at", F.explode("inputs").alias("i")).select(
        "run_id", "started_at", F.col("i.namespace").alias("namespace"), F.col("i.name").alias("name"),
        _facet("i.facets", "$.version.datasetVersion").alias("wanted_storage_version"),
    )
    by_facet = (
        reads.filter("wanted_storage_version is not null").alias("r")
        .join(
            prev.storage_versions.unionByName(run_versions.filter("storage_version is not null").select(*DATASET_STATE.fieldNames())).alias("s"),
            (F.col("r.namespace") == F.col("s.namespace")) & (F.col("r.name") == F.col("s.name"))
            & (F.col("r.wanted_storage_version") == F.col("s.storage_version")),
        )
        .select("r.run_id", "r.namespace", "r.name", F.col("s.version_id"), F.col("s.created_at"), F.lit(0).alias("rank_source"))
    )
    by_time = (
        reads.alias("r")
        .join(
            candidates.alias("c"),
            (F.col("r.namespace") == F.col("c.namespace")) & (F.col("r.name") == F.col("c.name"))
            & (F.col("c.created_at") <= F.col("r.started_at"))
            & (F.col("c.writer_run_id").isNull() | (F.col("c.writer_run_id") != F.col("r.run_id"))),
        )
        .select("r.run_id", "r.namespace", "r.name", F.col("c.version_id"), F.col("c.created_at"), F.lit(1).alias("rank_source"))
    )
    best = (
        by_facet.unionByName(by_time)
        .withColumn(
            "_n",
            F.row_number().over(
                Window.partitionBy("run_id", "namespace", "name").orderBy(
                    F.col("rank_source"), F.col("created_at").desc(), F.col("version_id").desc()
                )
            ),
        )
        .filter("_n = 1")
        .select("run_id", "namespace", "name", "version_id")
    )
    resolved = reads.join(best, ["run_id", "namespace", "name"], "left").select(
        "run_id", "namespace", "name",
        F.coalesce("version_id", dataset_version_id(F.col("namespace"), F.col("name"), "source", F.col("wanted_storage_version"))).alias("version_id"),
    ).localCheckpoint()
    input_versions = resolved.groupBy("run_id").agg(
        F.array_sort(F.collect_list(F.struct("namespace", "name", "version_id"))).alias("input_versions")
    )
    output_versions = run_versions.groupBy("run_id").agg(
        F.array_sort(F.collect_list(F.struct("namespace", "name", "version_id"))).alias("output_versions")
    )
    run_lineage = (
        terminal.select("run_id", "job_namespace", "job_name", "state", "started_at", "ended_at")
        .join(assignments, "run_id", "left")
        .join(job_current, ["job_namespace", "job_name"], "left")
        .join(input_versions, "run_id", "left")
        .join(output_versions, "run_id", "left")
        .select(
            "run_id", "job_namespace", "job_name", F.coalesce("job_version_id", "current_version_id").alias("job_version_id"),
            "state", "started_at", "ended_at",
            F.coalesce("input_versions", F.array().cast(T.ArrayType(VERSIONED))).alias("input_versions"),
            F.coalesce("output_versions", F.array().cast(T.ArrayType(VERSIONED))).alias("output_versions"),
        )
        .withColumn("end_date", day_lit)
    )

    # ---- column lineage and dataset fields
    fields_today = cl.dataset_fields(dataset_versions).localCheckpoint()
    edges = cl.column_edges(terminal, run_versions, resolved, fields_today).localCheckpoint()
    column_lineage = edges.withColumn("created_date", day_lit)
    dataset_fields = fields_today.withColumn("created_date", day_lit)

    # ---- new state
    latest = Window
    datasets_state = (
        prev.datasets.unionByName(complete_today.drop("writer_run_id"))
        .withColumn("_n", F.row_number().over(latest.partitionBy("namespace", "name").orderBy(F.col("created_at").desc(), F.col("version_id").desc())))
        .filter("_n = 1").drop("_n")
    )
    storage_state = (
        prev.storage_versions.unionByName(run_versions.filter("storage_version is not null").select(*DATASET_STATE.fieldNames()))
        .withColumn("_n", F.row_number().over(latest.partitionBy("namespace", "name", "storage_version").orderBy(F.col("created_at").desc(), F.col("version_id").desc())))
        .filter("_n = 1").drop("_n")
    )
    state = FoldState(
        open_events.select(*schemas.EVENTS.fieldNames()), state_rows, datasets_state, storage_state,
        cl.current_column_state(prev.columns, terminal, edges),
        cl.current_fields_state(prev.fields, dataset_versions, fields_today),
    )
    return DayTables(runs, job_versions, dataset_versions, run_lineage, column_lineage, dataset_fields, job_mismatch, state)


JOB_VERSIONS_JSON = schemas.schema(
    "job_namespace string, job_name string, version_id string, inputs array<array<string>>, outputs array<array<string>>, "
    "code_version string, lineage_unknown boolean, created_by_run_id string, created_at string",
)
STATE_JSON = T.StructType(
    [
        T.StructField("job_namespace", T.StringType()),
        T.StructField("job_name", T.StringType()),
        T.StructField("version_id", T.StringType()),
        T.StructField(
            "content",
            T.StructType(
                [
                    T.StructField("inputs", T.ArrayType(T.ArrayType(T.StringType()))),
                    T.StructField("outputs", T.ArrayType(T.ArrayType(T.StringType()))),
                    T.StructField("code_version", T.StringType()),
                    T.StructField("lineage_unknown", T.BooleanType()),
                ]
            ),
        ),
        T.StructField("known_versions", T.ArrayType(T.StringType())),
        T.StructField("latest_run_id", T.StringType()),
        T.StructField("latest_state", T.StringType()),
        T.StructField("latest_ended_at", T.StringType()),
    ]
)


RUNS_TABLE = T.StructType(
    [f for f in COALESCED.fields if f.name not in ("mismatched_event_ids", "streaming")]
    + [T.StructField("end_date", T.DateType())]
)
JOB_VERSIONS_TABLE = T.StructType([*JOB_VERSIONS.fields, T.StructField("created_date", T.DateType())])
DATASET_VERSIONS_TABLE = schemas.schema(
    "version_id string, namespace string, name string, run_id string, run_state string, job_namespace string, "
    "job_name string, job_version_id string, created_at timestamp, storage_version string, fields string, "
    "lifecycle_state string, row_count long, created_date date",
)
RUN_LINEAGE_TABLE = schemas.schema(
    "run_id string, job_namespace string, job_name string, job_version_id string, state string, started_at timestamp, "
    "ended_at timestamp, input_versions array<VERSIONED>, output_versions array<VERSIONED>, end_date date",
    VERSIONED=VERSIONED,
)
