"""A stream with Wrangler recipe runs, built once per `make test` (the `recipe_stream` fixture):
`prep` (a recipe, no columnLineage) makes crm.clean from crm.customers on two days with two
versions of its recipe; `prep2` sends its own columnLineage; `py` has python sourceCode;
`report` (no recipe, a columnLineage facet) reads crm.clean. Tags: `tag_events()` are the
DatasetEvents `lineage-assets tag` writes (pii on crm.customers' email and name, then a note
removed again), and `report` states a tag of its own in its output's tags facet. `build` lands
the stream as a drop beside the events of the recipe asset (`prepared_customers`, materialized by
Dagster) and ingests both through the project's Dagster definitions."""

from __future__ import annotations

import datetime as dt
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lineage_assets.tagging import TAGS_FILE, change_tag
from lineage_assets_tests.support import Folded, ds, folded_from, run_event

PG, LAKE = "pg://db:5432", "s3://lake"

RECIPE = """// clean the customers
rename :email :contact
lowercase :name
hash :contact SHA-256
set-column :label concat(name, ' #', id)
filter-row exp:{ country = 'XX' } true
drop :country
"""
# the second version trims names first: one more step, the others one further down
RECIPE_V2 = RECIPE.replace("lowercase :name\n", "trim :name\nlowercase :name\n")


def schema(*names: str) -> dict:
    return {"schema": {"fields": [{"name": n, "type": "string"} for n in names]}}


def wrangler(recipe: str) -> dict:
    return {"sourceCode": {"language": "Wrangler", "sourceCode": recipe}}


def recipe_events() -> list[dict]:
    source = ds("crm.customers", PG, **schema("id", "name", "email", "country"))
    target = ds("crm.clean", LAKE, **schema("id", "name", "contact", "label"))
    declared = ds("crm.clean2", LAKE, **schema("id"), columnLineage={"fields": {"id": {
        "inputFields": [{"namespace": PG, "name": "crm.customers", "field": "name"}]}}})
    report = ds("crm.report", LAKE, **schema("contact_hash", "who"), tags={"tags": [
        {"key": "owner", "value": "reporting", "source": "spark"},
        {"key": "sensitivity", "value": "low", "source": "spark", "field": "who"}]}, columnLineage={"fields": {
        "contact_hash": {"inputFields": [{"namespace": LAKE, "name": "crm.clean", "field": "contact", "transformations": [
            {"type": "DIRECT", "subtype": "IDENTITY"}]}]},
        "who": {"inputFields": [{"namespace": LAKE, "name": "crm.clean", "field": "name", "transformations": [
            {"type": "DIRECT", "subtype": "TRANSFORMATION", "description": "upper(name)"}]}]},
    }})
    clean_in = ds("crm.clean", LAKE, **schema("id", "name", "contact", "label"))
    return [
        run_event("2026-11-20T10:00:00Z", "START", "r1", "prep", [source], [target], job_facets=wrangler(RECIPE)),
        run_event("2026-11-20T10:05:00Z", "COMPLETE", "r1", "prep", [source], [target], job_facets=wrangler(RECIPE)),
        # the producer sent columnLineage: it is kept, not replaced by the recipe's
        run_event("2026-11-21T10:05:00Z", "COMPLETE", "r2", "prep2", [source], [declared],
                  job_facets=wrangler("uppercase :id")),
        # a python job's sourceCode is not a recipe
        run_event("2026-11-21T11:00:00Z", "COMPLETE", "r3", "py", [source], [ds("other", LAKE)],
                  job_facets={"sourceCode": {"language": "python", "sourceCode": "rename :a :b"}}),
        run_event("2026-11-22T10:05:00Z", "COMPLETE", "r4", "prep", [source], [target], job_facets=wrangler(RECIPE_V2)),
        run_event("2026-11-22T12:00:00Z", "COMPLETE", "r5", "report", [clean_in], [report]),
        *tag_events(),
    ]


def tag_events() -> list[dict]:
    """The events `change_tag` writes (the real OpenLineage client, file transport)."""
    with tempfile.TemporaryDirectory() as drop:
        def at(hour: int) -> dt.datetime:
            return dt.datetime(2026, 11, 20, hour, tzinfo=dt.timezone.utc)

        change_tag(drop, None, PG, "crm.customers", "email", "pii", "true", now=at(8))
        change_tag(drop, None, PG, "crm.customers", "name", "pii", "true", now=at(9))  # keeps email's
        change_tag(drop, None, PG, "crm.customers", "name", "note", "check", now=at(9))
        change_tag(drop, None, PG, "crm.customers", "name", "note", remove=True, now=at(11))
        return [json.loads(line) for line in (Path(drop) / TAGS_FILE).read_text().splitlines()]


@dataclass
class RecipeStream:
    folded: Folded  # the warehouse's tables, collected
    warehouse: str  # ingested: history and the current graph
    recipes_dir: str  # the recipe asset's data (raw export, prepared Parquet)
    asset: dict  # the asset materialization's metadata that the tests read


def build(spark, root: Path) -> RecipeStream:
    import dagster as dg
    from dagster_pyspark import LazyPySparkResource

    from lineage_assets.defs.recipes import prepared_customers, recipes_dir
    from lineage_assets.defs.resources import LineagePaths
    from lineage_assets.demo.customers import customers_job, write_raw_customers
    from lineage_assets.runner import ingest
    from lineage_assets.settings import LineageSettings

    class TestSession(LazyPySparkResource):
        @property
        def spark_session(self):
            return spark

    settings = LineageSettings(str(root / "drops"), str(root / "warehouse"), "2020-01-01", check_sample=1.0)
    paths = LineagePaths.from_settings(settings)
    stream = root / "drops" / "stream" / "recipe_stream.ndjson"
    stream.parent.mkdir(parents=True, exist_ok=True)
    stream.write_text("".join(json.dumps(e) + "\n" for e in recipe_events()))
    write_raw_customers(customers_job(recipes_dir(paths)).source.path, rows=80)
    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.materialize([prepared_customers], instance=instance,
                                resources={"pyspark": TestSession(spark_config={}), "paths": paths})
        assert result.success
        metadata = instance.get_latest_materialization_event(dg.AssetKey("prepared_customers")).asset_materialization.metadata
        report = ingest(settings, instance, log=lambda _m: None)
        assert not report.failed, report.runs
    asset = {"rows_in": metadata["rows_in"].value, "row_count": metadata["dagster/row_count"].value,
             "events_file": metadata["events_file"].value, "run_id": metadata["run_id"].value}
    (root / "asset.json").write_text(json.dumps(asset))
    return load(spark, root)


def load(spark, root: Path) -> RecipeStream:
    from lineage_assets.defs.recipes import recipes_dir
    from lineage_assets.defs.resources import LineagePaths
    from lineage_assets.settings import LineageSettings

    paths = LineagePaths.from_settings(LineageSettings(str(root / "drops"), str(root / "warehouse"), "2020-01-01"))
    return RecipeStream(folded_from(spark, str(root / "warehouse")), str(root / "warehouse"), str(recipes_dir(paths)),
                        json.loads((root / "asset.json").read_text()))
