"""CPU seconds spent by this process and its descendants, by kind: the driver's Python, the Spark
JVM's threads (executor tasks, the JIT's C1 and C2 compilers, the garbage collector, the driver's
Py4J threads, the scheduler) and PySpark's Python workers. Read from Linux's /proc (elsewhere,
empty), so a benchmark can say what a case's CPU went to, not only how long it took.

A process that ended is counted once its parent has waited for it (the parent's `cutime` and
`cstime`, under "ended children"); one still running but not yet waited for is missed. Taken
before and after a step: `Use.take()`, then `later.since(earlier)`.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# JVM thread names (their `comm`, 15 characters at most) -> kind
_THREADS = (
    ("Executor task", "JVM executor tasks"),
    ("C2 Compiler", "JVM JIT C2"),
    ("C1 Compiler", "JVM JIT C1"),
    ("GC Thread|ParGC|G1 |VM Thread", "JVM GC and VM"),
    ("^Thread-", "JVM Py4J and driver threads"),
    ("task-result|dag-scheduler|spark-listener|element-track|context-cleaner", "JVM scheduler"),
)


def stat(path: str) -> tuple[str, float, float]:
    """(comm, own CPU seconds, waited-for children's CPU seconds) of a /proc stat file (a
    process's or a thread's)."""
    with open(path) as handle:
        text = handle.read()
    comm = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    return comm, (int(fields[11]) + int(fields[12])) / _TICK, (int(fields[13]) + int(fields[14])) / _TICK


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (children, their children, ...), from one `ps` listing."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout.split()
    children: dict[int, list[int]] = {}
    for child, parent in zip(out[0::2], out[1::2]):
        children.setdefault(int(parent), []).append(int(child))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def program(pid: int) -> str:
    """The program a process runs: the first word of its command line."""
    with open(f"/proc/{pid}/cmdline") as handle:
        return handle.read()[:300].split("\0")[0]


def process_kind(comm: str, program: str) -> str:
    """"JVM", "Python workers" (PySpark's daemon and its forked workers), or the process's name."""
    if comm == "java" or "java" in program:
        return "JVM"
    return "Python workers" if "python" in comm or "python" in program else comm


def _thread_kind(comm: str) -> str:
    return next((kind for pattern, kind in _THREADS if re.search(pattern, comm)), "JVM other threads")


@dataclass
class Use:
    """CPU seconds at one moment: of each process (`processes`: pid -> (kind, seconds), the JVM's
    whole, threads that ended included), of each live JVM thread (`threads`: (pid, tid) -> (kind,
    seconds)) and of each process's children it waited for (`reaped`: pid -> seconds). A
    difference counts only what was spent in between: what a process or thread alive at both
    moments spent, what one that started in between spent, a JVM's threads that ended in between
    as "JVM threads that ended", and processes that ended as "ended children" of their parent."""

    processes: dict[int, tuple[str, float]] = field(default_factory=dict)
    threads: dict[tuple[int, int], tuple[str, float]] = field(default_factory=dict)
    jvms: set[int] = field(default_factory=set)
    reaped: dict[int, float] = field(default_factory=dict)

    @classmethod
    def take(cls, pid: int | None = None) -> "Use":
        use = cls()
        pid = os.getpid() if pid is None else pid
        if not os.path.isdir(f"/proc/{pid}"):
            return use
        _, own, use.reaped[pid] = stat(f"/proc/{pid}/stat")
        use.processes[pid] = ("driver Python", own)
        for child in descendants(pid):
            try:
                comm, own, use.reaped[child] = stat(f"/proc/{child}/stat")
                kind = process_kind(comm, program(child))
            except OSError:
                continue
            if kind == "JVM":
                use.processes[child] = ("JVM", own)
                use.jvms.add(child)
                for tid in os.listdir(f"/proc/{child}/task"):
                    try:
                        name, seconds, _ = stat(f"/proc/{child}/task/{tid}/stat")
                    except OSError:
                        continue
                    use.threads[(child, int(tid))] = (_thread_kind(name), seconds)
            else:
                use.processes[child] = (kind, own)
        return use

    def since(self, earlier: "Use") -> Counter:
        """CPU seconds by kind spent between `earlier` and this moment."""
        spent: Counter = Counter()
        live: Counter = Counter()  # JVM pid -> what its live threads spent
        for key, (kind, seconds) in self.threads.items():
            delta = seconds - earlier.threads.get(key, (kind, 0.0))[1]
            spent[kind] += delta
            live[key[0]] += delta
        for pid, (kind, seconds) in self.processes.items():
            delta = seconds - earlier.processes.get(pid, (kind, 0.0))[1]
            if pid in self.jvms:  # what its live threads do not account for: threads that ended in between
                spent["JVM threads that ended"] += delta - live[pid]
            else:
                spent[kind] += delta
        for pid, seconds in self.reaped.items():
            spent["ended children"] += seconds - earlier.reaped.get(pid, 0.0)
        return spent


def line(spent: Counter) -> str:
    """'total 72.0 s: JVM executor tasks 38.9, JVM JIT C2 11.7, ...' (kinds of 0.1 s or more)."""
    kinds = [(kind, s) for kind, s in spent.most_common() if s >= 0.05]
    return f"total {sum(spent.values()):.1f} s: " + ", ".join(f"{kind} {s:.1f}" for kind, s in kinds)


def machine_ticks() -> tuple[int, int, int]:
    """(busy, total, cpus) of the whole machine: clock ticks of all its CPUs since boot, from the
    first line of /proc/stat (idle and iowait are not busy), and how many CPUs it lists."""
    with open("/proc/stat") as handle:
        lines = handle.read().splitlines()
    ticks = [int(v) for v in lines[0].split()[1:]]
    cpus = sum(1 for text in lines[1:] if re.match(r"cpu\d+ ", text))
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks), cpus


class BusyCores:
    """How many of the machine's cores were busy in each second of a `with` block (every
    process's work, not only this one's), sampled from /proc/stat every `interval` s by a
    thread: `per_second()` after the block. Shows whether a step left a core idle."""

    def __init__(self, interval: float = 0.25):
        self.interval = interval
        self.samples: list[tuple[float, int, int]] = []
        self.cpus = 1
        self.began = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="busy-cores", daemon=True)

    def _take(self) -> None:
        busy, total, self.cpus = machine_ticks()
        self.samples.append((time.monotonic(), busy, total))

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self._take()

    def __enter__(self) -> "BusyCores":
        self.began = time.monotonic()
        self._take()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._take()

    def per_second(self) -> list[float]:
        """Cores busy in each second since the block began (a sample's ticks count in the second
        the sample was taken: its interval's share of a busy core)."""
        busy: list[int] = []
        total: list[int] = []
        for (_, busy0, total0), (when, busy1, total1) in zip(self.samples, self.samples[1:]):
            second = int(when - self.began)
            while len(busy) <= second:
                busy.append(0)
                total.append(0)
            busy[second] += busy1 - busy0
            total[second] += total1 - total0
        return [self.cpus * b / t if t else 0.0 for b, t in zip(busy, total)]
