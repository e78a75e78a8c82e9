"""The Spark session's JVM runs with the project's default JVM options (resources.JVM_OPTIONS)."""

from __future__ import annotations

import pytest

from lineage_assets.defs.resources import GC_OPTIONS, JIT_OPTIONS, spark_conf_from_env

pytestmark = pytest.mark.spark


def _vm_option(spark, name: str) -> str:
    management = spark._jvm.java.lang.management.ManagementFactory
    bean = management.getPlatformMXBean(spark._jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
    return str(bean.getVMOption(name).getValue())


def test_jvm_runs_with_the_jit_thresholds_parallel_gc_and_utc(spark):
    """The options reach the JVM that runs the tasks (local mode: the driver's), and HotSpot took
    them: each Tier4 threshold is the value JIT_OPTIONS sets, not HotSpot's default, and the
    collector is the throughput one (HotSpot's default here is G1)."""
    assert spark_conf_from_env({})["spark.driver.extraJavaOptions"].split() == ["-Duser.timezone=UTC", *JIT_OPTIONS.split(), *GC_OPTIONS.split()]
    for option in JIT_OPTIONS.split():
        name, value = option.removeprefix("-XX:").split("=")
        assert _vm_option(spark, name) == value
    assert (_vm_option(spark, "UseParallelGC"), _vm_option(spark, "UseG1GC")) == ("true", "false")
    assert spark._jvm.java.util.TimeZone.getDefault().getID() == "UTC"


def test_pyspark_functions_do_not_send_their_call_site(spark, monkeypatch):
    """The session runs with PySpark's DataFrame debugging off (resources.SPARK_DEFAULTS), so a
    function of pyspark.sql.functions does not send its Python call site to the JVM: F.col makes
    the Py4J round trips of its own call only."""
    from pyspark.errors import utils as pyspark_errors
    from pyspark.sql import functions as F

    assert spark_conf_from_env({})["spark.python.sql.dataFrameDebugging.enabled"] == "false"
    assert spark.conf.get("spark.python.sql.dataFrameDebugging.enabled") == "false"
    assert pyspark_errors.is_debugging_enabled() is False
    sent = _commands_sent(monkeypatch, lambda: F.col("x"))
    assert 0 < len(sent) <= 4, sent  # with the call site sent: 13


def _commands_sent(monkeypatch, action) -> list[str]:
    """The Py4J commands `action()` sends to the JVM."""
    from py4j.clientserver import ClientServerConnection

    sent = []
    real = ClientServerConnection.send_command

    def counting(self, command, *args, **kwargs):
        sent.append(command)
        return real(self, command, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(ClientServerConnection, "send_command", counting)
        action()
    return sent


def test_the_jvm_names_pyspark_uses_are_resolved_once_for_the_session(spark, monkeypatch):
    """The Dagster resource's session holds the JVM classes PySpark names on every call
    (resources.JVM_NAMES) resolved on its JVM view, so F.col, F.lit and a list converted for a
    select send no Py4J lookup of a class name, only their own calls."""
    from py4j import protocol
    from pyspark.sql import functions as F

    from lineage_assets.defs.resources import JVM_NAMES, spark_resource

    view = spark.sparkContext._jvm
    for name in JVM_NAMES:  # as a fresh JVM's view has them: unresolved
        vars(view).pop(name, None)
    session = spark_resource().spark_session  # getOrCreate: this process's session, through the resource
    assert session.sparkContext._jvm is view
    assert all(name in vars(view) for name in JVM_NAMES)
    lookup = protocol.REFLECTION_COMMAND_NAME + protocol.REFL_GET_UNKNOWN_SUB_COMMAND_NAME
    frame = spark.range(1)
    sent = _commands_sent(monkeypatch, lambda: frame.select(F.col("id"), F.lit(1), F.when(F.col("id") > 0, "x")))
    assert sent and not [command for command in sent if command.startswith(lookup)], sent


def test_a_crashed_python_worker_is_tried_again(spark):
    """Local mode tries a task once unless its master says otherwise; the session's master comes
    with TASK_TRIES (resources.local_tries), so a Python worker that dies mid-task (here: exits
    without a word on its task's first try) costs a try, not the job, and the failure is counted."""
    import os as os_module

    from pyspark import TaskContext

    from lineage_assets.defs.resources import TASK_TRIES, failed_task_attempts

    assert spark.sparkContext.master.endswith(f",{TASK_TRIES}]")

    def crash_first_try(batches):
        context = TaskContext.get()
        if context.partitionId() == 1 and context.attemptNumber() == 0:
            os_module._exit(7)  # no exception, no message: the worker process is simply gone
        yield from batches

    before = failed_task_attempts(spark)
    rows = spark.range(0, 1000, numPartitions=2).mapInArrow(crash_first_try, "id long").collect()
    assert sorted(r.id for r in rows) == list(range(1000))
    assert failed_task_attempts(spark) - before == 1


def test_a_silent_python_worker_is_killed_and_its_task_tried_again(spark):
    """A worker that sends nothing for the idle timeout is killed (the session's default:
    spark.python.worker.killOnIdleTimeout), and its task is tried again, instead of hanging. The
    timeout is the SQL setting that falls back to PYTHON_IDLE_SECONDS, shortened here to 2 s."""
    import time

    from pyspark import TaskContext

    from lineage_assets.defs.resources import PYTHON_IDLE_SECONDS, failed_task_attempts

    conf = spark.sparkContext.getConf()
    assert conf.get("spark.python.worker.killOnIdleTimeout") == "true"
    assert conf.get("spark.python.worker.idleTimeoutSeconds") == str(PYTHON_IDLE_SECONDS)

    def silent_first_try(batches):
        context = TaskContext.get()
        if context.partitionId() == 0 and context.attemptNumber() == 0:
            time.sleep(30)  # far past the timeout: only a kill ends this try in time
        yield from batches

    before = failed_task_attempts(spark)
    spark.conf.set("spark.sql.execution.pyspark.udf.idleTimeoutSeconds", "2")
    try:
        began = time.monotonic()
        rows = spark.range(0, 500, numPartitions=2).mapInArrow(silent_first_try, "id long").collect()
        took = time.monotonic() - began
    finally:
        spark.conf.unset("spark.sql.execution.pyspark.udf.idleTimeoutSeconds")
    assert sorted(r.id for r in rows) == list(range(500))
    assert failed_task_attempts(spark) - before == 1
    assert took < 25, took  # killed after about 2 s of silence, not after the 30 s sleep


def test_python_workers_come_from_the_project_s_daemon_and_freeze_what_each_task_leaves(spark):
    """The session's Python workers are forked from `lineage_assets.worker_daemon` (their
    `__main__`), and a worker that has run a task has frozen what survived it (PySpark's
    collection after each task walks only what came since): the second task of a reused worker
    sees frozen objects. One partition per job on a local[1] session: the worker is reused."""

    def probe(batches):
        import gc
        import sys

        import pyarrow as pa

        for _batch in batches:
            yield pa.RecordBatch.from_pydict({"main": [sys.modules["__main__"].__spec__.name], "frozen": [gc.get_freeze_count()]})

    def run() -> tuple[str, int]:
        row = spark.range(0, 1, numPartitions=1).mapInArrow(probe, "main string, frozen long").collect()[0]
        return row["main"], row["frozen"]

    assert spark.sparkContext.getConf().get("spark.python.daemon.module") == "lineage_assets.worker_daemon"
    run()
    main, frozen = run()
    assert main == "lineage_assets.worker_daemon"
    assert frozen > 0
