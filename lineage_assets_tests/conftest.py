"""One SparkSession per test process (local[1], one shuffle partition, UI off). `make test` runs
two processes (pytest-xdist, whole files per process), one per core.

Dagster resources call SparkSession.builder.getOrCreate() and so reuse this session.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

# The determinism check recomputes the whole range in tests (production samples jobs).
os.environ["LINEAGE_CHECK_SAMPLE"] = "1"
# No picture on every snapshot of every test (a DuckDB load and a Graphviz run, 0.3-0.5 s each):
# the picture tests turn it on (defs/test_snapshot_picture.py).
os.environ["LINEAGE_SNAPSHOT_PICTURE"] = "0"

# The test session's settings. Test data is tiny: compiling generated code and adaptive
# re-planning cost more than they save (measured: a fold of a 12-day stream 26-36 s with them,
# 18-20 s without), and so do shuffle partitions beyond one. They are also the environment's
# LINEAGE_SPARK_CONF, so the Dagster resource (whose getOrCreate applies its SQL settings to this
# session) and `lineage-assets` subprocesses use them too: with the resource's default of 8
# shuffle partitions, one `ingest` of a 60-event stream took 46 s instead of 29 s.
TEST_SPARK_CONF = {
    "spark.master": "local[1]",
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "1",
    "spark.driver.memory": "1g",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.adaptive.enabled": "false",
    # Broadcast joins of test-sized tables: each broadcast of a long-keyed relation allocates its
    # pages (1 MB and up) and keeps them until the driver's objects are collected, so a test JVM's
    # 1g heap filled with them (254 MB of long[] live after four small ingests) and G1 marked it
    # concurrently, 5-6 s of CPU per ~30 s of ingests (18 MB of long[] without broadcasts). The
    # throughput collector does no concurrent work; the tests ran with it first, and it is now the
    # production JVMs' collector too (resources.GC_OPTIONS, in the defaults these settings go
    # over). Both together, two ingests of a 12-event stream, warm, alternating JVMs: 45.8-51.0 s
    # of CPU (28.6-31.2 s) -> 39.3-42.5 s (25.9-28.2 s).
    "spark.sql.autoBroadcastJoinThreshold": "-1",
}
os.environ["LINEAGE_SPARK_CONF"] = json.dumps(TEST_SPARK_CONF)

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "openlineage"


@pytest.fixture(scope="session")
def spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from lineage_assets.defs.resources import resolve_jvm_names, spark_conf_from_env

    builder = SparkSession.builder
    conf = spark_conf_from_env()  # the defaults with TEST_SPARK_CONF over them
    conf["spark.ui.enabled"] = "false"
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    resolve_jvm_names(session)  # as the Dagster resource does (resources.LineageSparkResource)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    if not FIXTURES.is_dir():
        pytest.fail(f"the shared fixtures are missing: expected {FIXTURES} (../shared beside the repo)")
    return FIXTURES


def pytest_configure(config):
    """The package's filters (`known_warnings`) as pytest filters too: pytest restores the
    process's filters after collecting, which undoes those the package sets on import."""
    from lineage_assets.known_warnings import KNOWN_WARNINGS

    for category, message in KNOWN_WARNINGS:
        config.addinivalue_line("filterwarnings", f"ignore:{message}:{category.__name__}")


def pytest_collection_modifyitems(config, items):
    """Tests that use the Spark session are marked `spark`: `make test-fast` runs the others.

    Files are ordered longest first (a module's `SCHEDULE_SECONDS`, measured with `--durations`),
    so that the two workers of `make test` (whole files each, `--no-loadscope-reorder`) start
    with the long files and finish together instead of one waiting on a long file started last."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
    order = {id(item): index for index, item in enumerate(items)}
    items.sort(key=lambda item: (-getattr(item.module, "SCHEDULE_SECONDS", 0), order[id(item)]))


@pytest.fixture(scope="session")
def recipe_stream(spark, tmp_path_factory, worker_id):
    """`recipe_stream.build()` once per `make test`: the recipe asset materialized by Dagster and
    the recipe stream's drops, ingested through the project's Dagster definitions. Under xdist the
    first worker that needs it builds it in the run's shared temporary folder (under a file lock)
    and the other reads what it committed (four test files use it)."""
    from filelock import FileLock

    from lineage_assets_tests.recipe_stream import build, load

    if worker_id == "master":
        return build(spark, tmp_path_factory.mktemp("recipe_stream"))
    shared = tmp_path_factory.getbasetemp().parent  # this run's folder, beside each worker's own
    root, done = shared / "recipe_stream", shared / "recipe_stream.done"
    with FileLock(str(shared / "recipe_stream.lock")):
        if done.exists():
            return load(spark, root)
        built = build(spark, root)
        done.touch()
        return built


@pytest.fixture(scope="session")
def recipe_warehouse(recipe_stream) -> str:
    return recipe_stream.warehouse


@pytest.fixture(scope="session")
def recipe_query(recipe_stream):
    """A LineageQuery over the recipe build's warehouse."""
    from lineage_assets import LineageQuery

    with LineageQuery(recipe_stream.warehouse) as query:
        yield query
