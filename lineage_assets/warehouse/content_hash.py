"""Order-independent content hashes of DataFrames, per table and per day, in one Spark job (or a few side by side)."""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.util import inheritable_thread_target

WHOLE = "*"  # the key of a frame's total in `fingerprints`


@dataclass(frozen=True)
class Fingerprint:
    """The sum of the rows' 64-bit hashes (mod 2^64, hex) and the row count."""

    hash: str
    rows: int

    def __str__(self) -> str:
        return f"{self.hash}/{self.rows}"


EMPTY = Fingerprint(f"{0:016x}", 0)


def _row_hash(df: DataFrame, exclude: tuple[str | None, ...]) -> Column:
    """A 64-bit hash of every column of a row (columns by name, so their order does not matter).
    xxhash64 skips nulls, null array elements included: each column also gives whether it is
    null, and an array its size, so a value moved to a neighbouring column, a null array and
    an empty one, or `[x]` and `[x, null]`, hash apart."""
    types = dict(df.dtypes)
    parts: list[Column] = []
    for c in sorted(df.columns):
        if c in exclude:
            continue
        parts += [F.col(c), F.isnull(c)]
        if types[c].startswith("array<"):
            parts.append(F.size(c))
    return F.xxhash64(*parts).cast("decimal(38,0)")


def fingerprints(frames: dict[str, tuple[DataFrame, str | None]]) -> dict[str, dict[str, Fingerprint]]:
    """{name: (frame, day column or None)} -> {name: {day (or WHOLE): Fingerprint}}, one Spark job.

    Each frame also gets its total under WHOLE; the day column itself is not hashed (it is
    the partition, derived from the row)."""
    return fingerprints_and_marked(frames, None)[0]


def fingerprints_and_marked(
    frames: dict[str, tuple[DataFrame, str | None]], mark: str | None, jobs: int = 1, weights: dict[str, int] | None = None,
) -> tuple[dict[str, dict[str, Fingerprint]], dict[str, dict[str, Fingerprint]]]:
    """`fingerprints` of the frames, and in the same Spark job (one scan of each frame) the
    fingerprints of the rows whose boolean column `mark` is true (a frame without that column
    has none). `mark` itself is not hashed, so a marked row hashes as it does unmarked.

    `jobs` > 1: the frames are shared among that many Spark jobs run at the same time, by
    `weights` (a frame's rows, say; heaviest first, each to the lightest job so far): a frame
    of a small range is one task, so one job would leave a core idle. The answer is the same."""
    groups = _balanced(list(frames), weights or {}, jobs)
    if len(groups) <= 1:
        return _fingerprints_and_marked(frames, mark)
    session = next(iter(frames.values()))[0].sparkSession
    hash_group = inheritable_thread_target(session)(lambda names: _fingerprints_and_marked({n: frames[n] for n in names}, mark))
    with ThreadPoolExecutor(max_workers=len(groups), thread_name_prefix="content-hash") as pool:
        results = list(pool.map(hash_group, groups))
    every = {name: fp for found, _ in results for name, fp in found.items()}
    marked = {name: fp for _, found in results for name, fp in found.items()}
    return {name: every[name] for name in frames}, {name: marked[name] for name in frames}


def _balanced(names: list[str], weights: dict[str, int], parts: int) -> list[list[str]]:
    """`names` in at most `parts` groups of about equal weight: heaviest first, each to the
    lightest group so far (of equal weights, the one with fewer names)."""
    groups: list[list[str]] = [[] for _ in range(max(1, min(parts, len(names))))]
    totals = [0] * len(groups)
    for name in sorted(names, key=lambda n: -weights.get(n, 0)):
        lightest = min(range(len(groups)), key=lambda i: (totals[i], len(groups[i])))
        groups[lightest].append(name)
        totals[lightest] += weights.get(name, 0)
    return [group for group in groups if group]


def _fingerprints_and_marked(
    frames: dict[str, tuple[DataFrame, str | None]], mark: str | None,
) -> tuple[dict[str, dict[str, Fingerprint]], dict[str, dict[str, Fingerprint]]]:
    parts = []
    for name, (df, day) in frames.items():
        key = F.col(day).cast("string") if day else F.lit(WHOLE)
        marked = F.coalesce(F.col(mark), F.lit(False)) if mark and mark in df.columns else F.lit(False)
        parts.append(df.select(F.lit(name).alias("_t"), key.alias("_d"), _row_hash(df, (day, mark)).alias("_h"), marked.alias("_m")))
    rows = functools.reduce(DataFrame.unionByName, parts).groupBy("_t", "_d").agg(
        F.sum("_h").alias("h"), F.count(F.lit(1)).alias("n"),
        F.sum(F.when(F.col("_m"), F.col("_h"))).alias("mh"), F.count(F.when(F.col("_m"), F.lit(1))).alias("mn"),
    ).collect()
    every = _by_day(frames, [(r["_t"], r["_d"], r["h"], r["n"]) for r in rows])
    marked_only = _by_day(frames, [(r["_t"], r["_d"], r["mh"], r["mn"]) for r in rows if r["mn"]])
    return every, marked_only


def _by_day(frames: dict, rows: list[tuple]) -> dict[str, dict[str, Fingerprint]]:
    """(table, day, hash sum, rows) -> {table: {day: Fingerprint}} with each table's WHOLE."""
    out: dict[str, dict[str, Fingerprint]] = {name: {} for name in frames}
    totals: dict[str, list[int]] = {name: [0, 0] for name in frames}
    for table, day, h, n in rows:
        value = int(h) % (1 << 64)
        out[table][day] = Fingerprint(f"{value:016x}", int(n))
        totals[table][0] = (totals[table][0] + value) % (1 << 64)
        totals[table][1] += int(n)
    for name, (h, n) in totals.items():
        out[name][WHOLE] = Fingerprint(f"{h:016x}", n)
    return out


def fingerprint(df: DataFrame) -> Fingerprint:
    return fingerprints({"frame": (df, None)})["frame"][WHOLE]
