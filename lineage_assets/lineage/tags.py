"""Field tags (DESIGN.md section 9): the `tags` dataset facet of each dataset version.

OpenLineage's TagsDatasetFacet lists `{key, value, source, field}`; an entry without `field`
tags the whole dataset. Each version that carries the facet gives one row per entry, or one row
with a null key when its list is empty (so a facet that removes every tag is seen). The tags of
a dataset are those of its newest version with the facet: a later facet replaces the set.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

TAG_ENTRIES = "array<struct<key: string, value: string, source: string, field: string>>"


def field_tags(versions: DataFrame) -> DataFrame:
    """FIELD_TAGS rows of dataset versions (version_id, namespace, name, run_id, created_at,
    created_date, tags: the JSON of the tags facet's entries, null when it has none)."""
    empty_entry = F.array(F.struct(*[F.lit(None).cast("string").alias(c) for c in ("key", "value", "source", "field")]))
    return (
        versions.select("version_id", "namespace", "name", "run_id", "created_at", "created_date",
                        F.from_json("tags", TAG_ENTRIES).alias("entries"))
        .filter("entries is not null")
        .select("version_id", "namespace", "name", "run_id", "created_at", "created_date",
                F.explode(F.when(F.size("entries") > 0, F.col("entries")).otherwise(empty_entry)).alias("t"))
        .select("version_id", "namespace", "name", F.col("t.field").alias("field"), F.col("t.key").alias("tag_key"),
                F.col("t.value").alias("tag_value"), F.col("t.source").alias("source"), "run_id", "created_at", "created_date")
        .dropDuplicates()
    )
