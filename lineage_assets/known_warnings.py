"""Warnings the project knows to be noise, and only those, kept out of what users read.

`lineage-assets demo` printed nine warnings around its three runs (2026-11-28), none of them about
anything the user did or can change:

- PySpark 4.3 warns that it "does not yet fully support pandas >= 3.0.0" each time a module
  defines an Arrow UDF or a pandas function, in the driver and again in every Python worker that
  imports the fold's rules. The project pins pandas 3 (`pyproject.toml`) and its tests run every
  UDF and `mapInArrow` it defines with it.
- Dagster marks `backfill_policy` of `@asset` as beta. The daily assets use it on purpose (a
  range of days in one run, README "How drops become tables"); the warning repeats at every load
  of the definitions.

Each filter names its warning's category and the start of its message, so any other warning of
the same libraries still shows. The package installs them when it is imported
(`lineage_assets/__init__.py`): in the CLI, the Dagster code server and Spark's Python workers,
which import the package before the fold's rules (`worker_daemon`). pytest puts back the filters
it found once it has collected the tests, so the tests add the same ones as pytest filters
(`lineage_assets_tests/conftest.py`, `pytest_configure`).
"""

from __future__ import annotations

import warnings

# (category, regular expression matched against the start of the message)
KNOWN_WARNINGS: tuple[tuple[type[Warning], str], ...] = (
    (FutureWarning, r"PySpark does not yet fully support pandas >= 3\.0\.0"),
    (Warning, r"Parameter `backfill_policy` of function `asset` is currently in beta"),
)


def ignore_known_warnings() -> None:
    """Put a filter for each of KNOWN_WARNINGS in front of the process's warning filters."""
    for category, message in KNOWN_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category)
