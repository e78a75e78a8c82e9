"""benchmarks/memory_use.py: peak memory of a benchmark's children. Forked processes share their
parent's pages: the sum of their RSS counts a shared page once per process, the sum of their PSS
once."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))  # memory_use imports cpu_use as the benchmarks do
SPEC = importlib.util.spec_from_file_location("memory_use_bench", BENCHMARKS / "memory_use.py")
memory_use = importlib.util.module_from_spec(SPEC)
sys.modules[SPEC.name] = memory_use  # its dataclasses look their module up
SPEC.loader.exec_module(memory_use)

MIB = 2**20
FORKED = """
import os, sys, time
block = b"\x01" * (256 * 2**20)  # 256 MiB, every page written
for _ in range(3):  # three forked children share it
    if os.fork() == 0:
        break
else:  # the parent, once all three exist
    sys.stdout.write("ready\\n"); sys.stdout.flush()
time.sleep(2.0)
"""


def test_forked_children_sharing_pages_count_once_in_pss_and_once_each_in_rss():
    parent = subprocess.Popen([sys.executable, "-c", FORKED], stdout=subprocess.PIPE, text=True)
    assert parent.stdout.readline() == "ready\n"
    # the subprocess's tree only: under pytest-xdist this process also has a Spark JVM and its workers
    with memory_use.PeakMemory(every=0.1, pss_every=0.1, root=parent.pid) as memory:
        parent.wait(timeout=30)
    at = memory.at_peak
    assert at is not None and at.python_workers == 4
    assert memory.peak_rss >= 4 * 250 * MIB  # the shared 256 MiB in each of the four processes' RSS
    assert 250 * MIB <= memory.peak_pss <= 400 * MIB  # ... and once in their PSS
    assert at.jvm_rss == at.jvm_pss == 0  # no JVM among them
    assert "PSS" in memory.line() and "driver Python" in memory.line()


def test_a_process_that_is_gone_reads_as_nothing():
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    pid = int(done.stdout)
    assert memory_use.rss(pid) == 0 and memory_use.pss(pid) == 0
