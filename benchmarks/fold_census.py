"""What `make test` spends on folds and snapshots: a pytest plugin that counts them per test file.

    PYTHONPATH=benchmarks .venv/bin/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder -p fold_census

Every fold (`pipeline.fold._fold_and_commit`, once per attempt: a fold that restarts earlier,
`Reopened`, counts twice) and every snapshot (`pipeline.snapshot.stage_current_graph`) run in a
test process is logged with its test and seconds; the summary prints, per test file, the folds
and snapshots and their seconds, most seconds first. Work in subprocesses (`lineage-assets
ingest` started by a test) is not seen. Not a test: a tool for the suite's cost (README "Tests").
"""

from __future__ import annotations

import collections
import functools
import glob
import json
import os
import tempfile
import time

_LOG = os.environ.get("FOLD_CENSUS_DIR")
if not _LOG:  # the controller makes the folder; xdist workers inherit it through the environment
    _LOG = os.environ["FOLD_CENSUS_DIR"] = tempfile.mkdtemp(prefix="fold_census_")
WATCHED = {"_fold_and_commit": "fold", "stage_current_graph": "snapshot"}


def _watch(module, name: str) -> None:
    real = getattr(module, name)

    @functools.wraps(real)
    def logged(*args, **kwargs):
        began = time.monotonic()
        try:
            return real(*args, **kwargs)
        finally:
            entry = {"test": os.environ.get("PYTEST_CURRENT_TEST", "?").split("::")[0], "what": WATCHED[name],
                     "seconds": round(time.monotonic() - began, 2)}
            with open(os.path.join(_LOG, f"{os.getpid()}.jsonl"), "a") as out:
                out.write(json.dumps(entry) + "\n")

    setattr(module, name, logged)  # both are looked up in their module when called


def pytest_configure(config):
    from lineage_assets.pipeline import fold, snapshot

    _watch(fold, "_fold_and_commit")
    _watch(snapshot, "stage_current_graph")


def census(folder: str) -> list[tuple[str, int, float, int, float]]:
    """(test file, folds, their seconds, snapshots, their seconds), most seconds first."""
    counts: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0, 0.0])
    for path in glob.glob(os.path.join(folder, "*.jsonl")):
        with open(path) as lines:
            for line in lines:
                entry = json.loads(line)
                row = counts[entry["test"]]
                at = 0 if entry["what"] == "fold" else 2
                row[at] += 1
                row[at + 1] += entry["seconds"]
    return sorted(((test, int(f), fs, int(s), ss) for test, (f, fs, s, ss) in counts.items()), key=lambda r: -(r[2] + r[4]))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if hasattr(config, "workerinput"):  # an xdist worker: the controller prints
        return
    rows = census(_LOG)
    write = terminalreporter.write_line
    write(f"fold census ({_LOG}): {sum(r[1] for r in rows)} folds, {sum(r[2] for r in rows):.0f} s; "
          f"{sum(r[3] for r in rows)} snapshots, {sum(r[4] for r in rows):.0f} s")
    for test, folds, fold_seconds, snapshots, snapshot_seconds in rows:
        write(f"  {folds:3d} folds {fold_seconds:7.1f} s  {snapshots:3d} snapshots {snapshot_seconds:6.1f} s  {test}")
