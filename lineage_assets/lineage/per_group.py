"""Pure Python rules applied per group of rows, many groups per Python call.

`groupBy(...).applyInArrow` makes one Arrow table and one Python call per group: about a
millisecond each, which for 50,000 runs was most of the fold. Here Spark collects each group into
one row (a list of structs), so a Python call walks a whole Arrow batch of groups, and a group is
never split between calls (the limit is Spark's: one group's rows must fit in one row, 2 GB).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lineage_assets.cycle_collection import no_cycle_collection
from lineage_assets.warehouse import schemas

GROUPS_PER_CALL = 256  # groups turned into Python objects at a time (bounds a worker's memory)


def map_groups(
    df: DataFrame, key: Sequence[str], rule: Callable[[list[dict]], Iterable[dict]], schema: T.StructType
) -> DataFrame:
    """`rule(rows)` for every group of `df`'s rows by `key` (rows as dicts of every column, in no
    particular order), its result rows typed by `schema`."""
    grouped = df.groupBy(*key).agg(F.collect_list(F.struct(*df.columns)).alias("rows")).select("rows")
    arrow = schemas.arrow_schema(schema)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            groups = batch.column(0)
            for start in range(0, len(groups), GROUPS_PER_CALL):
                with no_cycle_collection():  # the groups' rows and the rule's: trees of new dicts and lists
                    out = [row for rows in groups.slice(start, GROUPS_PER_CALL).to_pylist() for row in rule(rows)]
                    result = pa.RecordBatch.from_pylist(out, schema=arrow) if out else None
                del out
                if result is not None:
                    yield result

    return grouped.mapInArrow(run, schema)
