"""Where the project keeps its data, read from the environment with project-local defaults."""

from __future__ import annotations

import datetime as dt
import os
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
        env = os.environ if environ is None else environ
        settings = cls(
            drop_dir=env.get("LINEAGE_DROP_DIR") or str(DEFAULT_DROP_DIR),
            warehouse=env.get("LINEAGE_WAREHOUSE") or str(DEFAULT_WAREHOUSE),
            start_date=env.get("LINEAGE_START_DATE") or recorded_start_date() or DEFAULT_START_DATE,
            check_sample=parse_check_sample(env.get("LINEAGE_CHECK_SAMPLE") or str(DEFAULT_CHECK_SAMPLE)),
        )
        parse_start_date(settings.start_date)
        return settings


def parse_start_date(value: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError as exc:
        raise ValueError(
            f"LINEAGE_START_DATE must be a date like 2020-01-01, got {value!r}"
        ) from exc


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
