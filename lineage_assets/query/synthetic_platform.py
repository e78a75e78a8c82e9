"""A synthetic warehouse shaped like a real platform, written with pyarrow (no Spark): the
current snapshot and, optionally, `days` of history (one run of every job a day). Used by the
latency benchmark (`benchmarks/query_latency.py`).

Shape: pipelines of 10-30 layers; a job reads 1-3 datasets of earlier layers of its pipeline
(always the previous one) and, with probability `hub_share`, one of `hubs` hub datasets (each
hub is then read by hundreds of jobs at 100,000 jobs); every dataset has 5-20 fields; each
output field comes from 1-2 fields of the job's inputs (DIRECT IDENTITY or INDIRECT FILTER).
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

import pyarrow as pa

from lineage_assets.warehouse import commits
from lineage_assets.warehouse import tables as t
from lineage_assets.warehouse.schemas import arrow_schema

NS = "postgres://platform.example.com:5432"
START = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


@dataclass
class Job:
    name: str
    output: str
    inputs: list[str]
    fields: list[str]
    edges: list[tuple[str, str, str, str]]  # (output field, input dataset, input field, transformation type)
    component: str


def platform_jobs(jobs: int, seed: int = 7, hubs: int = 5, hub_share: float = 0.01) -> list[Job]:
    rng = random.Random(seed)
    fields_of: dict[str, list[str]] = {}
    out: list[Job] = []
    hub_names = [f"hub.h{k}" for k in range(hubs)]
    for k, hub in enumerate(hub_names):  # each hub written by a job of its own
        fields_of[hub] = [f"f{i}" for i in range(rng.randint(5, 20))]
        out.append(Job(f"hub.writer{k}", hub, [], fields_of[hub], [], f"job:{NS}:hub.writer{k}"))
    pipeline = 0
    while len(out) < jobs:
        layers = min(rng.randint(10, 30), jobs - len(out))
        outputs: list[str] = []
        component = f"job:{NS}:p{pipeline}.job0"
        for layer in range(layers):
            name, output = f"p{pipeline}.job{layer}", f"p{pipeline}.table{layer}"
            inputs = []
            if outputs:
                inputs.append(outputs[-1])
                earlier = outputs[:-1]
                inputs += rng.sample(earlier, min(len(earlier), rng.randint(0, 2)))
            if rng.random() < hub_share:
                inputs.append(rng.choice(hub_names))
            fields_of[output] = [f"f{i}" for i in range(rng.randint(5, 20))]
            edges = []
            for f in fields_of[output] if inputs else []:
                for _ in range(rng.randint(1, 2)):
                    source = rng.choice(inputs)
                    edges.append((f, source, rng.choice(fields_of[source]), rng.choice(("DIRECT", "INDIRECT"))))
            out.append(Job(name, output, inputs, fields_of[output], sorted(set(edges)), component))
            outputs.append(output)
        pipeline += 1
    _connect_components(out)
    return out


def _connect_components(jobs: list[Job]) -> None:
    """Each job's `component` as the pipeline writes it: the smallest job id of its connected
    component (pipelines that read a hub are one component with the hub's writer)."""
    parent = list(range(len(jobs)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    writer = {job.output: i for i, job in enumerate(jobs)}
    for i, job in enumerate(jobs):
        for name in job.inputs:
            a, b = root(i), root(writer[name])
            if a != b:
                parent[max(a, b)] = min(a, b)
    smallest: dict[int, str] = {}
    for i, job in enumerate(jobs):
        r, job_id = root(i), f"job:{NS}:{job.name}"
        smallest[r] = min(smallest.get(r, job_id), job_id)
    for i, job in enumerate(jobs):
        job.component = smallest[root(i)]


def _table(table: t.Table, columns: dict[str, list]) -> pa.Table:
    schema = arrow_schema(table.schema)
    return pa.table({f.name: pa.array(columns.get(f.name, [None] * len(next(iter(columns.values())))), f.type) for f in schema})


def _edge_columns(job: Job, out_version: str, run_id: str, created: dt.datetime, columns: dict[str, list], with_job: bool) -> None:
    for out_field, source, in_field, kind in job.edges:
        row = {
            "output_version_id": out_version, "output_namespace": NS, "output_name": job.output, "output_field": out_field,
            "input_namespace": NS, "input_name": source, "input_field": in_field, "input_version_id": f"src-{source}",
            "transformation_type": kind, "transformation_subtype": "IDENTITY" if kind == "DIRECT" else "FILTER",
            "transformation_description": "", "masking": False, "run_id": run_id, "created_at": created,
            "input_declared": True, "output_field_known": True, "input_field_known": True,
            "output_field_type": "string", "input_field_type": "string",
        }
        if with_job:
            row.update(job_namespace=NS, job_name=job.name)
        for key, value in row.items():
            columns.setdefault(key, []).append(value)


def build_platform(warehouse: str, jobs: int, days: int = 0, seed: int = 7, hubs: int = 5, hub_share: float = 0.01) -> dict[str, int]:
    """Write and commit the warehouse; returns the sizes written."""
    spec = platform_jobs(jobs, seed, hubs, hub_share)
    now = START + dt.timedelta(days=max(days, 1))
    current: dict[str, dict[str, list]] = {name: {} for name in ("current_jobs", "current_lineage", "current_column_lineage", "current_dataset_fields")}
    for j, job in enumerate(spec):
        for key, value in dict(job_namespace=NS, job_name=job.name, version_id=f"v{j}", latest_run_id=f"r{j}", latest_state="COMPLETE",
                               latest_ended_at=now, lineage_unknown=False, component_id=job.component, temporary_datasets=[]).items():
            current["current_jobs"].setdefault(key, []).append(value)
        for name, direction in [(i, "INPUT") for i in job.inputs] + [(job.output, "OUTPUT")]:
            for key, value in dict(job_namespace=NS, job_name=job.name, version_id=f"v{j}", dataset_namespace=NS, dataset_name=name,
                                   direction=direction, component_id=job.component, temporary=False).items():
                current["current_lineage"].setdefault(key, []).append(value)
        for ordinal, f in enumerate(job.fields):
            for key, value in dict(namespace=NS, name=job.output, version_id=f"dv{j}", field_path=f, type="string", ordinal=ordinal).items():
                current["current_dataset_fields"].setdefault(key, []).append(value)
        _edge_columns(job, f"dv{j}", f"r{j}", now, current["current_column_lineage"], with_job=True)
    history_edges = 0
    with commits.Transaction(warehouse, "synthetic_platform") as txn:
        for name, columns in current.items():
            txn.stage_arrow(_table(t.get(name), columns), name)
        for day in range(days):
            runs: dict[str, list] = {}
            versions: dict[str, list] = {}
            edges: dict[str, list] = {}
            date = (START + dt.timedelta(days=day)).date()
            for j, job in enumerate(spec):
                ended = START + dt.timedelta(days=day, minutes=j % 1440)
                run_id, version = f"r{j}-d{day}", f"dv{j}-d{day}"
                for key, value in dict(run_id=run_id, job_namespace=NS, job_name=job.name, job_version_id=f"v{j}", state="COMPLETE",
                                       started_at=ended - dt.timedelta(minutes=5), ended_at=ended, input_versions=[],
                                       output_versions=[{"namespace": NS, "name": job.output, "version_id": version}], end_date=date).items():
                    runs.setdefault(key, []).append(value)
                for key, value in dict(version_id=version, namespace=NS, name=job.output, run_id=run_id, run_state="COMPLETE",
                                       job_namespace=NS, job_name=job.name, job_version_id=f"v{j}", created_at=ended,
                                       partitions=[], created_date=date).items():
                    versions.setdefault(key, []).append(value)
                _edge_columns(job, version, run_id, ended, edges, with_job=False)
            edges["created_date"] = [date] * len(edges["run_id"])
            history_edges += len(edges["run_id"])
            txn.stage_arrow(_table(t.RUN_LINEAGE, runs), t.RUN_LINEAGE)
            txn.stage_arrow(_table(t.DATASET_VERSIONS, versions), t.DATASET_VERSIONS)
            txn.stage_arrow(_table(t.COLUMN_LINEAGE, edges), t.COLUMN_LINEAGE)
        txn.commit()
    return {
        "jobs": len(spec), "edges": len(current["current_lineage"]["job_name"]),
        "column_edges": len(current["current_column_lineage"]["job_name"]), "days": days, "history_column_edges": history_edges,
    }
