"""Checks that can fail: unique keys and references, recompute determinism, graph components.

Each returns a `CheckReport`; the pipeline commits only when its blocking checks pass, so a
failure leaves readers on the previous commit.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import duckdb
import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from lineage_assets.identity.resolver import Identity
from lineage_assets.lineage.checkpoint import checkpoint
from lineage_assets.lineage.fold import StateAsOf
from lineage_assets.lineage.state import valid_partitions
from lineage_assets.warehouse.schemas import NAME_PAIR
from lineage_assets.query.node_ids import dataset_node_sql, job_node_sql
from lineage_assets.warehouse import commits
from lineage_assets.warehouse import tables as t
from lineage_assets.warehouse.content_hash import EMPTY, WHOLE, Fingerprint


@dataclass
class CheckReport:
    name: str
    passed: bool
    problems: list[str] = field(default_factory=list)
    details: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------- keys


def key_problems(staged: dict[str, DataFrame]) -> list[str]:
    """Unique keys (column_lineage: no row stored twice) and references: every job version and
    output version run_lineage names exists, every output version a column edge names exists.

    Keys are grouped by a 64-bit hash of their columns first; only a table with a repeated hash
    is grouped by the columns themselves (a collision of two distinct keys is no problem, a
    repeated key is). Job versions are looked up in the staged job_versions plus the ids the job
    state says the job ever had (compact: no scan of history). Two Spark jobs."""
    keys = {
        name: list(t.get(name).keys) or list(t.get(name).columns.fieldNames())
        for name in staged if t.get(name).kind == "history"
    }
    hashed = [
        staged[name].groupBy(F.xxhash64(*key).alias("h")).count().filter("count > 1").select(F.lit(name).alias("table"))
        for name, key in keys.items()
    ]
    suspects = {r["table"] for r in _union(hashed).distinct().collect()}
    checks = []
    for name in sorted(suspects):
        label = ", ".join(t.get(name).keys) if t.get(name).keys else "row"
        checks.append(staged[name].groupBy(*keys[name]).count().filter("count > 1").select(
            F.lit(f"{name} has a duplicated {label}").alias("problem")))
    lineage = staged["run_lineage"]
    known = staged["state_jobs"].select(F.explode("known_versions").alias("job_version_id")).unionByName(
        staged["job_versions"].select(F.col("version_id").alias("job_version_id"))
    )
    checks.append(lineage.join(known, "job_version_id", "left_anti").select(
        F.lit("a run names a job version that job_versions does not hold").alias("problem")))
    versions = staged["dataset_versions"].select("version_id")
    checks.append(lineage.select(F.explode("output_versions.version_id").alias("version_id")).join(versions, "version_id", "left_anti")
                  .select(F.lit("an output version is missing from dataset_versions").alias("problem")))
    checks.append(staged["column_lineage"].select(F.col("output_version_id").alias("version_id")).join(versions, "version_id", "left_anti")
                  .select(F.lit("a column edge names an output version missing from dataset_versions").alias("problem")))
    return [f"{r['problem']} ({r['count']} rows)" for r in _union(checks).groupBy("problem").count().orderBy("problem").collect()]


def _union(frames: list[DataFrame]) -> DataFrame:
    return functools.reduce(DataFrame.unionByName, frames)


# ---------------------------------------------------------------------------------- determinism


@dataclass
class Sample:
    """A deterministic sample of jobs (by a hash of namespace and name) and what their rows
    depend on: every run with an event naming a sampled job, the datasets those runs touch,
    and every run writing one of those datasets. Datasets are taken by family
    (`Identity.family`: every name an alias or a partition ties to them), so a writer that named
    a dataset by its path is found for a reader that named its table. `rate >= 1` is everything."""

    rate: float
    runs: DataFrame | None = None  # run_id of sampled runs
    members: DataFrame | None = None  # namespace, name: every canonical name of the families the sampled runs touch (`family_members`)

    @property
    def whole(self) -> bool:
        return self.rate >= 1

    cut: int | None = None  # a job is sampled when its hash is below this: rate x 10,000, raised to take at least one job

    @staticmethod
    def job_hash(namespace: Column, name: Column) -> Column:
        """A job's place in the sample order, 0..9,999."""
        return F.abs(F.xxhash64(namespace, name)) % 10000

    @staticmethod
    def rate_cut(rate: float) -> int:
        """The cut a rate makes in the sample order."""
        return int(rate * 10000)

    def job_sampled(self, namespace: Column, name: Column) -> Column:
        return self.job_hash(namespace, name) < (self.cut if self.cut is not None else self.rate_cut(self.rate))


_BROADCAST_SAMPLE = 0.2  # at most this rate, the sample's runs and datasets are broadcast to mark rows
BROADCAST_RUNS = 500_000  # the runs a sample needs are broadcast to pick their events up to this many


@dataclass
class Closure:
    """What a sample of jobs depends on (`sample_closure`): the sample's cut, its runs, the
    families they touch, every run it needs (its runs and every writer of those families) and
    the names of the dataset events of those families."""

    cut: int
    runs: pa.Table  # run_id
    needed: pa.Table  # run_id
    datasets: list[tuple[str, str]]  # families, sorted
    dataset_event_names: list[tuple[str, str]]  # (dataset_namespace, dataset_name) of the families' dataset events, sorted


def job_hashes(spark: SparkSession, jobs: pa.Table) -> pa.Table:
    """(job_namespace, job_name) -> with `h`, each job's place in the sample order
    (`Sample.job_hash`, Spark's own expression: the written side is marked with it). One small
    Spark job over the distinct jobs, no file read."""
    if jobs.num_rows == 0:
        return jobs.append_column("h", pa.array([], pa.int64()))
    frame = spark.createDataFrame(jobs).select("job_namespace", "job_name", Sample.job_hash(F.col("job_namespace"), F.col("job_name")).alias("h"))
    return frame.toArrow()


def sample_closure(
    event_files: list[str], carried_files: list[str], first: dt.date, rate: float, identity: Identity,
    hashes: Callable[[pa.Table], pa.Table],
) -> Closure:
    """The sample of jobs at `rate` and what it depends on, read with DuckDB from the range's
    committed event files and the open events carried into it (the files of `state_open_events`
    that hold the state as of first - 1, `state.valid_partitions`; their rows with
    `valid_from < first`, as `state.state_as_of` reads them).

    A job is sampled when its hash (`hashes`: Spark's, by `Sample.job_hash`) is below the cut
    (`Sample.rate_cut`; raised to take the lowest job when the rate takes none). Its runs are the
    runs with an event naming a sampled job; the datasets are the families (`Identity.family`,
    computed once per distinct name in Python) of every dataset those runs' events name; the
    needed runs are those runs and every run with an event writing one of those families; the
    dataset events kept are those naming one of those families.

    DuckDB instead of Spark: the scans are of dataset names only, and a join of small tables
    is what Spark spent about 30 jobs on (case a of `benchmarks/pipeline.py`, README "Pipeline
    cost")."""
    with duckdb.connect(config={"threads": 2}) as con:
        con.execute(f"CREATE TEMP VIEW ev AS {commits.duckdb_files_sql(t.EVENTS.name, event_files)}")
        carried = commits.duckdb_files_sql(t.STATE_OPEN_EVENTS.name, carried_files)
        con.execute(f"CREATE TEMP VIEW carried AS SELECT * FROM ({carried}) WHERE valid_from < DATE '{first.isoformat()}'")
        con.execute(
            "CREATE TEMP TABLE run_jobs AS SELECT DISTINCT run_id, job_namespace, job_name FROM "
            "(SELECT run_id, job_namespace, job_name FROM ev WHERE event_kind = 'RUN' UNION ALL SELECT run_id, job_namespace, job_name FROM carried)"
        )
        sides = " UNION ALL ".join(
            f"SELECT run_id, {out} AS out, d.namespace, d.name FROM (SELECT run_id, unnest({side}) AS d FROM {source}{where})"
            for source, where in (("ev", " WHERE event_kind = 'RUN'"), ("carried", ""))
            for side, out in (("inputs", "false"), ("outputs", "true"))
        )
        con.execute(f"CREATE TEMP TABLE io AS SELECT * FROM ({sides}) WHERE namespace IS NOT NULL AND name IS NOT NULL")
        jobs = con.sql(
            "SELECT DISTINCT job_namespace, job_name FROM (SELECT job_namespace, job_name FROM run_jobs UNION ALL "
            "SELECT job_namespace, job_name FROM ev WHERE event_kind = 'JOB') ORDER BY ALL"
        ).to_arrow_table()
        con.register("hashed", hashes(jobs))
        con.execute("CREATE TEMP TABLE jobs AS SELECT job_namespace, job_name, h FROM hashed")
        cut = Sample.rate_cut(rate)

        def sampled_runs(cut: int) -> int:
            con.execute(
                "CREATE OR REPLACE TEMP TABLE runs AS SELECT DISTINCT run_id FROM run_jobs JOIN jobs USING (job_namespace, job_name) WHERE h < ?",
                [cut],
            )
            return con.execute("SELECT count(*) FROM runs").fetchone()[0]

        if not sampled_runs(cut):  # the rate picked no run's job (few jobs): take the lowest in the sample order
            lowest = con.execute("SELECT min(h) FROM jobs").fetchone()[0]
            if lowest is not None and lowest + 1 > cut:
                cut = int(lowest) + 1
                sampled_runs(cut)
        names = con.execute("SELECT DISTINCT namespace, name FROM io").fetchall()
        con.register("named", _families(names, identity))
        con.execute("CREATE TEMP TABLE family AS SELECT * FROM named")
        con.execute(
            "CREATE TEMP TABLE families AS SELECT DISTINCT f.family_namespace, f.family_name FROM io JOIN runs USING (run_id) "
            "JOIN family f USING (namespace, name)"
        )
        datasets = con.execute("SELECT * FROM families ORDER BY ALL").fetchall()
        needed = con.sql(
            "SELECT run_id FROM runs UNION SELECT io.run_id FROM io JOIN family USING (namespace, name) "
            "JOIN families USING (family_namespace, family_name) WHERE io.out ORDER BY ALL"
        ).to_arrow_table()
        runs = con.sql("SELECT run_id FROM runs ORDER BY ALL").to_arrow_table()
        event_names = con.execute(
            "SELECT DISTINCT dataset_namespace, dataset_name FROM ev WHERE event_kind = 'DATASET' "
            "AND dataset_namespace IS NOT NULL AND dataset_name IS NOT NULL ORDER BY ALL"
        ).fetchall()
    wanted = set(datasets)
    kept = [name for name in event_names if identity.family(*name) in wanted]
    return Closure(cut, runs, needed, datasets, kept)


def _families(names: list[tuple[str, str]], identity: Identity) -> pa.Table:
    """(namespace, name, family_namespace, family_name) of each distinct name."""
    found = [identity.family(namespace, name) for namespace, name in names]
    return pa.table({
        "namespace": [n[0] for n in names], "name": [n[1] for n in names],
        "family_namespace": [f[0] for f in found], "family_name": [f[1] for f in found],
    }, schema=pa.schema([(c, pa.string()) for c in ("namespace", "name", "family_namespace", "family_name")]))


def sample_inputs(
    commit: commits.Commit, first: dt.date, last: dt.date, events: DataFrame, carried: DataFrame, rate: float, identity: Identity,
) -> tuple[Sample, DataFrame, DataFrame]:
    """(the sample, the events to recompute it from, the carried open events to recompute it from).

    `events` and `carried` are the range's events and the open events carried into it, as the
    fold reads them from `commit`; the sample and what it depends on are chosen from the same
    files (`sample_closure`), then the rows it needs are picked from them by run id (broadcast)
    and kept on local disk: the recomputed fold reads its events several times."""
    if rate >= 1:
        return Sample(rate), events, carried
    spark = events.sparkSession
    closure = sample_closure(
        commit.files(t.EVENTS.name, commits.within("event_date", first, last)),
        commit.files(t.STATE_OPEN_EVENTS.name, valid_partitions(first - dt.timedelta(days=1))),
        first, rate, identity, functools.partial(job_hashes, spark),
    )
    needed = spark.createDataFrame(closure.needed)
    needed_ids = F.broadcast(needed) if closure.needed.num_rows <= BROADCAST_RUNS else needed  # no shuffle of the wide event rows
    sample = Sample(
        rate, spark.createDataFrame(closure.runs), spark.createDataFrame(family_members(closure.datasets, identity), NAME_PAIR), closure.cut,
    )
    named = spark.createDataFrame(closure.dataset_event_names, "dataset_namespace string, dataset_name string")
    keep = (
        events.filter("event_kind = 'RUN'").join(needed_ids, "run_id", "left_semi")
        .unionByName(events.filter("event_kind = 'JOB'").filter(sample.job_sampled(F.col("job_namespace"), F.col("job_name"))))
        .unionByName(events.filter("event_kind = 'DATASET'").join(F.broadcast(named), ["dataset_namespace", "dataset_name"], "left_semi"))
    ).transform(checkpoint)
    return sample, keep, carried.join(needed_ids, "run_id", "left_semi").transform(checkpoint)


def sample_state(prev: StateAsOf, sample: Sample) -> StateAsOf:
    """The part of the carried state that the sample's rows depend on: the job state and column
    heads of sampled jobs, and the dataset versions, storage versions and fields of the families
    the sample touches (`Sample.members`); the aliases whole (resolved from the whole range) and
    the open events as `sample_inputs` cut them. Every fold rule over a state row is per job or
    per dataset name, so the sampled rows are computed from these as from the whole state (and
    the check compares only those, `mark_sample`), while the recompute no longer carries every
    job's and dataset's state through the range: case c of `benchmarks/pipeline.py` carries the
    state of 11,702 jobs (321,761 column heads, 381,552 field rows) into a range of 19,289 events.
    A fold rule that reads another job's or dataset's state row must add that row here, or the
    check (blocking) fails where nothing is wrong.

    Each part is kept on local disk once cut (`checkpoint`): the recomputed fold reads the
    column heads and the fields twice each and its hash once more, and every read of an uncut
    part scanned the whole state table again (case c's refold, the recompute alone, warm: its
    hash 3.6-3.7 -> 1.6 s of task CPU, the cut 0 -> 1.2 s, `benchmarks/PIPELINE_HISTORY.md`,
    thirty-third session)."""
    if sample.whole:
        return prev
    job = sample.job_sampled(F.col("job_namespace"), F.col("job_name"))
    members = F.broadcast(sample.members)

    def of_families(df: DataFrame) -> DataFrame:
        return df.join(members, ["namespace", "name"], "left_semi").transform(checkpoint)

    datasets = of_families(prev.datasets)
    return dataclasses.replace(
        prev, jobs=prev.jobs.filter(job).transform(checkpoint), columns=prev.columns.filter(job).transform(checkpoint),
        datasets=datasets,
        # the same rows when no run was open before the range (`state.state_as_of`): cut once
        dataset_candidates=datasets if prev.dataset_candidates is prev.datasets else of_families(prev.dataset_candidates),
        storage_versions=of_families(prev.storage_versions), fields=of_families(prev.fields),
    )


def family_members(families: list[tuple[str, str]], identity: Identity) -> list[tuple[str, str]]:
    """Every canonical (partition-folded) name whose family (`Identity.family`) is one of
    `families`: the families themselves and every name an alias statement ties to one of them.
    A row naming a canonical dataset is of a sampled family exactly when its name is one of
    these, so rows are marked by a join on the name (no Python per row)."""
    wanted = set(families)
    named = {name for name in identity.family_names() if identity.family(*name) in wanted}
    return sorted(wanted | named)


SAMPLED = "_sampled"  # the boolean column `mark_sample` adds


def mark_sample(name: str, df: DataFrame, sample: Sample, dataset_versions: DataFrame) -> DataFrame:
    """`df` (a fold output) with a boolean column SAMPLED: whether the sample determines the
    row completely. Every row is kept: the written side's rows are hashed whole and sampled in
    one scan (`content_hash.fingerprints_and_marked`)."""
    if sample.whole:
        return df.withColumn(SAMPLED, F.lit(True))
    job = sample.job_sampled(F.col("job_namespace"), F.col("job_name"))
    if name in ("runs", "run_lineage", "job_versions", "state_jobs", "state_columns", "state_open_events", "field_operations"):
        return df.withColumn(SAMPLED, job)
    if name in ("dataset_aliases", "state_aliases"):  # resolved from the whole range, sample or not
        return df.withColumn(SAMPLED, F.lit(True))
    if name == "dataset_versions":
        return _mark_versions(df, sample)
    if name == "column_lineage":
        return _mark_by(df, sample.runs, ["run_id"], sample)
    if name in ("dataset_fields", "field_tags"):
        versions = _mark_versions(dataset_versions, sample).filter(F.col(SAMPLED)).select("version_id")
        return _mark_by(df, versions, ["version_id"], sample)
    if name in ("state_datasets", "state_storage_versions", "state_fields"):
        return _mark_by_family(df, sample)
    raise ValueError(f"no sample rule for {name}")


def restrict(name: str, df: DataFrame, sample: Sample, dataset_versions: DataFrame) -> DataFrame:
    """The rows of a fold output that the sample determines completely."""
    if sample.whole:
        return df
    return mark_sample(name, df, sample, dataset_versions).filter(F.col(SAMPLED)).drop(SAMPLED)


def _mark_by(df: DataFrame, keys: DataFrame, columns: list[str], sample: Sample) -> DataFrame:
    """SAMPLED: whether the row's `columns` are among `keys`' (a left join on distinct keys, so
    no row is repeated or lost; a null key is not sampled)."""
    found = keys.select(*columns).distinct().withColumn(SAMPLED, F.lit(True))
    if sample.rate <= _BROADCAST_SAMPLE:
        found = F.broadcast(found)
    return df.join(found, columns, "left").withColumn(SAMPLED, F.coalesce(F.col(SAMPLED), F.lit(False)))


def _mark_by_family(df: DataFrame, sample: Sample) -> DataFrame:
    """SAMPLED: whether the row's dataset (namespace, name: a canonical dataset, as every fold
    output names one) is of a family the sample touches: whether it is one of the families'
    members (`family_members`)."""
    return _mark_by(df, sample.members, ["namespace", "name"], sample)


def _mark_versions(df: DataFrame, sample: Sample) -> DataFrame:
    """Dataset versions: those an output of a sampled job made, and those a dataset event made
    of a dataset the sample touches."""
    job = sample.job_sampled(F.col("job_namespace"), F.col("job_name"))
    by_event = _mark_by_family(df, sample)
    return by_event.withColumn(SAMPLED, F.when(F.col("job_namespace").isNotNull(), job).otherwise(F.col(SAMPLED)))


def sample_frames(outputs: dict[str, DataFrame], sample: Sample) -> dict[str, tuple[DataFrame, str | None]]:
    """The rows of each fold output that the sample determines, with its day column, ready for
    `fingerprints` (dataset_fields rows follow the same side's dataset_versions)."""
    return _per_table(outputs, sample, restrict)


def marked_frames(outputs: dict[str, DataFrame], sample: Sample) -> dict[str, tuple[DataFrame, str | None]]:
    """Each fold output, its sampled rows marked (`mark_sample`), with its day column, ready for
    `fingerprints_and_marked(..., SAMPLED)`: a history table whole (its days' fingerprints are
    what its materializations show), a state table only its sampled rows when the sample is
    partial (its whole fingerprint is shown nowhere; its row count comes from the files' footers),
    so the written side hashes what the check compares and what is shown, nothing more."""
    marked = _per_table(outputs, sample, mark_sample)
    if sample.whole:
        return marked
    return {
        name: (df if t.get(name).kind == "history" else df.filter(F.col(SAMPLED)), day)
        for name, (df, day) in marked.items()
    }


def _per_table(outputs: dict[str, DataFrame], sample: Sample, rule) -> dict[str, tuple[DataFrame, str | None]]:
    return {name: (rule(name, df, sample, outputs["dataset_versions"]), t.get(name).day_column) for name, df in outputs.items()}


def compare(written: dict[str, dict[str, Fingerprint]], recomputed: dict[str, dict[str, Fingerprint]]) -> list[str]:
    """Each table's fingerprints, day by day as well as whole: the day (partition) column is not
    in a row's hash, so a row written under another day (a state row's `valid_to`) changes the
    days' fingerprints and not the total."""
    problems = []
    for name in sorted(written):
        a, b = written[name], recomputed.get(name, {})
        days = sorted(d for d in set(a) | set(b) if d != WHOLE and a.get(d, EMPTY) != b.get(d, EMPTY))
        if a.get(WHOLE) != b.get(WHOLE):
            problems.append(f"{name}: written {a.get(WHOLE)} != recomputed {b.get(WHOLE)}; days differing: {days[:10]}")
        elif days:
            problems.append(f"{name}: the same rows under other days: {days[:10]}")
    return problems


# ---------------------------------------------------------------------------------- components


def stored_components(job_files: list[str]) -> int:
    """How many components the written current_jobs files name (their distinct component_ids)."""
    with duckdb.connect() as con:
        return con.execute(f"SELECT count(DISTINCT component_id) FROM ({commits.duckdb_files_sql('current_jobs', job_files)})").fetchone()[0]


def component_problems(files: dict[str, list[str]]) -> list[str]:
    """Recompute the components of the current graph with DuckDB by label propagation (every
    node takes the smallest label among its neighbours, with pointer jumping, until nothing
    changes) and compare them with the stored component_id of every job and every edge. The
    pipeline computes them with a union-find in Python; this is a different algorithm on a
    different engine. A node is its parts (kind, namespace, name), not its id string (two nodes
    may have one id: `job:a:b:c` is the job (a:b, c) and the job (a, b:c)); the nodes are
    numbered in the order (id, kind, namespace, name), labels are those numbers, and the id of
    a component's smallest number is its component_id."""
    con = duckdb.connect()
    con.execute(f"CREATE TABLE jobs AS {commits.duckdb_files_sql('current_jobs', files['current_jobs'])}")
    con.execute(f"CREATE TABLE edges AS {commits.duckdb_files_sql('current_lineage', files['current_lineage'])}")
    job_id, dataset_id = job_node_sql(), dataset_node_sql()
    con.execute(
        "CREATE TABLE nodes AS SELECT row_number() OVER (ORDER BY id, kind, namespace, name) AS n, * FROM ("
        f"SELECT {job_id} AS id, 'job' AS kind, job_namespace AS namespace, job_name AS name FROM jobs "
        f"UNION SELECT {job_id}, 'job', job_namespace, job_name FROM edges "
        f"UNION SELECT {dataset_id}, 'dataset', dataset_namespace, dataset_name FROM edges)"
    )
    job_n = "JOIN nodes jn ON jn.kind = 'job' AND jn.namespace = {0}.job_namespace AND jn.name = {0}.job_name"
    con.execute(
        f"CREATE TABLE pairs AS SELECT DISTINCT jn.n AS a, dn.n AS b FROM edges e {job_n.format('e')} "
        "JOIN nodes dn ON dn.kind = 'dataset' AND dn.namespace = e.dataset_namespace AND dn.name = e.dataset_name"
    )
    con.execute("CREATE TABLE label AS SELECT n AS node, n AS label FROM nodes")
    neighbours = "(SELECT a AS node, b AS other FROM pairs UNION ALL SELECT b, a FROM pairs)"
    while True:
        # every node takes the smallest label among itself and its neighbours, then the label of
        # its label (pointer jumping: a label is a node, so chains shorten by half each round)
        con.execute(
            "CREATE OR REPLACE TABLE next AS SELECT l.node, least(l.label, coalesce(min(n.label), l.label)) AS label FROM label l "
            f"LEFT JOIN {neighbours} p ON p.node = l.node LEFT JOIN label n ON n.node = p.other GROUP BY l.node, l.label"
        )
        con.execute(
            "CREATE OR REPLACE TABLE next AS SELECT x.node, least(x.label, coalesce(y.label, x.label)) AS label "
            "FROM next x LEFT JOIN next y ON y.node = x.label"
        )
        moved = con.execute("SELECT count(*) FROM next JOIN label USING (node) WHERE next.label <> label.label").fetchone()[0]
        con.execute("CREATE OR REPLACE TABLE label AS SELECT * FROM next")
        if moved == 0:
            break
    con.execute("CREATE TABLE component AS SELECT l.node AS n, c.id FROM label l JOIN nodes c ON c.n = l.label")
    rows = con.execute(
        f"SELECT 'job' AS kind, {job_id} AS node, j.component_id, c.id FROM jobs j {job_n.format('j')} JOIN component c ON c.n = jn.n "
        "WHERE j.component_id IS DISTINCT FROM c.id "
        f"UNION ALL SELECT 'edge', {job_id} || ' ' || direction || ' ' || {dataset_id}, e.component_id, c.id FROM edges e "
        f"{job_n.format('e')} JOIN component c ON c.n = jn.n WHERE e.component_id IS DISTINCT FROM c.id ORDER BY 1, 2 LIMIT 50"
    ).fetchall()
    return [f"{kind} {node}: stored component_id {stored!r}, computed {label!r}" for kind, node, stored, label in rows]
