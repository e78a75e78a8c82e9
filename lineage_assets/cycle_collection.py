"""Python's cycle collector paused while code builds many objects that form no cycles.

CPython frees an object when its last reference goes (reference counting); the cycle collector
exists only for reference cycles. It runs after every 700 new container objects and walks the
young ones, and every so often every object alive. Code that builds a large tree of new dicts
and lists (a parsed JSON event, a batch of rows, a query answer) makes no cycles, yet pays for
those walks over everything it has built so far: half the CPU of parsing a batch of events
(`benchmarks/intake_parse.py`) and of building a 40,000-node answer.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """The cycle collector off while the block runs, and back on afterwards if it was on (so
    blocks nest). Cycles made inside (a caught exception and its traceback) are collected by
    the collector's next run after the block."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
