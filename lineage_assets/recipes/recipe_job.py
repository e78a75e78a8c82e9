"""Run a recipe as a job on Spark and report the run through the OpenLineage client.

`run_recipe_job` reads the source (text lines as one column `body`, or Parquet), applies the
recipe (`recipes.apply`), writes the result as Parquet (a new folder renamed into place, so a
reader never sees half of it), and emits START then COMPLETE (or FAIL, with the error) with the
openlineage-python client's file transport, appending to an NDJSON file in the drop folder: the
project consumes its own lineage. The job facet `sourceCode` carries the recipe (`language`
`wrangler`); datasets carry their schema; the output carries the column lineage the recipe
implies (certain edges; see `recipes.facets`) and its row count.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import (
    column_lineage_dataset,
    error_message_run,
    job_type_job,
    output_statistics_output_dataset,
    schema_dataset,
    source_code_job,
)
from openlineage.client.transport.file import FileConfig, FileTransport
from openlineage.client.uuid import generate_new_uuid

from lineage_assets.recipes.column_lineage import RecipeLineage, lineage
from lineage_assets.recipes.facets import column_lineage_facet
from lineage_assets.recipes.spark_apply import apply
from lineage_assets.recipes.syntax import parse

PRODUCER = "https://github.com/lineage-assets/lineage_assets/recipes"
LANGUAGE = "wrangler"


@dataclass(frozen=True)
class DatasetRef:
    path: str  # where the data is
    namespace: str = "file"
    name: str = ""  # default: the absolute path (OpenLineage naming for local files)

    @property
    def dataset_name(self) -> str:
        return self.name or os.path.abspath(self.path)


@dataclass(frozen=True)
class RecipeJob:
    namespace: str
    name: str
    recipe: str
    source: DatasetRef
    target: DatasetRef
    source_format: str = "lines"  # lines: one string column `body` per line | parquet


@dataclass
class RecipeRunReport:
    run_id: str
    state: str
    events_file: str
    rows_in: int = 0
    rows_out: int = 0
    input_columns: list[str] = field(default_factory=list)
    output_columns: list[str] = field(default_factory=list)
    lineage: RecipeLineage | None = None
    error: str | None = None


def events_file(drop_dir: str | Path, job: RecipeJob) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in f"{job.namespace}.{job.name}")
    return Path(drop_dir) / "wrangler" / f"{safe}.ndjson"


def _schema(df) -> schema_dataset.SchemaDatasetFacet:  # noqa: ANN001
    return schema_dataset.SchemaDatasetFacet(fields=[
        schema_dataset.SchemaDatasetFacetFields(name=f.name, type=f.dataType.simpleString())
        for f in df.schema.fields])


def _column_lineage(facet: dict[str, Any]) -> column_lineage_dataset.ColumnLineageDatasetFacet:
    def field_of(item: dict[str, Any]) -> column_lineage_dataset.InputField:
        return column_lineage_dataset.InputField(
            namespace=item["namespace"], name=item["name"], field=item["field"],
            transformations=[column_lineage_dataset.Transformation(**t)
                             for t in item["transformations"]])

    return column_lineage_dataset.ColumnLineageDatasetFacet(
        fields={out: column_lineage_dataset.Fields(inputFields=[field_of(i) for i in spec["inputFields"]])
                for out, spec in facet["fields"].items()},
        dataset=[field_of(i) for i in facet["dataset"]])


def _read(spark, job: RecipeJob):  # noqa: ANN001, ANN202
    if job.source_format == "lines":
        return spark.read.text(job.source.path).withColumnRenamed("value", "body")
    if job.source_format == "parquet":
        return spark.read.parquet(job.source.path)
    raise ValueError(f"source_format is lines or parquet, got {job.source_format!r}")


def _write_atomically(df, target: str, run_id: str) -> None:  # noqa: ANN001
    """Write a new folder beside the target, then swap it in with renames."""
    staging = f"{target}.staging-{run_id}"
    df.write.mode("overwrite").parquet(staging)
    old = f"{target}.old-{run_id}"
    if os.path.exists(target):
        os.replace(target, old)
    os.replace(staging, target)
    shutil.rmtree(old, ignore_errors=True)


def run_recipe_job(spark, job: RecipeJob, drop_dir: str | Path,  # noqa: ANN001
                   now=lambda: datetime.now(timezone.utc)) -> RecipeRunReport:
    """Run the recipe job once; its events land in `events_file(drop_dir, job)`."""
    path = events_file(drop_dir, job)
    path.parent.mkdir(parents=True, exist_ok=True)
    client = OpenLineageClient(transport=FileTransport(FileConfig(log_file_path=str(path), append=True)))
    run_id = str(generate_new_uuid())
    job_facets = {
        "sourceCode": source_code_job.SourceCodeJobFacet(language=LANGUAGE, sourceCode=job.recipe),
        "jobType": job_type_job.JobTypeJobFacet(processingType="BATCH", integration="WRANGLER",
                                                jobType="RECIPE"),
    }
    ol_job = Job(namespace=job.namespace, name=job.name, facets=job_facets)
    report = RecipeRunReport(run_id, "START", str(path))

    def emit(state: RunState, inputs: list, outputs: list, run_facets: dict | None = None) -> None:
        client.emit(RunEvent(eventType=state, eventTime=now().isoformat(), producer=PRODUCER,
                             run=Run(runId=run_id, facets=run_facets or {}), job=ol_job,
                             inputs=inputs, outputs=outputs))

    source = InputDataset(namespace=job.source.namespace, name=job.source.dataset_name)
    target = OutputDataset(namespace=job.target.namespace, name=job.target.dataset_name)
    try:
        recipe = parse(job.recipe)
        df = _read(spark, job)
        report.input_columns = list(df.columns)
        source = InputDataset(namespace=source.namespace, name=source.name,
                              facets={"schema": _schema(df)})
        emit(RunState.START, [source], [target])
        out = apply(df, recipe)
        _write_atomically(out, job.target.path, run_id)
        written = spark.read.parquet(job.target.path)
        report.rows_in = df.count()
        report.rows_out = written.count()
        report.output_columns = list(written.columns)
        report.lineage = lineage(recipe, report.input_columns, report.output_columns)
        owners = {c: [(source.namespace, source.name)] for c in report.input_columns}
        target = OutputDataset(
            namespace=target.namespace, name=target.name,
            facets={"schema": _schema(written),
                    "columnLineage": _column_lineage(column_lineage_facet(report.lineage, owners))},
            outputFacets={"outputStatistics": output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
                rowCount=report.rows_out)})
        emit(RunState.COMPLETE, [source], [target])
        report.state = "COMPLETE"
    except Exception as exc:  # the run is reported failed, then the error goes on
        report.state, report.error = "FAIL", str(exc)
        emit(RunState.FAIL, [source], [target], {"errorMessage": error_message_run.ErrorMessageRunFacet(
            message=str(exc)[:4000], programmingLanguage="python")})
        raise
    return report
