"""The whole pipeline (sensor, intake, daily fold, snapshot) is independent of how events arrive.

A two-day stream with reruns, a code-version change, a failed and an aborted run, an empty run,
a run across midnight, a run ending twice (a COMPLETE before midnight, a FAIL after it) and an
A, B, A job. Landing it as one drop (one N-day range run) is the
reference. It must equal, row for row:
- N one-day runs (the days landed in order, one run per day);
- random splits of the stream into drops landed in random order in two waves, for 5 seeds.
  The seeds run side by side in one warehouse, each in its own namespaces (seed k's jobs and
  datasets live in `seed{k}`), so their drops interleave and one pipeline run serves them all;
  every seed's rows are compared with the same seed's rows of the reference. When a wave brings
  events for a day already processed, the sensor must request one run from that day through the
  last processed day (late events recompute forward);
- a `lineage-assets ingest` process killed (SIGKILL) at a random point of the stream's drops, then
  restarted (an `ingest` on the same Dagster instance) until done (DESIGN.md section 11: progress is recorded only by the commit of the work
  it stands for, and a run left STARTED by a dead process is failed and its work done again; the
  writer killed at every fault point is `test_kill_writer.py`).
"""

from __future__ import annotations

import gzip
import json
import os
import random
import signal
import subprocess
import sys

import duckdb
import pytest
from dagster import AssetKey, DagsterInstance, DagsterRunStatus

from lineage_assets.defs.metadata import FAILED_TASKS
from lineage_assets.defs.resources import spark_conf_from_env
from lineage_assets.runner import ingest
from lineage_assets.settings import LineageSettings
from lineage_assets.warehouse import commits
from lineage_assets_tests.support import ds, run_event, run_uuid

SCHEDULE_SECONDS = 290  # measured (--durations); conftest runs long files first

D1, D2 = "2024-03-01", "2024-03-02"
TABLES = {"runs": "end_date", "job_versions": "created_date", "dataset_versions": "created_date", "run_lineage": "end_date"}
COLUMN_TABLES = ("column_lineage", "dataset_fields")  # the stream's schema and columnLineage facets make rows in them
SNAPSHOT_TABLES = ("current_jobs", "current_lineage", "current_column_lineage", "current_dataset_fields")


def _code(version: str) -> dict:
    return {"sourceCodeLocation": {"type": "git", "url": "https://git.example.com/etl", "version": version}}


def stream(seed: int) -> list[dict]:
    """The stream of one seed, in namespaces of its own."""
    ns = f"seed{seed}"
    out = []
    for event in STREAM:
        event = json.loads(json.dumps(event))
        event["job"]["namespace"] = ns
        event["run"]["runId"] = run_uuid(f"{seed}/{event['run']['runId']}")
        for side in ("inputs", "outputs"):
            for dataset in event[side]:
                dataset["namespace"] = ns
                for lineage in (dataset.get("facets", {}).get("columnLineage") or {}).get("fields", {}).values():
                    for source in lineage["inputFields"]:
                        source["namespace"] = ns
        out.append(event)
    return out


def _columns(*names: str, **sources: str) -> dict:
    """Schema and columnLineage facets of an output: fields `names`; `sources` output field ->
    "dataset.field" it comes from (DIRECT, IDENTITY)."""
    facets = {"schema": {"fields": [{"name": n, "type": "string"} for n in names]}}
    if sources:
        facets["columnLineage"] = {"fields": {out: {"inputFields": [{
            "namespace": "ds", "name": src.split(".")[0], "field": src.split(".")[1],
            "transformations": [{"type": "DIRECT", "subtype": "IDENTITY"}],
        }]} for out, src in sources.items()}}
    return facets


STREAM = [
    # writer: a run, a rerun, a failed run, then a new code version that also moves its input
    run_event(f"{D1}T01:00:00Z", "START", "w1", "writer", ["src"], [], job_facets=_code("v1")),
    run_event(f"{D1}T01:10:00Z", "COMPLETE", "w1", "writer", ["src"], [ds("X", **_columns("a", "b", a="src.a"))], job_facets=_code("v1")),
    run_event(f"{D1}T05:00:00Z", "COMPLETE", "w2", "writer", ["src"], [ds("X", version={"datasetVersion": "7"})], job_facets=_code("v1")),
    run_event(f"{D2}T02:00:00Z", "FAIL", "w3", "writer", ["src"], ["X"], job_facets=_code("v1")),
    run_event(f"{D2}T03:00:00Z", "COMPLETE", "w4", "writer", ["src2"], [ds("X", **_columns("a", a="src2.k"))], job_facets=_code("v2")),
    # an empty run with a new code version: a lineage_unknown version copying the edges
    run_event(f"{D2}T04:00:00Z", "COMPLETE", "w5", "writer", [], [], job_facets=_code("v3")),
    # a reader whose run crosses midnight; inputs on START, outputs on COMPLETE
    run_event(f"{D1}T23:30:00Z", "START", "r1", "reader", [ds("X", version={"datasetVersion": "7"})]),
    run_event(f"{D2}T00:30:00Z", "COMPLETE", "r1", "reader", [], [ds("Y", **_columns("y", y="X.a"))]),
    run_event(f"{D2}T06:00:00Z", "COMPLETE", "r2", "reader", ["X"], ["Y"]),
    # A, B, A
    run_event(f"{D1}T08:00:00Z", "COMPLETE", "s1", "switcher", ["P"], ["Q"]),
    run_event(f"{D2}T08:00:00Z", "COMPLETE", "s2", "switcher", ["P"], ["R"]),
    run_event(f"{D2}T09:00:00Z", "ABORT", "s3", "switcher", ["P"], ["Q"]),
    # a run that ends twice, a COMPLETE before midnight and a FAIL after it: one run, ended by the
    # FAIL on D2 (DESIGN.md section 4), so a fold of D2 alone starts at D1 and moves its row
    run_event(f"{D1}T23:40:00Z", "START", "t1", "twice", ["src"], []),
    run_event(f"{D1}T23:50:00Z", "COMPLETE", "t1", "twice", [], ["T"]),
    run_event(f"{D2}T00:10:00Z", "FAIL", "t1", "twice", [], [ds("T2", **_columns("t", t="src.b"))]),
]


def _land(folder, name: str, events: list[dict], form: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if form == "array":
        (folder / f"{name}.json").write_text(json.dumps(events, indent=1))
    elif form == "gzip":
        (folder / f"{name}.ndjson.gz").write_bytes(gzip.compress("".join(json.dumps(e) + "\n" for e in events).encode()))
    else:
        (folder / f"{name}.ndjson").write_text("".join(json.dumps(e) + "\n" for e in events))


def _tables(warehouse) -> dict[str, list[tuple]]:
    """Every table as the latest commit holds it (the files a reader is allowed to see)."""
    commit = commits.latest(str(warehouse))
    return {
        name: duckdb.sql(f"select * from ({commits.duckdb_relation_sql(commit, name)}) order by all").fetchall()
        for name in (*TABLES, *COLUMN_TABLES, *SNAPSHOT_TABLES)
    }


def _of_seed(tables: dict[str, list[tuple]], seed: int) -> dict[str, list[tuple]]:
    """The rows that belong to one seed (its namespace appears in them)."""
    mark = f"seed{seed}"
    return {name: [row for row in rows if mark in repr(row)] for name, rows in tables.items()}


def _quiet(_message: str) -> None:
    pass


def _daily_runs(report) -> list[str]:
    """The daily runs' partition labels: "D" for one day, "A..B" for a range of several."""
    labels = []
    for job, label, _ok in report.runs:
        if job == "daily_job":
            start, _, end = label.partition("..")
            labels.append(start if end in ("", start) else label)
    return labels


SEEDS = (1, 2, 3, 4, 5)


@pytest.fixture(scope="module")
def one_shot(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("one_shot")
    _land(root / "drops", "all", [e for seed in SEEDS for e in stream(seed)], "ndjson")
    settings = LineageSettings(str(root / "drops"), str(root / "wh"), "2024-01-01")
    os.environ[commits.FAULT_LOG] = str(root / "faults.log")  # count the points where a writer can die
    try:
        with DagsterInstance.ephemeral() as instance:
            report = ingest(settings, instance, log=_quiet)
            ui = _what_the_ui_shows(instance)
    finally:
        del os.environ[commits.FAULT_LOG]
    FAULT_POINTS.append(len((root / "faults.log").read_text().splitlines()))
    assert not report.failed
    assert _daily_runs(report) == [f"{D1}..{D2}"]  # N days as one range run
    tables = _tables(root / "wh")
    for seed in SEEDS:
        assert len(_of_seed(tables, seed)["runs"]) == 11
        # what the comparisons below compare is there: none of them is of empty tables
        assert all(_of_seed(tables, seed)[name] for name in (*COLUMN_TABLES, *SNAPSHOT_TABLES)), seed
    ONE_SHOT_UI.update(ui)
    return tables


ONE_SHOT_UI: dict = {}
FAULT_POINTS: list[int] = []


def _what_the_ui_shows(instance) -> dict:
    """Per asset and partition, the metadata of its latest materialization; the runs' tags."""
    shown = {}
    for key in ("events", "runs", "run_lineage", "column_lineage", "current_lineage"):
        records = instance.fetch_materializations(AssetKey(key), limit=100).records
        for record in records:
            m = record.asset_materialization
            shown.setdefault((key, m.partition), {k: v.value for k, v in m.metadata.items()})
    shown["run_tags"] = [run.tags for run in instance.get_runs()]
    return shown


def test_n_one_day_runs_equal_one_range_run(spark, tmp_path, one_shot):
    settings = LineageSettings(str(tmp_path / "drops"), str(tmp_path / "wh"), "2024-01-01")
    events = stream(1)
    with DagsterInstance.ephemeral() as instance:
        for day in (D1, D2):
            _land(tmp_path / "drops", day, [e for e in events if e["eventTime"].startswith(day)], "ndjson")
            report = ingest(settings, instance, log=_quiet)
            assert not report.failed
            assert _daily_runs(report) == [day]
        shown = _what_the_ui_shows(instance)
    assert _tables(tmp_path / "wh") == _of_seed(one_shot, 1)
    # D2's fold started at D1 (the run ending twice moved from D1 to D2): the UI shows D1's new
    # figures, not those of D1's own run
    commit = commits.latest(str(tmp_path / "wh"))
    for table in ("runs", "run_lineage"):
        for day in (D1, D2):
            rows = duckdb.sql(f"select count(*) from ({commits.duckdb_relation_sql(commit, table)}) where end_date = '{day}'").fetchall()[0][0]
            assert shown[(table, day)]["dagster/row_count"] == rows, (table, day)


def test_random_drops_in_random_order_equal_the_one_shot_run(spark, tmp_path, one_shot):
    waves: list[list[list[dict]]] = [[], []]
    for seed in SEEDS:
        rng = random.Random(seed)
        events = stream(seed)
        rng.shuffle(events)
        cuts = sorted(rng.sample(range(1, len(events)), 2))
        drops = [events[a:b] for a, b in zip([0, *cuts], [*cuts, len(events)])]
        rng.shuffle(drops)
        wave = rng.randint(1, len(drops) - 1)
        waves[0] += drops[:wave]
        waves[1] += drops[wave:]
    mixer = random.Random(0)
    settings = LineageSettings(str(tmp_path / "drops"), str(tmp_path / "wh"), "2024-01-01")
    processed: set[str] = set()
    landed = 0
    with DagsterInstance.ephemeral() as instance:
        for batch in waves:
            mixer.shuffle(batch)
            for drop in batch:
                landed += 1
                _land(tmp_path / "drops", f"drop{landed:02d}", drop, mixer.choice(["ndjson", "array", "gzip"]))
            touched = {e["eventTime"][:10] for d in batch for e in d}
            report = ingest(settings, instance, log=_quiet)
            assert not report.failed
            assert [job for job, *_ in report.runs].count("intake_job") == 1  # one landing batch for the wave's files
            runs = _daily_runs(report)
            assert len(runs) == 1, runs  # one range run per wave, the days in order inside it
            start, _, end = runs[0].partition("..")
            # late events: from the earliest touched day through the last processed day
            assert start == min(touched)
            assert (end or start) == max(touched | processed)
            processed |= touched
    tables = _tables(tmp_path / "wh")
    assert tables == one_shot
    for seed in SEEDS:
        assert _of_seed(tables, seed) == _of_seed(one_shot, seed)


def test_the_ui_shows_each_day_its_own_figures_and_the_runs_as_the_sensors(one_shot):
    """Each daily partition's materialization carries that day's own row count (not the run's
    total), snapshots their own counts, and every run is tagged as the sensor's."""
    for day in (D1, D2):
        runs_that_day = sum(1 for row in one_shot["runs"] if str(row[-1]) == day)  # end_date is the last column
        assert ONE_SHOT_UI[("runs", day)]["dagster/row_count"] == runs_that_day > 0
        assert ONE_SHOT_UI[("events", day)]["dagster/row_count"] > 0
    assert ONE_SHOT_UI[("runs", D1)]["dagster/row_count"] != ONE_SHOT_UI[("runs", D2)]["dagster/row_count"]
    assert ONE_SHOT_UI[("current_lineage", None)]["dagster/row_count"] == len(one_shot["current_lineage"])
    assert ONE_SHOT_UI["run_tags"] and all(tags.get("dagster/sensor_name") == "event_drop_sensor" for tags in ONE_SHOT_UI["run_tags"])
    # Spark's task tries are shown, not hidden (none failed here)
    for shown in (("events", D1), ("run_lineage", D2), ("current_lineage", None)):
        assert ONE_SHOT_UI[shown][FAILED_TASKS] == 0, shown


def test_asset_specs_carry_the_column_schema_of_the_registry():
    from lineage_assets.definitions import build_definitions
    from lineage_assets.warehouse import tables

    defs = build_definitions(LineageSettings("d", "w", "2024-01-01"))
    for table in tables.USER_TABLES:
        spec = defs.resolve_assets_def(table.name).specs_by_key[AssetKey(table.name)]
        schema = spec.metadata["dagster/column_schema"]
        assert [c.name for c in schema.columns] == table.column_names


# The killed `ingest` is a new JVM that lives about a minute: C2's compiles of its hot code would
# repay themselves only later, so it runs with C1 alone (the tests' settings otherwise). The
# process alone, killed at the test's fault point, two runs each, alternating: 72.6 / 65.6 s ->
# 56.1 / 49.0 s.
SHORT_LIVED_JVM = "-XX:TieredStopAtLevel=1"


def _ingest_process(drops, warehouse, home, kill_at: int | None = None) -> int:
    conf = json.loads(os.environ["LINEAGE_SPARK_CONF"])  # conftest's TEST_SPARK_CONF
    conf["spark.driver.extraJavaOptions"] = f"{spark_conf_from_env()['spark.driver.extraJavaOptions']} {SHORT_LIVED_JVM}"
    env = {**os.environ, "DAGSTER_HOME": str(home), "LINEAGE_CHECK_SAMPLE": "1", "LINEAGE_SPARK_CONF": json.dumps(conf)}
    env.pop(commits.FAULT_LOG, None)
    env.pop(commits.KILL_AT, None)
    if kill_at is not None:
        env[commits.KILL_AT] = str(kill_at)
    home.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "lineage_assets.cli", "ingest", "--drop-dir", str(drops), "--warehouse", str(warehouse),
               "--start-date", "2024-01-01"]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600).returncode


def test_ingest_killed_at_a_random_point_and_restarted_equals_the_one_shot_run(tmp_path, one_shot):
    folder, warehouse, home = tmp_path / "drops", tmp_path / "wh", tmp_path / "home"
    for seed in SEEDS[:-1]:  # a drop per seed; the last seed's drop lands after the kill
        _land(folder, f"seed{seed}", stream(seed), "ndjson")
    kill_at = random.Random(20261123).randrange(1, FAULT_POINTS[0] // 2)
    code = _ingest_process(folder, warehouse, home, kill_at=kill_at)
    _land(folder, f"seed{SEEDS[-1]}", stream(SEEDS[-1]), "gzip")
    assert code == -signal.SIGKILL, (code, kill_at, FAULT_POINTS)  # killed, not finished early
    # restarted on the same Dagster instance, in this process (a warm JVM: the second cold start
    # cost as much as the work): it fails the dead process's runs and finishes what is pending
    settings = LineageSettings(str(folder), str(warehouse), "2024-01-01", check_sample=1.0)
    with DagsterInstance.from_config(str(home)) as instance:
        assert not ingest(settings, instance, log=lambda _m: None).failed
    assert _tables(warehouse) == one_shot
    with DagsterInstance.from_config(str(home)) as instance:  # the killed runs were failed, none is left STARTED
        statuses = [run.status for run in instance.get_runs()]
    assert DagsterRunStatus.STARTED not in statuses and statuses.count(DagsterRunStatus.FAILURE) >= 1
