"""The benchmark stream generator (lineage_assets.demo.platform): fast, Spark-free."""

from __future__ import annotations

import collections
import datetime as dt
import gzip
import json
import re
import subprocess
import sys
import textwrap
import uuid
from functools import lru_cache

import pytest

from lineage_assets.demo import platform
from lineage_assets.demo.platform import PlatformStats, day_counts, default_jobs, generate, iter_events, iter_lines
from lineage_assets.intake.validate import event_row, parse_event_time

START = dt.date(2025, 1, 1)
TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3}|\.\d{6})?Z$")
TERMINAL = ("COMPLETE", "FAIL")


@lru_cache(maxsize=None)
def _events(events: int, days: int, seed: int = 1, jobs: int | None = None) -> tuple:
    return tuple(iter_events(events, days, START, seed, jobs))


def _runs(events) -> dict[str, list[dict]]:
    runs: dict[str, list[dict]] = collections.defaultdict(list)
    for e in events:
        runs[e["run"]["runId"]].append(e)
    return runs


def _paths(fields: list[dict], prefix: str = "") -> set[str]:
    out = set()
    for f in fields:
        out.add(prefix + f["name"])
        out |= _paths(f.get("fields") or [], prefix + f["name"] + ".")
    return out


# ---------------------------------------------------------------- counts and days


@pytest.mark.parametrize(
    "events, days",
    [(2, 1), (3, 1), (2, 2), (3, 2), (4, 3), (5, 3), (1000, 1), (1001, 7), (3001, 30), (500, 200)],
)
def test_exact_count_spread_evenly_over_the_days(events, days):
    got = _events(events, days)
    assert len(got) == events
    per_day = collections.Counter(parse_event_time(e["eventTime"]).date() for e in got)
    expected = day_counts(events, days)
    assert max(expected) - min(expected) <= 1 and sum(expected) == events
    assert [per_day.get(START + dt.timedelta(days=d), 0) for d in range(days)] == expected
    assert set(per_day) <= {START + dt.timedelta(days=d) for d in range(days)}  # nothing past the last day
    times = [parse_event_time(e["eventTime"]) for e in got]
    assert all(TIME.match(e["eventTime"]) for e in got)
    assert times == sorted(times)  # lines are in eventTime order


@pytest.mark.parametrize("events, days", [(0, 1), (1, 1), (1, 3), (3, 3), (5, 5)])
def test_impossible_counts_raise_a_clear_error(events, days, tmp_path):
    with pytest.raises(ValueError, match="events"):
        iter_lines(events, days)  # raised on the call, not on the first next()
    with pytest.raises(ValueError):
        generate(tmp_path / "x.ndjson", events, days)
    assert not list(tmp_path.iterdir())  # no file (or .tmp) left behind


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="days"):
        iter_lines(10, 0)
    with pytest.raises(ValueError, match="jobs"):
        iter_lines(10, 1, jobs=0)
    with pytest.raises(ValueError, match="next count that works is 6 events"):
        iter_lines(5, 5)
    assert len(list(iter_lines(6, 5))) == 6 and len(list(iter_lines(2, 5))) == 2  # (2 events: days 3-5 stay empty)


def test_job_count_defaults_and_override():
    assert default_jobs(100_000, 1) == 16_666
    assert default_jobs(100, 1) == 20
    assert default_jobs(10_000_000, 1) == 20_000
    assert default_jobs(100_000, 365) == 45
    stats = PlatformStats()
    for _ in iter_lines(2000, 2, jobs=7, stats=stats):
        pass
    assert stats.platform_jobs == 7 and 1 <= stats.jobs <= 7


# ---------------------------------------------------------------- determinism


def test_same_arguments_same_bytes_other_seed_other_bytes(tmp_path):
    a = generate(tmp_path / "a.ndjson", 1500, 3, seed=5)
    b = generate(tmp_path / "b.ndjson", 1500, 3, seed=5)
    generate(tmp_path / "c.ndjson", 1500, 3, seed=6)
    generate(tmp_path / "d.ndjson", 1500, 3, seed=5, start=dt.date(2024, 6, 1))
    assert (tmp_path / "a.ndjson").read_bytes() == (tmp_path / "b.ndjson").read_bytes()
    assert a == b
    assert (tmp_path / "a.ndjson").read_bytes() != (tmp_path / "c.ndjson").read_bytes()
    assert (tmp_path / "a.ndjson").read_bytes() != (tmp_path / "d.ndjson").read_bytes()
    # run ids of different streams do not collide (they are derived from seed, start, counts)
    ids = {json.loads(line)["run"]["runId"] for line in (tmp_path / "a.ndjson").read_text().splitlines()}
    other = {json.loads(line)["run"]["runId"] for line in (tmp_path / "d.ndjson").read_text().splitlines()}
    assert not ids & other
    gz1 = generate(tmp_path / "a.ndjson.gz", 1500, 3, seed=5, compress=True)
    gz2 = generate(tmp_path / "b.ndjson.gz", 1500, 3, seed=5, compress=True)
    assert (tmp_path / "a.ndjson.gz").read_bytes() == (tmp_path / "b.ndjson.gz").read_bytes()
    assert gz1.bytes == a.bytes and gz1.file_bytes == gz2.file_bytes < a.file_bytes


def test_lines_are_compact_json_dumps_and_iter_events_matches(tmp_path):
    generate(tmp_path / "s.ndjson", 800, 2, seed=3)
    text = (tmp_path / "s.ndjson").read_text()
    assert text.endswith("\n") and "\n\n" not in text
    lines = text.splitlines()
    assert lines == list(iter_lines(800, 2, seed=3))
    events = list(iter_events(800, 2, seed=3))
    for line, event in zip(lines, events, strict=True):
        assert json.loads(line) == event
        assert json.dumps(event, separators=(",", ":")) == line  # byte-for-byte the compact json.dumps


# ---------------------------------------------------------------- validity and shape


def test_sampled_events_pass_event_row():
    events = _events(6000, 3)
    sample = events[::15]  # 400 events over all days and types
    assert {e["eventType"] for e in sample} >= {"START", "COMPLETE"}
    for event in sample:
        row = event_row(event)
        assert row["event_kind"] == "RUN"
        assert str(uuid.UUID(row["run_id"])) == event["run"]["runId"]
    for event in events:  # the rarer types too
        if event["eventType"] in ("FAIL", "RUNNING"):
            event_row(event)


def test_complete_outputs_have_schema_and_column_lineage_from_the_inputs():
    checked = 0
    for event in _events(4000, 2):
        for dataset in event["inputs"] + event["outputs"]:
            fields = dataset["facets"]["schema"]["fields"]
            assert 5 <= len(fields) <= 20, dataset["name"]
            assert dataset["facets"]["dataSource"]["name"] == dataset["namespace"]
            for facet in dataset["facets"].values():
                assert facet["_producer"] == event["producer"] and facet["_schemaURL"].startswith("https://openlineage.io/spec/")
        if event["eventType"] != "COMPLETE":
            continue
        assert event["outputs"]
        known = {(i["namespace"], i["name"]): _paths(i["facets"]["schema"]["fields"]) for i in event["inputs"]}
        for output in event["outputs"]:
            facets = output["facets"]
            lineage = facets["columnLineage"]
            assert lineage["_schemaURL"].endswith("1-2-0/ColumnLineageDatasetFacet.json#/$defs/ColumnLineageDatasetFacet")
            out_fields = {f["name"] for f in facets["schema"]["fields"]}
            assert lineage["fields"] and set(lineage["fields"]) <= out_fields
            refs = [r for spec in lineage["fields"].values() for r in spec["inputFields"]] + lineage.get("dataset", [])
            for ref in refs:
                assert ref["field"] in known[(ref["namespace"], ref["name"])], (output["name"], ref)
                for t in ref["transformations"]:
                    assert (t["type"], t["subtype"]) in {
                        ("DIRECT", "IDENTITY"), ("DIRECT", "TRANSFORMATION"), ("DIRECT", "AGGREGATION"),
                        ("INDIRECT", "JOIN"), ("INDIRECT", "FILTER"),
                    }
                    assert isinstance(t["description"], str) and isinstance(t["masking"], bool)
            for ref in lineage.get("dataset", []):
                assert ref["transformations"][0]["type"] == "INDIRECT"
            assert output["outputFacets"]["outputStatistics"]["rowCount"] > 0
            checked += 1
    assert checked > 1500


def test_runs_pair_start_with_a_terminal_event():
    events = _events(8000, 4)
    runs = _runs(events)
    starts_by_day = collections.defaultdict(list)
    for e in events:
        if e["eventType"] == "START":
            starts_by_day[parse_event_time(e["eventTime"]).date()].append(parse_event_time(e["eventTime"]))
    crossing = 0
    for run_id, run in runs.items():
        kinds = collections.Counter(e["eventType"] for e in run)
        assert kinds["START"] == 1 and sum(kinds[k] for k in TERMINAL) == 1 and kinds["RUNNING"] <= 1, run_id
        assert len(run) == 2 + kinds["RUNNING"]
        assert len({(e["job"]["namespace"], e["job"]["name"]) for e in run}) == 1
        assert len({e["producer"] for e in run}) == 1
        assert run[0]["job"]["facets"] == run[-1]["job"]["facets"]  # the run's code version does not change
        start, end = parse_event_time(run[0]["eventTime"]), parse_event_time(run[-1]["eventTime"])
        assert run[0]["eventType"] == "START" and run[-1]["eventType"] in TERMINAL
        assert start < end and all(start <= parse_event_time(e["eventTime"]) <= end for e in run)
        assert run[0]["outputs"] == [] and run[0]["inputs"] and run[-1]["inputs"] == run[0]["inputs"]
        if start.date() != end.date():  # only the day's last run may cross midnight, by one day
            crossing += 1
            assert end.date() == start.date() + dt.timedelta(days=1)
            assert start == max(starts_by_day[start.date()])
    n = len(runs)
    failed = sum(1 for r in runs.values() if r[-1]["eventType"] == "FAIL")
    running = sum(1 for r in runs.values() if len(r) == 3)
    assert 0.01 * n < failed < 0.035 * n
    assert 0.003 * n < running < 0.02 * n
    assert crossing <= 3
    for run in runs.values():
        if run[-1]["eventType"] == "FAIL":
            assert "errorMessage" in run[-1]["run"]["facets"] and "errorMessage" not in run[0]["run"]["facets"]


def test_platform_looks_like_a_platform():
    events = _events(8000, 4)
    namespaces = {d["namespace"] for e in events for d in e["inputs"] + e["outputs"]}
    assert namespaces >= {
        "postgres://orders-db.prod:5432", "s3://lake-raw", "s3://lake-curated", "bigquery", "kafka://broker:9092",
        "snowflake://acme.eu-west-1",
    }
    assert {e["producer"] for e in events} == set(platform.PRODUCER_URL)
    integrations = {(f["jobType"]["integration"], f["jobType"]["jobType"], f["jobType"]["processingType"])
                    for e in events for f in [e["job"]["facets"]]}
    assert {i for i, _, _ in integrations} == {"SPARK", "AIRFLOW", "DBT", "PYTHON"}
    # code versions: a git url + version per job, and some jobs get a new version
    versions = collections.defaultdict(set)
    for e in events:
        location = e["job"]["facets"]["sourceCodeLocation"]
        assert location["type"] == "git" and location["version"] in location["url"]
        versions[(e["job"]["namespace"], e["job"]["name"])].add(location["version"])
    assert any(len(v) > 1 for v in versions.values())
    # Airflow DAG runs as parents
    parents = [e["run"]["facets"]["parent"] for e in events if "parent" in e["run"]["facets"]]
    assert parents and all(p["job"]["namespace"] == "airflow-prod" and uuid.UUID(p["run"]["runId"]) for p in parents)
    # layered: ingestion reads sources nobody writes; hubs are read by many jobs; a pipeline reads back what it writes
    writers, readers = collections.defaultdict(set), collections.defaultdict(set)
    for e in events:
        job = (e["job"]["namespace"], e["job"]["name"])
        for d in e["inputs"]:
            readers[(d["namespace"], d["name"])].add(job)
        for d in e["outputs"]:
            writers[(d["namespace"], d["name"])].add(job)
    assert all(len(w) == 1 for w in writers.values())  # one writer per table
    source_systems = {"postgres://orders-db.prod:5432", "postgres://crm-db.prod:5432", "postgres://billing-db.prod:5432",
                      "postgres://inventory-db.prod:5432", "kafka://broker:9092", "s3://lake-landing"}
    assert not {ns for ns, _ in writers} & source_systems  # sources are only read (by ingestion jobs)
    assert {ns for ns, _ in readers} & source_systems
    assert max(len(r) for r in readers.values()) >= 20  # e.g. curated/customers/dim_customers
    assert readers[("s3://lake-curated", "curated/customers/dim_customers")]
    same_pipeline = [
        (d, reader) for d, rs in readers.items() for (w,) in [tuple(writers.get(d, ()))[:1] or (None,)] if w
        for reader in rs if reader[0] == w[0] and reader[1].split(".")[0] == w[1].split(".")[0] and reader != w
    ]
    assert same_pipeline
    # nested schema fields and descriptions exist
    fields = [f for e in events[:2000] for d in e["inputs"] for f in d["facets"]["schema"]["fields"]]
    nested = sum(1 for f in fields if f.get("fields"))
    assert 0.03 * len(fields) < nested < 0.2 * len(fields)
    assert any("description" in f for f in fields)
    # a few outputs carry a version facet and lifecycle changes
    outputs = [o for e in events if e["eventType"] == "COMPLETE" for o in e["outputs"]]
    assert any("version" in o["facets"] for o in outputs)
    assert any("lifecycleStateChange" in o["facets"] for o in outputs)


@pytest.mark.parametrize("days", [1, 30])
def test_average_event_size(days):
    stats = PlatformStats()
    for _ in iter_lines(4000, days, stats=stats):
        pass
    assert 3_000 <= stats.bytes / stats.events <= 20_000


# ---------------------------------------------------------------- files and stats


def test_gzip_output_is_readable_and_holds_the_same_lines(tmp_path):
    plain = generate(tmp_path / "s.ndjson", 1200, 2, seed=9)
    packed = generate(tmp_path / "s.ndjson.gz", 1200, 2, seed=9, compress=True)
    with gzip.open(tmp_path / "s.ndjson.gz", "rb") as f:
        assert f.read() == (tmp_path / "s.ndjson").read_bytes()
    assert packed.file_bytes == (tmp_path / "s.ndjson.gz").stat().st_size < plain.file_bytes
    assert not (tmp_path / "s.ndjson.gz.tmp").exists()


def test_stats_describe_the_stream(tmp_path):
    stats = generate(tmp_path / "s.ndjson", 3000, 3, seed=4)
    events = [json.loads(line) for line in (tmp_path / "s.ndjson").read_text().splitlines()]
    assert stats.events == len(events) == 3000
    assert stats.bytes == stats.file_bytes == (tmp_path / "s.ndjson").stat().st_size
    assert stats.runs == sum(e["eventType"] == "START" for e in events)
    assert stats.failed_runs == sum(e["eventType"] == "FAIL" for e in events)
    assert stats.running_events == sum(e["eventType"] == "RUNNING" for e in events)
    assert stats.jobs == len({(e["job"]["namespace"], e["job"]["name"]) for e in events})
    assert stats.datasets == len({(d["namespace"], d["name"]) for e in events for d in e["inputs"] + e["outputs"]})
    assert stats.code_versions == len({(e["job"]["name"], e["job"]["facets"]["sourceCodeLocation"]["version"]) for e in events})
    edges = sum(
        len(spec["inputFields"]) for e in events for o in e["outputs"] for spec in o["facets"]["columnLineage"]["fields"].values()
    ) + sum(len(o["facets"]["columnLineage"].get("dataset", [])) for e in events for o in e["outputs"])
    assert stats.column_edges == edges > 0
    assert stats.first_event_date == START and stats.last_event_date == START + dt.timedelta(days=2)
    assert stats.platform_jobs == default_jobs(3000, 3) and stats.platform_datasets >= stats.datasets


def test_generation_streams_with_bounded_memory(tmp_path):
    """60k events (~0.5 GB) in a fresh interpreter: its peak RSS grows by far less than the output.

    The generator keeps only the platform model, a size-bounded cache of job fragments and the
    runs in flight; a stream held in memory would need > 1 GB. (tracemalloc would make this
    ~20x slower; its peak for 200k events over 1 day, 20,000 jobs, was measured at ~35 MB.)
    """
    script = textwrap.dedent(
        f"""
        import resource, sys
        from lineage_assets.demo.platform import generate
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        stats = generate({str(tmp_path / 'big.ndjson')!r}, 60_000, days=100)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(stats.events, stats.file_bytes, (after - before) // 1024)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    events, size, grown_mb = map(int, out)
    assert events == 60_000 and size > 300_000_000
    assert grown_mb < 50


def test_the_spark_listener_names_the_metastore_table_of_each_lake_path():
    """Dataset identity has real aliases to resolve: every Spark reference to a lake path lists
    its table (and nothing else carries a symlinks facet)."""
    seen = 0
    for event in _events(3000, 2):
        spark = event["producer"].endswith("/integration/spark")
        for d in event.get("inputs", []) + event.get("outputs", []):
            lake = d["namespace"] in {platform.SYSTEM_NAMESPACE[s] for s in platform._LAKES}
            symlinks = d.get("facets", {}).get("symlinks")
            assert (symlinks is not None) == (spark and lake), (event["producer"], d["namespace"], d["name"])
            if symlinks:
                seen += 1
                assert symlinks["identifiers"] == [
                    {"namespace": platform.METASTORE, "name": platform.metastore_table(d["name"]), "type": "TABLE"}
                ]
    assert seen > 100
    assert platform.metastore_table("curated/catalog/dim_products") == "curated_catalog.dim_products"
