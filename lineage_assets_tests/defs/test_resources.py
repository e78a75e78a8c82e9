"""The Spark session's JVM runs with the project's default JVM options (resources.JVM_OPTIONS)."""

from __future__ import annotations

import pytest

from lineage_assets.defs.resources import JIT_OPTIONS, spark_conf_from_env

pytestmark = pytest.mark.spark


def _vm_option(spark, name: str) -> str:
    management = spark._jvm.java.lang.management.ManagementFactory
    bean = management.getPlatformMXBean(spark._jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
    return str(bean.getVMOption(name).getValue())


def test_jvm_runs_with_the_jit_thresholds_and_utc(spark):
    """The options reach the JVM that runs the tasks (local mode: the driver's), and HotSpot took
    them: each Tier4 threshold is the value JIT_OPTIONS sets, not HotSpot's default."""
    assert spark_conf_from_env({})["spark.driver.extraJavaOptions"].split() == ["-Duser.timezone=UTC", *JIT_OPTIONS.split()]
    for option in JIT_OPTIONS.split():
        name, value = option.removeprefix("-XX:").split("=")
        assert _vm_option(spark, name) == value
    assert spark._jvm.java.util.TimeZone.getDefault().getID() == "UTC"
