"""Intake order independence: the same events split into random drops, in random forms, landed
in random order, give `events` identical row for row (provenance columns aside) to one drop."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import random

import pytest
from pyspark.sql import functions as F

from lineage_assets.demo import generator
from lineage_assets.pipeline import progress
from lineage_assets.pipeline.events import build_events
from lineage_assets.pipeline.landing import land_batch
from lineage_assets.warehouse import commits, tables

SCHEDULE_SECONDS = 30  # measured (--durations); conftest runs long files first

PROVENANCE = ("source_file", "source_line")
FIRST_DAY = dt.date(2024, 5, 1)


def _stream() -> list[dict]:
    rng = random.Random(1)
    events = []
    for i in range(3):
        day = dt.datetime.combine(FIRST_DAY + dt.timedelta(days=i), dt.time(), dt.timezone.utc)
        events += generator._spark_day(i, day, rng) + generator._airflow_day(i, day) + generator._dbt_day(i, day)
    return events + generator._python_client_events(dt.datetime.combine(FIRST_DAY, dt.time(), dt.timezone.utc), 3)


def _write_drop(path, events, form):
    if form == "array":
        data = json.dumps(events, indent=2).encode()
    elif form == "object" and len(events) == 1:
        data = json.dumps(events[0], indent=2).encode()
    else:
        data = "".join(json.dumps(e) + "\n" for e in events).encode()
    if form.endswith("gz") or path.suffix == ".gz":
        data = gzip.compress(data)
    path.write_bytes(data)


def _land(spark, tmp_path, drops, batches: int = 1):
    """Land the drops with the pipeline's own functions: in `batches` landing batches (the drops
    of each batch written before it runs, as a sensor tick finds them), then `events`."""
    folder, warehouse = tmp_path / "drops", str(tmp_path / "wh")
    folder.mkdir()
    size = -(-len(drops) // batches)
    for first in range(0, len(drops), size):
        for name, events, form in drops[first:first + size]:
            _write_drop(folder / name, events, form)
        report = land_batch(spark, warehouse, str(folder), FIRST_DAY - dt.timedelta(days=30), log=lambda _m: None)
        assert report.check.passed and report.commit_seq is not None
    days = sorted(progress.Pending.of(commits.latest(warehouse)).event_days)
    built = build_events(spark, warehouse, dt.date.fromisoformat(days[0]), dt.date.fromisoformat(days[-1]))
    assert built.check.passed
    return commits.read_table(spark, warehouse, "events")


def _events_table(events):
    return sorted(
        tuple(r) for r in events.drop(*PROVENANCE).select(
            *[F.col(c).cast("string") for c in sorted(set(tables.EVENTS.column_names) - set(PROVENANCE))]
        ).collect()
    )


@pytest.fixture(scope="module")
def one_shot(spark, tmp_path_factory):
    events = _stream()
    landed = _land(spark, tmp_path_factory.mktemp("one"), [("all.ndjson", events, "ndjson")])
    return events, _events_table(landed)


@pytest.mark.parametrize("seed", [11, 22, 33])
def test_random_drops_in_random_order_give_the_same_events(spark, tmp_path, one_shot, seed):
    events, expected = one_shot
    rng = random.Random(seed)
    shuffled = events[:]
    rng.shuffle(shuffled)
    cuts = sorted(rng.sample(range(1, len(shuffled)), 4))
    chunks = [shuffled[a:b] for a, b in zip([0, *cuts], [*cuts, len(shuffled)])]
    chunks[rng.randrange(len(chunks))].extend(rng.sample(events, 3))  # re-sent events
    forms = ["ndjson", "array", "ndjson.gz", "array.gz", "object"]
    drops = []
    for i, chunk in enumerate(chunks):
        form = rng.choice(forms if len(chunk) == 1 else forms[:4])
        drops.append((f"drop{seed}-{i}.{'json' if 'array' in form or form == 'object' else 'ndjson'}{'.gz' if form.endswith('gz') else ''}", chunk, form))
    rng.shuffle(drops)
    got = _events_table(_land(spark, tmp_path, drops, batches=1 + seed % 3))
    assert len(got) == len(expected) == len({json.dumps(e, sort_keys=True) for e in events})
    assert got == expected
