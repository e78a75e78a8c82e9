"""Resources: the Spark session (lazy, configurable by config or environment) and the paths."""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

from dagster import ConfigurableResource
from pydantic import PrivateAttr
from dagster_pyspark import LazyPySparkResource

from lineage_assets.query.lineage_query import LineageQuery
from lineage_assets.settings import LineageSettings, parse_start_date
from lineage_assets.warehouse import leases

# HotSpot's top tier (C2) compiles a method once it has run about 15,000 times. Spark generates and
# loads new classes for every stage, most of which run a few thousand rows and are never used
# again, so C2 spent 28-31 s of CPU in a warm fold of 100,000 events (of ~150 s; the executor
# threads ~79 s) compiling code it then threw away. Ten times those thresholds keep short-lived
# generated code at C1 while long-running code still reaches C2: 16-18 s of C2, and the fold 4-6 s
# faster in each of three alternating runs (`benchmarks/pipeline.py` case a's warehouse, README
# "Pipeline cost"). C1 alone (-XX:TieredStopAtLevel=1) was slower: task code ran ~50% longer.
JIT_OPTIONS = (
    "-XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=6000 "
    "-XX:Tier4CompileThreshold=150000 -XX:Tier4BackEdgeThreshold=400000"
)
# The throughput collector instead of G1. G1 does part of its work concurrently (marking, refining
# remembered sets) and pays write barriers for it on every reference store; a batch job wants
# throughput, not short pauses. Case a's fold of 100,000 events with its determinism check
# (`benchmarks/pipeline.py` case a's warehouse refolded, a cold and a warm pass per JVM,
# alternating JVMs): G1 132.0 / 135.0 s cold (256-262 s of CPU) and 94.2 / 97.8 s warm,
# ParallelGC 119.0 / 117.8 s cold (228-229 s of CPU) and 85.3 / 86.1 s warm. On small ranges
# (case c's refold) it made no difference either way; the tests ran with it first.
GC_OPTIONS = "-XX:+UseParallelGC"
JVM_OPTIONS = f"-Duser.timezone=UTC {JIT_OPTIONS} {GC_OPTIONS}"
# Spark tries a task `spark.task.maxFailures` times (4 by default) on a cluster, but once in local
# mode unless the master says otherwise (`local[N,F]`): there one crashed Python worker stops the
# whole run. Case d of `benchmarks/pipeline.py` (1,000,000 events) lost a 20-minute fold so, once
# in three runs (a coalescing task's worker: "Python worker exited unexpectedly (crashed)",
# 2026-11-28; README "Pipeline cost"). A local master gets the cluster's tries (`local_tries`).
TASK_TRIES = 4
PYTHON_IDLE_SECONDS = 300
_LOCAL_MASTER = re.compile(r"local(?:\[\s*(\*|\d+)\s*\])?")

SPARK_DEFAULTS: dict[str, str] = {
    "spark.master": "local[*]",
    "spark.app.name": "lineage_assets",
    "spark.driver.memory": "2g",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # events rows are wide (the whole event's JSON, ~8 KB): 4096-row Parquet batches of them ran
    # a 2g driver out of heap while two tasks sorted them; 1024-row batches do not
    "spark.sql.parquet.columnarReaderBatchSize": "1024",
    # the fold's per-group rules get whole groups per Arrow row (lineage.per_group): 1,000 groups
    # of wide rows per batch, not 10,000
    "spark.sql.execution.arrow.maxRecordsPerBatch": "1000",
    # Spark keeps the classes it generates for a query's code in a cache of 100 entries by
    # default; the fold and its determinism check's recompute plan ~140 stages of the same code
    # shapes, so each evicted the other's classes and compiled (Janino, in the task threads) and
    # JIT-compiled them again. Case c's fold with its check, warm passes in one JVM: 46.9-57.2 s
    # and 106 s of CPU with 100 entries, 42.7-42.9 s and 81-83 s of CPU with 5,000.
    "spark.sql.codegen.cache.maxEntries": "5000",
    # Every read names its committed files one by one (`warehouse.commits.read_files`). Above 32
    # paths Spark checks them with a Spark job of one task per path: a fold of 66 days ran 11 such
    # jobs (673 tasks, 3.8 s of job time) beside and before its real work. On the driver, the
    # same check is a stat per file. Case c's fold with its check, warm passes in one JVM:
    # 40.3-42.5 / 34.5-39.0 s -> 36.7 / 35.7 / 36.0 s (README "Pipeline cost").
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
    # PySpark 4 wraps every function of `pyspark.sql.functions` (F.col, F.lit, ...) to send the
    # calling Python line to the JVM for error messages' "DataFrame query context": 13 Py4J round
    # trips per call instead of 3 (F.col 1.4 ms -> 0.31 ms). The fold and its checks build their
    # plans from thousands of such calls: two warm ingests of a 12-event stream (test settings,
    # alternating JVMs) took 25.7-29.9 s (the driver's Python 6.2-6.6 s of CPU) with it and
    # 23.3-26.8 s (3.6-4.3 s) without. Errors still carry their Python traceback.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    # PySpark's worker loop runs a full cycle collection after every Python task, over every object
    # the worker has imported (37 ms for ~100,000), and case a's fold runs hundreds of Python tasks.
    # The project's daemon freezes what survives each one (`lineage_assets.worker_daemon`), so the
    # next walks only what the worker made since: case a's Python workers 52.2 -> 47.2 s of CPU.
    # Executors import it as they import the fold's rules (the package must be on their Python path).
    "spark.python.daemon.module": "lineage_assets.worker_daemon",
    # A Python worker that sends nothing for this long is killed, so its task fails and is tried
    # again (local_tries) instead of hanging. Twice in case d's fold (2026-11-27 and -28) a task of
    # the coalescing step's `mapInArrow` stopped: the JVM and its Python worker both idle (no CPU
    # for 11 of its 15 minutes, the worker asleep) until the connection was reset ~15 minutes in;
    # the step takes ~100 s whole. Every Python step here sends a batch within seconds (a per-group
    # rule every 256 groups, `lineage.per_group`), so 5 minutes of silence is a hang. Spark's SQL
    # UDF settings (`spark.sql.execution.pyspark.udf.*`) fall back to these.
    "spark.python.worker.idleTimeoutSeconds": str(PYTHON_IDLE_SECONDS),
    "spark.python.worker.killOnIdleTimeout": "true",
    "spark.driver.extraJavaOptions": JVM_OPTIONS,
    "spark.executor.extraJavaOptions": JVM_OPTIONS,
}


def parse_spark_conf(text: str) -> dict[str, str]:
    """LINEAGE_SPARK_CONF: a JSON object, or `key=value` pairs separated by `;` or newlines."""
    text = text.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"LINEAGE_SPARK_CONF is not a JSON object: {exc}") from exc
        if not isinstance(value, dict):
            raise ValueError("LINEAGE_SPARK_CONF must be a JSON object of Spark settings")
        conf = {}
        for key, item in value.items():
            if item is None or isinstance(item, (dict, list)):
                raise ValueError(f"LINEAGE_SPARK_CONF[{key!r}] must be a string, number or boolean")
            conf[str(key)] = str(item).lower() if isinstance(item, bool) else str(item)
        return conf
    conf = {}
    for item in text.replace("\n", ";").split(";"):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"LINEAGE_SPARK_CONF item {item!r} is not key=value")
        conf[key.strip()] = value.strip()
    return conf


def spark_conf_from_env(environ: dict[str, str] | None = None, overrides: dict[str, Any] | None = None) -> dict[str, str]:
    """Defaults < LINEAGE_SPARK_CONF < LINEAGE_SPARK_MASTER / LINEAGE_SPARK_DRIVER_MEMORY <
    `overrides`; a local master then gets its task tries (`local_tries`) from the result."""
    env = os.environ if environ is None else environ
    conf = dict(SPARK_DEFAULTS)
    # Python workers must run the interpreter that has this project installed.
    conf["spark.pyspark.python"] = sys.executable
    conf["spark.pyspark.driver.python"] = sys.executable
    conf.update(parse_spark_conf(env.get("LINEAGE_SPARK_CONF", "")))
    if env.get("LINEAGE_SPARK_MASTER"):
        conf["spark.master"] = env["LINEAGE_SPARK_MASTER"]
    if env.get("LINEAGE_SPARK_DRIVER_MEMORY"):
        conf["spark.driver.memory"] = env["LINEAGE_SPARK_DRIVER_MEMORY"]
    conf.update({k: str(v) for k, v in (overrides or {}).items()})
    conf["spark.master"] = local_tries(conf["spark.master"], conf.get("spark.task.maxFailures"))
    return conf


def local_tries(master: str, max_failures: str | None = None) -> str:
    """`master` with task tries: `local`, `local[N]` or `local[*]` become `local[N,F]`, F being
    `spark.task.maxFailures` if set, else TASK_TRIES (what a cluster does by default; local mode
    ignores that setting and tries once). Any other master (one with its tries already,
    `local-cluster[...]`, a cluster URL) is returned as it is."""
    found = _LOCAL_MASTER.fullmatch(master.strip())
    if not found:
        return master
    text = str(max_failures).strip() if max_failures else str(TASK_TRIES)
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"spark.task.maxFailures must be a whole number of at least 1, not {max_failures!r}")
    return f"local[{found.group(1) or 1},{int(text)}]"


def failed_task_attempts(spark) -> int:
    """Task attempts that failed in this Spark application so far (its executors' summaries, which
    Spark keeps for the application's life; a failure that a later try made good counts too).
    0 without a session (`None`: a step that never started Spark ran no task)."""
    if spark is None:
        return 0
    executors = spark.sparkContext._jsc.sc().statusStore().executorList(False)
    return sum(int(executors.apply(i).failedTasks()) for i in range(executors.size()))


# The JVM classes PySpark names through `SparkContext._jvm` on every call of a
# `pyspark.sql.functions` function, every list it converts and every Python UDF: per `ingest`
# of a 75-event stream, "org.apache.spark.sql.functions" 2,121 times, "functions" 2,097,
# "PythonUtils" 864, the rest under 120. Py4J resolves each with a round trip, and a short name by
# trying Class.forName on the bare name and on each of PySpark's star imports in turn: every miss
# searches all of Spark's jars ("functions" misses six times; Java Flight Recorder: 8% of the
# JVM's samples in a warm ingest with the tests' settings). Held as attributes of the view, they
# resolve once: `F.col` 0.45-0.62 -> 0.33-0.36 ms, `F.lit` 0.44-0.53 -> 0.29-0.37 ms; warm ingests of
# that stream, 2-5th passes in one JVM, 38.4-43.0 s of CPU -> 35.7-41.2 s (twentieth session).
JVM_NAMES = (
    "org.apache.spark.sql.functions", "functions", "PythonUtils", "org.apache.spark.sql.classic.SparkSession",
    "PythonRDD", "SerDeUtil", "PythonSQLUtils", "SimplePythonFunction",
)


def resolve_jvm_names(spark) -> None:
    """Resolve JVM_NAMES once on the session's JVM view (they are classes: static, the same for
    the JVM's life; a new JVM comes with a new view). Idempotent."""
    view = spark.sparkContext._jvm
    for name in JVM_NAMES:
        if name not in vars(view):
            setattr(view, name, getattr(view, name))


class LineageSparkResource(LazyPySparkResource):
    """`LazyPySparkResource` whose session has its JVM names resolved once (`resolve_jvm_names`)."""

    def _init_session(self) -> None:
        super()._init_session()
        resolve_jvm_names(self._spark_session)


def spark_resource(overrides: dict[str, Any] | None = None) -> LazyPySparkResource:
    """The session is created on first use inside a run, never at import."""
    # PySpark starts its Python workers with PYSPARK_PYTHON (the conf alone is not enough in
    # local mode): point it at this interpreter, which has the project and pyarrow installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return LineageSparkResource(spark_config=spark_conf_from_env(overrides=overrides))


class LineagePaths(ConfigurableResource):
    """Where drops land and where the warehouse lives (LINEAGE_DROP_DIR, LINEAGE_WAREHOUSE)."""

    drop_dir: str
    warehouse: str
    start_date: str
    check_sample: float = 0.1

    @classmethod
    def from_settings(cls, settings: LineageSettings) -> "LineagePaths":
        return cls(drop_dir=settings.drop_dir, warehouse=settings.warehouse, start_date=settings.start_date,
                   check_sample=settings.check_sample)

    @property
    def start(self):
        return parse_start_date(self.start_date)

    # A run holds a lease while it works: the sensor fails a run whose process died (leases.py).
    def setup_for_execution(self, context) -> None:
        if getattr(context, "run_id", None):
            leases.take(self.warehouse, context.run_id)

    def teardown_after_execution(self, context) -> None:
        if getattr(context, "run_id", None):
            leases.release(self.warehouse, context.run_id)


class LineageQueryResource(ConfigurableResource):
    """The query helper as a Dagster resource: the same methods as `LineageQuery`.

    DuckDB runs in memory and only reads the warehouse's Parquet, so the resource never takes a
    lock that could block a materialization, the UI or another reader.
    """

    warehouse: str
    _helper: Any = PrivateAttr(default=None)

    @classmethod
    def from_settings(cls, settings: LineageSettings) -> "LineageQueryResource":
        return cls(warehouse=settings.warehouse)

    def query(self) -> LineageQuery:
        if self._helper is None:
            self._helper = LineageQuery(self.warehouse)
        return self._helper

    def lineage(self, *args, **kwargs):
        return self.query().lineage(*args, **kwargs)

    def column_lineage(self, *args, **kwargs):
        return self.query().column_lineage(*args, **kwargs)

    def fields(self, *args, **kwargs):
        return self.query().fields(*args, **kwargs)

    def field_mappings(self, *args, **kwargs):
        return self.query().field_mappings(*args, **kwargs)

    def field_operations(self, *args, **kwargs):
        return self.query().field_operations(*args, **kwargs)

    def dataset(self, *args, **kwargs):
        return self.query().dataset(*args, **kwargs)

    def column_directives(self, *args, **kwargs):
        return self.query().column_directives(*args, **kwargs)

    def column_history(self, *args, **kwargs):
        return self.query().column_history(*args, **kwargs)

    def column_impact(self, *args, **kwargs):
        return self.query().column_impact(*args, **kwargs)

    def tagged_fields(self, *args, **kwargs):
        return self.query().tagged_fields(*args, **kwargs)

    def dataset_tags(self, *args, **kwargs):
        return self.query().dataset_tags(*args, **kwargs)

    def fine_grained_lineage(self, *args, **kwargs):
        return self.query().fine_grained_lineage(*args, **kwargs)

    def current_column_edge_report(self) -> dict[str, int]:
        return self.query().current_column_edge_report()

    def teardown_after_execution(self, context) -> None:
        if self._helper is not None:
            self._helper.close()
            self._helper = None
