"""The recipe asset: a Wrangler recipe prepares the demo's raw customers with Spark and reports
its run through the OpenLineage client into the drop folder (wiring only)."""

from pathlib import Path

import dagster as dg
from dagster_pyspark import LazyPySparkResource

from lineage_assets.defs.resources import LineagePaths
from lineage_assets.demo.customers import customers_job, write_raw_customers
from lineage_assets.recipes.recipe_job import run_recipe_job

RECIPE_JOB = "prepare_customers_job"


def recipes_dir(paths: LineagePaths) -> Path:
    """Where the recipe asset's data lives: `recipes/` beside the warehouse."""
    return Path(paths.warehouse).resolve().parent / "recipes"


@dg.asset(
    name="prepared_customers", group_name="recipes", kinds={"spark", "parquet"},
    description="The raw customers export (written by the demo generator when missing) prepared by a Wrangler recipe "
    "(`recipes.apply`); the run's START and COMPLETE/FAIL events, with the recipe in the sourceCode job facet, the "
    "schemas and the column lineage the recipe implies, land in the drop folder through the OpenLineage client's file "
    "transport, so the pipeline reads the project's own lineage.",
)
def prepared_customers(context: dg.AssetExecutionContext, pyspark: LazyPySparkResource, paths: LineagePaths):
    job = customers_job(recipes_dir(paths))
    if not Path(job.source.path).exists():
        write_raw_customers(job.source.path)
        context.log.info(f"wrote the raw export {job.source.path}")
    report = run_recipe_job(pyspark.spark_session, job, paths.drop_dir)
    notes = [{"step": u.step, "column": u.column, "reason": u.reason} for u in report.lineage.unresolved]
    edges = [{"input": e.input, "output": e.output, "type": e.type, "subtype": e.subtype, "masking": e.masking}
             for e in report.lineage.edges if e.certain]
    return dg.MaterializeResult(metadata={
        "run_id": report.run_id,
        "rows_in": report.rows_in,
        "dagster/row_count": report.rows_out,
        "events_file": report.events_file,
        "recipe": dg.MetadataValue.md(f"```\n{job.recipe}```"),
        "column_edges": dg.MetadataValue.json(edges),
        "unresolved": dg.MetadataValue.json(notes),
        "dagster/column_schema": dg.TableSchema(columns=[dg.TableColumn(c) for c in report.output_columns]),
    })
