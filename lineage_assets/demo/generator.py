"""Write a realistic multi-day OpenLineage stream as drop files.

Several producers' styles, each in the file form that producer writes:
- Spark (openlineage-spark listener): NDJSON, START/RUNNING/COMPLETE with schema and
  columnLineage facets; one day a job FAILs, another day it reads a new input.
- Airflow: a pretty-printed JSON object (the DAG run's START) and a JSON array (its task runs,
  carrying parent facets).
- dbt: a JSON array of events per invocation; a model's code version changes mid-stream.
- openlineage-python FileTransport: gzip NDJSON, including a run whose events span two days.
- a few bad lines (not JSON, a bad runId, a missing eventTime, an unknown eventType).

Everything is derived from (seed, first day) so the same call writes the same bytes.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import random
import uuid
from pathlib import Path

PRODUCER_SPARK = "https://github.com/OpenLineage/OpenLineage/tree/1.23.0/integration/spark"
PRODUCER_AIRFLOW = "https://github.com/apache/airflow/tree/providers-openlineage/1.14.0"
PRODUCER_DBT = "https://github.com/OpenLineage/OpenLineage/tree/1.23.0/integration/dbt"
PRODUCER_PY = "https://github.com/OpenLineage/OpenLineage/tree/1.54.0/client/python"
SCHEMA_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
WAREHOUSE_NS = "postgres://warehouse.example.com:5432"
LAKE_NS = "s3://lake-bucket"
DEMO_NS = uuid.UUID("8d3b8f0e-1c1a-4d7b-9d7e-6f1f0c2a9b11")


def _iso(t: dt.datetime) -> str:
    return t.astimezone(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _run_id(*parts: object) -> str:
    return str(uuid.uuid5(DEMO_NS, "/".join(map(str, parts))))


def _schema(fields: list[tuple[str, str]], producer: str) -> dict:
    return {
        "_producer": producer,
        "_schemaURL": "https://openlineage.io/spec/facets/1-1-1/SchemaDatasetFacet.json#/$defs/SchemaDatasetFacet",
        "fields": [{"name": n, "type": t} for n, t in fields],
    }


def _column_lineage(mapping: dict[str, list[tuple[str, str, str, str]]], producer: str) -> dict:
    """mapping: output field -> [(input ns, input name, input field, DIRECT|INDIRECT)]."""
    return {
        "_producer": producer,
        "_schemaURL": "https://openlineage.io/spec/facets/1-1-0/ColumnLineageDatasetFacet.json#/$defs/ColumnLineageDatasetFacet",
        "fields": {
            out: {
                "inputFields": [
                    {
                        "namespace": ns,
                        "name": name,
                        "field": field,
                        "transformations": [
                            {"type": kind, "subtype": "IDENTITY" if kind == "DIRECT" else "AGGREGATION", "description": "", "masking": False}
                        ],
                    }
                    for ns, name, field, kind in inputs
                ]
            }
            for out, inputs in mapping.items()
        },
    }


def _dataset(ns: str, name: str, fields=None, lineage=None, producer=PRODUCER_SPARK) -> dict:
    facets = {}
    if fields:
        facets["schema"] = _schema(fields, producer)
    if lineage:
        facets["columnLineage"] = _column_lineage(lineage, producer)
    return {"namespace": ns, "name": name, "facets": facets}


def _event(kind: str, t: dt.datetime, run_id: str, job_ns: str, job: str, producer: str, inputs=(), outputs=(), run_facets=None, job_facets=None) -> dict:
    return {
        "eventType": kind,
        "eventTime": _iso(t),
        "run": {"runId": run_id, "facets": run_facets or {}},
        "job": {"namespace": job_ns, "name": job, "facets": job_facets or {}},
        "inputs": list(inputs),
        "outputs": list(outputs),
        "producer": producer,
        "schemaURL": SCHEMA_URL,
    }


ORDERS = [("order_id", "bigint"), ("customer_id", "bigint"), ("amount", "decimal(10,2)"), ("placed_at", "timestamp")]
CUSTOMERS = [("customer_id", "bigint"), ("email", "string"), ("country", "string")]
DAILY = [("day", "date"), ("country", "string"), ("revenue", "decimal(18,2)"), ("orders", "bigint")]


def _spark_day(day_index: int, start: dt.datetime, rng: random.Random) -> list[dict]:
    """Spark job `orders_enrich`: orders + customers -> enriched_orders, with column lineage."""
    events = []
    run = _run_id("spark", "orders_enrich", day_index)
    t0 = start + dt.timedelta(hours=2, minutes=rng.randint(0, 30))
    inputs = [_dataset(WAREHOUSE_NS, "public.orders", ORDERS), _dataset(WAREHOUSE_NS, "public.customers", CUSTOMERS)]
    if day_index >= 2:  # input change: a new refunds table joins in
        inputs.append(_dataset(WAREHOUSE_NS, "public.refunds", [("order_id", "bigint"), ("refunded", "decimal(10,2)")]))
    lineage = {
        "order_id": [(WAREHOUSE_NS, "public.orders", "order_id", "DIRECT")],
        "country": [(WAREHOUSE_NS, "public.customers", "country", "DIRECT"), (WAREHOUSE_NS, "public.orders", "customer_id", "INDIRECT")],
        "amount": [(WAREHOUSE_NS, "public.orders", "amount", "DIRECT")]
        + ([(WAREHOUSE_NS, "public.refunds", "refunded", "DIRECT")] if day_index >= 2 else []),
    }
    output = _dataset(LAKE_NS, "/lake/enriched_orders", [("order_id", "bigint"), ("country", "string"), ("amount", "decimal(10,2)")], lineage)
    job_facets = {"jobType": {"_producer": PRODUCER_SPARK, "_schemaURL": "x", "processingType": "BATCH", "integration": "SPARK", "jobType": "JOB"}}
    events.append(_event("START", t0, run, "spark-prod", "orders_enrich", PRODUCER_SPARK, inputs, [], job_facets=job_facets))
    events.append(_event("RUNNING", t0 + dt.timedelta(minutes=3), run, "spark-prod", "orders_enrich", PRODUCER_SPARK, inputs, [output]))
    final = "FAIL" if day_index == 1 else "COMPLETE"
    events.append(_event(final, t0 + dt.timedelta(minutes=7), run, "spark-prod", "orders_enrich", PRODUCER_SPARK, inputs, [output]))
    if day_index == 1:  # the rerun after the failure
        rerun = _run_id("spark", "orders_enrich", day_index, "rerun")
        t1 = t0 + dt.timedelta(hours=1)
        events.append(_event("START", t1, rerun, "spark-prod", "orders_enrich", PRODUCER_SPARK, inputs, [], job_facets=job_facets))
        events.append(_event("COMPLETE", t1 + dt.timedelta(minutes=6), rerun, "spark-prod", "orders_enrich", PRODUCER_SPARK, inputs, [output]))
    return events


def _airflow_day(day_index: int, start: dt.datetime) -> list[dict]:
    """Airflow DAG `daily_revenue` with two tasks; task runs carry the DAG run as parent."""
    dag_run = _run_id("airflow", "daily_revenue", day_index)
    t0 = start + dt.timedelta(hours=4)
    parent = {
        "parent": {
            "_producer": PRODUCER_AIRFLOW,
            "_schemaURL": "https://openlineage.io/spec/facets/1-1-0/ParentRunFacet.json#/$defs/ParentRunFacet",
            "run": {"runId": dag_run},
            "job": {"namespace": "airflow-prod", "name": "daily_revenue"},
            "root": {"run": {"runId": dag_run}, "job": {"namespace": "airflow-prod", "name": "daily_revenue"}},
        }
    }
    enriched = _dataset(LAKE_NS, "/lake/enriched_orders", producer=PRODUCER_AIRFLOW)
    daily = _dataset(
        WAREHOUSE_NS,
        "analytics.daily_revenue",
        DAILY,
        {
            "revenue": [(LAKE_NS, "/lake/enriched_orders", "amount", "INDIRECT")],
            "country": [(LAKE_NS, "/lake/enriched_orders", "country", "DIRECT")],
            "orders": [(LAKE_NS, "/lake/enriched_orders", "order_id", "INDIRECT")],
        },
        PRODUCER_AIRFLOW,
    )
    report = _dataset(WAREHOUSE_NS, "reporting.revenue_by_country", [("country", "string"), ("revenue", "decimal(18,2)")], {
        "country": [(WAREHOUSE_NS, "analytics.daily_revenue", "country", "DIRECT")],
        "revenue": [(WAREHOUSE_NS, "analytics.daily_revenue", "revenue", "DIRECT")],
    }, PRODUCER_AIRFLOW)
    t_agg, t_rep = _run_id("airflow", "aggregate", day_index), _run_id("airflow", "report", day_index)
    return [
        _event("START", t0, dag_run, "airflow-prod", "daily_revenue", PRODUCER_AIRFLOW),
        _event("START", t0 + dt.timedelta(minutes=1), t_agg, "airflow-prod", "daily_revenue.aggregate", PRODUCER_AIRFLOW, [enriched], [], run_facets=parent),
        _event("COMPLETE", t0 + dt.timedelta(minutes=9), t_agg, "airflow-prod", "daily_revenue.aggregate", PRODUCER_AIRFLOW, [enriched], [daily], run_facets=parent),
        _event("START", t0 + dt.timedelta(minutes=10), t_rep, "airflow-prod", "daily_revenue.report", PRODUCER_AIRFLOW, [daily], [], run_facets=parent),
        _event("COMPLETE", t0 + dt.timedelta(minutes=12), t_rep, "airflow-prod", "daily_revenue.report", PRODUCER_AIRFLOW, [daily], [report], run_facets=parent),
        _event("COMPLETE", t0 + dt.timedelta(minutes=13), dag_run, "airflow-prod", "daily_revenue", PRODUCER_AIRFLOW),
    ]


def _dbt_day(day_index: int, start: dt.datetime) -> list[dict]:
    """dbt model `customer_ltv`; its code version changes on day 2; day 3 sends an empty rerun."""
    run = _run_id("dbt", "customer_ltv", day_index)
    t0 = start + dt.timedelta(hours=6)
    version = "a1b2c3d" if day_index < 2 else "e4f5a6b"
    job_facets = {
        "sourceCodeLocation": {"_producer": PRODUCER_DBT, "_schemaURL": "x", "type": "git", "url": "https://git.example.com/analytics/dbt", "version": version},
        "jobType": {"_producer": PRODUCER_DBT, "_schemaURL": "x", "processingType": "BATCH", "integration": "DBT", "jobType": "MODEL"},
    }
    inputs = [_dataset(WAREHOUSE_NS, "public.customers", CUSTOMERS, producer=PRODUCER_DBT), _dataset(LAKE_NS, "/lake/enriched_orders", producer=PRODUCER_DBT)]
    ltv = _dataset(WAREHOUSE_NS, "analytics.customer_ltv", [("customer_id", "bigint"), ("email", "string"), ("lifetime_value", "decimal(18,2)")], {
        "customer_id": [(WAREHOUSE_NS, "public.customers", "customer_id", "DIRECT")],
        "email": [(WAREHOUSE_NS, "public.customers", "email", "DIRECT")],
        "lifetime_value": [(LAKE_NS, "/lake/enriched_orders", "amount", "INDIRECT")],
    }, PRODUCER_DBT)
    events = [
        _event("START", t0, run, "dbt-prod", "analytics.customer_ltv", PRODUCER_DBT, inputs, [], job_facets=job_facets),
        _event("COMPLETE", t0 + dt.timedelta(minutes=4), run, "dbt-prod", "analytics.customer_ltv", PRODUCER_DBT, inputs, [ltv], job_facets=job_facets),
    ]
    if day_index == 3:  # a run that reports no inputs/outputs: it must not erase lineage
        empty = _run_id("dbt", "customer_ltv", day_index, "empty")
        events += [
            _event("START", t0 + dt.timedelta(hours=1), empty, "dbt-prod", "analytics.customer_ltv", PRODUCER_DBT, job_facets=job_facets),
            _event("COMPLETE", t0 + dt.timedelta(hours=1, minutes=1), empty, "dbt-prod", "analytics.customer_ltv", PRODUCER_DBT, job_facets=job_facets),
        ]
    return events


def _python_client_events(first_day: dt.datetime, days: int) -> list[dict]:
    """A python-client export job whose one run spans midnight (START on one day, COMPLETE the next)."""
    run = _run_id("python", "export_ltv")
    t0 = first_day + dt.timedelta(days=days - 2, hours=23, minutes=50)
    inputs = [_dataset(WAREHOUSE_NS, "analytics.customer_ltv", producer=PRODUCER_PY)]
    output = _dataset("gs://exports", "ltv/customer_ltv.csv", [("customer_id", "bigint"), ("lifetime_value", "string")], {
        "customer_id": [(WAREHOUSE_NS, "analytics.customer_ltv", "customer_id", "DIRECT")],
        "lifetime_value": [(WAREHOUSE_NS, "analytics.customer_ltv", "lifetime_value", "DIRECT")],
    }, PRODUCER_PY)
    return [
        _event("START", t0, run, "python-jobs", "export_ltv", PRODUCER_PY, inputs, []),
        _event("RUNNING", t0 + dt.timedelta(minutes=5), run, "python-jobs", "export_ltv", PRODUCER_PY, inputs, [output]),
        _event("COMPLETE", t0 + dt.timedelta(minutes=20), run, "python-jobs", "export_ltv", PRODUCER_PY, inputs, [output]),
    ]


BAD_LINES = [
    "this line is not JSON at all",
    '{"eventType": "COMPLETE", "eventTime": "2024-01-01T00:00:00Z", "run": {"runId": "not-a-uuid"}, "job": {"namespace": "x", "name": "y"}, "producer": "demo"}',
    '{"eventType": "START", "run": {"runId": "3f0b4e4e-8f9b-4a55-8f0a-0d6f0f2a0c11"}, "job": {"namespace": "x", "name": "y"}, "producer": "demo"}',
    '{"eventType": "FINISHED", "eventTime": "2024-01-01T00:00:00Z", "run": {"runId": "3f0b4e4e-8f9b-4a55-8f0a-0d6f0f2a0c11"}, "job": {"namespace": "x", "name": "y"}, "producer": "demo"}',
]


def _write_atomic(path: Path, data: bytes) -> None:
    """Writers land files atomically: write name.tmp, then rename (DESIGN.md section 2)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def generate_demo(drop_dir: str | Path, first_day: dt.date | None = None, days: int = 4, seed: int = 7) -> list[Path]:
    """Write the demo drops for `days` days ending yesterday (UTC) unless first_day is given."""
    rng = random.Random(seed)
    if first_day is None:
        first_day = dt.datetime.now(dt.timezone.utc).date() - dt.timedelta(days=days)
    root = Path(drop_dir)
    written: list[Path] = []
    for i in range(days):
        day = dt.datetime.combine(first_day + dt.timedelta(days=i), dt.time(), dt.timezone.utc)
        stamp = day.strftime("%Y%m%d")
        spark_lines = [json.dumps(e) for e in _spark_day(i, day, rng)]
        if i == 0:
            spark_lines[1:1] = BAD_LINES
        path = root / "spark" / f"orders_enrich-{stamp}.ndjson"
        _write_atomic(path, ("\n".join(spark_lines) + "\n").encode())
        written.append(path)
        airflow = _airflow_day(i, day)
        # The DAG run's START alone, pretty-printed; the task and completion events as an array.
        path = root / "airflow" / f"daily_revenue-{stamp}-start.json"
        _write_atomic(path, json.dumps(airflow[0], indent=2, ensure_ascii=False).encode())
        written.append(path)
        path = root / "airflow" / f"daily_revenue-{stamp}-tasks.json"
        _write_atomic(path, json.dumps(airflow[1:], indent=2, ensure_ascii=False).encode())
        written.append(path)
        path = root / "dbt" / f"run-{stamp}.json"
        _write_atomic(path, json.dumps(_dbt_day(i, day), indent=2).encode())
        written.append(path)
    path = root / "python" / "export_ltv.ndjson.gz"
    lines = "\n".join(json.dumps(e) for e in _python_client_events(
        dt.datetime.combine(first_day, dt.time(), dt.timezone.utc), days)) + "\n"
    _write_atomic(path, gzip.compress(lines.encode(), mtime=0))
    written.append(path)
    return written
