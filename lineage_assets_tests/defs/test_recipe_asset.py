"""The recipe asset end to end (the `recipe_stream` fixture builds it): Dagster materializes
`prepared_customers` (a Wrangler recipe run by `recipes.apply` on Spark), its run's events reach
the drop folder through the OpenLineage client's file transport, and `ingest` (the sensor's work,
through the same Dagster definitions) turns them into field_operations, column lineage and answers
about the prepared columns."""

from __future__ import annotations

import json

import duckdb

from lineage_assets import LineageQuery
from lineage_assets.demo.customers import CUSTOMERS_RECIPE, customers_job
from lineage_assets.query.node_ids import field_node
from lineage_assets.warehouse import commits

SCHEDULE_SECONDS = 5  # the recipe_stream fixture (conftest) is built once per run


def test_the_asset_prepares_the_data_and_reports_its_run(spark, recipe_stream):
    job, metadata = customers_job(recipe_stream.recipes_dir), recipe_stream.asset
    prepared = spark.read.parquet(job.target.path)
    rows = prepared.collect()
    assert metadata["row_count"] == len(rows) and metadata["rows_in"] == 81  # the header line too
    # test accounts (country ZZ) and rows without an id are gone; names trimmed and title-cased; emails hashed
    assert rows and all(r["country"] != "ZZ" and r["customer_id"] is not None for r in rows)
    assert all(r["name"] == r["name"].strip() and r["name"][0].isupper() for r in rows)
    assert all(len(r["e_mail"]) == 64 and r["phone"].startswith("xxx-xxx-") for r in rows)
    assert "notes" not in prepared.columns and "body" not in prepared.columns
    events = [json.loads(line) for line in open(metadata["events_file"])]
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


def test_the_pipeline_reads_the_projects_own_lineage(recipe_stream):
    job = customers_job(recipe_stream.recipes_dir)
    target = ("file", job.target.dataset_name)
    with LineageQuery(recipe_stream.warehouse) as query:
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
        f"SELECT step, field, label, new_name FROM ({commits.duckdb_relation_sql(commits.latest(recipe_stream.warehouse), 'field_operations')}) "
        "WHERE label IS NOT NULL AND run_id = ?", [recipe_stream.asset["run_id"]]).fetchall())
    assert {(2, "body", "Drop", None), (4, "full_name", "Rename", "name"), (15, "notes", "Drop", None),
            (13, "signup_year", "Add", None)} <= rows
