"""Events sent with openlineage-python's HttpTransport reach the tables: the endpoint's files are
read by the landing batch and built into `events` like any drop (Spark)."""

from __future__ import annotations

import datetime as dt

import duckdb
import requests
from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import (
    InputDataset,
    Job,
    OutputDataset,
    Run,
    RunEvent,
    RunState,
)
from openlineage.client.transport.http import HttpConfig, HttpTransport

from lineage_assets.ids import event_id
from lineage_assets.pipeline.events import build_events
from lineage_assets.pipeline.landing import land_batch
from lineage_assets.warehouse import commits
from lineage_assets_tests.http.conftest import Recorder, serving
from lineage_assets_tests.support import run_event, run_uuid

SCHEDULE_SECONDS = 40  # measured (--durations); conftest runs long files first

START = dt.date(2024, 1, 1)


def test_events_posted_by_the_client_reach_the_events_table(spark, tmp_path):
    drops, root = tmp_path / "drops", str(tmp_path / "wh")
    with serving(drops, api_key="k", batch_max_wait_ms=20) as (url, _app):
        transport = HttpTransport(HttpConfig.from_dict({"url": url, "compression": "gzip", "auth": {"type": "api_key", "apiKey": "k"}}))
        recorder = Recorder()
        recorder.attach(transport)
        client = OpenLineageClient(transport=transport)
        for i in range(12):
            run = Run(runId=run_uuid(f"tables-{i // 2}"))
            state = RunState.START if i % 2 == 0 else RunState.COMPLETE
            client.emit(RunEvent(eventType=state, eventTime=f"2024-05-0{1 + i % 3}T10:00:{i:02d}Z", run=run,
                                 job=Job(namespace="ns", name=f"job{i // 2}"), producer="https://example.com/tests",
                                 inputs=[InputDataset("s3://b", "in")], outputs=[OutputDataset("s3://b", f"out{i // 2}")]))
        batch = [run_event(f"2024-05-02T11:00:{i:02d}Z", "COMPLETE", f"batch{i}", "batch_job", ["in"], ["out"]) for i in range(5)]
        answer = requests.post(url + "/api/v1/lineage/batch", json=batch, headers={"Authorization": "Bearer k"}, timeout=30)
        assert answer.status_code == 200
    sent = recorder.sent_ids() | {event_id(e) for e in batch}
    assert len(sent) == 17

    report = land_batch(spark, root, str(drops), START, lambda _m: None)
    assert report.check.passed and (report.read, report.accepted, report.rejected, report.duplicates) == (17, 17, 0, 0)
    assert all(f.read.path.startswith("http/http-") for f in report.files)
    built = build_events(spark, root, dt.date(2024, 5, 1), dt.date(2024, 5, 3))
    assert built.check.passed
    relation = commits.duckdb_relation_sql(commits.latest(root), "events")
    rows = duckdb.sql(f"select event_id, job_name, event_date from ({relation})").fetchall()
    assert {r[0] for r in rows} == sent and len(rows) == 17
    assert {str(r[2]) for r in rows} == {"2024-05-01", "2024-05-02", "2024-05-03"}
