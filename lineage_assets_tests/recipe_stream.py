"""A stream with Wrangler recipe runs, folded once per test process (`recipe_stream_folded`):
`prep` (a recipe, no columnLineage) makes crm.clean from crm.customers on two days with two
versions of its recipe; `prep2` sends its own columnLineage; `py` has python sourceCode;
`report` (no recipe, a columnLineage facet) reads crm.clean. Tags: `tag_events()` are the
DatasetEvents `lineage-assets tag` writes (pii on crm.customers' email and name, then a note
removed again), and `report` states a tag of its own in its output's tags facet."""

from __future__ import annotations

import datetime as dt
import json
import tempfile
from pathlib import Path

from lineage_assets.tagging import TAGS_FILE, change_tag
from lineage_assets_tests.support import ds, run_event

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
