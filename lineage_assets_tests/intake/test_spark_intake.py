"""The intake's PySpark transformations, called without Dagster."""

from __future__ import annotations

import datetime as dt
import gzip
import json

from lineage_assets.ids import event_id
from lineage_assets.intake.ledger import changed_files
from lineage_assets.intake.read_plan import plan_reads
from lineage_assets.intake.spark_intake import EVENTS_ORDER, consolidate, read_units, spread_by_day, stage_drop
from lineage_assets.warehouse.content_hash import fingerprint
from lineage_assets.warehouse import tables

RUN_ID = "3f0b4e4e-8f9b-4a55-8f0a-0d6f0f2a0c11"


def _event(minute: int, job: str = "job", event_type: str = "START") -> dict:
    return {
        "eventType": event_type,
        "eventTime": f"2024-03-01T10:{minute:02d}:00Z",
        "run": {"runId": RUN_ID},
        "job": {"namespace": "ns", "name": job},
        "producer": "test",
    }


def read_drop(spark, path, name: str, start):
    """The records of one file of a drop folder, read as a landing batch reads it."""
    folder = str(path.parent)
    units, _reads = plan_reads(folder, [c for c in changed_files(folder, {}) if c.path == name], "batch")
    return read_units(spark, folder, units, start)


def test_read_drop_parses_gzip_ndjson_with_rejects(spark, tmp_path):
    events = [_event(1), _event(2, event_type="COMPLETE")]
    lines = [json.dumps(events[0]), "not json", json.dumps(events[1]), json.dumps({**events[1], "eventType": "NOPE"})]
    path = tmp_path / "d.ndjson.gz"
    path.write_bytes(gzip.compress("\n".join(lines).encode()))
    rows = read_drop(spark, path, "d.ndjson.gz", dt.date(2020, 1, 1)).orderBy("source_line").collect()
    assert [r.source_line for r in rows] == [1, 2, 3, 4]
    assert [r.accepted for r in rows] == [True, False, True, False]
    assert [r.reason_code for r in rows] == [None, "not_json", None, "invalid_event_type"]
    assert rows[0].event_id == event_id(events[0])
    assert rows[1].raw == "not json"
    assert rows[2].event_time == dt.datetime(2024, 3, 1, 10, 2)
    assert all(r.source_file == "d.ndjson.gz" for r in rows) and len({r.file_id for r in rows}) == 1


def test_read_drop_reads_names_with_glob_characters_literally(spark, tmp_path):
    path = tmp_path / "run[1] {a}.json"
    path.write_text(json.dumps(_event(3), indent=2))
    (tmp_path / "run1 a.json").write_text(json.dumps(_event(4)))
    rows = read_drop(spark, path, path.name, None).collect()
    assert len(rows) == 1 and rows[0].event_id == event_id(_event(3))


def _parsed(spark, tmp_path, name: str, lines: list[str]):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return read_drop(spark, path, name, None)


def test_stage_drop_counts_duplicates_within_and_across_drops(spark, tmp_path):
    a, b, c = _event(1), _event(2), _event(3)
    parsed = _parsed(
        spark,
        tmp_path,
        "x.ndjson",
        [json.dumps(a), json.dumps(b), json.dumps(a, indent=None, separators=(", ", ": ")), json.dumps(c), "oops"],
    )
    known = spark.createDataFrame([(event_id(c),)], "event_id string")
    staged = stage_drop(parsed, "b1", dt.date(2024, 3, 2), known, None)
    new = staged.events.orderBy("source_line").collect()
    assert [r.event_id for r in new] == [event_id(a), event_id(b)]
    assert [r.source_line for r in new] == [1, 2]
    assert {r.batch_id for r in new} == {"b1"} and {str(r.event_date) for r in new} == {"2024-03-01"}
    dups = sorted(r.source_line for r in staged.duplicate_events.collect())
    assert dups == [3, 4]  # line 3 repeats line 1 canonically; line 4 is already known
    assert [r.raw for r in staged.rejected.collect()] == ["oops"]


def test_stage_drop_does_not_store_a_reject_twice(spark, tmp_path):
    parsed = _parsed(spark, tmp_path, "grow.ndjson", ["oops", json.dumps(_event(1))])
    known_rejects = spark.createDataFrame(
        [("grow.ndjson", 1, "oops", "utf-8", "not_json", "r", None, "f0", dt.date(2024, 1, 1), "b0")],
        tables.REJECTED_EVENTS.schema,
    )
    known = spark.createDataFrame([], "event_id string")
    staged = stage_drop(parsed, "b2", dt.date(2024, 3, 2), known, known_rejects)
    assert staged.rejected.count() == 0
    assert staged.duplicate_rejects.count() == 1
    assert staged.events.count() == 1


def test_consolidate_keeps_one_row_per_event_whatever_the_drop_order(spark, tmp_path):
    a, b = _event(1), _event(2)
    first = stage_drop(
        _parsed(spark, tmp_path, "b.ndjson", [json.dumps(b), json.dumps(a)]),
        "b1", dt.date(2024, 3, 2), spark.createDataFrame([], "event_id string"), None,
    ).events
    second = stage_drop(
        _parsed(spark, tmp_path, "a.ndjson", [json.dumps(a)]),
        "b2", dt.date(2024, 3, 2), spark.createDataFrame([], "event_id string"), None,
    ).events
    day = {"2024-03-01": 3}
    one = consolidate(first.unionByName(second), day)
    other = consolidate(second.unionByName(first), day)
    rows = one.orderBy(*EVENTS_ORDER).collect()  # the order the events asset stages a day in
    assert [r.event_id for r in rows] == [event_id(a), event_id(b)]
    assert rows[0].source_file == "a.ndjson"  # the earliest (source_file, source_line) is kept
    assert fingerprint(one) == fingerprint(other)
    assert fingerprint(one) != fingerprint(one.limit(1))
    alone = consolidate(second, day)  # nothing staged twice: the rows as staged
    assert [(r.event_id, r.source_file) for r in alone.collect()] == [(event_id(a), "a.ndjson")]
    assert fingerprint(consolidate(first, day)) == fingerprint(consolidate(first.unionByName(first), day))


def test_spread_by_day_keeps_a_small_day_in_one_partition_and_spreads_a_big_one(spark):
    from pyspark.sql import functions as F

    sizes = {"2024-03-01": 400, "2024-03-02": 5, "2024-03-03": 5, "2024-03-04": 5}
    rows = [(f"{day}-{i:04d}", dt.date.fromisoformat(day)) for day, n in sizes.items() for i in range(n)]
    spread = spread_by_day(spark.createDataFrame(rows, "event_id string, event_date date"), sizes, 8)
    assert spread.rdd.getNumPartitions() == 8
    located = spread.withColumn("part", F.spark_partition_id()).select("event_date", "part").collect()
    parts = {day: len({r.part for r in located if str(r.event_date) == day}) for day in sizes}
    assert parts["2024-03-02"] == parts["2024-03-03"] == parts["2024-03-04"] == 1  # a file each, not one per task
    assert parts["2024-03-01"] > 1  # the big day is written by several tasks
    assert spread.count() == len(rows)


def test_a_batch_of_few_days_is_staged_as_read_and_one_of_many_days_is_spread(spark, tmp_path):
    """Spreading by day costs a shuffle of the whole rows; it is skipped (by the landing and by
    `events`) when writing the rows as read makes no more files (read partitions x days <= the
    files `spread_by_day` would make), and the staged rows are the same either way."""
    from lineage_assets.intake.spark_intake import day_parts

    none = spark.createDataFrame([], "event_id string")
    parsed = _parsed(spark, tmp_path, "x.ndjson", [json.dumps(_event(m)) for m in range(6)]).repartition(3)
    one_day = {"2024-03-01": 6}
    many_days = {f"2024-03-{d:02d}": 1 for d in range(1, 7)}  # (the counts decide; 3 x 6 > 6 files spread)
    assert 3 * 1 <= sum(day_parts(one_day, 8).values()) and 3 * 6 > sum(day_parts(many_days, 8).values())
    slots = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "8")  # the tests' session has 1
    try:
        as_read = stage_drop(parsed, "b", dt.date(2024, 3, 2), none, None, one_day).events
        spread = stage_drop(parsed, "b", dt.date(2024, 3, 2), none, None, many_days).events
        assert as_read.rdd.getNumPartitions() == 3  # not shuffled
        assert spread.rdd.getNumPartitions() == 8
        assert fingerprint(as_read) == fingerprint(spread) and as_read.count() == 6
        # `events` consolidates the landed rows the same way: as they lie for one day, spread for many
        landed = as_read.repartition(3)
        kept, spread_again = consolidate(landed, one_day), consolidate(landed, many_days)
        assert kept.rdd.getNumPartitions() == 3 and spread_again.rdd.getNumPartitions() == 8
        assert fingerprint(kept) == fingerprint(spread_again) == fingerprint(landed.select(*kept.columns))
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", slots)


def test_a_unit_is_parsed_with_the_cycle_collector_paused_and_it_runs_again_after(tmp_path, monkeypatch):
    """Half the parse's CPU was the collector walking the events parsed so far
    (`benchmarks/intake_parse.py`); the parsed events make no cycles."""
    import gc

    from lineage_assets.intake import spark_intake
    from lineage_assets.intake.ledger import NDJSON
    from lineage_assets.intake.read_plan import ReadUnit

    seen = []
    real = spark_intake.parse_records

    def recording(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(spark_intake, "parse_records", recording)
    data = "".join(json.dumps(_event(m)) + "\n" for m in range(3)).encode()
    (tmp_path / "a.ndjson").write_bytes(data)
    gc.enable()
    rows = spark_intake.parse_unit(str(tmp_path), ReadUnit("a.ndjson", "f1", NDJSON, 0, len(data), 1), None)
    assert seen == [False]
    assert gc.isenabled()
    assert [(r["accepted"], r["source_line"], r["file_id"]) for r in rows] == [(True, n, "f1") for n in (1, 2, 3)]


def test_a_unit_of_a_file_gone_since_the_plan_yields_no_rows(tmp_path):
    """A file removed or renamed away after the read plan: its unit yields nothing (the landing
    batch leaves the file out, as one changed while read), it does not fail the whole batch."""
    from lineage_assets.intake.ledger import NDJSON, WHOLE
    from lineage_assets.intake.read_plan import ReadUnit
    from lineage_assets.intake.spark_intake import parse_unit

    line = json.dumps(_event(1)) + "\n"
    (tmp_path / "here.ndjson").write_text(line)
    here = parse_unit(str(tmp_path), ReadUnit("here.ndjson", "f1", NDJSON, 0, len(line), 1), None)
    assert [(r["source_file"], r["source_line"], r["accepted"], r["file_id"]) for r in here] == [("here.ndjson", 1, True, "f1")]
    assert parse_unit(str(tmp_path), ReadUnit("gone.ndjson", "f2", NDJSON, 0, len(line), 1), None) == []
    assert parse_unit(str(tmp_path), ReadUnit("gone/x.json.gz", "f3", WHOLE, 0, 100, 1), None) == []
