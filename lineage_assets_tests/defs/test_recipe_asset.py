"""The recipe asset end to end: Dagster materializes `prepared_customers` (a Wrangler recipe run
by `recipes.apply` on Spark), its run's events reach the drop folder through the OpenLineage
client's file transport, and `ingest` (the sensor's work, through the same Dagster definitions)
turns them into field_operations, column lineage and answers about the prepared columns."""

from __future__ import annotations

import json

import dagster as dg
import duckdb
import pytest
from dagster_pyspark import LazyPySparkResource

from lineage_assets import LineageQuery
from lineage_assets.defs.recipes import prepared_customers, recipes_dir
from lineage_assets.defs.resources import LineagePaths
from lineage_assets.demo.customers import CUSTOMERS_RECIPE, customers_job, write_raw_customers
from lineage_assets.query.node_ids import field_node
from lineage_assets.runner import ingest
from lineage_assets.settings import LineageSettings
from lineage_assets.warehouse import commits

SCHEDULE_SECONDS = 45


class TestSession(LazyPySparkResource):
    """The resource over the test process's one SparkSession."""

    @property
    def spark_session(self):
        from pyspark.sql import SparkSession

        return SparkSession.getActiveSession()


@pytest.fixture(scope="module")
def done(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("recipe_asset")
    settings = LineageSettings(str(root / "drops"), str(root / "warehouse"), "2020-01-01", check_sample=0.1)
    paths = LineagePaths.from_settings(settings)
    write_raw_customers(customers_job(recipes_dir(paths)).source.path, rows=80)
    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.materialize([prepared_customers], instance=instance,
                                resources={"pyspark": TestSession(spark_config={}), "paths": paths})
        assert result.success
        metadata = instance.get_latest_materialization_event(dg.AssetKey("prepared_customers")).asset_materialization.metadata
        report = ingest(settings, instance, log=lambda _m: None)
        assert not report.failed
    return settings, paths, metadata


def test_the_asset_prepares_the_data_and_reports_its_run(spark, done):
    settings, paths, metadata = done
    job = customers_job(recipes_dir(paths))
    prepared = spark.read.parquet(job.target.path)
    rows = prepared.collect()
    assert metadata["dagster/row_count"].value == len(rows) and metadata["rows_in"].value == 81  # the header line too
    # test accounts (country ZZ) and rows without an id are gone; names trimmed and title-cased; emails hashed
    assert rows and all(r["country"] != "ZZ" and r["customer_id"] is not None for r in rows)
    assert all(r["name"] == r["name"].strip() and r["name"][0].isupper() for r in rows)
    assert all(len(r["e_mail"]) == 64 and r["phone"].startswith("xxx-xxx-") for r in rows)
    assert "notes" not in prepared.columns and "body" not in prepared.columns
    events = [json.loads(line) for line in open(metadata["events_file"].value)]
    assert [e["eventType"] for e in events] == ["START", "COMPLETE"]
    complete = events[-1]
    assert complete["job"]["facets"]["sourceCode"]["language"] == "wrangler"
    assert complete["job"]["facets"]["sourceCode"]["sourceCode"] == CUSTOMERS_RECIPE
    assert [f["name"] for f in complete["inputs"][0]["facets"]["schema"]["fields"]] == ["body"]
    output = complete["outputs"][0]
    assert [f["name"] for f in output["facets"]["schema"]["fields"]] == prepared.columns
    lineage = output["facets"]["columnLineage"]
    assert set(lineage["fields"]) == set(prepared.columns)
    e_mail = lineage["fields"]["e_mail"]["inputFields"][0]["transformations"][0]
    assert (e_mail["type"], e_mail["subtype"], e_mail["masking"]) == ("DIRECT", "TRANSFORMATION", True)
    assert [(d["field"], d["transformations"][0]["subtype"]) for d in lineage["dataset"]] == [("body", "FILTER")]
    assert output["outputFacets"]["outputStatistics"]["rowCount"] == len(rows)


def test_the_pipeline_reads_the_projects_own_lineage(done):
    settings, paths, _metadata = done
    job = customers_job(recipes_dir(paths))
    target = ("file", job.target.dataset_name)
    with LineageQuery(settings.warehouse) as query:
        answer = query.column_directives(*target, "e_mail", "2020-01-01T00:00:00Z", "2100-01-01T00:00:00Z")
        run, = answer.runs
        assert run.recipe and run.state == "COMPLETE"
        # made by the CSV parse (its name then known only from the data's header), read by split-email, hashed
        assert [(d.step, d.name, d.label) for d in run.directives] == [
            (1, "parse-as-csv", "Add"), (7, "split-email", "Read"), (8, "hash", "Modify")]
        trace = query.column_history(field_node(*target, "signup_year"))
        step, = [s for s in trace.root.steps if s.type == "DIRECT"]
        assert (step.node.name, step.node.field) == (job.source.dataset_name, "body")
        assert [d.name for d in step.directives] == ["parse-as-csv", "set-column"]
    con = duckdb.connect()
    rows = set(con.execute(
        f"SELECT step, field, label, new_name FROM ({commits.duckdb_relation_sql(commits.latest(settings.warehouse), 'field_operations')}) "
        "WHERE label IS NOT NULL").fetchall())
    assert {(2, "body", "Drop", None), (4, "full_name", "Rename", "name"), (15, "notes", "Drop", None),
            (13, "signup_year", "Add", None)} <= rows
