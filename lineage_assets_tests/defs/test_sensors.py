"""The drop sensor (evaluated against an ephemeral instance) and the Spark settings from the environment."""

from __future__ import annotations

import hashlib
import json

import pytest
from dagster import DagsterInstance, RunRequest, build_sensor_context

from lineage_assets.defs.partitions import DROPS
from lineage_assets.defs.resources import LineagePaths, parse_spark_conf, spark_conf_from_env
from lineage_assets.defs.sensors import INTAKE_JOB, DropSensorCursor, contiguous_ranges, evaluate_drop_sensor
from lineage_assets.intake.drop_folder import drop_key

# --- cursor and ranges ---------------------------------------------------------------------------


def test_cursor_round_trip():
    cursor = DropSensorCursor(
        files={"a.ndjson": (10, 1_700_000_000_123_456_789, "ab" * 32), "sub/b.json": (0, 1, "cd" * 32)},
        after_storage_id=42,
        held_days=["2030-01-02", "2030-01-01"],
    )
    text = cursor.dump()
    assert json.loads(text)["after_storage_id"] == 42
    parsed = DropSensorCursor.parse(text)
    assert parsed.files == cursor.files
    assert all(isinstance(v, tuple) for v in parsed.files.values())
    assert parsed.after_storage_id == 42
    assert parsed.held_days == sorted(cursor.held_days)
    assert DropSensorCursor.parse(parsed.dump()) == parsed
    assert parsed.dump() == text


@pytest.mark.parametrize("text", [None, ""])
def test_empty_cursor(text):
    cursor = DropSensorCursor.parse(text)
    assert cursor == DropSensorCursor()
    assert (cursor.files, cursor.after_storage_id, cursor.held_days) == ({}, 0, [])


@pytest.mark.parametrize(
    "days,expected",
    [
        (["2024-01-03", "2024-01-01", "2024-01-02", "2024-01-05"], [("2024-01-01", "2024-01-03"), ("2024-01-05", "2024-01-05")]),
        ([], []),
        (["2024-02-28", "2024-02-29", "2024-03-01"], [("2024-02-28", "2024-03-01")]),  # leap year
        (["2023-12-31", "2024-01-01", "2024-01-01"], [("2023-12-31", "2024-01-01")]),  # duplicates, year end
        (["2024-01-10", "2024-01-08"], [("2024-01-08", "2024-01-08"), ("2024-01-10", "2024-01-10")]),
    ],
)
def test_contiguous_ranges(days, expected):
    assert contiguous_ranges(days) == expected


# --- evaluate_drop_sensor --------------------------------------------------------------------------


@pytest.fixture
def instance():
    with DagsterInstance.ephemeral() as inst:
        yield inst


@pytest.fixture
def paths(tmp_path):
    (tmp_path / "drops").mkdir()
    return LineagePaths(drop_dir=str(tmp_path / "drops"), warehouse=str(tmp_path / "wh"), start_date="2020-01-01")


def evaluate(instance, paths, cursor=None):
    return evaluate_drop_sensor(build_sensor_context(instance=instance, cursor=cursor), paths)


def intake_requests(result) -> list[RunRequest]:
    return [r for r in result.run_requests if r.job_name == INTAKE_JOB]


def added_keys(result) -> list[str]:
    keys = []
    for request in result.dynamic_partitions_requests:
        assert request.partitions_def_name == DROPS
        keys.extend(request.partition_keys)
    return keys


EVENT = b'{"eventTime": "2024-03-01T10:00:00Z", "producer": "p", "job": {"namespace": "n", "name": "j"}}\n'


def test_new_file_gives_one_intake_run_and_a_partition(instance, paths, tmp_path):
    (tmp_path / "drops" / "a.ndjson").write_bytes(EVENT)
    key = drop_key("a.ndjson", hashlib.sha256(EVENT).hexdigest())
    result = evaluate(instance, paths)
    requests = intake_requests(result)
    assert len(result.run_requests) == 1 and len(requests) == 1
    assert requests[0].job_name == "intake_job"
    assert requests[0].partition_key == key
    assert added_keys(result) == [key]
    assert "a.ndjson" in DropSensorCursor.parse(result.cursor).files


def test_second_evaluation_with_cursor_requests_nothing(instance, paths, tmp_path):
    (tmp_path / "drops" / "a.ndjson").write_bytes(EVENT)
    first = evaluate(instance, paths)
    assert len(intake_requests(first)) == 1
    second = evaluate(instance, paths, first.cursor)
    assert second.run_requests == []
    assert second.dynamic_partitions_requests == []


def test_registered_drop_is_not_requested_again_with_an_empty_cursor(instance, paths, tmp_path):
    (tmp_path / "drops" / "a.ndjson").write_bytes(EVENT)
    first = evaluate(instance, paths)
    key = intake_requests(first)[0].partition_key
    instance.add_dynamic_partitions(DROPS, [key])
    fresh = evaluate(instance, paths, None)
    assert intake_requests(fresh) == []
    assert added_keys(fresh) == []
    # the fresh cursor still learns the file
    assert "a.ndjson" in DropSensorCursor.parse(fresh.cursor).files


def test_appended_file_gives_a_new_key(instance, paths, tmp_path):
    path = tmp_path / "drops" / "a.ndjson"
    path.write_bytes(EVENT)
    first = evaluate(instance, paths)
    old_key = intake_requests(first)[0].partition_key
    instance.add_dynamic_partitions(DROPS, [old_key])
    appended = EVENT + EVENT.replace(b"10:00:00", b"11:00:00")
    with open(path, "ab") as handle:
        handle.write(EVENT.replace(b"10:00:00", b"11:00:00"))
    assert path.read_bytes() == appended
    second = evaluate(instance, paths, first.cursor)
    requests = intake_requests(second)
    new_key = drop_key("a.ndjson", hashlib.sha256(appended).hexdigest())
    assert [r.partition_key for r in requests] == [new_key]
    assert new_key != old_key
    assert added_keys(second) == [new_key]


def test_two_new_files_give_two_requests(instance, paths, tmp_path):
    (tmp_path / "drops" / "a.ndjson").write_bytes(EVENT)
    (tmp_path / "drops" / "sub").mkdir()
    (tmp_path / "drops" / "sub" / "b.ndjson").write_bytes(EVENT + EVENT)
    result = evaluate(instance, paths)
    keys = {r.partition_key for r in intake_requests(result)}
    assert keys == {
        drop_key("a.ndjson", hashlib.sha256(EVENT).hexdigest()),
        drop_key("sub/b.ndjson", hashlib.sha256(EVENT + EVENT).hexdigest()),
    }
    assert set(added_keys(result)) == keys
    assert len({r.run_key for r in result.run_requests}) == 2


def test_ignored_files_give_nothing(instance, paths, tmp_path):
    drops = tmp_path / "drops"
    (drops / "a.ndjson.tmp").write_bytes(EVENT)
    (drops / "b.json.partial").write_bytes(EVENT)
    (drops / ".hidden.ndjson").write_bytes(EVENT)
    (drops / ".staging").mkdir()
    (drops / ".staging" / "c.ndjson").write_bytes(EVENT)
    result = evaluate(instance, paths)
    assert result.run_requests == []
    assert result.dynamic_partitions_requests == []
    assert DropSensorCursor.parse(result.cursor).files == {}


def test_missing_drop_folder_gives_nothing(instance, tmp_path):
    paths = LineagePaths(drop_dir=str(tmp_path / "nope"), warehouse=str(tmp_path / "wh"), start_date="2020-01-01")
    result = evaluate(instance, paths)
    assert result.run_requests == []
    assert result.dynamic_partitions_requests == []


# --- Spark settings ----------------------------------------------------------------------------------


def test_parse_spark_conf_json():
    conf = {"spark.executor.memory": "4g", "spark.sql.shuffle.partitions": 16, "spark.jars.packages": "a:b:1,c:d:2"}
    parsed = parse_spark_conf("  " + json.dumps(conf) + "\n")
    assert parsed == {"spark.executor.memory": "4g", "spark.sql.shuffle.partitions": "16", "spark.jars.packages": "a:b:1,c:d:2"}


def test_parse_spark_conf_pairs():
    assert parse_spark_conf("a=b;c=d") == {"a": "b", "c": "d"}
    assert parse_spark_conf(" spark.x = 1 ;\n spark.y=a=b ;;") == {"spark.x": "1", "spark.y": "a=b"}
    assert parse_spark_conf("") == {} and parse_spark_conf("  \n ") == {}


@pytest.mark.parametrize("text", ["a=b;oops", "=value", "a=b;c", '{"a": 1', "no-equals-sign"])
def test_parse_spark_conf_bad_item_raises(text):
    with pytest.raises(ValueError):
        parse_spark_conf(text)


def test_spark_conf_defaults():
    conf = spark_conf_from_env({})
    assert conf["spark.master"] == "local[*]"
    assert conf["spark.sql.session.timeZone"] == "UTC"
    assert "spark.driver.memory" in conf


def test_spark_conf_master_and_driver_memory_override():
    env = {"LINEAGE_SPARK_MASTER": "spark://host:7077", "LINEAGE_SPARK_DRIVER_MEMORY": "8g"}
    conf = spark_conf_from_env(env)
    assert conf["spark.master"] == "spark://host:7077"
    assert conf["spark.driver.memory"] == "8g"


def test_spark_conf_extra_keys_and_precedence():
    env = {
        "LINEAGE_SPARK_CONF": "spark.executor.memory=3g;my.custom.key=hello;spark.master=local[2]",
        "LINEAGE_SPARK_MASTER": "local[4]",
    }
    conf = spark_conf_from_env(env)
    assert conf["spark.executor.memory"] == "3g"
    assert conf["my.custom.key"] == "hello"
    # LINEAGE_SPARK_MASTER wins over LINEAGE_SPARK_CONF
    assert conf["spark.master"] == "local[4]"
    # defaults untouched by the extra keys stay
    assert conf["spark.sql.session.timeZone"] == spark_conf_from_env({})["spark.sql.session.timeZone"]


def test_spark_conf_json_form_in_env():
    conf = spark_conf_from_env({"LINEAGE_SPARK_CONF": json.dumps({"spark.sql.shuffle.partitions": 3})})
    assert conf["spark.sql.shuffle.partitions"] == "3"
    assert conf["spark.master"] == "local[*]"


def test_spark_conf_empty_env_values_do_not_override():
    conf = spark_conf_from_env({"LINEAGE_SPARK_MASTER": "", "LINEAGE_SPARK_DRIVER_MEMORY": "", "LINEAGE_SPARK_CONF": ""})
    assert conf == spark_conf_from_env({})


def test_parse_spark_conf_json_booleans_use_spark_spelling_and_null_is_refused():
    assert parse_spark_conf('{"spark.ui.enabled": true, "spark.executor.cores": 2}') == {
        "spark.ui.enabled": "true",
        "spark.executor.cores": "2",
    }
    with pytest.raises(ValueError, match="spark.a"):
        parse_spark_conf('{"spark.a": null}')
