"""Lineage assets: the daily fold (runs, versions, run lineage) and the current-graph snapshots."""

import datetime as dt
import time
from collections import defaultdict
from contextlib import contextmanager

from dagster import (
    AllPartitionMapping,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetDep,
    AssetExecutionContext,
    AssetSpec,
    BackfillPolicy,
    DailyPartitionsDefinition,
    MaterializeResult,
    MetadataValue,
    asset_check,
    multi_asset,
)
from dagster_pyspark import LazyPySparkResource
from pyspark.sql import functions as F

from lineage_assets.defs.metadata import markdown_table
from lineage_assets.defs.resources import LineagePaths, LineageQueryResource
from lineage_assets.intake import reasons
from lineage_assets.intake.spark_intake import fingerprints
from lineage_assets.lineage import state_store
from lineage_assets.lineage.column_lineage import COLUMN_LINEAGE_TABLE, DATASET_FIELDS_TABLE
from lineage_assets.lineage.current import write_current_snapshot
from lineage_assets.lineage.graph_checks import component_problems
from lineage_assets.lineage.spark_fold import (
    DATASET_VERSIONS_TABLE,
    JOB_VERSIONS_TABLE,
    RUN_LINEAGE_TABLE,
    RUNS_TABLE,
    DayTables,
    fold_day,
)
from lineage_assets.warehouse import schemas, snapshots, storage

FOLD_TABLES = {
    "runs": ("end_date", RUNS_TABLE),
    "job_versions": ("created_date", JOB_VERSIONS_TABLE),
    "dataset_versions": ("created_date", DATASET_VERSIONS_TABLE),
    "run_lineage": ("end_date", RUN_LINEAGE_TABLE),
    "column_lineage": ("created_date", COLUMN_LINEAGE_TABLE),
    "dataset_fields": ("created_date", DATASET_FIELDS_TABLE),
}
DETERMINISTIC_CHECK = "fold_recomputes_identically"
KEYS_CHECK = "keys_unique_and_versions_exist"
COMPONENTS_CHECK = "components_same_from_every_node"
COLUMN_FIELDS_CHECK = "current_column_edges_name_existing_fields"


def _day_inputs(spark, warehouse: str, day: str):
    """(the day's events, the state after the previous processed day, earlier COMPLETE versions)."""
    prev = state_store.load_state(spark, warehouse, state_store.latest_state_before(spark, warehouse, day))
    events_root = storage.table_path(warehouse, storage.EVENTS)
    events = storage.read_day(spark, schemas.EVENTS, events_root, "event_date", day)
    first_open = state_store.min_open_day(prev)
    earlier = state_store.earlier_complete_versions(spark, warehouse, first_open, day) if first_open else None
    return events, prev, earlier


def _compute_day(day: str, inputs) -> DayTables:
    return fold_day(dt.date.fromisoformat(day), *inputs)


def _mismatch_rejects(tables: DayTables):
    return tables.job_mismatch.select(
        "source_file",
        "source_line",
        F.col("event_json").alias("raw"),
        F.lit("utf-8").alias("raw_encoding"),
        F.lit(reasons.JOB_MISMATCH).alias("reason_code"),
        F.concat(
            F.lit("run "), F.col("run_id"), F.lit(" already belongs to another job; this event names "),
            F.col("job_namespace"), F.lit(":"), F.col("job_name"),
        ).alias("reason"),
        "event_time",
        F.lit(None).cast("string").alias("drop_key"),
    )


def _cache_outputs(tables: DayTables) -> dict:
    """The day's tables and state, cached so that hashing, writing and checking compute them once."""
    outputs = {name: getattr(tables, name).cache() for name in FOLD_TABLES}
    for part in state_store.PARTS:
        cached = getattr(tables.state, part).cache()
        setattr(tables.state, part, cached)
        outputs[f"state_{part}"] = cached
    return outputs


def _fingerprints(tables: DayTables) -> dict[str, str]:
    """Hashes of the day's tables and of the state it hands to the next day."""
    frames = {name: getattr(tables, name) for name in FOLD_TABLES}
    frames.update({f"state_{part}": getattr(tables.state, part) for part in state_store.PARTS})
    return fingerprints(frames)


def build_lineage_assets(daily: DailyPartitionsDefinition):
    @multi_asset(
        name="lineage_fold",
        partitions_def=daily,
        backfill_policy=BackfillPolicy.single_run(),
        specs=[
            AssetSpec(name, deps=["events"], group_name="lineage", kinds={"spark", "parquet"}, description=desc)
            for name, desc in (
                ("runs", "Terminal runs, all events of a runId coalesced (DESIGN.md section 4)."),
                ("job_versions", "Distinct versions of each job, by the versioning rules of DESIGN.md section 4."),
                ("dataset_versions", "One version per output of each terminal run, and per DatasetEvent."),
                ("run_lineage", "Each terminal run with its job version and the dataset versions it read and wrote."),
                ("column_lineage", "One row per (output version, output field, input field, transformation) of the "
                 "columnLineage facet; dataset-wide dependencies have output_field null."),
                ("dataset_fields", "The fields of each dataset version (schema facet), nested fields as dotted paths."),
            )
        ],
        check_specs=[
            AssetCheckSpec(
                DETERMINISTIC_CHECK, asset="run_lineage", blocking=True,
                description="Recomputing each day from its inputs gives the same content hash, for the tables and the state carried to the next day.",
            ),
            AssetCheckSpec(
                KEYS_CHECK, asset="run_lineage", blocking=True,
                description="Keys are unique and every version id that run_lineage names exists.",
            ),
        ],
    )
    def lineage_fold(context: AssetExecutionContext, pyspark: LazyPySparkResource, paths: LineagePaths):
        spark = pyspark.spark_session
        wh = paths.warehouse
        days = list(context.partition_keys)
        counts = {name: 0 for name in FOLD_TABLES}
        hashes: dict[str, dict[str, str]] = {}
        changed_jobs: set[str] = set()
        problems: list[str] = []
        key_problems: list[str] = []
        started = time.monotonic()
        seconds: dict[str, float] = defaultdict(float)

        @contextmanager
        def step(name: str):
            began = time.monotonic()
            yield
            seconds[name] += time.monotonic() - began

        events_root = storage.table_path(wh, storage.EVENTS)
        skipped = 0
        for index, day in enumerate(days, start=1):
            if not storage.path_exists(spark, f"{events_root}/event_date={day}"):
                # No events: nothing changes, the state before this day carries on as it is.
                skipped += 1
                continue
            with step("load_state"):
                inputs = _day_inputs(spark, wh, day)
                prev_jobs = inputs[1].jobs
            with step("plan"):
                tables = _compute_day(day, inputs)
                outputs = _cache_outputs(tables)
            with step("compute_and_hash"):
                # One Spark job computes every output into the cache and hashes it; the writes
                # below copy the cached rows, so the hash is that of what lands on disk.
                day_hashes = fingerprints(outputs)
                hashes[day] = {name: day_hashes[name] for name in FOLD_TABLES}
            with step("write_tables"):
                for name, (column, _schema) in FOLD_TABLES.items():
                    storage.write_day(outputs[name], storage.table_path(wh, name), column, day)
            with step("write_state"):
                state_store.save_state(tables.state, wh, day)
                rejected_root = storage.table_path(wh, storage.REJECTED_EVENTS)
                storage.write_table(
                    _mismatch_rejects(tables).coalesce(1),
                    f"{rejected_root}/read_date={day}/drop_id={reasons.JOB_MISMATCH}",
                )
            with step("key_check"):
                key_problems += _key_problems(day, outputs, tables)
            with step("changed_jobs"):
                changed = (
                    tables.state.jobs.alias("n")
                    .join(prev_jobs.alias("p"), ["job_namespace", "job_name"], "left")
                    .filter(F.col("p.version_id").isNull() | (F.col("p.version_id") != F.col("n.version_id")))
                    .select(F.concat_ws(":", "job_namespace", "job_name"))
                    .collect()
                )
            changed_jobs.update(r[0] for r in changed)
            with step("recompute_check"):
                # From the inputs again: fold_day re-reads nothing cached; its intermediates are
                # fresh local checkpoints, and the day's cached outputs are dropped first.
                for frame in outputs.values():
                    frame.unpersist()
                recomputed = _fingerprints(_compute_day(day, _day_inputs(spark, wh, day)))
            if recomputed != day_hashes:
                problems.append(f"{day}: written {day_hashes} != recomputed {recomputed}")
            for name in FOLD_TABLES:
                counts[name] += int(day_hashes[name].rsplit("-", 1)[1])  # fingerprints end in "-<rows>"
            context.log.debug(f"lineage_fold seconds by step so far: {dict(seconds)}")
            context.log.info(
                f"lineage_fold: day {index}/{len(days)} {day} done "
                f"({time.monotonic() - started:.1f}s elapsed)"
            )
        processed = [d for d in days if d in hashes]
        preview_rows = [] if not processed else (
            storage.read_day(spark, RUN_LINEAGE_TABLE, storage.table_path(wh, "run_lineage"), "end_date", processed[-1])
            .select("job_name", "state", "ended_at", F.size("input_versions").alias("inputs"), F.size("output_versions").alias("outputs"))
            .orderBy("ended_at").limit(10).collect()
        )
        preview = markdown_table([r.asDict() for r in preview_rows])
        common = {
            "days": len(days),
            "days_without_events": skipped,
            "job_versions_created": counts["job_versions"],
            "dataset_versions_created": counts["dataset_versions"],
            "jobs_with_changed_lineage": MetadataValue.json(sorted(changed_jobs)[:200]),
            "jobs_with_changed_lineage_count": len(changed_jobs),
            "seconds_by_step": MetadataValue.json({k: round(v, 2) for k, v in seconds.items()}),
        }
        for name in FOLD_TABLES:
            yield MaterializeResult(
                asset_key=name,
                metadata={
                    **common,
                    "rows": counts[name],
                    "content_hash_by_day": MetadataValue.json({d: h[name] for d, h in hashes.items()}),
                    **({"preview": MetadataValue.md(preview)} if name == "run_lineage" else {}),
                },
            )
        yield AssetCheckResult(
            check_name=DETERMINISTIC_CHECK, asset_key="run_lineage", passed=not problems,
            metadata={"problems": MetadataValue.json(problems), "content_hash_by_day": MetadataValue.json(hashes)},
        )
        yield AssetCheckResult(
            check_name=KEYS_CHECK, asset_key="run_lineage", passed=not key_problems,
            metadata={"problems": MetadataValue.json(key_problems[:50])},
        )

    @multi_asset(
        name="current_graph",
        specs=[
            AssetSpec(
                name, group_name="lineage", kinds={"spark", "parquet"}, description=desc,
                deps=[AssetDep(upstream, partition_mapping=AllPartitionMapping())],
            )
            for name, upstream, desc in (
                ("current_jobs", "run_lineage", "Each job's current version (that of its latest terminal run) and its component."),
                ("current_lineage", "run_lineage", "The edges of each job's current version: the current lineage graph."),
                ("current_column_lineage", "column_lineage",
                 "Column edges of each dataset's current writers (latest run of each job whose current version outputs it)."),
                ("current_dataset_fields", "dataset_fields",
                 "Each dataset's current fields (its newest version with a schema; FAIL/ABORT writes only as a fallback)."),
            )
        ],
        check_specs=[
            AssetCheckSpec(
                COMPONENTS_CHECK, asset="current_lineage", blocking=True,
                description="A traversal from any node of a component yields the same nodes and edges, "
                "and component_id is that component's smallest node id.",
            )
        ],
    )
    def current_graph(context: AssetExecutionContext, pyspark: LazyPySparkResource, paths: LineagePaths):
        spark = pyspark.spark_session
        wh = paths.warehouse
        days = state_store.state_days(spark, wh)
        state = state_store.load_state(spark, wh, days[-1] if days else None)
        snapshot_id = f"{days[-1] if days else 'empty'}_{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%S%f}"
        write_current_snapshot(state, wh, snapshot_id)

        def written(name: str):
            return spark.read.parquet(snapshots.snapshot_dir(wh, name, snapshot_id))

        job_rows = [r.asDict() for r in written("current_jobs").collect()]
        edge_rows = [r.asDict() for r in written("current_lineage").collect()]
        column_rows = written("current_column_lineage").count()
        problems = component_problems(job_rows, edge_rows)
        snapshots.publish_all(wh, snapshot_id)
        components = len({r["component_id"] for r in job_rows})
        yield MaterializeResult(
            asset_key="current_jobs",
            metadata={"rows": len(job_rows), "components": components, "snapshot": snapshot_id, "as_of_day": days[-1] if days else None},
        )
        yield MaterializeResult(
            asset_key="current_lineage",
            metadata={
                "rows": len(edge_rows), "snapshot": snapshot_id,
                "preview": MetadataValue.md(markdown_table([
                    {k: r[k] for k in ("job_name", "direction", "dataset_namespace", "dataset_name")} for r in edge_rows[:10]
                ])),
            },
        )
        yield MaterializeResult(
            asset_key="current_column_lineage",
            metadata={"rows": column_rows, "snapshot": snapshot_id},
        )
        yield MaterializeResult(asset_key="current_dataset_fields", metadata={"snapshot": snapshot_id})
        yield AssetCheckResult(
            check_name=COMPONENTS_CHECK, asset_key="current_lineage", passed=not problems,
            metadata={"problems": MetadataValue.json(problems[:50]), "components": components},
        )

    @asset_check(
        asset="current_column_lineage",
        name=COLUMN_FIELDS_CHECK,
        description="Every current column edge names a field its dataset's current fields hold, or carries the flag "
        "that says it does not (asked through the LineageQueryResource, over the published snapshot).",
    )
    def current_column_edges_name_existing_fields(lineage_query: LineageQueryResource) -> AssetCheckResult:
        report = lineage_query.current_column_edge_report()
        unflagged = report["unflagged_missing_output_fields"] + report["unflagged_missing_input_fields"]
        return AssetCheckResult(
            passed=unflagged == 0,
            severity=AssetCheckSeverity.WARN,
            metadata={key: MetadataValue.int(value) for key, value in report.items()},
        )

    return [lineage_fold, current_graph, current_column_edges_name_existing_fields]


def _key_problems(day: str, written: dict, tables: DayTables) -> list[str]:
    """Unique keys (column_lineage: no exact duplicate row); every job version and output version
    that run_lineage names exists, and every output version a column edge names.

    Job versions are checked against the ids the fold state says were ever written (compact,
    no scan of history); output versions against the day's dataset_versions. One Spark job.
    """
    keys = {
        "runs": ["run_id"], "job_versions": ["version_id"], "dataset_versions": ["version_id"], "run_lineage": ["run_id"],
        "dataset_fields": ["version_id", "field_path"], "column_lineage": written["column_lineage"].columns,
    }
    duplicated = None
    for name, key in keys.items():
        label = ", ".join(key) if name != "column_lineage" else "row"
        part = written[name].groupBy(*key).count().filter("count > 1").select(F.lit(f"{name} has a duplicated {label}").alias("problem"))
        duplicated = part if duplicated is None else duplicated.unionByName(part)
    lineage = written["run_lineage"]
    known = tables.state.jobs.select(F.explode("known_versions").alias("job_version_id")).unionByName(
        written["job_versions"].select(F.col("version_id").alias("job_version_id"))
    )
    missing_jobs = lineage.join(known, "job_version_id", "left_anti").select(
        F.lit("a run names a job version that job_versions does not hold").alias("problem")
    )
    outputs = lineage.select(F.explode("output_versions").alias("o")).select("o.version_id")
    missing_out = outputs.join(written["dataset_versions"].select("version_id"), "version_id", "left_anti").select(
        F.lit("an output version is missing from dataset_versions").alias("problem")
    )
    edge_outputs = written["column_lineage"].select(F.col("output_version_id").alias("version_id"))
    missing_edge_out = edge_outputs.join(written["dataset_versions"].select("version_id"), "version_id", "left_anti").select(
        F.lit("a column edge names an output version missing from dataset_versions").alias("problem")
    )
    rows = (
        duplicated.unionByName(missing_jobs).unionByName(missing_out).unionByName(missing_edge_out)
        .groupBy("problem").count().collect()
    )
    return [f"{day}: {r['problem']} ({r['count']})" for r in rows]
