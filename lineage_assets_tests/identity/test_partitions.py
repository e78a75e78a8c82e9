"""Partition rules (DESIGN.md section 10): which names fold into which dataset, in Python."""

from __future__ import annotations

import json

import pytest

from lineage_assets.identity.partitions import DEFAULT_RULES, PartitionRule, fold_name, is_path, load_rules, rules_from_spec

# (namespace, name, folded name, partition)
CASES = [
    # key=value segments, one or several, with or without a trailing slash
    ("s3://lake", "events/date=2024-01-01/", "events", "date=2024-01-01"),
    ("s3://lake", "events/date=2024-01-02", "events", "date=2024-01-02"),
    ("s3a://lake", "/events/date=2024-01-01/hour=05/", "/events", "date=2024-01-01/hour=05"),
    ("hdfs://nn:8020", "/warehouse/db.db/t/dt=20240101", "/warehouse/db.db/t", "dt=20240101"),
    ("file", "/tmp/out/region=eu west/", "/tmp/out", "region=eu west"),
    ("abfss://c@acct.dfs.core.windows.net", "raw/k=", "raw", "k="),
    ("s3://lake", "/a=b/c/d=e", "/a=b/c", "d=e"),  # a key=value segment before a plain one stays in the name
    ("s3://lake", "date=2024-01-01", "date=2024-01-01", None),  # nothing left of the name: not folded
    # /YYYY/MM/DD paths, optionally an hour
    ("gs://logs", "app/2024/01/31/", "app", "2024/01/31"),
    ("gs://logs", "app/2024/01/31/23", "app", "2024/01/31/23"),
    ("gs://logs", "app/2024/13/31", "app/2024/13/31", None),  # not a month
    ("gs://logs", "app/2024/01/31/date=x", "app", "2024/01/31/date=x"),  # both rules, in the name's order
    ("s3://lake", "events/region=eu/2024/01/31", "events", "region=eu/2024/01/31"),  # key=value before the dates: a second pass
    ("gs://logs", "app/2024/01/31/2024/01/30", "app", "2024/01/31/2024/01/30"),
    ("file", "/data/orders_20240101_20240102", "/data/orders", "20240101/20240102"),
    # date suffixes of the last path segment
    ("file", "/data/orders_20240131", "/data/orders", "20240131"),
    ("s3://b", "/data/orders_2024_01_31/", "/data/orders", "2024_01_31"),
    ("s3://b", "/data/orders_20241332", "/data/orders_20241332", None),  # not a date
    ("s3://b", "/data/sales_2024", "/data/sales_2024", None),  # a year is not a partition
    # not a path: only the decorator rule applies
    ("postgres://db:5432", "public.sales_2024", "public.sales_2024", None),
    ("postgres://db:5432", "public.sales_20240101", "public.sales_20240101", None),
    ("bigquery", "proj.ds.events_20240101", "proj.ds.events_20240101", None),
    ("bigquery", "proj.ds.events$20240101", "proj.ds.events", "20240101"),
    ("kafka://broker:9092", "topic/date=2024-01-01", "topic/date=2024-01-01", None),
    # real calendar days only (a leap day is one in 2024, not in 2023)
    ("file", "/data/orders_20240229", "/data/orders", "20240229"),
    ("file", "/data/orders_20230229", "/data/orders_20230229", None),
    ("file", "/data/orders_20240231", "/data/orders_20240231", None),
    ("s3://b", "/data/orders_2024_04_31", "/data/orders_2024_04_31", None),
    ("gs://logs", "app/2024/02/30", "app/2024/02/30", None),
    # a path's trailing slash is not part of its dataset
    ("s3://lake", "events/", "events", None),
    ("gs://logs", "app//", "app", None),
    ("file", "/", "/", None),
    ("postgres://db:5432", "schema/", "schema/", None),  # not a path
    # a namespace that is a location in a file system (Spark's catalog tables): names there are
    # tables, paths only when they hold a "/"
    ("file:/tmp/cll_test", "default.sales_20240101", "default.sales_20240101", None),
    ("s3a://bucket/warehouse", "db.events_2024_01_31", "db.events_2024_01_31", None),
    ("hdfs://nn:8020/user/hive/warehouse", "db.t_20240101", "db.t_20240101", None),
    ("s3a://bucket/warehouse", "tbl/date=2024-01-01", "tbl", "date=2024-01-01"),
    ("file:/tmp/cll_test", "/tmp/cll_test/tbl_20240101", "/tmp/cll_test/tbl", "20240101"),
    ("hdfs://nn:8020/", "events_20240101", "events", "20240101"),  # a root, no location
    ("file:/tmp/w", "t$20240131", "t", "20240131"),  # the decorator applies anywhere
    # unicode, quotes, commas and parentheses pass through
    ("s3://lake", "données/événements (v2), 'x'/jour=2024-01-01", "données/événements (v2), 'x'", "jour=2024-01-01"),
]


@pytest.mark.parametrize(("namespace", "name", "folded", "partition"), CASES)
def test_default_rules_fold_partitions_into_their_dataset(namespace, name, folded, partition):
    assert fold_name(namespace, name) == (folded, partition)


def test_a_folded_name_folds_no_further():
    for namespace, _name, folded, _ in CASES:
        assert fold_name(namespace, folded) == (folded, None)


def test_path_namespaces():
    assert is_path("s3://bucket", "x") and is_path("file", "x") and is_path("hdfs://nn:8020", "x") and is_path("gs://b", "x")
    assert is_path("postgres://db:5432", "/absolute/path")
    assert not is_path("postgres://db:5432", "db.schema.table") and not is_path("bigquery", "p.d.t") and not is_path("kafka://b:9092", "t")
    assert is_path("file://", "x") and is_path("dbfs:", "x") and is_path("hdfs://nn:8020/", "x") and is_path("file", "x")
    assert not is_path("file:/tmp/warehouse", "default.t") and not is_path("s3a://b/warehouse", "db.t")
    assert is_path("file:/tmp/warehouse", "t/date=1") and is_path("s3a://b/warehouse", "/abs")


def test_two_tables_of_one_warehouse_with_dated_names_stay_two_datasets():
    """The Spark listener names a catalog table in its warehouse's location (`compat/CLL.ndjson`:
    `file:/tmp/cll_test` `default.tbl1`, the TABLE identifier of the path's `symlinks` facet).
    Two tables whose names end in a date are two datasets, and the paths aliasing them resolve to
    each its own (before, the date suffix was stripped as if the table name were a path)."""
    import datetime as dt

    from lineage_assets.identity.aliases import AliasTimeline, Statement, micros
    from lineage_assets.identity.resolver import Identity
    from lineage_assets.lineage.identity import ref_statements

    def said(path: str, table: str, minute: int) -> list[Statement]:
        ref = {"namespace": "file", "name": path, "learnt_micros": micros(dt.datetime(2024, 5, 1, 0, minute)), "event_id": f"e{minute}",
               "identifiers": json.dumps([{"namespace": "file:/tmp/cll_test", "name": table, "type": "TABLE"}])}
        return [Statement((r["alias_namespace"], r["alias_name"]), r["learnt_micros"], r["event_id"], (r["namespace"], r["name"]))
                for r in ref_statements(Identity(), ref)]

    identity = Identity(aliases=AliasTimeline.of(said("/wh/a", "default.sales_20240101", 1) + said("/wh/b", "default.sales_20240102", 2)))
    resolved = {name: identity.resolve(ns, name)[:2] for ns, name in [
        ("file", "/wh/a"), ("file", "/wh/b"), ("file:/tmp/cll_test", "default.sales_20240101"), ("file:/tmp/cll_test", "default.sales_20240102")]}
    assert resolved == {
        "/wh/a": ("file:/tmp/cll_test", "default.sales_20240101"), "default.sales_20240101": ("file:/tmp/cll_test", "default.sales_20240101"),
        "/wh/b": ("file:/tmp/cll_test", "default.sales_20240102"), "default.sales_20240102": ("file:/tmp/cll_test", "default.sales_20240102"),
    }


def test_every_default_rule_folds_its_own_example():
    for rule in DEFAULT_RULES:
        namespace = "s3://bucket" if rule.scope == "path" else "bigquery"
        folded, partition = fold_name(namespace, rule.example, (rule,))
        assert partition and folded != rule.example, rule.name


def test_configured_rules_run_before_the_defaults_or_alone(tmp_path):
    spec = {"rules": [{"name": "run_suffix", "pattern": r"^(.*)\.(run\d+)$", "scope": "any", "description": "x"}]}
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(spec))
    rules = load_rules({"LINEAGE_PARTITION_RULES": str(path)})
    assert [r.name for r in rules] == ["run_suffix", *[r.name for r in DEFAULT_RULES]]
    assert fold_name("postgres://db", "public.t.run7", rules) == ("public.t", "run7")
    assert fold_name("s3://b", "t/date=1", rules) == ("t", "date=1")
    path.write_text(json.dumps({**spec, "defaults": False}))
    alone = load_rules({"LINEAGE_PARTITION_RULES": str(path)})
    assert [r.name for r in alone] == ["run_suffix"] and fold_name("s3://b", "t/date=1", alone) == ("t/date=1", None)
    assert load_rules({}) == DEFAULT_RULES


def test_a_configured_rule_matches_the_whole_name_and_never_leaves_an_empty_part():
    """A rule folds a name only when it matches all of it (a pattern without `$` does not drop
    what follows its match), and only into a non-empty name and partition (an optional group that
    did not match is no partition, and a name that is only a partition is its own dataset);
    `dated` rules fold only real calendar days."""
    rules = rules_from_spec({"defaults": False, "rules": [
        {"name": "run", "pattern": r"(.*)\.(run\d+)", "scope": "any"},
        {"name": "version", "pattern": r"^(.*)(_v[0-9]+)$", "scope": "any"},
        {"name": "optional", "pattern": r"^(x)?(_w[0-9]+)$", "scope": "any"},
        {"name": "day", "pattern": r"^(.*)@(\d{8})$", "scope": "any", "dated": True},
    ]})
    assert fold_name("postgres://db", "public.t.run7", rules) == ("public.t", "run7")
    assert fold_name("postgres://db", "public.t.run7.archive", rules) == ("public.t.run7.archive", None)
    assert fold_name("postgres://db", "_v2", rules) == ("_v2", None)
    assert fold_name("postgres://db", "t_v2", rules) == ("t", "_v2")
    assert fold_name("postgres://db", "_w2", rules) == ("_w2", None)
    assert fold_name("postgres://db", "x_w2", rules) == ("x", "_w2")
    assert fold_name("postgres://db", "t@20240131", rules) == ("t", "20240131")
    assert fold_name("postgres://db", "t@20240132", rules) == ("t@20240132", None)
    with pytest.raises(ValueError, match="dated must be true or false"):
        rules_from_spec({"rules": [{"name": "d", "pattern": "^(a)(b)$", "dated": "yes"}]})


@pytest.mark.parametrize(("spec", "message"), [
    ({"rules": [{"name": "a", "pattern": "(x"}]}, "not a regular expression"),
    ({"rules": [{"name": "a", "pattern": "^(x)$"}]}, "exactly two groups"),
    ({"rules": [{"name": "a", "pattern": "^(x)(y)$", "scope": "table"}]}, "scope must be one of"),
    ({"rules": [{"name": "key_value", "pattern": "^(x)(y)$"}]}, "unique"),
    ({"rules": [{"pattern": "^(x)(y)$"}]}, "needs at least a name and a pattern"),
    ({"rules": [], "extra": 1}, "unknown keys"),
    ({"rules": [], "defaults": "yes"}, "defaults must be true or false"),
    ([], "expected an object"),
])
def test_bad_rules_are_clear_errors(spec, message):
    with pytest.raises(ValueError, match=message):
        rules_from_spec(spec)


def test_an_unreadable_rules_file_names_itself(tmp_path):
    with pytest.raises(ValueError, match="LINEAGE_PARTITION_RULES=.*cannot be read"):
        load_rules({"LINEAGE_PARTITION_RULES": str(tmp_path / "missing.json")})
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="is not JSON"):
        load_rules({"LINEAGE_PARTITION_RULES": str(tmp_path / "bad.json")})


def test_a_rule_is_validated_when_made():
    with pytest.raises(ValueError, match="two groups"):
        PartitionRule("x", "^(a)(b)(c)$", "any", "")


def test_the_command_prints_the_rules_in_force_and_what_they_make_of_a_name(tmp_path, capsys, monkeypatch):
    from lineage_assets.cli import main

    monkeypatch.delenv("LINEAGE_PARTITION_RULES", raising=False)
    assert main(["partition-rules", "--fold", "s3://lake", "events/date=2024-01-01/", "--fold", "postgres://db", "public.sales_2024"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in out["rules"]] == [r.name for r in DEFAULT_RULES]
    assert all(r["example_folds_to"][1] for r in out["rules"])
    assert [(f["dataset_name"], f["partition"]) for f in out["folded"]] == [("events", "date=2024-01-01"), ("public.sales_2024", None)]
    (tmp_path / "rules.json").write_text(json.dumps({"rules": [{"name": "bad", "pattern": "(x)"}]}))
    monkeypatch.setenv("LINEAGE_PARTITION_RULES", str(tmp_path / "rules.json"))
    assert main(["partition-rules"]) == 2
    assert "exactly two groups" in capsys.readouterr().err
