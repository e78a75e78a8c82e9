"""The endpoint in this process (uvicorn in a thread, real sockets) and what a client sent."""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn

from lineage_assets.http.server import create_app
from lineage_assets.ids import event_id

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "http_endpoint.py"


@contextmanager
def serving(drop_dir, **options):
    """The app on 127.0.0.1:<free port>; yields (base url, app). The socket listens before the
    server thread starts, so a request made at once waits in the backlog, not refused."""
    app = create_app(drop_dir, **options)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", access_log=False, lifespan="on")
    sock = config.bind_socket()
    sock.listen(config.backlog)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", app
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        assert not thread.is_alive(), "the server did not stop"


class Recorder:
    """Hooks a requests session: every request the client really sent, and the answer."""

    def __init__(self):
        self.exchanges: list[dict] = []

    def hook(self, response, *args, **kwargs):
        request = response.request
        body = request.body.encode("utf-8") if isinstance(request.body, str) else request.body
        if request.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        self.exchanges.append({"url": request.url, "headers": dict(request.headers), "event": json.loads(body),
                               "status": response.status_code, "answer": response.json()})

    def attach(self, transport) -> None:
        transport.session.hooks["response"].append(self.hook)

    def sent_ids(self) -> set[str]:
        return {event_id(x["event"]) for x in self.exchanges if x["status"] == 200}


def landed(drop_dir) -> dict[str, list[dict]]:
    """file name -> events, for every file of <drop>/http (the .tmp ones included: none expected)."""
    folder = Path(drop_dir) / "http"
    if not folder.is_dir():
        return {}
    return {p.name: [json.loads(line) for line in p.read_text().splitlines() if line] for p in sorted(folder.iterdir())}


def landed_ids(drop_dir) -> list[str]:
    return [event_id(e) for events in landed(drop_dir).values() for e in events]


@pytest.fixture(scope="session")
def bench():
    """benchmarks/http_endpoint.py as a module (the load generator the tests share)."""
    spec = importlib.util.spec_from_file_location("http_endpoint_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module
