"""The current lineage graph (DESIGN.md section 4, "Current lineage") and its components.

Each job's current version is the version of its latest terminal run; that version's inputs and
outputs are the job's edges. `component_id` is the smallest node id in the node's connected
component, so a component looks the same whichever node a user starts from.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lineage_assets.query.node_ids import dataset_node, job_node


def component_ids(nodes: list[str], edges: list[tuple[str, str]]) -> dict[str, str]:
    """Union-find over an undirected graph: node -> smallest node id of its component."""
    parent = {n: n for n in nodes}

    def find(x: str) -> str:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:  # path compression
            parent[x], x = root, parent[x]
        return root

    for a, b in edges:
        parent.setdefault(a, a)
        parent.setdefault(b, b)
        ra, rb = find(a), find(b)
        if ra != rb:
            # the smaller id becomes the root, so each root is its component's minimum
            if ra < rb:
                parent[rb] = ra
            else:
                parent[ra] = rb
    return {n: find(n) for n in parent}


COMPONENTS = T.StructType([T.StructField("node_id", T.StringType()), T.StructField("component_id", T.StringType())])


def current_tables(jobs_state: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(current_jobs, current_lineage) from the fold's job state after the last processed day."""
    spark = jobs_state.sparkSession
    jobs = jobs_state.filter("version_id is not null")
    edges = jobs.select(
        "job_namespace", "job_name", "version_id", F.explode("inputs").alias("d"), F.lit("INPUT").alias("direction")
    ).unionByName(
        jobs.select("job_namespace", "job_name", "version_id", F.explode("outputs").alias("d"), F.lit("OUTPUT").alias("direction"))
    ).select(
        "job_namespace", "job_name", "version_id",
        F.col("d.namespace").alias("dataset_namespace"), F.col("d.name").alias("dataset_name"), "direction",
    ).distinct()
    job_rows = jobs.select("job_namespace", "job_name").collect()
    edge_rows = edges.select("job_namespace", "job_name", "dataset_namespace", "dataset_name").collect()
    nodes = [job_node(r[0], r[1]) for r in job_rows]
    pairs = [(job_node(r[0], r[1]), dataset_node(r[2], r[3])) for r in edge_rows]
    components = component_ids(nodes, pairs)
    comp_df = spark.createDataFrame(sorted(components.items()), COMPONENTS)
    job_key = F.concat(F.lit("job:"), F.col("job_namespace"), F.lit(":"), F.col("job_name"))
    current_jobs = (
        jobs.withColumn("node_id", job_key)
        .join(comp_df, "node_id")
        .select(
            "job_namespace", "job_name", "version_id", "latest_run_id", "latest_state", "latest_ended_at",
            "lineage_unknown", "code_version", "component_id",
        )
        .orderBy("job_namespace", "job_name")
    )
    current_lineage = (
        edges.withColumn("node_id", job_key)
        .join(comp_df, "node_id")
        .drop("node_id")
        .orderBy("job_namespace", "job_name", "direction", "dataset_namespace", "dataset_name")
    )
    return current_jobs, current_lineage


def current_column_tables(columns_state: DataFrame, fields_state: DataFrame, current_lineage: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(current_column_lineage, current_dataset_fields).

    A dataset's current column lineage: for each job whose current version outputs it, the edges
    of the version written by that job's latest terminal run that wrote it (the fold carries
    those per (job, dataset) in its state). Fields: each dataset's current fields.
    """
    outputs = current_lineage.filter("direction = 'OUTPUT'").select(
        "job_namespace", "job_name",
        F.col("dataset_namespace").alias("output_namespace"), F.col("dataset_name").alias("output_name"),
    )
    edges = columns_state.join(outputs, ["job_namespace", "job_name", "output_namespace", "output_name"], "left_semi")
    fields = fields_state.select("namespace", "name", "version_id", "field_path", "type", "description", "ordinal")
    return (
        edges.orderBy("output_namespace", "output_name", "output_field", "input_namespace", "input_name", "input_field"),
        fields.orderBy("namespace", "name", "ordinal"),
    )
