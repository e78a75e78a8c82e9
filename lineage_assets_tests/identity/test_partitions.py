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
