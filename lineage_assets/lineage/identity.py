"""Dataset identity inside the fold (DESIGN.md section 10): the alias statements of a range of
days, the `Identity` the fold resolves every reported dataset with, and the alias tables.

The statements come from every `symlinks` dataset facet of the range's events (inputs, outputs,
DatasetEvents): Python turns each facet into statements (`aliases.facet_statements`, names
folded by the partition rules), Spark keeps, per identifier, only the statements that change what
it stands for (a window in time order, after the identifier's latest statement before the
range, carried by `state_aliases`). Those changes are few (an identifier changes meaning
rarely); they are collected to the driver and become the `AliasTimeline` that every worker
resolves names with. A name resolves as of the time its run ended (a run's names all at once,
so the events of a run that spans days agree), a JobEvent's, DatasetEvent's or streaming event's
names as of the event: times inside the range, so the answer is independent of the order in which
events arrive and of how days are grouped into ranges.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lineage_assets.identity.aliases import AliasTimeline, Statement, facet_statements, statement_order
from lineage_assets.identity.partitions import PartitionRule
from lineage_assets.identity.resolver import Identity
from lineage_assets.warehouse import schemas
from lineage_assets.warehouse import tables as t

STATEMENTS = schemas.schema(
    "alias_namespace string, alias_name string, namespace string, name string, identifier_type string, "
    "learnt_micros long, event_id string"
)
OPEN_DATE = dt.date.fromisoformat(t.OPEN)


def _symlink_refs(events: DataFrame) -> DataFrame:
    """(event_id, learnt_micros, namespace, name, identifiers JSON) of every dataset reference
    with a symlinks facet. Facets without the word are not parsed."""
    stamp = [F.col("event_id"), F.unix_micros("event_time").alias("learnt_micros")]
    empty = F.array().cast(T.ArrayType(schemas.IO_DATASET))
    io = events.filter("event_kind != 'DATASET'").select(
        *stamp, F.explode(F.concat(F.coalesce("inputs", empty), F.coalesce("outputs", empty))).alias("d")
    ).select("event_id", "learnt_micros", "d.namespace", "d.name", F.col("d.facets").alias("facets"))
    datasets = events.filter("event_kind = 'DATASET'").select(
        *stamp, F.col("dataset_namespace").alias("namespace"), F.col("dataset_name").alias("name"),
        F.col("dataset_facets").alias("facets"),
    )
    return (
        io.unionByName(datasets)
        .filter(F.col("facets").contains('"symlinks"'))
        .select("event_id", "learnt_micros", "namespace", "name", F.get_json_object("facets", "$.symlinks.identifiers").alias("identifiers"))
        .filter("identifiers is not null")
    )


def _statements_fn(identity: Identity):
    arrow = schemas.arrow_schema(STATEMENTS)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            out = []
            for ref in batch.to_pylist():
                out.extend(ref_statements(identity, ref))
            if out:
                yield pa.RecordBatch.from_pylist(out, schema=arrow)

    return run


def ref_statements(identity: Identity, ref: dict) -> list[dict]:
    """The statements of one reference's symlinks facet (identifiers as JSON text); identifiers
    that are not objects with a namespace and a name are ignored."""
    try:
        identifiers = json.loads(ref["identifiers"])
    except ValueError:
        return []
    named = []
    for item in identifiers if isinstance(identifiers, list) else []:
        if isinstance(item, dict) and isinstance(item.get("namespace"), str) and isinstance(item.get("name"), str):
            kind = item.get("type")
            named.append((item["namespace"], identity.fold(item["namespace"], item["name"])[0], kind if isinstance(kind, str) else None))
    dataset = (ref["namespace"], identity.fold(ref["namespace"], ref["name"])[0])
    return [
        {"alias_namespace": alias[0], "alias_name": alias[1], "namespace": canonical[0], "name": canonical[1],
         "identifier_type": kind, "learnt_micros": ref["learnt_micros"], "event_id": ref["event_id"]}
        for alias, canonical, kind in facet_statements(dataset, named)
    ]


@dataclass
class RangeIdentity:
    """The identity a fold of [first, last] resolves names with, and the alias rows it writes."""

    identity: Identity
    dataset_aliases: DataFrame  # DATASET_ALIASES rows learnt in the range (with created_date)
    state: DataFrame  # STATE_ALIASES rows valid on some day >= first (with valid_to)
    rows: dict[str, list[dict]]  # the same rows as Python dicts, by table name: few, staged without Spark


def range_identity(events: DataFrame, carried: DataFrame, rules: tuple[PartitionRule, ...]) -> RangeIdentity:
    """events: the range's events; carried: STATE_ALIASES rows valid the day before `first`.
    One Spark job: the carried rows and the range's changes are collected together."""
    spark = events.sparkSession
    stated = _symlink_refs(events).mapInArrow(_statements_fn(Identity(rules)), STATEMENTS).select(
        "*", F.lit(None).cast("date").alias("valid_from"), F.lit(False).alias("carried"),
    )
    known = statement_columns(carried, "valid_from", F.lit(True).alias("carried"))
    alias = ["alias_namespace", "alias_name"]
    order = Window.partitionBy(*alias).orderBy("learnt_micros", "event_id", "namespace", "name")  # as AliasTimeline.of
    said = F.struct("namespace", "name")
    previous = F.coalesce(F.lag(said).over(order), F.struct(F.col("alias_namespace").alias("namespace"), F.col("alias_name").alias("name")))
    rows = (
        stated.unionByName(known).withColumn("_changed", said != previous)
        .filter(F.col("_changed") | F.col("carried")).collect()
    )
    carried_rows = [(statement(r), r["valid_from"]) for r in rows if r["carried"]]
    change_rows = [statement(r) for r in rows if not r["carried"]]
    timeline = AliasTimeline.of([*(s for s, _ in carried_rows), *change_rows])
    history, state = _history_rows(change_rows), _state_rows(carried_rows, change_rows)
    return RangeIdentity(
        Identity(rules, timeline),
        spark.createDataFrame(history, t.DATASET_ALIASES.schema), spark.createDataFrame(state, t.STATE_ALIASES.schema),
        {t.DATASET_ALIASES.name: history, t.STATE_ALIASES.name: state},
    )


def statement_columns(aliases: DataFrame, *extra) -> DataFrame:
    """Alias rows (DATASET_ALIASES or STATE_ALIASES) as `STATEMENTS` columns (the time in
    microseconds), plus `extra` columns: what `statement` reads back on the driver."""
    return aliases.select(
        "alias_namespace", "alias_name", "namespace", "name", "identifier_type",
        F.unix_micros("learnt_at").alias("learnt_micros"), "event_id", *extra,
    )


def statement(row) -> Statement:
    """A collected `STATEMENTS` row as a Statement."""
    return Statement((row["alias_namespace"], row["alias_name"]), row["learnt_micros"], row["event_id"],
                     (row["namespace"], row["name"]), row["identifier_type"])


def _timestamp(micros: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=micros)


def _row(s: Statement) -> dict:
    return {
        "alias_namespace": s.alias[0], "alias_name": s.alias[1], "namespace": s.canonical[0], "name": s.canonical[1],
        "identifier_type": s.identifier_type, "learnt_at": _timestamp(s.learnt_at), "event_id": s.event_id,
    }


def _history_rows(changes: list[Statement]) -> list[dict]:
    return [{**_row(s), "created_date": _timestamp(s.learnt_at).date()} for s in changes]


def _state_rows(carried: list[tuple[Statement, dt.date]], changes: list[Statement]) -> list[dict]:
    """Per identifier, its statements as validity intervals of days: valid from the statement's
    day (a carried row keeps its own) to the next statement's day; one replaced on its own day
    is dropped (the state as of a day is the day's last statement)."""
    by_alias: dict[tuple, list[dict]] = {}
    for s, valid_from in carried:
        by_alias.setdefault(s.alias, []).append({**_row(s), "valid_from": valid_from})
    for s in sorted(changes, key=statement_order):
        by_alias.setdefault(s.alias, []).append({**_row(s), "valid_from": _timestamp(s.learnt_at).date()})
    rows = []
    for items in by_alias.values():
        for index, item in enumerate(items):
            valid_to = items[index + 1]["valid_from"] if index + 1 < len(items) else OPEN_DATE
            if item["valid_from"] < valid_to:
                rows.append({**item, "valid_to": valid_to})
    return rows
