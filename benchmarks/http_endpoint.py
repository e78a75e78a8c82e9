"""Load on `lineage-assets serve` over loopback: events/s, latency, files written, loss.

Starts the server as a subprocess (its own interpreter, so the clients' GIL is not the server's),
runs `--clients` threads that each emit their share of `--events` RunEvents one request per
event through openlineage-python's own `HttpTransport` (what a producer runs), then reads every
file of `<drop>/http/` and checks that every acknowledged event is there (loss = acknowledged
events not found). Prints the figures; not a test (lineage_assets_tests/http calls into it
with smaller numbers).

    python benchmarks/http_endpoint.py --clients 8 --events 20000 [--gzip] [--batch-max-wait-ms 10]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import selectors
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # siblings: checkout, cpu_use
from checkout import use_this_checkout  # noqa: E402

ROOT = use_this_checkout()

from cpu_use import stat  # noqa: E402
from lineage_assets.ids import event_id  # noqa: E402
from lineage_assets.intake.ledger import is_ignored_name  # noqa: E402

_NS = uuid.UUID("6c3f3a1e-2b6f-4f4e-9a55-1d2a3b4c5d6e")


def make_events(count: int, seed: str = "bench", day: str = "2024-05-01") -> list[dict]:
    """`count` distinct RunEvents of about 1 KB (two inputs and an output with a schema)."""
    events = []
    for i in range(count):
        fields = [{"name": f"col{k}", "type": "string"} for k in range(5)]
        events.append({
            "eventTime": f"{day}T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}.{i % 1000:03d}Z",
            "eventType": ("START", "COMPLETE")[i % 2],
            "run": {"runId": str(uuid.uuid5(_NS, f"{seed}-{i // 2}"))},
            "job": {"namespace": "bench", "name": f"job{i % 97}"},
            "inputs": [{"namespace": "s3://bench", "name": f"in/{i % 13}", "facets": {"schema": {
                "_producer": "https://example.com/bench", "_schemaURL": "https://openlineage.io/spec/facets/1-1-1/SchemaDatasetFacet.json",
                "fields": fields}}}, {"namespace": "s3://bench", "name": f"dim/{i % 5}"}],
            "outputs": [{"namespace": "s3://bench", "name": f"out/{i % 31}"}],
            "producer": "https://example.com/bench",
            "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        })
    return events


@dataclass
class Server:
    process: subprocess.Popen
    url: str
    drop_dir: Path
    log_path: Path

    def stop(self) -> int:
        """SIGTERM (pending groups are written first) and wait."""
        if self.process.poll() is None:
            self.process.terminate()
        return self.process.wait(timeout=30)

    def kill(self) -> None:
        self.process.kill()  # SIGKILL: no shutdown code runs
        self.process.wait(timeout=30)


def start_server(drop_dir: str | Path, *args: str, timeout: float = 60.0, log_dir: str | Path | None = None) -> Server:
    """`lineage-assets serve --port 0 ...` in a subprocess; returns once it printed its URL
    (the socket is listening then: requests wait in the backlog until startup is done). Its
    stderr goes to a log file in `log_dir` (default: the temporary folder)."""
    drop_dir = Path(drop_dir)
    drop_dir.mkdir(parents=True, exist_ok=True)
    log_path = Path(tempfile.mkstemp(prefix="lineage-serve-", suffix=".log", dir=log_dir)[1])
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "lineage_assets.cli", "serve", "--host", "127.0.0.1", "--port", "0",
             "--drop-dir", str(drop_dir), "--log-level", "warning", *args],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=log, text=True,
        )
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or process.poll() is not None or not selector.select(left):
            process.kill()
            raise RuntimeError(f"the server did not start: {log_path.read_text()[-2000:]}")
        line = process.stdout.readline()
        if "listening on " in line:
            url = line.split("listening on ", 1)[1].split()[0]
            return Server(process, url, drop_dir, log_path)


@dataclass
class LoadResult:
    clients: int
    sent: int = 0
    acked: int = 0
    failed: int = 0
    elapsed: float = 0.0
    latencies: list[float] = field(default_factory=list)  # seconds, acknowledged requests
    acked_ids: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    client_cpu: float = 0.0  # CPU seconds of this process (all clients) during the load
    server_cpu: float | None = None  # CPU seconds of the server process, when it can be read

    @property
    def events_per_second(self) -> float:
        return self.acked / self.elapsed if self.elapsed else 0.0

    def percentile(self, p: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]  # nearest rank


def run_load(url: str, events: list[dict], clients: int = 8, gzip: bool = False, api_key: str | None = None,
             retries: int | None = None, on_ack=None, timeout: float = 30.0, server_pid: int | None = None,
             per_request: int = 1) -> LoadResult:
    """Each of `clients` threads emits its share of `events` with its own HttpTransport, one
    request per event (`per_request` > 1: JSON arrays of that many events to the batch path,
    on the transport's session with the same headers; the client has no batch call). A client
    stops at its first failure. `on_ack(total_acked)` is called after every acknowledgement
    (from the client's thread). `server_pid`: to report its CPU."""
    import gzip as gzip_module

    from openlineage.client.serde import Serde
    from openlineage.client.transport.http import HttpConfig, HttpTransport

    config: dict = {"url": url, "timeout": timeout}
    if gzip:
        config["compression"] = "gzip"
    if api_key:
        config["auth"] = {"type": "api_key", "apiKey": api_key}
    if retries is not None:
        config["retry"] = {"total": retries, "read": retries, "connect": retries}
    result = LoadResult(clients)
    lock = threading.Lock()
    ids = [event_id(json.loads(Serde.to_json(e))) for e in events]  # the event as the client sends it
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {api_key}"} if api_key else {}),
               **({"Content-Encoding": "gzip"} if gzip else {})}

    def send_batch(transport, chunk: list[dict]) -> None:
        body = ("[" + ",".join(Serde.to_json(e) for e in chunk) + "]").encode("utf-8")
        if gzip:
            body = gzip_module.compress(body, compresslevel=3)
        answer = transport.session.post(url.rstrip("/") + "/api/v1/lineage/batch", data=body, headers=headers, timeout=timeout)
        answer.raise_for_status()

    def client(index: int) -> None:
        transport = HttpTransport(HttpConfig.from_dict(dict(config)))
        mine = list(range(index, len(events), clients))
        latencies, acked, sent = [], [], 0
        try:
            for at in range(0, len(mine), per_request):
                chunk = mine[at:at + per_request]
                sent += len(chunk)
                began = time.perf_counter()
                try:
                    if per_request == 1:
                        transport.emit(events[chunk[0]])
                    else:
                        send_batch(transport, [events[n] for n in chunk])
                except Exception as exc:  # noqa: BLE001 - counted, and this client stops
                    with lock:
                        result.failed += 1
                        if len(result.errors) < 10:
                            result.errors.append(f"{type(exc).__name__}: {exc}"[:300])
                    return
                latencies.append(time.perf_counter() - began)
                acked.extend(ids[n] for n in chunk)
                if on_ack is not None:
                    with lock:
                        result.acked_ids.update(ids[n] for n in chunk)
                        total = len(result.acked_ids)
                    on_ack(total)
        finally:
            transport.close()
            with lock:
                result.sent += sent
                result.latencies.extend(latencies)
                result.acked_ids.update(acked)
                result.acked = len(result.acked_ids)

    threads = [threading.Thread(target=client, args=(i,), name=f"load-client-{i}") for i in range(clients)]
    cpu_before, server_before = _own_cpu(), process_cpu_seconds(server_pid)
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result.elapsed = time.perf_counter() - began
    result.client_cpu = _own_cpu() - cpu_before
    server_after = process_cpu_seconds(server_pid)
    if server_before is not None and server_after is not None:
        result.server_cpu = server_after - server_before
    return result


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def process_cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of a process (Linux /proc), None if unknown."""
    if pid is None:
        return None
    try:
        return stat(f"/proc/{pid}/stat")[1]
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class Landed:
    files: int
    tmp_files: int
    lines: int
    ids: set[str]
    per_file: list[int]
    bad_lines: int

    def missing(self, acked: set[str]) -> set[str]:
        return acked - self.ids


def read_landed(drop_dir: str | Path) -> Landed:
    """Every event in the files the intake would read under `<drop_dir>/http/`."""
    folder = Path(drop_dir) / "http"
    ids: set[str] = set()
    per_file: list[int] = []
    tmp = bad = lines = 0
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if is_ignored_name(path.name):
            tmp += 1
            continue
        count = 0
        for line in path.read_bytes().split(b"\n"):
            if not line:
                continue
            try:
                ids.add(event_id(json.loads(line)))
                count += 1
            except ValueError:
                bad += 1
        lines += count
        per_file.append(count)
    return Landed(len(per_file), tmp, lines, ids, per_file, bad)


def report(result: LoadResult, landed: Landed) -> str:
    lost = len(landed.missing(result.acked_ids))
    per_file = landed.per_file or [0]
    return "\n".join([
        f"clients {result.clients}, events sent {result.sent}, acknowledged {result.acked}, failed requests {result.failed}",
        f"throughput {result.events_per_second:,.0f} events/s ({result.elapsed:.2f} s)",
        (f"latency per request ({len(result.latencies)} requests): p50 {result.percentile(50) * 1000:.1f} ms, "
         f"p99 {result.percentile(99) * 1000:.1f} ms, max {max(result.latencies or [0]) * 1000:.1f} ms"),
        (f"files {landed.files} ({landed.tmp_files} .tmp left), events per file: mean {statistics.mean(per_file):.1f}, "
         f"max {max(per_file)}; lines {landed.lines}, unreadable lines {landed.bad_lines}"),
        f"CPU per acknowledged event: clients {_per_event(result.client_cpu, result)}, server {_per_event(result.server_cpu, result)}",
        f"acknowledged but not in the drop folder (lost): {lost}",
    ])


def _per_event(cpu: float | None, result: LoadResult) -> str:
    if cpu is None or not result.acked:
        return "n/a"
    return f"{cpu / result.acked * 1000:.2f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--gzip", action="store_true", help="compression: gzip on the clients")
    parser.add_argument("--per-request", type=int, default=1, help="events per request (>1: arrays to /api/v1/lineage/batch)")
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--batch-max-events", type=int, default=1000)
    parser.add_argument("--batch-max-wait-ms", type=float, default=10.0)
    parser.add_argument("--drop-dir", default=None, help="default: a temporary folder, removed afterwards")
    parser.add_argument("--keep", action="store_true", help="keep the temporary drop folder")
    args = parser.parse_args(argv)
    scratch = None if args.drop_dir else tempfile.mkdtemp(prefix="lineage-http-bench-")
    drop_dir = Path(args.drop_dir or os.path.join(scratch, "drops"))
    extra = ["--batch-max-events", str(args.batch_max_events), "--batch-max-wait-ms", str(args.batch_max_wait_ms)]
    if args.api_key:
        extra += ["--api-key", args.api_key]
    events = make_events(args.events)
    server = start_server(drop_dir, *extra)
    try:
        print(f"server {server.url}, drop folder {drop_dir}; batch_max_events {args.batch_max_events}, "
              f"batch_max_wait_ms {args.batch_max_wait_ms}, gzip {args.gzip}, events per request {args.per_request}", flush=True)
        result = run_load(server.url, events, clients=args.clients, gzip=args.gzip, api_key=args.api_key,
                          server_pid=server.process.pid, per_request=args.per_request)
    finally:
        server.stop()
    landed = read_landed(drop_dir)
    print(report(result, landed))
    for error in result.errors:
        print(f"error: {error}")
    print(f"load average (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    if scratch and not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)
    server.log_path.unlink(missing_ok=True)
    return 1 if landed.missing(result.acked_ids) or result.failed else 0


if __name__ == "__main__":
    sys.exit(main())
