"""`benchmarks/checkout.py`: a benchmark measures the checkout it is in, in its own process and in
Spark's Python workers (which take PYTHONPATH), not the one the shared virtualenv's editable
install points at."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SPEC = importlib.util.spec_from_file_location("checkout_bench", BENCHMARKS / "checkout.py")
checkout = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(checkout)


def test_a_benchmark_puts_its_own_checkout_first_for_itself_and_spark_s_python_workers(monkeypatch):
    monkeypatch.setattr(sys, "path", ["/another/checkout", *[p for p in sys.path if p != str(BENCHMARKS.parent)]])
    environ = {"PYTHONPATH": os.pathsep.join(["/another/checkout", "/more"])}
    root = checkout.use_this_checkout(environ)
    assert root == str(BENCHMARKS.parent)
    assert sys.path[0] == root
    assert environ["PYTHONPATH"].split(os.pathsep) == [root, "/another/checkout", "/more"]
    paths, pythonpath = list(sys.path), environ["PYTHONPATH"]
    assert checkout.use_this_checkout(environ) == root  # again: nothing added twice
    assert (sys.path, environ["PYTHONPATH"]) == (paths, pythonpath)


def test_without_a_pythonpath_the_workers_get_the_checkout_alone(monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    environ: dict[str, str] = {}
    root = checkout.use_this_checkout(environ)
    assert environ == {"PYTHONPATH": root}
