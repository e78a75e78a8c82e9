"""The warnings the project filters (`known_warnings`) are those, and no others."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

from lineage_assets.known_warnings import ignore_known_warnings

REPO = Path(__file__).resolve().parents[1]

# as PySpark 4.3 and Dagster 1.13 write them
PANDAS_3 = "PySpark does not yet fully support pandas >= 3.0.0. Some features may not work correctly. It is recommended to use pandas < 3.0.0 for now."
BACKFILL_POLICY_BETA = (
    "Parameter `backfill_policy` of function `asset` is currently in beta, and may have breaking changes in minor version "
    "releases, with behavior changes in patch releases."
)


class BetaWarning(Warning):  # Dagster's own is a subclass of Warning too
    pass


def shown(message: str, category: type[Warning]) -> bool:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ignore_known_warnings()
        warnings.warn(message, category)
    return bool(caught)


def test_the_known_warnings_are_not_shown():
    assert not shown(PANDAS_3, FutureWarning)
    assert not shown(BACKFILL_POLICY_BETA, BetaWarning)


def test_other_warnings_of_the_same_libraries_still_show():
    assert shown(PANDAS_3, UserWarning)  # the same words in another category
    assert shown("PySpark does not yet fully support pandas >= 4.0.0.", FutureWarning)
    assert shown(BACKFILL_POLICY_BETA.replace("backfill_policy", "automation_condition"), BetaWarning)
    assert shown(f"Note: {PANDAS_3}", FutureWarning)  # matched at the start of the message only


def test_loading_the_project_shows_no_warning():
    """The definitions, the fold's rules (which define Arrow UDFs) and the CLI imported in a new
    process with Python's default filters (DeprecationWarnings shown where the code that
    triggers them is the project's own)."""
    done = subprocess.run(
        [sys.executable, "-W", "default", "-c", "import lineage_assets.definitions, lineage_assets.lineage.fold, lineage_assets.cli"],
        capture_output=True, text=True, cwd=str(REPO), timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr, done.stderr
