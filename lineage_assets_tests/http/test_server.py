"""`lineage-assets serve`: the OpenLineage HTTP transport endpoint (DESIGN.md section 12), driven
with openlineage-python's own HttpTransport and with raw requests for the other forms."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import re
import threading
import time

import pytest
import requests
from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import (
    DatasetEvent,
    InputDataset,
    Job,
    JobEvent,
    OutputDataset,
    Run,
    RunEvent,
    RunState,
    StaticDataset,
)
from openlineage.client.transport.http import HttpConfig, HttpTransport

from lineage_assets.http import server as server_module
from lineage_assets.ids import event_id
from lineage_assets.intake.decode import decode_drop
from lineage_assets.intake.ledger import list_drop_folder
from lineage_assets.intake.parse import parse_drop_bytes
from lineage_assets_tests.http.conftest import Recorder, landed, landed_ids, serving
from lineage_assets_tests.support import run_event, run_uuid

SCHEDULE_SECONDS = 10  # measured (--durations); conftest runs long files first

FILE_NAME = re.compile(r"^http-\d{8}T\d{6}\.\d{6}Z-\d+-\d{6}\.ndjson$")
KEY = "s3cret-key"


def _events(n: int, day: str = "2024-05-01") -> list[dict]:
    return [run_event(f"{day}T10:{i % 60:02d}:{i % 59:02d}Z", "COMPLETE", f"http-run{i}", f"job{i % 7}", ["in"], [f"out{i}"]) for i in range(n)]


def _client_events() -> list:
    run = Run(runId=run_uuid("client-run"))
    job = Job(namespace="ns", name="client_job")
    return [
        RunEvent(eventType=RunState.START, eventTime="2024-05-01T10:00:00.000Z", run=run, job=job, producer="https://example.com/tests",
                 inputs=[InputDataset("s3://bucket", "raw/orders")], outputs=[OutputDataset("s3://bucket", "clean/orders")]),
        RunEvent(eventType=RunState.COMPLETE, eventTime="2024-05-01T10:05:00.000Z", run=run, job=job, producer="https://example.com/tests",
                 inputs=[InputDataset("s3://bucket", "raw/orders")], outputs=[OutputDataset("s3://bucket", "clean/orders")]),
        JobEvent(eventTime="2024-05-01T11:00:00Z", job=Job(namespace="ns", name="defined_only"), producer="https://example.com/tests"),
        DatasetEvent(eventTime="2024-05-01T12:00:00Z", dataset=StaticDataset(namespace="s3://bucket", name="ref/countries"), producer="https://example.com/tests"),
    ]


def _post(url: str, body, path: str = "/api/v1/lineage", **headers) -> requests.Response:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {k.replace("_", "-"): v for k, v in headers.items()}
    headers.setdefault("Content-Type", "application/json")
    return requests.post(url + path, data=data, headers=headers, timeout=30)


def test_health_route_answers_200_and_503_while_the_drop_folder_is_gone(tmp_path):
    """Health is 200 while events can be stored; with the drop folder removed (an unmounted
    volume) every write is 503, so health says so too, and is 200 again once it is back (the
    server does not create it again by itself: it could land on the wrong disk)."""
    import shutil

    drops = tmp_path / "drops"
    with serving(drops) as (url, _app):
        answer = requests.get(url + "/", timeout=30)
        shutil.rmtree(drops)
        gone = requests.get(url + "/", timeout=30)
        write = _post(url, _events(1)[0])
        (drops / "http").mkdir(parents=True)
        back = requests.get(url + "/", timeout=30)
    assert answer.status_code == 200
    assert answer.json()["status"] == "ok" and answer.json()["events_stored"] == 0
    assert (gone.status_code, gone.json()["status"]) == (503, "unavailable")
    assert (write.status_code, write.json()["error"]) == (503, "storage_unavailable")
    assert back.status_code == 200


def test_the_openlineage_client_with_gzip_and_api_key_lands_its_events(tmp_path):
    drops = tmp_path / "drops"
    with serving(drops, api_key=KEY) as (url, _app):
        transport = HttpTransport(HttpConfig.from_dict({"url": url, "compression": "gzip", "auth": {"type": "api_key", "apiKey": KEY}}))
        recorder = Recorder()
        recorder.attach(transport)
        client = OpenLineageClient(transport=transport)
        for event in _client_events():
            client.emit(event)
        health = requests.get(url + "/", timeout=30).json()
    # what the installed client put on the wire
    assert [x["url"] for x in recorder.exchanges] == [url + "/api/v1/lineage"] * 4
    for exchange in recorder.exchanges:
        assert exchange["headers"]["Content-Type"] == "application/json"
        assert exchange["headers"]["Content-Encoding"] == "gzip"
        assert exchange["headers"]["Authorization"] == f"Bearer {KEY}"
        assert exchange["status"] == 200 and exchange["answer"]["stored"] == 1
    files = landed(drops)
    assert files and all(FILE_NAME.match(name) for name in files)  # no .tmp left behind
    assert sorted(landed_ids(drops)) == sorted(recorder.sent_ids()) and len(recorder.sent_ids()) == 4
    assert {x["answer"]["file"] for x in recorder.exchanges} == {f"http/{name}" for name in files}
    assert health["events_stored"] == 4 and health["files_written"] == len(files)
    # the intake sees the files and accepts every line
    assert set(list_drop_folder(drops)) == {f"http/{name}" for name in files}
    for name in files:
        rows = parse_drop_bytes((drops / "http" / name).read_bytes(), f"http/{name}", None)
        assert rows and all(r["accepted"] for r in rows)
    kinds = sorted(r["event_kind"] for name in files for r in parse_drop_bytes((drops / "http" / name).read_bytes(), name, None))
    assert kinds == ["DATASET", "JOB", "RUN", "RUN"]


def test_the_client_configured_by_yaml_and_by_environment(tmp_path, monkeypatch):
    for name in [k for k in os.environ if k.startswith("OPENLINEAGE")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # no openlineage.yml from the working directory
    monkeypatch.setenv("HOME", str(tmp_path))
    drops = tmp_path / "drops"
    events = _client_events()
    with serving(drops, api_key=KEY) as (url, _app):
        config = tmp_path / "openlineage.yml"  # the README's snippet
        config.write_text(f"transport:\n  type: http\n  url: {url}\n  compression: gzip\n  auth:\n    type: api_key\n    apiKey: {KEY}\n")
        monkeypatch.setenv("OPENLINEAGE_CONFIG", str(config))
        from_yaml = OpenLineageClient()
        assert isinstance(from_yaml.transport, HttpTransport)
        from_yaml.emit(events[0])
        monkeypatch.delenv("OPENLINEAGE_CONFIG")
        config.unlink()
        monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "http")
        monkeypatch.setenv("OPENLINEAGE__TRANSPORT__URL", url)
        monkeypatch.setenv("OPENLINEAGE__TRANSPORT__AUTH", json.dumps({"type": "api_key", "apiKey": KEY}))
        from_env = OpenLineageClient()
        assert isinstance(from_env.transport, HttpTransport)
        from_env.emit(events[2])
    stored = sorted(e.get("job", {}).get("name") for events in landed(drops).values() for e in events)
    assert stored == ["client_job", "defined_only"]


def test_a_missing_or_wrong_api_key_is_401_and_stores_nothing(tmp_path):
    drops = tmp_path / "drops"
    with serving(drops, api_key=KEY) as (url, _app):
        wrong = HttpTransport(HttpConfig.from_dict({"url": url, "auth": {"type": "api_key", "apiKey": "not-the-key"}}))
        with pytest.raises(requests.HTTPError) as failed:
            OpenLineageClient(transport=wrong).emit(_client_events()[0])
        assert failed.value.response.status_code == 401
        bare = _post(url, _events(1)[0])
        assert bare.status_code == 401 and bare.json()["error"] == "unauthorized"
        assert bare.headers["WWW-Authenticate"] == "Bearer"
        basic = _post(url, _events(1)[0], Authorization=f"Basic {KEY}")
        assert basic.status_code == 401
        assert requests.get(url + "/", timeout=30).status_code == 200  # health needs no key
    assert landed_ids(drops) == []


@pytest.mark.parametrize("path", ["/api/v1/lineage/batch", "/api/v1/lineage"])
def test_a_json_array_is_a_batch_on_either_path(tmp_path, path):
    drops = tmp_path / "drops"
    events = _events(25)
    with serving(drops) as (url, _app):
        answer = _post(url, events, path)
    assert answer.status_code == 200 and answer.json()["stored"] == 25
    assert [event_id(e) for e in landed(drops)[answer.json()["file"].removeprefix("http/")]] == [event_id(e) for e in events]


def test_ndjson_and_gzip_bodies(tmp_path):
    drops = tmp_path / "drops"
    events = _events(6)
    ndjson = "".join(json.dumps(e) + "\n" for e in events[:3]).encode()
    with serving(drops) as (url, _app):
        plain = _post(url, ndjson, "/api/v1/lineage/batch", Content_Type="application/x-ndjson")
        zipped = _post(url, gzip.compress(json.dumps(events[3:]).encode()), "/api/v1/lineage/batch", Content_Encoding="gzip")
        members = gzip.compress(json.dumps(events[0]).encode()[:50]) + gzip.compress(json.dumps(events[0]).encode()[50:])
        multi = _post(url, members, Content_Encoding="gzip")  # multi-member gzip is one body
    assert (plain.status_code, plain.json()["stored"]) == (200, 3)
    assert (zipped.status_code, zipped.json()["stored"]) == (200, 3)
    assert multi.status_code == 200
    assert sorted(landed_ids(drops)) == sorted([event_id(e) for e in events] + [event_id(events[0])])


def test_one_bad_event_in_a_batch_stores_nothing_and_names_it(tmp_path):
    drops = tmp_path / "drops"
    events = _events(5)
    events[3]["run"]["runId"] = "not-a-uuid"
    events[4]["eventType"] = "FINISHED"
    with serving(drops) as (url, _app):
        answer = _post(url, events, "/api/v1/lineage/batch")
        health = requests.get(url + "/", timeout=30).json()
    assert answer.status_code == 400
    body = answer.json()
    assert body["error"] == "invalid_run_id" and body["detail"].startswith("event 3: ")
    assert [(f["index"], f["error"]) for f in body["failed_events"]] == [(3, "invalid_run_id"), (4, "invalid_event_type")]
    assert landed(drops) == {} and health["events_stored"] == 0 and health["requests_rejected"] == 1


BAD_BODIES = [  # (body, the reason code; None: whatever the intake gives the same bytes)
    ({"eventTime": "2024-05-01T10:00:00Z", "run": {"runId": run_uuid("x")}, "job": {"namespace": "n", "name": "j"}}, "missing_field"),
    ({"eventTime": "yesterday", "producer": "p", "run": {"runId": run_uuid("x")}, "job": {"namespace": "n", "name": "j"}}, "invalid_event_time"),
    ({"eventTime": "2024-05-01T10:00:00Z", "producer": "p", "run": {"runId": run_uuid("x")}}, "ambiguous_kind"),
    ({"eventTime": "2024-05-01T10:00:00Z", "producer": "p", "job": {"namespace": "n", "name": 7}}, "invalid_field"),
    (42, "not_object"),
    (b'{"eventTime": "2024-05-01T10:00:00Z",', "not_json"),
    # what the intake's strict decoding refuses is refused at the door too, and crashes nothing
    (b"[" * 100_000 + b"]" * 100_000, None),  # nesting far beyond Python's parser
    ({"eventTime": "2024-05-01T10:00:00Z", "producer": "p", "job": {"namespace": "n", "name": "\ud800"}}, None),
    (b'{"eventTime": "2024-05-01T10:00:00Z", "producer": "p", "job": {"namespace": "n", "name": "j", "name": "k"}}', None),
    (b'{"eventTime": "2024-05-01T10:00:00Z", "producer": "p", "job": {"namespace": "n", "name": "j"}, "x": NaN}', None),
]


@pytest.mark.parametrize("body, code", BAD_BODIES, ids=[f"{c}-{i}" for i, (_b, c) in enumerate(BAD_BODIES)])
def test_a_bad_event_is_400_with_the_intakes_reason(tmp_path, body, code):
    drops = tmp_path / "drops"
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    [intake] = parse_drop_bytes(raw, "drop.json", None)  # the same bytes as a drop file
    assert intake["accepted"] is False and intake["reason_code"] == (code or intake["reason_code"])
    with serving(drops) as (url, _app):
        answer = _post(url, raw)
        still_up = requests.get(url + "/", timeout=30).status_code
    assert answer.status_code == 400 and still_up == 200
    assert answer.json()["error"] == intake["reason_code"] and answer.json()["detail"]
    assert landed(drops) == {}


def test_an_event_before_the_start_date_is_landed_for_the_intake_to_quarantine(tmp_path):
    drops = tmp_path / "drops"
    old = _events(1, day="1999-12-31")[0]
    with serving(drops) as (url, _app):
        answer = _post(url, old)
    assert answer.status_code == 200
    [name] = landed(drops)
    [row] = parse_drop_bytes((drops / "http" / name).read_bytes(), name, dt.date(2020, 1, 1))
    assert row["reason_code"] == "before_start_date"


def test_the_size_limit_is_413_on_the_wire_and_after_gunzip(tmp_path):
    drops = tmp_path / "drops"
    event = _events(1)[0]
    fits = json.dumps(event).encode()
    limit = 4096
    assert len(fits) < limit
    padded = dict(event, padding="x" * limit)
    bomb = gzip.compress(json.dumps(dict(event, padding="x" * 1_000_000)).encode())
    assert len(bomb) < limit  # small on the wire, far over the limit once decompressed
    with serving(drops, max_body_bytes=limit) as (url, _app):
        too_big = _post(url, padded)

        def chunks():  # no Content-Length: the limit is counted while reading
            yield json.dumps(padded).encode()

        streamed = requests.post(url + "/api/v1/lineage", data=chunks(), headers={"Content-Type": "application/json"}, timeout=30)
        inflated = _post(url, bomb, Content_Encoding="gzip")
        ok = _post(url, fits)
    assert (too_big.status_code, too_big.json()["error"]) == (413, "too_large")
    assert streamed.status_code == 413 and "Content-Length" not in streamed.request.headers
    assert (inflated.status_code, inflated.json()["error"]) == (413, "too_large")
    assert ok.status_code == 200
    assert landed_ids(drops) == [event_id(event)]


def test_unsupported_media_types_are_415_and_corrupt_gzip_is_400(tmp_path):
    drops = tmp_path / "drops"
    event = json.dumps(_events(1)[0]).encode()
    with serving(drops) as (url, _app):
        form = _post(url, event, Content_Type="application/x-www-form-urlencoded")
        brotli = _post(url, event, Content_Encoding="br")
        corrupt = _post(url, gzip.compress(event)[:-12], Content_Encoding="gzip")
        charset = _post(url, event, Content_Type="application/json; charset=utf-8")
    assert (form.status_code, form.json()["error"]) == (415, "unsupported_media_type")
    assert (brotli.status_code, brotli.json()["error"]) == (415, "unsupported_media_type")
    assert (corrupt.status_code, corrupt.json()["error"]) == (400, "bad_gzip")
    assert charset.status_code == 200 and len(landed_ids(drops)) == 1


def test_gzip_inside_gzip_is_400_and_gzip_followed_by_a_newline_is_read(tmp_path, monkeypatch):
    """A body compressed twice would be inflated a second time by the intake's decoder, past
    `--max-body-bytes` (a bomb of 56 KB on the wire stored 723 KB): it is refused. A gzip body
    followed by a line break (what `curl --data-binary @file.gz` of an edited file sends) is read,
    as the intake reads those bytes. Every gzip body is parsed off the event loop."""
    drops = tmp_path / "drops"
    events = _events(3)
    once = gzip.compress(json.dumps(events[0]).encode())
    twice = gzip.compress(once)
    parsed_in_a_thread = []
    real_run_sync = server_module.anyio.to_thread.run_sync

    async def recording(fn, *args, **kwargs):
        parsed_in_a_thread.append(fn.__name__)
        return await real_run_sync(fn, *args, **kwargs)

    monkeypatch.setattr(server_module.anyio.to_thread, "run_sync", recording)
    with serving(drops, max_body_bytes=1 << 16) as (url, _app):
        doubled = _post(url, twice, Content_Encoding="gzip")
        newline = _post(url, once + b"\n", Content_Encoding="gzip")
        plain = _post(url, events[1])
    assert (doubled.status_code, doubled.json()["error"]) == (400, "bad_gzip")
    assert newline.status_code == 200 and plain.status_code == 200
    assert sorted(landed_ids(drops)) == sorted([event_id(events[0]), event_id(events[1])])
    assert parsed_in_a_thread.count("_body_to_ndjson") == 2  # the two gzip bodies, not the small plain one


def test_a_mistyped_intake_limit_fails_at_startup_not_as_a_400_per_event(tmp_path, monkeypatch):
    """A 400 tells the client its event is bad, and clients drop such events: a configuration
    error must stop the server instead."""
    monkeypatch.setenv("LINEAGE_MAX_DEPTH", "64k")
    with pytest.raises(ValueError, match="LINEAGE_MAX_DEPTH"):
        server_module.create_app(tmp_path / "drops")


def test_an_empty_batch_stores_nothing(tmp_path):
    drops = tmp_path / "drops"
    with serving(drops) as (url, _app):
        answer = _post(url, [], "/api/v1/lineage/batch")
    assert answer.status_code == 200 and answer.json()["stored"] == 0
    assert landed(drops) == {}


def _until(condition, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.002)


def test_requests_that_queue_during_an_fsync_share_the_next_files(tmp_path, monkeypatch):
    drops = tmp_path / "drops"
    events = _events(40)
    answers: dict[int, requests.Response] = {}
    gate, blocked = threading.Event(), []
    real_fsync = server_module._fsync

    def slow_first_fsync(fd):  # the first file's fsync takes until the other 39 requests wait
        if not blocked:
            blocked.append(fd)
            gate.wait(60)
        real_fsync(fd)

    def send(i: int) -> None:
        answers[i] = _post(url, events[i])

    with serving(drops, batch_max_events=10, batch_max_wait_ms=0) as (url, app):
        assert requests.get(url + "/", timeout=30).status_code == 200  # started
        monkeypatch.setattr(server_module, "_fsync", slow_first_fsync)
        threads = [threading.Thread(target=send, args=(0,))]
        threads[0].start()
        _until(lambda: blocked, "the first fsync")
        threads += [threading.Thread(target=send, args=(i,)) for i in range(1, 40)]
        for thread in threads[1:]:
            thread.start()
        _until(lambda: app.state.writer._queue.qsize() == 39, "39 queued requests")
        gate.set()
        for thread in threads:
            thread.join()
    assert sorted(a.status_code for a in answers.values()) == [200] * 40
    files = landed(drops)
    assert sorted(len(v) for v in files.values()) == [1, 9, 10, 10, 10]  # at most batch_max_events a file
    for i, answer in answers.items():  # each request was answered with the file that holds its event
        assert event_id(events[i]) in {event_id(e) for e in files[answer.json()["file"].removeprefix("http/")]}


def test_concurrent_requests_within_the_window_share_a_file(tmp_path):
    drops = tmp_path / "drops"
    events = _events(40)
    start = threading.Barrier(40)
    answers: dict[int, requests.Response] = {}

    def send(i: int) -> None:
        start.wait()
        answers[i] = _post(url, events[i])

    # a file closes when it holds 10 events: the 20 s window never runs out here
    with serving(drops, batch_max_events=10, batch_max_wait_ms=20_000) as (url, _app):
        threads = [threading.Thread(target=send, args=(i,)) for i in range(40)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert sorted(a.status_code for a in answers.values()) == [200] * 40
    files = landed(drops)
    assert sorted(len(v) for v in files.values()) == [10, 10, 10, 10]
    for i, answer in answers.items():
        assert event_id(events[i]) in {event_id(e) for e in files[answer.json()["file"].removeprefix("http/")]}


def test_a_request_is_never_split_across_files(tmp_path):
    drops = tmp_path / "drops"
    with serving(drops, batch_max_events=3, batch_max_wait_ms=0) as (url, _app):
        big = _post(url, _events(7), "/api/v1/lineage/batch")
    assert big.status_code == 200
    assert [len(v) for v in landed(drops).values()] == [7]


def test_a_lone_request_is_answered_when_the_window_closes(tmp_path):
    drops = tmp_path / "drops"
    with serving(drops, batch_max_events=1000, batch_max_wait_ms=300) as (url, _app):
        began = time.monotonic()
        answer = _post(url, _events(1)[0])
        took = time.monotonic() - began
    assert answer.status_code == 200 and len(landed_ids(drops)) == 1
    assert 0.3 <= took < 20  # it waited for company, then was written without any


@pytest.mark.parametrize("broken", ["_fsync", "fsync_dir"], ids=["the_file", "the_folder_after_the_final_name"])
def test_a_failed_write_is_503_stores_nothing_and_the_next_request_succeeds(tmp_path, monkeypatch, broken):
    """The file's fsync fails, or the folder's once the file has its final name: the request is
    not acknowledged (503), so nothing of it may stay stored (no file, no .tmp), or the client's
    retry would store its events twice."""
    drops = tmp_path / "drops"
    events = _events(2)

    def broken_disk(_target):
        raise OSError(5, "Input/output error")

    with serving(drops, batch_max_wait_ms=0) as (url, _app):
        assert requests.get(url + "/", timeout=30).status_code == 200  # started: the folder exists
        monkeypatch.setattr(server_module, broken, broken_disk)
        failed = _post(url, events[0])
        monkeypatch.undo()
        after = _post(url, events[1])
    assert (failed.status_code, failed.json()["error"]) == (503, "storage_unavailable")
    assert after.status_code == 200
    assert landed_ids(drops) == [event_id(events[1])]


def test_an_unexpected_error_while_checking_an_event_is_400_internal_error_and_stores_nothing(tmp_path, monkeypatch):
    def broken(*_args, **_kwargs):
        raise RuntimeError("a bug in the checker")

    monkeypatch.setattr(server_module, "event_row", broken)
    with serving(tmp_path / "drops") as (url, _app):
        response = _post(url, json.dumps(_events(1)[0]).encode())
    assert response.status_code == 400
    assert response.json()["error"] == "internal_error" and "a bug in the checker" in response.json()["detail"]
    assert landed(tmp_path / "drops") == {}


def test_gzip_bytes_followed_by_plain_lines_are_read_as_the_intake_reads_them_unless_declared_gzip(tmp_path):
    """A body that is gzip only by its bytes is a drop file's bytes: plain lines after the last
    member are read as lines, as the intake reads such a file (it was a 400). A body the client
    declared gzip (Content-Encoding) must be gzip throughout: the same bytes are a 400."""
    drops = tmp_path / "drops"
    events = _events(2)
    body = gzip.compress(json.dumps(events[0]).encode() + b"\n") + json.dumps(events[1]).encode() + b"\n"
    assert [r.ok for r in decode_drop(body)] == [True, True]  # what the intake makes of these bytes
    with serving(drops) as (url, _app):
        sniffed = _post(url, body)
        declared = _post(url, body, Content_Encoding="gzip")
    assert sniffed.status_code == 200 and sniffed.json()["received"] == 2
    assert (declared.status_code, declared.json()["error"]) == (400, "bad_gzip")
    assert sorted(landed_ids(drops)) == sorted(event_id(e) for e in events)


def test_an_event_is_stored_in_its_own_spelling_so_a_record_within_the_limit_stays_within_it(tmp_path, monkeypatch):
    """The stored line is the event's own text, its line breaks (only ever between tokens) made
    spaces: as long as what the client sent, floats spelt as sent. Canonical JSON re-spelt each
    `1E15` as `1000000000000000.0`, so a pretty-printed event within LINEAGE_MAX_RECORD_BYTES was
    refused with a 400 about the stored form."""
    event = _events(1)[0]
    event["run"]["facets"] = {"metrics": {"_producer": "p", "_schemaURL": "s", "values": [1] * 400}}
    text = json.dumps(event, indent=2).replace("1,", "1E15,").replace("1\n", "1E15\n")
    assert text.count("1E15") == 400 and json.loads(text)["run"]["facets"]["metrics"]["values"][0] == 1e15
    monkeypatch.setenv("LINEAGE_MAX_RECORD_BYTES", str(len(text.encode())))
    drops = tmp_path / "drops"
    with serving(drops) as (url, _app):
        response = _post(url, text.encode())
    assert response.status_code == 200, response.text
    stored = [p for p in drops.rglob("*.ndjson")]
    lines = stored[0].read_bytes().splitlines()
    assert len(stored) == 1 and len(lines) == 1 and len(lines[0]) == len(text.encode())
    assert b"1E15" in lines[0] and json.loads(lines[0]) == json.loads(text)
    assert landed_ids(drops) == [event_id(json.loads(text))]
