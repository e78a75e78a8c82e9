"""benchmarks/cpu_use.py: the CPU a benchmark's step used, by kind, from /proc. A busy child
process is counted while it runs and, once waited for, as an ended child; the driver's own work
as the driver's."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path

SPEC = importlib.util.spec_from_file_location("cpu_use_bench", Path(__file__).resolve().parents[1] / "benchmarks" / "cpu_use.py")
cpu_use = importlib.util.module_from_spec(SPEC)
sys.modules[SPEC.name] = cpu_use  # its dataclass looks its module up
SPEC.loader.exec_module(cpu_use)

BUSY = "import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end: pass\n{then}"


def test_a_running_python_child_counts_as_a_python_worker_and_the_driver_as_the_driver():
    child = subprocess.Popen([sys.executable, "-c", BUSY.format(seconds=0.4, then="time.sleep(30)")])
    try:
        before = cpu_use.Use.take()
        end = time.process_time() + 0.3
        while time.process_time() < end:
            pass
        time.sleep(0.6)  # the child's busy 0.4 s fall after `before`, or partly before it
        used = cpu_use.Use.take().since(before)
    finally:
        child.kill()
        child.wait()
    assert used["driver Python"] >= 0.25
    assert 0 < used["Python workers"] <= 1.0  # its 0.4 s busy, its start-up at most
    assert "total" in cpu_use.line(used) and "driver Python" in cpu_use.line(used)


def test_an_ended_child_counts_once_waited_for():
    before = cpu_use.Use.take()
    subprocess.run([sys.executable, "-c", BUSY.format(seconds=0.3, then="")], check=True)
    used = cpu_use.Use.take().since(before)
    assert used["ended children"] >= 0.25
    assert sum(used.values()) >= used["ended children"]


def test_a_jvm_thread_that_ended_in_between_is_counted_from_the_process_s_total():
    """A pool thread that ran 5 s and ended before the second reading: its seconds are in the
    JVM's process total but in no live thread; a thread that started in between counts whole."""
    earlier = cpu_use.Use(
        processes={7: ("JVM", 10.0)}, jvms={7},
        threads={(7, 1): ("JVM executor tasks", 4.0), (7, 2): ("JVM JIT C2", 6.0)},
    )
    later = cpu_use.Use(
        processes={7: ("JVM", 30.0)}, jvms={7},
        threads={(7, 2): ("JVM JIT C2", 9.0), (7, 3): ("JVM executor tasks", 8.0)},
    )
    spent = later.since(earlier)
    assert spent["JVM JIT C2"] == 3.0 and spent["JVM executor tasks"] == 8.0
    assert spent["JVM threads that ended"] == 30.0 - 10.0 - 3.0 - 8.0
    assert sum(spent.values()) == 20.0


def test_busy_cores_sees_a_core_kept_busy_for_a_second():
    with cpu_use.BusyCores(interval=0.05) as cores:
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            pass
    seen = cores.per_second()
    assert len(seen) >= 2
    # this process alone keeps one core busy (other processes can only add to it)
    assert seen[0] >= 0.7 and seen[1] >= 0.7
    assert all(0.0 <= value <= cores.cpus + 0.01 for value in seen)
