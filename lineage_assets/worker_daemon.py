"""PySpark's Python worker daemon (`pyspark.daemon`), its workers' objects frozen after each task.

Spark starts one daemon per executor (`spark.python.daemon.module`) and forks a worker from it
for each Python task it cannot give to an idle worker; a worker serves task after task. After
every task PySpark's worker loop runs a full cycle collection (`gc.collect()` in
`pyspark.daemon.manager`), which walks every object the worker holds: the modules it imported
after the fork (pyarrow, pandas, PySpark's SQL modules, the project's rule modules: about
100,000 objects, 37 ms a walk) as well as what the task left, and case a's fold runs several
hundred Python tasks (`py-spy` counted a third of its workers' samples in that call; sampling
stops each process, which inflates short calls: the benchmark's workers used 52.2 s of CPU in
case a before, 47.2 s after, README "Pipeline cost").

Here the collection still runs after every task, and what survives it is then frozen
(`gc.freeze()`: moved out of the collector's generations), so each collection walks only what
the worker made since the last one. Frozen objects are still freed by reference counting when
their last reference goes; only a cycle among them that becomes garbage later would stay.
"""

from __future__ import annotations

import gc
from types import SimpleNamespace

from pyspark import daemon


def collect_then_freeze(*args: int) -> int:
    """`gc.collect(*args)`, then what survived it frozen; returns what it found unreachable."""
    found = gc.collect(*args)
    gc.freeze()
    return found


# the daemon's loop calls `gc.collect()` through its module's `gc` name: the worker loop of every
# process forked from here (they share this module state) freezes after collecting
WORKER_GC = SimpleNamespace(**{name: getattr(gc, name) for name in dir(gc) if not name.startswith("__")})
WORKER_GC.collect = collect_then_freeze


def main() -> None:
    daemon.gc = WORKER_GC
    daemon.manager()


if __name__ == "__main__":
    main()
