"""validate_event / event_row / parse_event_time, and the real OpenLineage events of ../shared."""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import json
from pathlib import Path

import pytest

from lineage_assets import ids
from lineage_assets.intake import reasons
from lineage_assets.intake.parse import parse_drop_bytes
from lineage_assets.intake.validate import Rejection, event_row, parse_event_time, validate_event

RUN_ID = "3f5e83fa-3480-44ff-99c5-ff943904e5e8"
UTC = dt.timezone.utc


def run_event(**changes) -> dict:
    event = {
        "eventType": "COMPLETE",
        "eventTime": "2024-03-01T10:15:30.250Z",
        "run": {"runId": RUN_ID},
        "job": {"namespace": "scheduler", "name": "etl.daily"},
        "inputs": [{"namespace": "db", "name": "in_table"}],
        "outputs": [{"namespace": "db", "name": "out_table"}],
        "producer": "https://example.com/producer",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
    }
    event.update(changes)
    return event


def job_event(**changes) -> dict:
    event = run_event(**changes)
    event.pop("run")
    event.pop("eventType")
    return event


def dataset_event(**changes) -> dict:
    event = {
        "eventTime": "2024-03-02T00:00:00Z",
        "dataset": {
            "namespace": "s3://bucket",
            "name": "path/to/data",
            "facets": {"schema": {"fields": [{"name": "id", "type": "int"}]}},
        },
        "producer": "https://example.com/producer",
    }
    event.update(changes)
    return event


def reject(event: dict, start_date: dt.date | None = None) -> Rejection:
    with pytest.raises(Rejection) as info:
        event_row(event, start_date)
    assert info.value.code in reasons.ALL
    return info.value


# --- event kinds ---------------------------------------------------------------------------------


def test_run_event_row():
    event = run_event()
    row = event_row(event)
    assert row["event_kind"] == "RUN"
    assert row["event_type"] == event["eventType"]
    assert row["run_id"] == RUN_ID
    assert (row["job_namespace"], row["job_name"]) == (event["job"]["namespace"], event["job"]["name"])
    assert row["dataset_namespace"] is None and row["dataset_name"] is None and row["dataset_facets"] is None
    assert row["producer"] == event["producer"]
    assert row["schema_url"] == event["schemaURL"]
    assert row["event_time"] == dt.datetime(2024, 3, 1, 10, 15, 30, 250000, tzinfo=UTC)
    assert row["event_time_raw"] == event["eventTime"]
    assert row["event_date"] == "2024-03-01"
    assert [(d["namespace"], d["name"]) for d in row["inputs"]] == [("db", "in_table")]
    assert [(d["namespace"], d["name"]) for d in row["outputs"]] == [("db", "out_table")]
    assert json.loads(row["event_json"]) == event
    assert isinstance(validate_event(event).run.runId, str)


def test_run_id_is_normalised_to_the_canonical_uuid_spelling():
    row = event_row(run_event(run={"runId": RUN_ID.upper()}))
    assert row["run_id"] == RUN_ID


def test_job_event_has_job_but_no_run():
    event = job_event()
    assert "run" not in event
    row = event_row(event)
    assert row["event_kind"] == "JOB"
    assert row["run_id"] is None
    assert row["job_name"] == event["job"]["name"]
    assert row["event_type"] is None
    assert row["run_facets"] == "{}"


def test_dataset_event_has_only_a_dataset():
    event = dataset_event()
    row = event_row(event)
    assert row["event_kind"] == "DATASET"
    assert row["run_id"] is None and row["job_name"] is None and row["job_namespace"] is None
    assert (row["dataset_namespace"], row["dataset_name"]) == (event["dataset"]["namespace"], event["dataset"]["name"])
    assert json.loads(row["dataset_facets"]) == event["dataset"]["facets"]
    assert row["inputs"] == [] and row["outputs"] == []


def test_event_type_absent_is_accepted():
    event = run_event()
    del event["eventType"]
    row = event_row(event)
    assert row["event_type"] is None
    assert row["event_kind"] == "RUN"


@pytest.mark.parametrize("event_type", ["START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER"])
def test_every_spec_event_type_is_accepted(event_type):
    assert event_row(run_event(eventType=event_type))["event_type"] == event_type


# --- what survives -------------------------------------------------------------------------------


def test_unknown_facets_and_top_level_keys_survive():
    custom_run_facet = {"_producer": "me", "_schemaURL": "https://x/y.json", "anything": [1, {"deep": True}]}
    event = run_event(
        run={"runId": RUN_ID, "facets": {"myCompany_custom": custom_run_facet}},
        job={"namespace": "n", "name": "j", "facets": {"unknownJobFacet": {"k": "v"}}},
        inputs=[{"namespace": "db", "name": "t", "facets": {"weird": {"x": 1}}, "inputFacets": {"io": {"y": 2}}}],
    )
    event["x-vendor-extension"] = {"nested": ["a", "b"]}
    event["anotherUnknownKey"] = 17
    row = event_row(event)
    stored = json.loads(row["event_json"])
    assert stored == event
    assert stored["x-vendor-extension"] == {"nested": ["a", "b"]}
    assert stored["anotherUnknownKey"] == 17
    assert json.loads(row["run_facets"]) == {"myCompany_custom": custom_run_facet}
    assert json.loads(row["job_facets"]) == {"unknownJobFacet": {"k": "v"}}
    assert json.loads(row["inputs"][0]["facets"]) == {"weird": {"x": 1}}
    assert json.loads(row["inputs"][0]["io_facets"]) == {"io": {"y": 2}}


def test_inputs_and_outputs_are_sorted_and_unique_with_facets_merged():
    inputs = [
        {"namespace": "b", "name": "x"},
        {"namespace": "a", "name": "z"},
        {"namespace": "a", "name": "y", "facets": {"schema": {"fields": []}}},
        {"namespace": "a", "name": "y", "facets": {"dataSource": {"uri": "u"}}, "inputFacets": {"stats": {"rows": 3}}},
    ]
    outputs = [
        {"namespace": "z", "name": "out", "outputFacets": {"outputStatistics": {"rowCount": 1}}},
        {"namespace": "c", "name": "out"},
        {"namespace": "z", "name": "out", "facets": {"version": {"datasetVersion": "7"}}},
    ]
    row = event_row(run_event(inputs=inputs, outputs=outputs))
    expected_inputs = sorted({(d["namespace"], d["name"]) for d in inputs})
    expected_outputs = sorted({(d["namespace"], d["name"]) for d in outputs})
    assert [(d["namespace"], d["name"]) for d in row["inputs"]] == expected_inputs
    assert [(d["namespace"], d["name"]) for d in row["outputs"]] == expected_outputs
    merged_in = next(d for d in row["inputs"] if (d["namespace"], d["name"]) == ("a", "y"))
    assert json.loads(merged_in["facets"]) == {"schema": {"fields": []}, "dataSource": {"uri": "u"}}
    assert json.loads(merged_in["io_facets"]) == {"stats": {"rows": 3}}
    merged_out = next(d for d in row["outputs"] if d["namespace"] == "z")
    assert json.loads(merged_out["facets"]) == {"version": {"datasetVersion": "7"}}
    assert json.loads(merged_out["io_facets"]) == {"outputStatistics": {"rowCount": 1}}


def test_event_id_is_the_same_for_canonically_equal_events():
    event = run_event(run={"runId": RUN_ID, "facets": {"a": {"b": [1, 2, {"c": "ü"}]}}})
    compact = json.dumps(event, separators=(",", ":")).encode()
    reordered = json.dumps(dict(reversed(list(event.items()))), indent=4, ensure_ascii=True).encode()
    assert compact != reordered
    first, second = json.loads(compact), json.loads(reordered)
    assert list(first) != list(second)
    id1, id2 = event_row(first)["event_id"], event_row(second)["event_id"]
    assert id1 == id2
    assert id1 == hashlib.sha256(ids.canonical_json(event).encode("utf-8")).hexdigest()
    # the same through the drop parser, as two different files
    rows1 = parse_drop_bytes(compact, "a.json", None)
    rows2 = parse_drop_bytes(reordered, "b.json", None)
    assert rows1[0]["event_id"] == rows2[0]["event_id"] == id1
    # a real difference changes it
    assert event_row(run_event(eventType="FAIL"))["event_id"] != event_row(run_event())["event_id"]


def test_unicode_job_name_and_url_like_namespace_are_kept_unchanged():
    name = "日本語ジョブ.über_task🕷"
    namespace = "postgres://db.example.com:5432"
    event = run_event(
        job={"namespace": namespace, "name": name},
        inputs=[{"namespace": namespace, "name": "public.orders"}],
    )
    row = event_row(event)
    assert row["job_name"] == name
    assert row["job_namespace"] == namespace
    assert row["inputs"][0]["namespace"] == namespace
    assert name in row["event_json"]  # not \\u-escaped


# --- times ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("2024-03-01T10:15:30Z", dt.datetime(2024, 3, 1, 10, 15, 30, tzinfo=UTC)),
        ("2024-03-01T10:15:30.5Z", dt.datetime(2024, 3, 1, 10, 15, 30, 500000, tzinfo=UTC)),
        ("2020-12-29T05:00:00+10:00", dt.datetime(2020, 12, 28, 19, 0, tzinfo=UTC)),
        ("2020-12-28T19:52:00.001+10:00", dt.datetime(2020, 12, 28, 9, 52, 0, 1000, tzinfo=UTC)),
        ("2024-03-01T23:30:00-05:00", dt.datetime(2024, 3, 2, 4, 30, tzinfo=UTC)),
        ("2024-03-01T10:15:30+0530", dt.datetime(2024, 3, 1, 4, 45, 30, tzinfo=UTC)),
        ("2024-03-01T10:15:30", dt.datetime(2024, 3, 1, 10, 15, 30, tzinfo=UTC)),
        ("2024-03-01T10:15:30.123456789Z", dt.datetime(2024, 3, 1, 10, 15, 30, 123456, tzinfo=UTC)),
        ("2024-03-01t10:15:30z", dt.datetime(2024, 3, 1, 10, 15, 30, tzinfo=UTC)),  # RFC 3339's lowercase
        ("2024-03-01T10:15:30-00:59", dt.datetime(2024, 3, 1, 11, 14, 30, tzinfo=UTC)),
    ],
)
def test_parse_event_time(raw, expected):
    parsed = parse_event_time(raw)
    assert parsed == expected
    assert parsed.utcoffset() == dt.timedelta(0)


def test_offset_time_is_converted_and_event_date_is_the_utc_date():
    row = event_row(run_event(eventTime="2020-12-29T05:00:00+10:00"))
    assert row["event_time"] == dt.datetime(2020, 12, 28, 19, 0, tzinfo=UTC)
    assert row["event_time"].utcoffset() == dt.timedelta(0)
    assert row["event_date"] == "2020-12-28"
    assert row["event_time_raw"] == "2020-12-29T05:00:00+10:00"


def test_time_without_timezone_is_utc():
    row = event_row(run_event(eventTime="2020-12-28T19:51:01.641499"))
    assert row["event_time"] == dt.datetime(2020, 12, 28, 19, 51, 1, 641499, tzinfo=UTC)
    assert row["event_date"] == "2020-12-28"


def test_nanoseconds_are_truncated_and_raw_is_kept():
    raw = "2020-12-28T19:51:01.641499999Z"
    row = event_row(run_event(eventTime=raw))
    assert row["event_time"].microsecond == 641499  # truncated, not rounded up to .641500
    assert row["event_time"] == dt.datetime(2020, 12, 28, 19, 51, 1, 641499, tzinfo=UTC)
    assert row["event_time_raw"] == raw


@pytest.mark.parametrize("raw", [
    "yesterday", "2020-13-45T00:00:00Z", "2020-02-30T00:00:00Z", "2024-03-01", "",
    "2024-05-01T10:00:00+05:99", "2024-05-01T10:00:00+0575", "2024-05-01T10:00:00+05:60", "2024-05-01T23:30:00-00:90",
])
def test_parse_event_time_rejects_garbage(raw):
    with pytest.raises(ValueError):
        parse_event_time(raw)


# --- rejections ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mutate,field",
    [
        (lambda e: e["run"].pop("runId"), "run.runId"),
        (lambda e: e.pop("eventTime"), "eventTime"),
        (lambda e: e.pop("producer"), "producer"),
        (lambda e: e["job"].pop("name"), "job.name"),
        (lambda e: e["job"].pop("namespace"), "job.namespace"),
        (lambda e: e["inputs"][0].pop("name"), "inputs[0].name"),
    ],
    ids=["runId", "eventTime", "producer", "job.name", "job.namespace", "input.name"],
)
def test_missing_field_names_the_field(mutate, field):
    event = copy.deepcopy(run_event())
    mutate(event)
    rejection = reject(event)
    assert rejection.code == reasons.MISSING_FIELD
    assert field in rejection.reason


def test_missing_dataset_name_in_dataset_event():
    event = dataset_event()
    del event["dataset"]["name"]
    rejection = reject(event)
    assert rejection.code == reasons.MISSING_FIELD
    assert "dataset.name" in rejection.reason


@pytest.mark.parametrize("value", ["yesterday", "2020-13-45T00:00:00Z", 1609459200, 1609459200.5, None])
def test_invalid_event_time(value):
    rejection = reject(run_event(eventTime=value))
    assert rejection.code == reasons.INVALID_EVENT_TIME  # an explicit null is present, but not a time
    assert rejection.event_time is None


def test_invalid_event_time_reason_quotes_the_value():
    rejection = reject(run_event(eventTime="yesterday"))
    assert "yesterday" in rejection.reason


@pytest.mark.parametrize("run_id", ["not-a-uuid", "3f5e83fa-3480-44ff-99c5", 12345])
def test_invalid_run_id(run_id):
    rejection = reject(run_event(run={"runId": run_id}))
    assert rejection.code == reasons.INVALID_RUN_ID
    # the time was readable, so the rejection keeps it
    assert rejection.event_time == parse_event_time(run_event()["eventTime"])


@pytest.mark.parametrize("event_type", ["DONE", "complete", "Start", ""])
def test_invalid_event_type(event_type):
    rejection = reject(run_event(eventType=event_type))
    assert rejection.code == reasons.INVALID_EVENT_TYPE
    assert repr(event_type) in rejection.reason


def test_only_run_is_ambiguous_kind():
    event = run_event()
    del event["job"]
    rejection = reject(event)
    assert rejection.code == reasons.AMBIGUOUS_KIND
    assert "run" in rejection.reason


def test_none_of_run_job_dataset_is_ambiguous_kind():
    event = run_event()
    for key in ("run", "job", "inputs", "outputs"):
        del event[key]
    rejection = reject(event)
    assert rejection.code == reasons.AMBIGUOUS_KIND
    assert rejection.event_time == parse_event_time(event["eventTime"])


def test_run_and_dataset_without_job_is_ambiguous_kind():
    event = dataset_event(run={"runId": RUN_ID})
    assert reject(event).code == reasons.AMBIGUOUS_KIND


@pytest.mark.parametrize(
    "changes",
    [
        {"job": {"namespace": "n", "name": 42}},
        {"inputs": "db.table"},
        {"inputs": {"namespace": "db", "name": "t"}},
        {"outputs": [{"namespace": "db", "name": ["t"]}]},
        {"producer": 3},
        {"run": {"runId": RUN_ID, "facets": ["not", "a", "dict"]}},
    ],
    ids=["job.name-int", "inputs-str", "inputs-dict", "output-name-list", "producer-int", "run.facets-list"],
)
def test_invalid_field(changes):
    rejection = reject(run_event(**changes))
    assert rejection.code == reasons.INVALID_FIELD
    field = next(iter(changes))
    assert field in rejection.reason


def test_empty_name_is_invalid_name():
    # a string where a name belongs, but not a usable name (was invalid_field before names were checked)
    rejection = reject(run_event(job={"namespace": "n", "name": ""}))
    assert rejection.code == reasons.INVALID_NAME
    assert "job.name is empty" in rejection.reason


def test_before_start_date_carries_the_event_time():
    event = run_event(eventTime="2019-12-31T23:59:59Z")
    rejection = reject(event, start_date=dt.date(2020, 1, 1))
    assert rejection.code == reasons.BEFORE_START_DATE
    assert rejection.event_time == dt.datetime(2019, 12, 31, 23, 59, 59, tzinfo=UTC)
    assert "2020-01-01" in rejection.reason
    # the same event on the start date itself, or without a start date, is accepted
    assert event_row(event)["event_date"] == "2019-12-31"
    assert event_row(event, dt.date(2019, 12, 31))["event_date"] == "2019-12-31"


def test_before_start_date_is_judged_on_the_utc_date():
    # local date 2021-01-01 in +10:00, but UTC date 2020-12-31
    event = run_event(eventTime="2021-01-01T05:00:00+10:00")
    assert reject(event, dt.date(2021, 1, 1)).code == reasons.BEFORE_START_DATE
    assert event_row(event, dt.date(2020, 12, 31))["event_date"] == "2020-12-31"


def test_parse_drop_bytes_reports_rejections_with_line_and_raw():
    good = run_event()
    bad = run_event(eventType="DONE")
    lines = [json.dumps(good), "", json.dumps(bad), "oops"]
    rows = parse_drop_bytes("\n".join(lines).encode(), "d/x.ndjson", None)
    assert [(r["source_line"], r["accepted"], r["reason_code"]) for r in rows] == [
        (1, True, None),
        (3, False, reasons.INVALID_EVENT_TYPE),
        (4, False, reasons.NOT_JSON),
    ]
    assert all(r["source_file"] == "d/x.ndjson" for r in rows)
    assert rows[1]["raw"] == lines[2]
    assert rows[1]["event_time"] == parse_event_time(bad["eventTime"])
    assert rows[1]["event_id"] is None
    assert rows[0]["raw"] is None


# --- the real events in ../shared/fixtures/openlineage ----------------------------------------------

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "openlineage"
EVENT_SUFFIXES = (".json", ".ndjson")


def _event_files(folder: str, pattern: str = "*") -> list[Path]:
    return sorted(p for p in (FIXTURES / folder).rglob(pattern) if p.is_file() and p.name.endswith(EVENT_SUFFIXES))


def _parse(path: Path) -> list[dict]:
    return parse_drop_bytes(path.read_bytes(), path.relative_to(FIXTURES).as_posix(), None)


def _valid_fixture_files() -> list[Path]:
    spec = [p for p in _event_files("spec") if not p.name.startswith("spec_")]
    spec.append(FIXTURES / "spec" / "spec_example_full_event.json")
    return _event_files("marquez") + _event_files("compat", "*.ndjson") + _event_files("client", "*.ndjson") + spec


def _facet_only_fixture_files() -> list[Path]:
    spec = FIXTURES / "spec"
    return sorted(
        [*spec.glob("spec_ColumnLineageDatasetFacet_*.json"), *spec.glob("spec_ParentRunFacet_*.json"),
         *spec.glob("spec_LineageFacet_*.json")]
    )


def _ids(paths: list[Path]) -> list[str]:
    return [p.relative_to(FIXTURES).as_posix() for p in paths]


_VALID = _valid_fixture_files()
_FACET_ONLY = _facet_only_fixture_files()


@pytest.mark.fixtures
class TestSharedFixtures:
    def test_fixture_folder_is_complete(self):
        assert FIXTURES.is_dir(), f"missing {FIXTURES}"
        names = set(_ids(_VALID))
        for expected in (
            "marquez/apples/1_pick_apples.json",
            "marquez/open_lineage/listener/1.json",
            "marquez/open_lineage/listener/2.json",
            "marquez/open_lineage/event_large.json",
            "marquez/food_delivery.ndjson",
            "spec/spec_example_full_event.json",
            "client/openlineage_python_filetransport.ndjson",
        ):
            assert expected in names
        assert any(n.startswith("compat/") for n in names)
        assert len(_FACET_ONLY) >= 4

    @pytest.mark.parametrize("path", _VALID, ids=_ids(_VALID))
    def test_valid_file_gives_only_accepted_rows(self, path):
        rows = _parse(path)
        assert rows, f"{path} gave no rows"
        rejected = [(r["source_line"], r["reason_code"], r["reason"]) for r in rows if not r["accepted"]]
        assert rejected == []
        assert all(r["event_kind"] in ("RUN", "JOB", "DATASET") for r in rows)
        if path.suffix == ".ndjson":
            non_blank = [n for n, line in enumerate(path.read_bytes().split(b"\n"), start=1) if line.strip()]
            assert [r["source_line"] for r in rows] == non_blank
        else:
            assert len(rows) == 1
            assert json.loads(rows[0]["event_json"]) == json.loads(path.read_text(encoding="utf-8"))

    @pytest.mark.parametrize("path", _FACET_ONLY, ids=_ids(_FACET_ONLY))
    def test_facet_only_example_is_missing_field_event_time(self, path):
        rows = _parse(path)
        assert len(rows) >= 1
        for row in rows:
            assert row["accepted"] is False
            assert row["reason_code"] == reasons.MISSING_FIELD
            assert "eventTime" in row["reason"]
            assert row["raw"]

    def _one(self, relpath: str) -> dict:
        rows = _parse(FIXTURES / relpath)
        assert len(rows) == 1 and rows[0]["accepted"], rows
        return rows[0]

    def test_job_event_kind(self):
        row = self._one("marquez/open_lineage/event_job_event.json")
        assert row["event_kind"] == "JOB"
        assert row["run_id"] is None

    def test_dataset_event_kind(self):
        row = self._one("marquez/open_lineage/event_dataset_event.json")
        raw = json.loads((FIXTURES / "marquez/open_lineage/event_dataset_event.json").read_text())
        assert row["event_kind"] == "DATASET"
        assert (row["dataset_namespace"], row["dataset_name"]) == (raw["dataset"]["namespace"], raw["dataset"]["name"])

    def test_serde_examples_have_their_kinds(self):
        assert self._one("spec/serde_example_run_event.json")["event_kind"] == "RUN"
        assert self._one("spec/serde_example_job_event.json")["event_kind"] == "JOB"
        assert self._one("spec/serde_example_dataset_event.json")["event_kind"] == "DATASET"

    def test_listener_events_share_a_run(self):
        first = self._one("marquez/open_lineage/listener/1.json")
        second = self._one("marquez/open_lineage/listener/2.json")
        raw = json.loads((FIXTURES / "marquez/open_lineage/listener/1.json").read_text())
        assert first["run_id"] == second["run_id"] == raw["run"]["runId"]
        assert first["event_id"] != second["event_id"]

    def test_large_event_is_accepted(self):
        path = FIXTURES / "marquez/open_lineage/event_large.json"
        assert path.stat().st_size > 200_000
        row = self._one("marquez/open_lineage/event_large.json")
        assert json.loads(row["event_json"]) == json.loads(path.read_text(encoding="utf-8"))

    def test_unicode_job_name_is_kept(self):
        path = FIXTURES / "marquez/open_lineage/event_unicode.json"
        name = json.loads(path.read_text(encoding="utf-8"))["job"]["name"]
        assert not name.isascii()
        assert self._one("marquez/open_lineage/event_unicode.json")["job_name"] == name

    def test_time_forms_of_the_reference_server(self):
        nano = self._one("marquez/open_lineage/event_required_nanoseconds.json")
        no_tz = self._one("marquez/open_lineage/event_required_no_timezone.json")
        raw_no_tz = json.loads((FIXTURES / "marquez/open_lineage/event_required_no_timezone.json").read_text())
        naive = dt.datetime.fromisoformat(raw_no_tz["eventTime"])
        assert naive.tzinfo is None
        assert no_tz["event_time"] == naive.replace(tzinfo=UTC)
        assert nano["event_time"].tzinfo is not None

    def test_ndjson_streams_have_their_line_counts(self):
        for path in _event_files("compat", "*.ndjson") + [FIXTURES / "marquez/food_delivery.ndjson"]:
            rows = _parse(path)
            lines = [line for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
            assert len(rows) == len(lines)
            assert all(r["accepted"] for r in rows)
