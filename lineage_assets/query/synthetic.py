"""A synthetic current snapshot of a given size, written with pyarrow (no Spark), committed the
way a materialization commits one. Used by the latency benchmark and by tests that need a
warehouse without folding events.

Shape: independent pipelines of `chain` jobs; job i of a pipeline reads the datasets of jobs i-1
and i-2 and writes its own dataset of `fields` fields; each output field depends on `fan_in`
random fields of the inputs. Every dataset also has an alias (its storage path, ALIAS_NS).
"""

from __future__ import annotations

import datetime as dt
import random
import time

import pyarrow as pa

from lineage_assets.warehouse import commits

NS = "postgres://bench.example.com:5432"
ALIAS_NS = "s3://bench-lake"


def alias_of(name: str) -> str:
    """The storage path that stands for a synthetic table (`current_aliases`)."""
    return "/warehouse/" + name.replace(".", "/")


def build(
    warehouse: str, jobs: int, chain: int = 50, fields: int = 20, fan_in: int = 2, seed: int = 7
) -> dict[str, int]:
    """Write and commit the snapshot; returns the sizes written."""
    rng = random.Random(seed)
    job_cols = {k: [] for k in ("job_namespace", "job_name", "version_id", "latest_run_id", "latest_state", "latest_ended_at", "lineage_unknown", "code_version", "component_id", "latest_parent_run_id", "temporary_datasets")}
    edge_cols = {k: [] for k in ("job_namespace", "job_name", "version_id", "dataset_namespace", "dataset_name", "direction", "component_id", "temporary")}
    cl_names = ("job_namespace", "job_name", "output_version_id", "output_namespace", "output_name", "output_field", "input_namespace",
                "input_name", "input_field", "input_version_id", "transformation_type", "transformation_subtype",
                "transformation_description", "masking", "legacy_transformation_type", "legacy_transformation_description",
                "run_id", "created_at", "input_declared", "output_field_known", "input_field_known", "output_field_type", "input_field_type")
    cl = {k: [] for k in cl_names}
    df_cols = {k: [] for k in ("namespace", "name", "version_id", "field_path", "type", "description", "ordinal")}
    alias_cols = {k: [] for k in ("alias_namespace", "alias_name", "namespace", "name")}
    ended = time.time()
    now = dt.datetime.fromtimestamp(ended, dt.timezone.utc)
    for j in range(jobs):
        pipe, pos = divmod(j, chain)
        job = f"p{pipe}.job{pos}"
        out = f"p{pipe}.table{pos}"
        component = f"job:{NS}:p{pipe}.job0"
        version = f"v{j}"
        for k, v in zip(job_cols, (NS, job, version, f"r{j}", "COMPLETE", now, False, None, component, None, [])):
            job_cols[k].append(v)
        inputs = [f"p{pipe}.table{pos - d}" for d in (1, 2) if pos - d >= 0]
        for k, v in zip(alias_cols, (ALIAS_NS, alias_of(out), NS, out)):
            alias_cols[k].append(v)
        for name, direction in [(i, "INPUT") for i in inputs] + [(out, "OUTPUT")]:
            for k, v in zip(edge_cols, (NS, job, version, NS, name, direction, component, False)):
                edge_cols[k].append(v)
        for f in range(fields):
            for k, v in zip(df_cols, (NS, out, f"dv{j}", f"f{f}", "string", None, f)):
                df_cols[k].append(v)
            if not inputs:
                continue
            for _ in range(fan_in):
                src = rng.choice(inputs)
                row = (NS, job, f"dv{j}", NS, out, f"f{f}", NS, src, f"f{rng.randrange(fields)}", f"src-{src}", "DIRECT", "IDENTITY",
                       "", False, None, None, f"r{j}", now, True, True, True, "string", "string")
                for k, v in zip(cl_names, row):
                    cl[k].append(v)
    frames = {"current_jobs": job_cols, "current_lineage": edge_cols, "current_column_lineage": cl, "current_dataset_fields": df_cols,
              "current_aliases": alias_cols}
    with commits.Transaction(warehouse, "synthetic_snapshot") as txn:
        for table, columns in frames.items():
            txn.stage_arrow(pa.table(columns), table)
        txn.commit()
    return {"jobs": jobs, "edges": len(edge_cols["job_name"]), "column_edges": len(cl["job_name"]), "fields": len(df_cols["name"])}


