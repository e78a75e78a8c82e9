"""The current lineage graph (DESIGN.md section 4, "Current lineage") and its components.

Each job's current version is the version of its latest terminal run; that version's inputs and
outputs are the job's edges. `component_id` is the smallest node id in the node's connected
component, so a component looks the same whichever node a user starts from.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lineage_assets.identity.aliases import AliasTimeline
from lineage_assets.lineage.checkpoint import checkpoint
from lineage_assets.lineage.identity import statement, statement_columns
from lineage_assets.query.node_ids import dataset_node, job_node
from lineage_assets.warehouse import tables as t
from lineage_assets.warehouse.schemas import arrow_schema


def node_key(kind: str, namespace: str, name: str) -> tuple[str, str, str, str]:
    """A node of the components: (node id, kind, namespace, name). Nodes are their parts, not
    their id strings (`job:a:b:c` is both the job (a:b, c) and the job (a, b:c)), and they sort
    by id first, so a component's smallest node names it whichever node a user starts from."""
    return (job_node(namespace, name) if kind == "job" else dataset_node(namespace, name), kind, namespace, name)


def component_ids(nodes: list, edges: list[tuple]) -> dict:
    """Union-find over an undirected graph of nodes (`node_key`s, or node id strings): node ->
    the node id of its component's smallest node. The nodes are numbered in their order first,
    so the union-find runs on list indexes and the smaller root is the smaller number."""
    keys = sorted({*nodes, *(n for edge in edges for n in edge)})
    number = {key: i for i, key in enumerate(keys)}
    parent = list(range(len(keys)))

    def find(x: int) -> int:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:  # path compression
            parent[x], x = root, parent[x]
        return root

    for a, b in edges:
        ra, rb = find(number[a]), find(number[b])
        if ra != rb:  # the smaller node becomes the root, so each root is its component's minimum
            parent[max(ra, rb)] = min(ra, rb)
    node_id = (lambda key: key) if keys and isinstance(keys[0], str) else (lambda key: key[0])
    return {key: node_id(keys[find(i)]) for i, key in enumerate(keys)}


COMPONENTS = T.StructType([
    T.StructField("job_namespace", T.StringType()), T.StructField("job_name", T.StringType()), T.StructField("component_id", T.StringType()),
])


def current_alias_rows(aliases_state: DataFrame) -> list[dict]:
    """CURRENT_ALIASES: every identifier that stands for another dataset now (its latest alias
    statement, chains followed: `AliasTimeline.current`). Few rows: built on the driver."""
    timeline = AliasTimeline.of(statement(r) for r in statement_columns(aliases_state).collect())
    return [
        {"alias_namespace": alias[0], "alias_name": alias[1], "namespace": canonical[0], "name": canonical[1]}
        for alias, canonical in sorted(timeline.current().items())
    ]


def canonical(df: DataFrame, aliases: DataFrame, namespace: str, name: str) -> DataFrame:
    """`df` with its dataset columns (namespace, name) replaced by the canonical dataset they stand
    for now (`aliases`: CURRENT_ALIASES rows; few, so broadcast). History keeps the names as
    they were resolved when written: an alias learnt later re-points them here, in the snapshot."""
    found = F.broadcast(aliases.select(
        F.col("alias_namespace").alias(namespace), F.col("alias_name").alias(name),
        F.col("namespace").alias("_canonical_namespace"), F.col("name").alias("_canonical_name"),
    ))
    return df.join(found, [namespace, name], "left").select(*[
        F.coalesce("_canonical_namespace", namespace).alias(namespace) if c == namespace
        else F.coalesce("_canonical_name", name).alias(name) if c == name
        else F.col(c)
        for c in df.columns
    ])


def current_tables(jobs_state: DataFrame, aliases: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(current_jobs, current_lineage) from the fold's job state after the last processed day,
    datasets named by their canonical names now (`aliases`: CURRENT_ALIASES)."""
    spark = jobs_state.sparkSession
    jobs = jobs_state.filter("version_id is not null")
    edges = jobs.select(
        "job_namespace", "job_name", "version_id", F.explode("inputs").alias("d"), F.lit("INPUT").alias("direction")
    ).unionByName(
        jobs.select("job_namespace", "job_name", "version_id", F.explode("outputs").alias("d"), F.lit("OUTPUT").alias("direction"))
    ).select(
        "job_namespace", "job_name", "version_id",
        F.col("d.namespace").alias("dataset_namespace"), F.col("d.name").alias("dataset_name"), "direction",
    ).transform(lambda df: canonical(df, aliases, "dataset_namespace", "dataset_name")).distinct()
    # kept: collected for the components, then read again by current_jobs and current_lineage
    edges = edges.join(temporary_datasets(edges, jobs), ["dataset_namespace", "dataset_name"]).transform(checkpoint)
    # through Arrow both ways: Row objects and createDataFrame's per-row type checks cost more than the union-find
    job_cols = jobs.select("job_namespace", "job_name").toArrow().to_pydict()
    edge_cols = edges.select("job_namespace", "job_name", "dataset_namespace", "dataset_name").toArrow().to_pydict()
    # nodes by their parts, not their id strings: two nodes may have one id (`node_key`)
    job = lambda namespace, name: node_key("job", namespace, name)  # noqa: E731
    nodes = list(map(job, job_cols["job_namespace"], job_cols["job_name"]))
    pairs = list(zip(
        map(job, edge_cols["job_namespace"], edge_cols["job_name"]),
        map(lambda namespace, name: node_key("dataset", namespace, name), edge_cols["dataset_namespace"], edge_cols["dataset_name"]),
    ))
    components = [{"job_namespace": n[2], "job_name": n[3], "component_id": c}
                  for n, c in sorted(component_ids(nodes, pairs).items()) if n[1] == "job"]
    comp_df = spark.createDataFrame(pa.Table.from_pylist(components, schema=arrow_schema(COMPONENTS)), COMPONENTS)
    job_key = ["job_namespace", "job_name"]
    temporary = edges.filter("temporary").groupBy("job_namespace", "job_name").agg(
        F.array_sort(F.collect_set(F.struct(F.col("dataset_namespace").alias("namespace"), F.col("dataset_name").alias("name"))))
        .alias("temporary_datasets")
    )
    current_jobs = (
        jobs.join(comp_df, job_key)
        .join(temporary, job_key, "left")
        .select(
            "job_namespace", "job_name", "version_id", "latest_run_id", "latest_state", "latest_ended_at",
            "lineage_unknown", "code_version", "component_id", "latest_parent_run_id",
            F.coalesce("temporary_datasets", F.array().cast(T.ArrayType(t.NAME_PAIR))).alias("temporary_datasets"),
        )
        .orderBy("job_namespace", "job_name")
    )
    current_lineage = (
        edges.join(comp_df, job_key)
        .orderBy("job_namespace", "job_name", "direction", "dataset_namespace", "dataset_name")
    )
    return current_jobs, current_lineage


def temporary_datasets(edges: DataFrame, jobs: DataFrame) -> DataFrame:
    """(dataset_namespace, dataset_name, temporary) of every dataset of the current graph.

    Temporary (DESIGN.md section 10): written and read in the current graph, and every job with an
    edge to it is one job, or every such job's latest run is a child of one parent run (the
    `parent` facet). An outside reader (another job, or a child of another parent) makes it
    ordinary again at the next snapshot."""
    job_key = ["job_namespace", "job_name"]
    touching = edges.join(jobs.select(*job_key, "latest_parent_run_id"), job_key, "left")
    return touching.groupBy("dataset_namespace", "dataset_name").agg(
        F.countDistinct(*job_key).alias("_jobs"),
        F.countDistinct("latest_parent_run_id").alias("_parents"),
        F.max(F.col("latest_parent_run_id").isNull()).alias("_orphan"),
        F.max(F.col("direction") == "OUTPUT").alias("_written"),
        F.max(F.col("direction") == "INPUT").alias("_read"),
    ).select(
        "dataset_namespace", "dataset_name",
        (F.col("_written") & F.col("_read") & ((F.col("_jobs") == 1) | ((F.col("_parents") == 1) & ~F.col("_orphan")))).alias("temporary"),
    )


def current_column_tables(
    columns_state: DataFrame, fields_state: DataFrame, current_lineage: DataFrame, aliases: DataFrame,
) -> tuple[DataFrame, DataFrame]:
    """(current_column_lineage, current_dataset_fields), datasets by their canonical names now.

    A dataset's current column lineage: for each job whose current version outputs it, the edges
    of the version written by that job's latest terminal run that wrote it (the fold carries
    those per (job, dataset name) in its state; names that are one dataset now keep that
    dataset's latest run only). Fields: each dataset's current fields; when several
    names of one dataset have fields, those of the best version (as the fold ranks them: not
    FAIL/ABORT first, then newest).
    """
    outputs = current_lineage.filter("direction = 'OUTPUT'").select(
        "job_namespace", "job_name",
        F.col("dataset_namespace").alias("output_namespace"), F.col("dataset_name").alias("output_name"),
    )
    pair = ["job_namespace", "job_name", "output_namespace", "output_name"]
    # the fold keeps the latest run per (job, output) by the names it knew; names an alias learnt
    # since ties to one dataset are one output now, whose latest run is chosen again
    latest = Window.partitionBy(*pair)
    run = F.struct("created_at", "run_id")
    edges = (
        columns_state.transform(lambda df: canonical(df, aliases, "output_namespace", "output_name"))
        .transform(lambda df: canonical(df, aliases, "input_namespace", "input_name"))
        .join(outputs, pair, "left_semi")
        .withColumn("_latest", F.max(run).over(latest))
        .filter(F.col("_latest") == run)
        .drop("_latest")
        .distinct()
    )
    named = canonical(fields_state, aliases, "namespace", "name")
    best = Window.partitionBy("namespace", "name").orderBy(F.col("rank"), F.col("created_at").desc(), F.col("version_id").desc())
    chosen = named.select("namespace", "name", "version_id", "rank", "created_at").distinct().withColumn("_n", F.row_number().over(best)).filter("_n = 1")
    fields = named.join(chosen.select("namespace", "name", "version_id"), ["namespace", "name", "version_id"], "left_semi").select(
        "namespace", "name", "version_id", "field_path", "type", "description", "ordinal"
    )
    return (
        edges.orderBy("output_namespace", "output_name", "output_field", "input_namespace", "input_name", "input_field"),
        fields.orderBy("namespace", "name", "ordinal"),
    )
