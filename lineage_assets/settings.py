"""Where the project keeps its data, read from the environment with project-local defaults."""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = PROJECT_ROOT / "data"
DEFAULT_DROP_DIR = DATA_DIR / "drops"
DEFAULT_WAREHOUSE = DATA_DIR / "warehouse"
DEFAULT_START_DATE = "2020-01-01"
# Share of jobs whose fold the blocking determinism check recomputes (1 = all; tests use 1).
DEFAULT_CHECK_SAMPLE = 0.1


@dataclass(frozen=True)
class LineageSettings:
    drop_dir: str
    warehouse: str
    start_date: str
    check_sample: float = field(default_factory=lambda: parse_check_sample(os.environ.get("LINEAGE_CHECK_SAMPLE") or str(DEFAULT_CHECK_SAMPLE)))

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> "LineageSettings":
        """Every setting from the environment; a bad value is a ValueError naming its variable."""
        env = os.environ if environ is None else environ
        folders = Folders.from_env(env)
        settings = cls(
            drop_dir=folders.drop_dir,
            warehouse=folders.warehouse,
            start_date=start_date_for(folders.warehouse, env),
            check_sample=parse_check_sample(env.get("LINEAGE_CHECK_SAMPLE") or str(DEFAULT_CHECK_SAMPLE)),
        )
        parse_start_date(settings.start_date)
        return settings


@dataclass(frozen=True)
class Folders:
    """The drop folder and the warehouse from the environment: all that the commands that read
    need (a bad ingest-only setting does not stop them)."""

    drop_dir: str
    warehouse: str

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> "Folders":
        env = os.environ if environ is None else environ
        return cls(env.get("LINEAGE_DROP_DIR") or str(DEFAULT_DROP_DIR), env.get("LINEAGE_WAREHOUSE") or str(DEFAULT_WAREHOUSE))


def start_date_for(warehouse: str, environ: dict[str, str] | None = None) -> str:
    """The first daily partition for `warehouse`: LINEAGE_START_DATE; else, for the project's
    own `data/warehouse` (the demo's), the demo's first day when `lineage-assets demo` recorded
    it (`make dev` then shows partitions from there); else DEFAULT_START_DATE. Another warehouse
    never takes the demo's date: events before it would be quarantined (`before_start_date`)."""
    env = os.environ if environ is None else environ
    if env.get("LINEAGE_START_DATE"):
        return env["LINEAGE_START_DATE"]
    if os.path.abspath(warehouse) == os.path.abspath(DEFAULT_WAREHOUSE):
        return recorded_start_date() or DEFAULT_START_DATE
    return DEFAULT_START_DATE


def parse_start_date(value: str, source: str = "LINEAGE_START_DATE") -> dt.date:
    """`value` as a date (YYYY-MM-DD); a ValueError naming `source` (where the value came from)."""
    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            raise ValueError(value)
        return dt.date.fromisoformat(value)
    except ValueError as exc:
        raise ValueError(f"{source} must be a date like 2020-01-01, got {value!r}") from exc


def parse_check_sample(value: str) -> float:
    try:
        rate = float(value)
    except ValueError:
        rate = -1.0
    if not 0 < rate <= 1:
        raise ValueError(f"LINEAGE_CHECK_SAMPLE must be a share of jobs in (0, 1], got {value!r}")
    return rate


# A landing batch that parses at most this many bytes (WHOLE forms, which may be gzip, count
# eightfold) is read in the run's own process, without starting Spark; a larger one by Spark.
DEFAULT_LOCAL_INTAKE_MAX_BYTES = 32 << 20


def local_intake_max_bytes(environ: dict[str, str] | None = None) -> int:
    env = os.environ if environ is None else environ
    value = env.get("LINEAGE_LOCAL_INTAKE_MAX_BYTES") or str(DEFAULT_LOCAL_INTAKE_MAX_BYTES)
    try:
        limit = int(value)
    except ValueError:
        limit = -1
    if limit < 0:
        raise ValueError(f"LINEAGE_LOCAL_INTAKE_MAX_BYTES must be a number of bytes >= 0 (0: always Spark), got {value!r}")
    return limit


START_DATE_FILE = DATA_DIR / "start_date"


def recorded_start_date() -> str | None:
    """The start date `lineage-assets demo` recorded for its data (so `make dev` shows the
    daily partitions from the demo's first day, not thousands of empty days before it)."""
    try:
        return START_DATE_FILE.read_text().strip() or None
    except OSError:
        return None
