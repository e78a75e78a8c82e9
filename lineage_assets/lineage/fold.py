"""The lineage fold over a range of days in PySpark, in a fixed number of Spark jobs.

Input: the events of days [first, last] and the state as of the day before `first` (rows of the
state tables valid then; see `lineage.state`). Output: the history tables of those days and
the new state rows (every state row valid on some day >= first), which replace the committed
partitions >= first. Nothing before `first` is read, except, for runs still open at first-1,
the COMPLETE dataset versions since the earliest of them started (input resolution as of a
run's start).

The sequential rules stay pure Python applied per group over the whole range: coalescing a
run (`coalesce.coalesce_range`, per runId) and the job-versioning fold
(`versioning.fold_job_by_day`, per job). Everything else is Spark SQL over the whole range;
"latest version at or before a time" is a running window over versions and reads sorted
together, not a join of every read with every version.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lineage_assets.ids import content_uuid
from lineage_assets.lineage import column_lineage as cl
from lineage_assets.lineage import recipe_runs as rr
from lineage_assets.lineage import tags
from lineage_assets.identity.resolver import Identity
from lineage_assets.lineage.checkpoint import checkpoint, checkpoint_beside
from lineage_assets.lineage.coalesce import coalesce_range, code_version
from lineage_assets.lineage.identity import RangeIdentity
from lineage_assets.lineage.per_group import map_groups
from lineage_assets.lineage.versioning import (
    FoldItem,
    JobState,
    fold_job_by_day,
    version_content,
)
from lineage_assets.warehouse import schemas
from lineage_assets.warehouse import tables as t

OPEN_DATE = dt.date.fromisoformat(t.OPEN)
BROADCAST_OPEN_EVENTS = 200_000  # open events (an id and a date each) found by a broadcast join up to this many
NAME_PAIRS = T.ArrayType(t.NAME_PAIR)

# ---------------------------------------------------------------------------------- typed intermediates

SEGMENT_ROWS = schemas.schema(
    "kind string, run_id string, event_id string, valid_to date, "
    "job_namespace string, job_name string, state string, started_at timestamp, ended_at timestamp, "
    "inputs array<RUN_DATASET>, outputs array<RUN_DATASET>, run_facets string, job_facets string, code_version string, "
    "parent_run_id string, root_run_id string, event_count int, streaming boolean, end_date date, kept_events int",
    RUN_DATASET=schemas.RUN_DATASET,
)
SEGMENT_INPUT = (
    "run_id", "event_id", "event_time", "event_date", "event_type", "job_namespace", "job_name",
    "inputs", "outputs", "run_facets", "job_facets", "kept_events",
)
ITEM_COLUMNS = schemas.schema(
    "job_namespace string, job_name string, run_id string, ended_at timestamp, state string, "
    "inputs array<NAME_PAIR>, outputs array<NAME_PAIR>, code_version string, event_id string",
    NAME_PAIR=t.NAME_PAIR,
)
JOB_STATE_COLUMNS = [f for f in t.STATE_JOBS.columns.fields if f.name not in ("job_namespace", "job_name")]
FOLD_ROWS = T.StructType(
    [T.StructField("kind", T.StringType()), *t.JOB_VERSIONS.columns.fields,
     T.StructField("run_id", T.StringType()),
     *[T.StructField(f"s_{f.name}", f.dataType) for f in JOB_STATE_COLUMNS
       if f.name in ("known_versions", "latest_run_id", "latest_state", "latest_ended_at", "valid_from")],
     T.StructField("s_valid_to", T.DateType())]
)


@dataclass
class StateAsOf:
    """The fold's state as of `day` (the day before a range): rows of each state table valid on
    `day`, plus `dataset_candidates`: every COMPLETE version that was latest on some day since
    the earliest start of a run still open on `day`."""

    day: dt.date
    open_events: DataFrame
    aliases: DataFrame
    jobs: DataFrame
    datasets: DataFrame
    dataset_candidates: DataFrame
    storage_versions: DataFrame
    columns: DataFrame
    fields: DataFrame


@dataclass
class RangeTables:
    runs: DataFrame
    job_versions: DataFrame
    dataset_versions: DataFrame
    run_lineage: DataFrame
    column_lineage: DataFrame
    dataset_fields: DataFrame
    dataset_aliases: DataFrame
    field_operations: DataFrame
    field_tags: DataFrame
    job_mismatch: DataFrame  # EVENTS rows rejected as job_mismatch
    state: dict[str, DataFrame]  # state table name -> rows valid on some day >= first (with valid_to)

    def outputs(self) -> dict[str, DataFrame]:
        """Every table the fold writes (t.FOLD_OUTPUTS): the history tables, then the state."""
        return {**{table.name: getattr(self, table.name) for table in t.HISTORY}, **self.state}


class Reopened(Exception):
    """A run that ended before the fold's range has new events in it (events it did not have when
    its row was written): the fold must start at `day`, the day it ended."""

    def __init__(self, day: dt.date, runs: list[str]):
        super().__init__(f"run {', '.join(runs)} ended on {day} and has new events in the range")
        self.day, self.runs = day, runs


# ---------------------------------------------------------------------------------- Python per group


def _coalesce_fn(first_day: dt.date, identity: Identity):
    def run(rows: list[dict]) -> list[dict]:
        return coalesce_range(rows, first_day, identity)

    return run


def _resolve_names(identity: Identity):
    """A UDF: (namespaces, names, microseconds) -> the canonical datasets as of that time, sorted,
    each once (partitions of one dataset are one dataset). For the few JobEvents and streaming
    events; runs are resolved while they are coalesced."""

    def resolve(namespaces, names, at):
        return sorted({identity.resolve(ns, name, at)[:2] for ns, name in zip(namespaces or [], names or [])})

    return F.udf(resolve, NAME_PAIRS)


def _resolve_dataset(identity: Identity):
    """A UDF: (namespace, name, microseconds) -> struct(namespace, name, partition)."""

    def resolve(namespace, name, at):
        return identity.resolve(namespace, name, at)

    return F.udf(resolve, schemas.schema("namespace string, name string, partition string"))


def _pairs(items) -> list[tuple[str, str]]:
    return [(i["namespace"], i["name"]) for i in items or []]


def _named(pairs) -> list[dict]:
    return [{"namespace": ns, "name": name} for ns, name in pairs]


def _fold_groups(rows: list[dict]) -> list[dict]:
    """The job-versioning fold of one job's rows: the state carried in (`is_state`) and items."""
    first = rows[0]
    job = (first["job_namespace"], first["job_name"])
    state = JobState(*job)
    snapshots: list[tuple] = []  # (day, the job's state from that day on)
    items = []
    for row in rows:
        if row["is_state"]:
            state = JobState(
                job[0], job[1], row["s_version_id"],
                version_content(job, _pairs(row["s_inputs"]), _pairs(row["s_outputs"]), row["s_code_version"], row["s_lineage_unknown"]),
                list(row["s_known_versions"] or []), row["s_latest_run_id"], row["s_latest_state"], row["s_latest_ended_at"],
            )
            snapshots.append((row["s_valid_from"], state.to_dict()))  # the state carried in, as it was
        else:
            items.append(FoldItem(
                row["run_id"], row["ended_at"], row["state"], _pairs(row["inputs"]), _pairs(row["outputs"]), row["code_version"], row["event_id"],
            ))
    versions, assignment, states = fold_job_by_day(state, items, lambda i: i.ended_at.astimezone(dt.timezone.utc).date())
    snapshots.extend(states)
    out: list[dict] = []
    base = {"job_namespace": job[0], "job_name": job[1]}
    for version in versions:
        out.append({"kind": "version", **version, "inputs": _named(version["inputs"]), "outputs": _named(version["outputs"])})
    out.extend({"kind": "assign", **base, "run_id": run_id, "version_id": vid} for run_id, vid in assignment.items())
    for index, (day, data) in enumerate(snapshots):
        content = data["content"]
        valid_to = snapshots[index + 1][0] if index + 1 < len(snapshots) else OPEN_DATE
        out.append({
            "kind": "state", **base, "version_id": data["version_id"],
            "inputs": _named(content["inputs"]), "outputs": _named(content["outputs"]),
            "code_version": content["code_version"], "lineage_unknown": content["lineage_unknown"],
            "s_known_versions": data["known_versions"], "s_latest_run_id": data["latest_run_id"],
            "s_latest_state": data["latest_state"], "s_latest_ended_at": data["latest_ended_at"],
            "s_valid_from": day, "s_valid_to": valid_to,
        })
    return out


@F.udf(returnType=T.StringType(), useArrow=True)
def code_version_of(job_facets: str | None) -> str | None:
    return code_version(json.loads(job_facets or "{}"))


@F.udf(returnType=T.StringType(), useArrow=True)
def _dataset_version_uuid(namespace: str, name: str, key: str, value: str | None) -> str:
    return content_uuid({"dataset": [namespace, name], key: value})


def dataset_version_id(namespace: Column, name: Column, key: str, value: Column) -> Column:
    """uuid5 of {"dataset": [ns, name], key: value}: key is run_id, event_id or source (DESIGN.md 4)."""
    return _dataset_version_uuid(namespace, name, F.lit(key), value)


# ---------------------------------------------------------------------------------- Spark assembly


def io_names(col: str) -> Column:
    """array<struct<namespace, name>> of an inputs/outputs column. Built from the two field arrays
    (`inputs.namespace`, `inputs.name`), so a Parquet scan reads only those two fields, not the
    datasets' facets (a lambda over whole elements would read everything)."""
    return F.arrays_zip(F.col(f"{col}.namespace").alias("namespace"), F.col(f"{col}.name").alias("name"))


def _facet(col: str, path: str) -> Column:
    return F.get_json_object(F.col(col), path)


def _version_facets(facets: str) -> list[Column]:
    """storage_version, fields, lifecycle_state and tags (the tags facet's entries: `field_tags`,
    not a dataset_versions column) of a dataset version, from its facets' JSON."""
    return [
        _facet(facets, "$.version.datasetVersion").alias("storage_version"),
        _facet(facets, "$.schema.fields").alias("fields"),
        _facet(facets, "$.lifecycleStateChange.lifecycleStateChange").alias("lifecycle_state"),
        _facet(facets, "$.tags.tags").alias("tags"),
    ]


def _open_date() -> Column:
    return F.lit(OPEN_DATE).cast("date")


def _intervals(df: DataFrame, key: list[str], order: list[Column], day: str, keep_empty: bool) -> DataFrame:
    """Rows that are each the state of their key from `day` on: valid_to = the next row's day
    (by `order`), OPEN for the last. Rows that a same-day successor replaces are dropped unless
    `keep_empty`. A `valid_from` column already present (rows carried from before) is kept."""
    w = Window.partitionBy(*key).orderBy(*order)
    out = df.withColumn("valid_to", F.coalesce(F.lead(day).over(w), _open_date()))
    if "valid_from" not in df.columns:
        out = out.withColumn("valid_from", F.col(day))
    else:
        out = out.withColumn("valid_from", F.coalesce("valid_from", F.col(day)))
    return out if keep_empty else out.filter("valid_from < valid_to")


def _latest_before(versions: DataFrame, reads: DataFrame, key: list[str]) -> DataFrame:
    """For each read (key, t, reader), the latest version (by t, then version_id) at or before
    t whose writer is not the reader. versions: key + t, version_id, writer; reads: key + t, reader."""
    ordered = Window.partitionBy(*key).orderBy("t", "version_id")
    tagged = versions.withColumn("prev", F.lag(F.struct("version_id", "writer")).over(ordered)).select(
        *key, "t", F.lit(0).alias("kind"), "version_id",
        F.struct(F.struct("version_id", "writer").alias("cur"), "prev").alias("v"), F.lit(None).cast("string").alias("reader"),
    )
    stream = tagged.unionByName(
        reads.select(*key, "t", F.lit(1).alias("kind"), F.lit(None).cast("string").alias("version_id"),
                     F.lit(None).cast(tagged.schema["v"].dataType).alias("v"), "reader")
    )
    running = Window.partitionBy(*key).orderBy("t", "kind", "version_id").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    found = stream.withColumn("v", F.last("v", ignorenulls=True).over(running)).filter("kind = 1")
    own = F.col("v.cur.writer").isNotNull() & (F.col("v.cur.writer") == F.col("reader"))
    return found.select(*key, "reader", F.when(own, F.col("v.prev.version_id")).otherwise(F.col("v.cur.version_id")).alias("version_id"))


def fold_range(
    first: dt.date, last: dt.date, events: DataFrame, prev: StateAsOf, names: RangeIdentity,
    lap: Callable[[str], None] = lambda _s: None,
) -> RangeTables:
    """The history tables of days [first, last] and the state rows valid on days >= first.
    `names`: the range's dataset identity (`lineage.identity.range_identity`, of the range's
    whole events even when `events` is a sample of them). `lap(step)` is called after each
    intermediate is computed (for the report's timings)."""
    identity = names.identity
    resolve_names, resolve_dataset = _resolve_names(identity), _resolve_dataset(identity)
    events = events.filter((F.col("event_date") >= F.lit(first)) & (F.col("event_date") <= F.lit(last)))
    event_cols = [*t.EVENT_COLUMNS.fieldNames(), "event_date"]
    carried = prev.open_events.select(*event_cols, "valid_from", "kept_events")
    run_events = events.filter("event_kind = 'RUN'").select(
        *event_cols, F.col("event_date").alias("valid_from"), F.lit(None).cast("int").alias("kept_events"),
    ).unionByName(carried)

    segments = (
        map_groups(run_events.select(*SEGMENT_INPUT), ["run_id"], _coalesce_fn(first, identity), SEGMENT_ROWS)  # not the raw event text
        .transform(checkpoint)
    )
    lap("coalesce")
    kinds = {r["kind"]: r["count"] for r in segments.groupBy("kind").count().collect()}
    if kinds.get("reopen"):  # a run that ended before the range has new events in it: the fold starts at its end
        ends = segments.filter("kind = 'reopen'").groupBy("valid_to").agg(F.sort_array(F.collect_list("run_id")).alias("runs"))
        day, runs = min((r["valid_to"], r["runs"]) for r in ends.collect())
        raise Reopened(day, runs)
    terminal = segments.filter("kind = 'run'").drop("kind", "event_id", "valid_to")
    mismatched = segments.filter("kind = 'mismatch'").select("event_id")
    # the whole event rows of mismatches: a scan of every column of the range, so only when there are any
    job_mismatch = events.join(mismatched, "event_id", "left_semi") if kinds.get("mismatch") else events.limit(0)

    # ---- fold items: terminal batch runs, JobEvents, io-reporting events of streaming runs
    batch_items = terminal.filter("not streaming").select(
        "job_namespace", "job_name", "run_id", "ended_at", "state", io_names("inputs").alias("inputs"),
        io_names("outputs").alias("outputs"), "code_version", F.lit(None).cast("string").alias("event_id"),
    )

    def canonical(side: str) -> Column:  # an event's datasets as of its own time
        return resolve_names(F.col(f"{side}.namespace"), F.col(f"{side}.name"), F.unix_micros("event_time")).alias(side)

    job_event_items = events.filter("event_kind = 'JOB'").select(
        "job_namespace", "job_name", F.col("event_id").alias("run_id"), F.col("event_time").alias("ended_at"),
        F.coalesce("event_type", F.lit("COMPLETE")).alias("state"), canonical("inputs"), canonical("outputs"),
        code_version_of("job_facets").alias("code_version"), "event_id",
    )
    raw_io = events.select(  # names only; resolved after the join, so only streaming events reach the Python UDF
        "event_id", "event_time", io_names("inputs").alias("inputs"), io_names("outputs").alias("outputs"),
    )
    streaming_items = segments.filter("kind = 'item'").select("event_id", "job_namespace", "job_name", "run_id", "ended_at", "state", "code_version").join(
        raw_io, "event_id"
    ).select("job_namespace", "job_name", "run_id", "ended_at", "state", "code_version", canonical("inputs"), canonical("outputs"), "event_id")
    items = batch_items.unionByName(job_event_items).unionByName(streaming_items)
    job_key = ["job_namespace", "job_name"]
    active = items.select(*job_key).distinct()
    prev_jobs = prev.jobs
    state_input = prev_jobs.join(active, job_key, "left_semi").select(
        F.lit(True).alias("is_state"), *job_key, *[F.lit(None).cast(f.dataType).alias(f.name) for f in ITEM_COLUMNS.fields[2:]],
        *[F.col(f.name).alias(f"s_{f.name}") for f in JOB_STATE_COLUMNS],
    )
    item_input = items.select(
        F.lit(False).alias("is_state"), *ITEM_COLUMNS.fieldNames(),
        *[F.lit(None).cast(f.dataType).alias(f"s_{f.name}") for f in JOB_STATE_COLUMNS],
    )
    folded = (
        map_groups(state_input.unionByName(item_input), job_key, _fold_groups, FOLD_ROWS).transform(checkpoint)
    )
    lap("job_fold")
    job_versions = folded.filter("kind = 'version'").select(*t.JOB_VERSIONS.columns.fieldNames()).withColumn(
        "created_date", F.to_date("created_at")
    )
    assignments = folded.filter("kind = 'assign'").select("run_id", F.col("version_id").alias("job_version_id"))
    parents = (  # the parent run of each run that may be a job's latest: the range's terminal runs and those carried
        terminal.select("run_id", "parent_run_id")
        .unionByName(prev_jobs.select(F.col("latest_run_id").alias("run_id"), F.col("latest_parent_run_id").alias("parent_run_id")))
        .groupBy("run_id").agg(F.max("parent_run_id").alias("latest_parent_run_id"))
        .withColumnRenamed("run_id", "latest_run_id")
    )
    job_state = folded.filter("kind = 'state'").select(
        *job_key, "version_id", "inputs", "outputs", "code_version", "lineage_unknown",
        *[F.col(f"s_{n}").alias(n) for n in ("known_versions", "latest_run_id", "latest_state", "latest_ended_at", "valid_from", "valid_to")],
    ).join(parents, "latest_run_id", "left").unionByName(prev_jobs.join(active, job_key, "left_anti").withColumn("valid_to", _open_date()))

    # ---- a run's job version: a batch run's assignment; a streaming run's, its job's version at the end of
    # the day it ended (its items may be in an earlier range: the last of them in this one is not its version)
    streaming_runs = terminal.filter("streaming").select("run_id", *job_key, "end_date")
    by_state = streaming_runs.alias("r").join(
        job_state.alias("s"),
        (F.col("r.job_namespace") == F.col("s.job_namespace")) & (F.col("r.job_name") == F.col("s.job_name"))
        & (F.col("s.valid_from") <= F.col("r.end_date")) & (F.col("r.end_date") < F.col("s.valid_to")),
    ).select("r.run_id", F.col("s.version_id").alias("job_version_id"))
    run_job_versions = assignments.join(streaming_runs, "run_id", "left_anti").unionByName(by_state)

    # ---- dataset versions: each output of each terminal run, and each DatasetEvent
    run_versions = terminal.select(
        "run_id", F.col("state").alias("run_state"), *job_key, "ended_at", "end_date", F.explode("outputs").alias("o")
    ).join(run_job_versions, "run_id", "left").select(
        dataset_version_id(F.col("o.namespace"), F.col("o.name"), "run_id", F.col("run_id")).alias("version_id"),
        F.col("o.namespace").alias("namespace"), F.col("o.name").alias("name"), "run_id", "run_state", *job_key,
        "job_version_id", F.col("ended_at").alias("created_at"), *_version_facets("o.facets"),
        _facet("o.io_facets", "$.outputStatistics.rowCount").cast("long").alias("row_count"),
        F.col("o.partitions").alias("partitions"), F.col("end_date").alias("created_date"),
    ).transform(checkpoint)
    lap("output_versions")
    dataset_events = events.filter("event_kind = 'DATASET'").withColumn(
        "d", resolve_dataset("dataset_namespace", "dataset_name", F.unix_micros("event_time"))
    ).select(
        dataset_version_id(F.col("d.namespace"), F.col("d.name"), "event_id", F.col("event_id")).alias("version_id"),
        F.col("d.namespace").alias("namespace"), F.col("d.name").alias("name"),
        *[F.lit(None).cast("string").alias(c) for c in ("run_id", "run_state", "job_namespace", "job_name", "job_version_id")],
        F.col("event_time").alias("created_at"), *_version_facets("dataset_facets"),
        F.lit(None).cast("long").alias("row_count"),
        F.when(F.col("d.partition").isNotNull(), F.array("d.partition")).otherwise(F.array().cast("array<string>")).alias("partitions"),
        F.col("event_date").alias("created_date"),
    )
    with_tags = run_versions.unionByName(dataset_events)
    field_tags = tags.field_tags(with_tags)
    dataset_versions = with_tags.drop("tags")

    # ---- input resolution
    ds_key = ["namespace", "name"]
    reads = terminal.select("run_id", "started_at", "end_date", F.explode("inputs").alias("i")).select(
        "run_id", "started_at", "end_date", F.col("i.namespace").alias("namespace"), F.col("i.name").alias("name"),
        _facet("i.facets", "$.version.datasetVersion").alias("wanted_storage_version"),
    )
    complete = run_versions.filter("run_state = 'COMPLETE'").select(
        *ds_key, "version_id", "created_at", "storage_version", F.col("run_id").alias("writer_run_id"), "created_date"
    )
    candidates = prev.dataset_candidates.select(*ds_key, "version_id", "created_at", "writer_run_id").unionByName(
        complete.select(*ds_key, "version_id", "created_at", "writer_run_id")
    )
    by_time = _latest_before(
        candidates.select(*ds_key, F.col("created_at").alias("t"), "version_id", F.col("writer_run_id").alias("writer")),
        reads.select(*ds_key, F.col("started_at").alias("t"), F.col("run_id").alias("reader")),
        ds_key,
    ).withColumnRenamed("version_id", "by_time")
    sv_key = [*ds_key, "storage_version"]
    # every version with a DatasetVersion facet: a run's output (any state) or a DatasetEvent's
    with_storage_version = dataset_versions.filter("storage_version is not null")
    sv_versions = prev.storage_versions.select(*sv_key, F.lit(prev.day).cast("date").alias("day"), "created_at", "version_id").unionByName(
        with_storage_version.select(*sv_key, F.col("created_date").alias("day"), "created_at", "version_id")
    )
    sv_reads = reads.filter("wanted_storage_version is not null").select(
        *ds_key, F.col("wanted_storage_version").alias("storage_version"), F.col("end_date").alias("day"), F.col("run_id").alias("reader")
    )
    by_facet = _latest_before(
        sv_versions.select(*sv_key, F.struct("day", "created_at").alias("t"), "version_id", F.lit(None).cast("string").alias("writer")),
        sv_reads.select(*sv_key, F.struct("day", F.lit("9999-12-31 23:59:59").cast("timestamp").alias("created_at")).alias("t"), "reader"),
        sv_key,
    ).select(*ds_key, F.col("storage_version").alias("wanted_storage_version"), "reader", F.col("version_id").alias("by_facet"))
    resolving = checkpoint_beside(  # computed while the fields below are: neither reads the other
        reads.join(by_time.withColumnRenamed("reader", "run_id"), [*ds_key, "run_id"], "left")
        .join(by_facet.withColumnRenamed("reader", "run_id"), [*ds_key, "wanted_storage_version", "run_id"], "left")
        .select(
            "run_id", *ds_key,
            F.coalesce("by_facet", "by_time", dataset_version_id(F.col("namespace"), F.col("name"), "source", F.col("wanted_storage_version"))).alias("version_id"),
        )
        .dropDuplicates(["run_id", *ds_key])
    )

    # ---- dataset fields (and the schema catalog the column edges read)
    declared_schemas = cl.input_schemas(terminal)
    catalog = cl.schema_catalog(
        dataset_versions.select(F.col("fields").alias("text")).unionByName(declared_schemas.select("text"))
    ).transform(checkpoint)
    fields = cl.dataset_fields(dataset_versions, catalog, extra=("created_date",)).transform(checkpoint)
    lap("dataset_fields")
    resolved = resolving.result()
    lap("input_resolution")  # what the input resolution took beyond the fields
    input_versions = resolved.groupBy("run_id").agg(F.array_sort(F.collect_list(F.struct(*ds_key, "version_id"))).alias("input_versions"))
    output_versions = run_versions.groupBy("run_id").agg(F.array_sort(F.collect_list(F.struct(*ds_key, "version_id"))).alias("output_versions"))
    empty_versions = F.array().cast(T.ArrayType(t.VERSIONED))
    run_lineage = (
        terminal.select("run_id", *job_key, "state", "started_at", "ended_at", "end_date")
        .join(run_job_versions, "run_id", "left")
        .join(input_versions, "run_id", "left")
        .join(output_versions, "run_id", "left")
        .select(
            "run_id", *job_key, "job_version_id", "state", "started_at", "ended_at",
            F.coalesce("input_versions", empty_versions).alias("input_versions"),
            F.coalesce("output_versions", empty_versions).alias("output_versions"), "end_date",
        )
    )
    runs = terminal.select(*t.RUNS.columns.fieldNames(), "end_date")

    # ---- column lineage
    with_recipes = rr.recipe_runs(terminal, run_versions, declared_schemas)
    if with_recipes is not None:
        with_recipes = with_recipes.transform(checkpoint)  # read twice: operations and column edges
    field_operations = rr.field_operations(with_recipes, terminal.sparkSession)
    lap("recipes")
    edges = cl.column_edges(terminal, run_versions, resolved, declared_schemas, catalog, derived=with_recipes, identity=identity).transform(checkpoint)
    lap("column_edges")
    column_lineage = edges.withColumn("created_date", F.to_date("created_at"))

    # ---- new state: every row valid on some day >= first
    open_rows = segments.filter("kind = 'open'").select("event_id", F.coalesce("valid_to", _open_date()).alias("valid_to"), "kept_events")
    if kinds.get("open", 0) <= BROADCAST_OPEN_EVENTS:  # the wide event rows are not shuffled to find a few open ones
        open_rows = F.broadcast(open_rows)
    state_open = run_events.drop("kept_events").join(open_rows, "event_id").filter("valid_from < valid_to")

    ds_state = _intervals(
        prev.datasets.drop("valid_to").unionByName(
            complete.select(*ds_key, "version_id", "created_at", "storage_version", "writer_run_id", F.lit(None).cast("date").alias("valid_from"))
        ).withColumn("_day", F.coalesce("valid_from", F.to_date("created_at"))),
        ds_key, [F.col("created_at"), F.col("version_id")], "_day", keep_empty=True,
    ).drop("_day")
    sv_state = _intervals(
        prev.storage_versions.drop("valid_to").unionByName(
            with_storage_version.select(
                *ds_key, "version_id", "created_at", "storage_version", F.col("run_id").alias("writer_run_id"),
                F.lit(None).cast("date").alias("valid_from"),
            )
        ).withColumn("_day", F.coalesce("valid_from", F.to_date("created_at"))),
        sv_key, [F.col("created_at"), F.col("version_id")], "_day", keep_empty=False,
    ).drop("_day")

    # current column edges per (job, output dataset): those of its latest terminal run that wrote it
    pair = [*job_key, "output_namespace", "output_name"]
    writes = terminal.select(*job_key, "run_id", "ended_at", F.explode("outputs").alias("o")).select(
        *job_key, "run_id", "ended_at", F.col("o.namespace").alias("output_namespace"), F.col("o.name").alias("output_name"),
        F.lit(None).cast("date").alias("valid_from"),
    )
    prior_heads = prev.columns.select(*pair, "run_id", F.col("created_at").alias("ended_at"), "valid_from").distinct()
    heads = _intervals(
        prior_heads.unionByName(writes).withColumn("_day", F.coalesce("valid_from", F.to_date("ended_at"))),
        pair, [F.col("ended_at"), F.col("run_id")], "_day", keep_empty=False,
    ).select(*pair, "run_id", "valid_from", "valid_to")
    column_rows = prev.columns.drop("valid_from", "valid_to").unionByName(
        edges.join(terminal.select("run_id", *job_key), "run_id").select(*[c for c in t.STATE_COLUMNS.columns.fieldNames() if c != "valid_from"])
    )
    columns_state = column_rows.join(heads, [*pair, "run_id"])

    # current fields per dataset: the best version with a schema (COMPLETE/others before FAIL/ABORT, then newest)
    ranked = dataset_versions.filter("fields is not null").select(
        *ds_key, "version_id", "created_at", F.when(F.col("run_state").isin("FAIL", "ABORT"), 1).otherwise(0).alias("rank"),
        F.lit(None).cast("date").alias("valid_from"),
    )
    prior_fields = prev.fields.select(*ds_key, "version_id", "created_at", "rank", "valid_from").distinct()
    by_time_order = Window.partitionBy(*ds_key).orderBy("created_at", "version_id").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    score = F.struct((-F.col("rank")).alias("r"), "created_at", "version_id")
    best = (
        prior_fields.unionByName(ranked)
        .withColumn("_best", F.max(score).over(by_time_order))
        .filter(F.col("_best") == score)
        .drop("_best")
        .withColumn("_day", F.coalesce("valid_from", F.to_date("created_at")))
    )
    field_heads = _intervals(best, ds_key, [F.col("created_at"), F.col("version_id")], "_day", keep_empty=False).select(
        "version_id", "created_at", "rank", "valid_from", "valid_to"
    )
    fields_state = (
        prev.fields.select(*t.DATASET_FIELDS.columns.fieldNames()).unionByName(fields.select(*t.DATASET_FIELDS.columns.fieldNames()))
        .join(field_heads, "version_id")
    )

    state = {
        t.STATE_OPEN_EVENTS.name: state_open,
        t.STATE_JOBS.name: job_state,
        t.STATE_DATASETS.name: ds_state,
        t.STATE_STORAGE_VERSIONS.name: sv_state,
        t.STATE_COLUMNS.name: columns_state,
        t.STATE_FIELDS.name: fields_state,
        t.STATE_ALIASES.name: names.state,
    }
    return RangeTables(
        runs, job_versions, dataset_versions, run_lineage, column_lineage, fields, names.dataset_aliases, field_operations,
        field_tags, job_mismatch, state,
    )
