"""Benchmarks measure the checkout they are in.

`use_this_checkout()` puts this checkout's `lineage_assets` first on the path of the benchmark's
process and, through PYTHONPATH, of Spark's Python workers. Without it both follow the
virtualenv's editable install, which points at the checkout that made it: a benchmark run from
a worktree that shares that `.venv` (how the history's before/after runs are made) would
measure the other checkout's code, and its Python workers could run yet another version than
its driver.
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def use_this_checkout(environ: dict[str, str] = os.environ) -> str:
    """ROOT first on `sys.path` and on PYTHONPATH (Spark's Python workers inherit it); ROOT."""
    if sys.path[:1] != [ROOT]:
        sys.path.insert(0, ROOT)
    paths = [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if paths[:1] != [ROOT]:
        environ["PYTHONPATH"] = os.pathsep.join([ROOT, *paths])
    return ROOT
