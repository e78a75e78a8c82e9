"""The endpoint as `lineage-assets serve` in its own process: a bounded load on loopback with
zero loss, and a SIGKILL in the middle of a load that loses no acknowledged event."""

from __future__ import annotations

import os
import signal
import threading

import pytest

SCHEDULE_SECONDS = 25  # measured (--durations); conftest runs long files first

pytestmark = pytest.mark.slow


def test_load_on_loopback_loses_nothing_and_groups_requests(bench, tmp_path):
    drops = tmp_path / "drops"
    events = bench.make_events(4000, seed="load")
    server = bench.start_server(drops, log_dir=tmp_path)
    try:
        result = bench.run_load(server.url, events, clients=8, server_pid=server.process.pid)
    finally:
        code = server.stop()  # SIGTERM: a clean shutdown
    landed = bench.read_landed(drops)
    print("\n" + bench.report(result, landed))
    assert code in (0, -signal.SIGTERM)  # uvicorn re-raises SIGTERM once it has shut down
    assert result.failed == 0 and result.acked == len(events) == len(result.latencies)
    assert landed.missing(result.acked_ids) == set()
    assert (landed.lines, landed.bad_lines, landed.tmp_files) == (len(events), 0, 0)
    assert landed.files <= len(events) / 2  # concurrent requests share files
    assert result.percentile(99) < 5.0  # seconds: no request waited anywhere near the client's timeout


def test_sigkill_mid_load_loses_no_acknowledged_event(bench, tmp_path):
    drops = tmp_path / "drops"
    events = bench.make_events(10_000, seed="kill")
    server = bench.start_server(drops, "--batch-max-wait-ms", "5", log_dir=tmp_path)
    lock, killed = threading.Lock(), []

    def kill_after(total_acked: int) -> None:
        with lock:
            if total_acked >= 1500 and not killed:
                os.kill(server.process.pid, signal.SIGKILL)
                killed.append(total_acked)

    try:
        result = bench.run_load(server.url, events, clients=8, retries=0, on_ack=kill_after)
    finally:
        server.process.kill()
        server.process.wait(timeout=30)
    landed = bench.read_landed(drops)
    print("\n" + bench.report(result, landed) + f"\nkilled after {killed} acks; in flight and landed unacknowledged: "
          f"{len(landed.ids - result.acked_ids)}")
    assert killed and server.process.returncode == -signal.SIGKILL
    assert result.failed > 0, "the clients were still sending when the server died"
    assert 1500 <= result.acked < len(events)
    assert landed.missing(result.acked_ids) == set()  # every acknowledged event is in a landed file
    assert landed.bad_lines == 0  # and no landed file is torn
