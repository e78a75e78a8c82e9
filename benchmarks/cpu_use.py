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


def _stat(path: str) -> tuple[str, float, float]:
    """(comm, own CPU seconds, waited-for children's CPU seconds) of a /proc stat file."""
    with open(path) as handle:
        text = handle.read()
    comm = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    return comm, (int(fields[11]) + int(fields[12])) / _TICK, (int(fields[13]) + int(fields[14])) / _TICK


def _children(pid: int) -> list[int]:
    found = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as handle:
                    found += [int(c) for c in handle.read().split()]
            except OSError:
                pass
    except OSError:
        pass
    return found


def _thread_kind(comm: str) -> str:
    return next((kind for pattern, kind in _THREADS if re.search(pattern, comm)), "JVM other threads")


@dataclass
class Use:
    """CPU seconds at one moment: of each process (`processes`: pid -> (kind, seconds), the JVM's
    whole, threads that ended included) and of each live JVM thread (`threads`: tid -> (kind,
    seconds)). A difference counts only what was spent in between: what a process or thread
    alive at both moments spent, what one that started in between spent, a JVM's threads that
    ended in between as "JVM threads that ended", and processes that ended under their parent."""

    processes: dict[int, tuple[str, float]] = field(default_factory=dict)
    threads: dict[tuple[int, int], tuple[str, float]] = field(default_factory=dict)
    jvms: set[int] = field(default_factory=set)

    @classmethod
    def take(cls, pid: int | None = None) -> "Use":
        use = cls()
        pid = os.getpid() if pid is None else pid
        if not os.path.isdir(f"/proc/{pid}"):
            return use
        _, own, ended = _stat(f"/proc/{pid}/stat")
        use.processes[pid] = ("driver Python", own)
        use.processes[-pid] = ("ended children", ended)
        pending = _children(pid)
        while pending:
            child = pending.pop()
            pending += _children(child)
            try:
                comm, own, ended = _stat(f"/proc/{child}/stat")
                with open(f"/proc/{child}/cmdline") as handle:
                    program = handle.read()[:300].split("\0")[0]
            except OSError:
                continue
            use.processes[-child] = ("ended children", ended)
            if comm == "java" or "java" in program:
                use.processes[child] = ("JVM", own)
                use.jvms.add(child)
                for tid in os.listdir(f"/proc/{child}/task"):
                    try:
                        name, seconds, _ = _stat(f"/proc/{child}/task/{tid}/stat")
                    except OSError:
                        continue
                    use.threads[(child, int(tid))] = (_thread_kind(name), seconds)
            else:
                use.processes[child] = ("Python workers" if "python" in comm or "python" in program else comm, own)
        return use

    def since(self, earlier: "Use") -> Counter:
        """CPU seconds by kind spent between `earlier` and this moment."""
        spent: Counter = Counter()
        for key, (kind, seconds) in self.threads.items():
            spent[kind] += seconds - earlier.threads.get(key, (kind, 0.0))[1]
        for pid, (kind, seconds) in self.processes.items():
            before = earlier.processes.get(pid, (kind, 0.0))[1]
            if pid in self.jvms:  # what its live threads do not account for: threads that ended in between
                live = sum(s - earlier.threads.get(k, ("", 0.0))[1] for k, (_, s) in self.threads.items() if k[0] == pid)
                spent["JVM threads that ended"] += seconds - before - live
            else:
                spent[kind] += seconds - before
        return spent


def line(spent: Counter) -> str:
    """'total 72.0 s: JVM executor tasks 38.9, JVM JIT C2 11.7, ...' (kinds of 0.1 s or more)."""
    kinds = [(kind, s) for kind, s in spent.most_common() if s >= 0.05]
    return f"total {sum(spent.values()):.1f} s: " + ", ".join(f"{kind} {s:.1f}" for kind, s in kinds)
