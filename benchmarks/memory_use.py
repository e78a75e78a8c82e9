"""Peak memory of a block, for the benchmarks: the Spark JVM and its Python workers, and this
driver process.

Resident set sizes (RSS) of processes that share pages do not add up: PySpark's Python workers
are forked from one daemon and share most of their pages with it, so the sum of their RSS counts
those pages once per worker. The proportional set size (PSS, Linux's `smaps_rollup`) charges
each shared page to its sharers in equal parts, so the PSS of a set of processes adds up to the
memory they hold. Both sums are recorded; PSS is what the machine gives up. Reading a process's
PSS walks its page tables (about 36 ms for a 3 GB Spark JVM in case d, against microseconds for
its RSS, and charged to this process's CPU), so RSS is sampled five times a second and PSS every
two seconds (about 2% of one core). PSS is not sampled only near the RSS sum's peak: that sum
rises with the number of forked workers alive, so its peak need not be PSS's.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

from cpu_use import descendants, process_kind, program, stat


def _status_kib(pid: int, key: str, name: str = "status") -> int:
    try:
        with open(f"/proc/{pid}/{name}") as handle:
            for text in handle:
                if text.startswith(key):
                    return int(text.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def rss(pid: int) -> int:
    """Resident set size in bytes (0 for a process that is gone)."""
    return _status_kib(pid, "VmRSS:") * 1024


def pss(pid: int) -> int:
    """Proportional set size in bytes (0 for a process that is gone or unreadable)."""
    return _status_kib(pid, "Pss:", "smaps_rollup") * 1024


def _kind(pid: int) -> str:
    """`cpu_use.process_kind` of a process ("" for one that is gone)."""
    try:
        return process_kind(stat(f"/proc/{pid}/stat")[0], program(pid))
    except OSError:
        return ""


@dataclass
class Sample:
    """One moment's memory of the children: sums over every process, and the JVM's own."""

    at: float  # seconds since the block began
    rss: int
    pss: int
    jvm_rss: int
    jvm_pss: int
    python_workers: int  # Python processes among them (PySpark's daemon and its forked workers)


@dataclass
class PeakMemory:
    """Peak memory of this process's children (the Spark JVM and its Python workers) and of this
    driver process. `peak_rss` sums RSS (shared pages counted once per process), sampled every
    `every` seconds; `peak_pss` sums PSS (each page once), sampled every `pss_every` seconds;
    `at_peak` is the sample of the PSS peak."""

    every: float = 0.2
    pss_every: float = 2.0
    root: int | None = None  # a process whose tree (itself included) is measured instead of this process's children
    peak_rss: int = 0
    own_peak: int = 0  # this driver process's RSS, over the block only (ru_maxrss is the process's lifetime peak)
    at_peak: Sample | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _began: float = 0.0

    @property
    def peak_pss(self) -> int:
        return self.at_peak.pss if self.at_peak else 0

    def sample(self, with_pss: bool = True) -> Sample:
        rss_sum = pss_sum = jvm_rss = jvm_pss = workers = 0
        for pid in [self.root, *descendants(self.root)] if self.root else descendants(os.getpid()):
            r, p, kind = rss(pid), pss(pid) if with_pss else 0, _kind(pid)
            rss_sum, pss_sum = rss_sum + r, pss_sum + p
            if kind == "JVM":
                jvm_rss, jvm_pss = jvm_rss + r, jvm_pss + p
            elif kind == "Python workers":
                workers += 1
        return Sample(time.monotonic() - self._began, rss_sum, pss_sum, jvm_rss, jvm_pss, workers)

    def _run(self) -> None:
        next_pss = 0.0
        while not self._stop.is_set():
            with_pss = time.monotonic() >= next_pss
            now = self.sample(with_pss)
            self.peak_rss = max(self.peak_rss, now.rss)
            if with_pss:
                next_pss = time.monotonic() + self.pss_every
                if self.at_peak is None or now.pss > self.at_peak.pss:
                    self.at_peak = now
            self.own_peak = max(self.own_peak, rss(os.getpid()))
            self._stop.wait(self.every)

    def __enter__(self) -> PeakMemory:
        self._began = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def line(self) -> str:
        gib = 2**30
        at = self.at_peak or Sample(0.0, 0, 0, 0, 0, 0)
        return (
            f"Spark JVM + Python workers {self.peak_pss / gib:.2f} GiB proportional (PSS; the JVM {at.jvm_pss / gib:.2f} GiB, "
            f"{at.python_workers} Python processes, {at.at:.0f} s in), {self.peak_rss / gib:.2f} GiB as a sum of RSS; "
            f"driver Python {self.own_peak / gib:.2f} GiB"
        )
