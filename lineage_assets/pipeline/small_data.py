"""Spark SQL settings for small work: a fold of a small range, the snapshot of a small graph.

On small data, Spark's defaults for large data cost more than they save: adaptive re-planning
and more than one shuffle partition, and compiling generated code for every stage (Janino, then
the JIT, compile classes that run a few thousand rows). `small_settings` applies SMALL_SETTINGS to
the session for work of at most a given size and restores the session's own settings afterwards,
whatever happened inside. Figures: `pipeline.fold.SMALL_RANGE_EVENTS`,
`pipeline.fold.INTERPRETED_RANGE_EVENTS`, `pipeline.snapshot.SMALL_SNAPSHOT_ROWS`,
`pipeline.snapshot.SINGLE_SNAPSHOT_ROWS`, README "Pipeline cost".
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from pyspark.sql import SparkSession

from lineage_assets.warehouse import single_partition

# Expressions interpreted, no generated code: part of SMALL_SETTINGS, left out of them for work
# that is small in partitions but runs enough rows to repay compiling (`small_settings`).
INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
# Each operator's expressions compiled, no class generated per stage: for a fold of a range too
# large to interpret and too small to repay whole-stage classes (`pipeline.fold.range_settings`).
# A stage's generated class is new code for the JIT to compile (C2 took about 25 s of the ~96 s of
# CPU of case c of `benchmarks/pipeline.py` in a new JVM); an expression's class is shared by every
# stage that evaluates it. Figures: `pipeline.fold.INTERPRETED_RANGE_EVENTS`.
STAGES_NOT_GENERATED = {"spark.sql.codegen.wholeStage": "false"}
SMALL_SETTINGS = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.shuffle.partitions": "1",
    **INTERPRETED,
    # Runtime Bloom filters: a kept intermediate has no size estimate, so Spark took every one
    # for a huge table and built a filter (a Spark job and a 1 MB bit array) for each join of it
    # with a filtered side: 11 of a small fold's 71 jobs (`benchmarks/fold_jobs.py`).
    "spark.sql.optimizer.runtime.bloomFilter.enabled": "false",
    single_partition.SETTING: "true",
}


@contextlib.contextmanager
def applied(spark: SparkSession, settings: dict[str, str]) -> Iterator[dict[str, str]]:
    """`settings` in force in the session while the block runs; the session's own values come
    back afterwards, whatever happened inside (keys the session did not have are unset again).
    Yields the settings changed."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield dict(settings)
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def small_settings(
    spark: SparkSession, size: int, small_below: int, interpreted_below: int | None = None,
    compiled: dict[str, str] | None = None,
) -> contextlib.AbstractContextManager[dict[str, str]]:
    """SMALL_SETTINGS while the block runs when `size` is at most `small_below`; otherwise the
    session's own settings (`applied`). `interpreted_below`: above this size (and at most
    `small_below`), SMALL_SETTINGS without INTERPRETED, so the session's own code generation
    setting holds, then `compiled` over them (default: `small_below`, SMALL_SETTINGS whole).
    Yields the settings changed."""
    if size > small_below:
        return applied(spark, {})
    if interpreted_below is not None and size > interpreted_below:
        return applied(spark, {**{key: value for key, value in SMALL_SETTINGS.items() if key not in INTERPRETED}, **(compiled or {})})
    return applied(spark, SMALL_SETTINGS)
