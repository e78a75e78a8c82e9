"""The current job/dataset graph of one loaded snapshot, indexed for `lineage()`.

Jobs and datasets are the nodes of one `traversal.Adjacency` (jobs 0..J-1, datasets after
them; an edge per job-dataset pair of `current_lineage`, whatever its direction). `lineage()`
counts job hops, so entering a dataset costs nothing and entering a job one hop: a walk from a
job reaches, within depth d, the jobs that share a dataset with it d times over, and stops when
nothing new is found. The rows of the answer are kept per job, so an answer costs its own jobs
and edges.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb
import numpy as np

from lineage_assets.query.traversal import Adjacency

JOB_COLUMNS = (
    "job_id, job_namespace, job_name, version_id, latest_run_id, latest_state, latest_ended_at, "
    "lineage_unknown, code_version, component_id, temporary_datasets"
)
EDGE_COLUMNS = "job_id, dataset_id, direction, dataset_namespace, dataset_name, component_id, temporary"


@dataclass
class JobGraph:
    job_index: dict[tuple[str, str], int] = field(default_factory=dict)  # (namespace, name) -> node
    dataset_index: dict[tuple[str, str], int] = field(default_factory=dict)  # (namespace, name) -> node
    job_rows: list[tuple | None] = field(default_factory=list)  # per job node: its `jobs` row (JOB_COLUMNS)
    edges_of: list[list[tuple]] = field(default_factory=list)  # per job node: its `edges` rows (EDGE_COLUMNS), sorted
    adjacency: Adjacency = field(default_factory=lambda: Adjacency(0, [], []))

    @classmethod
    def load(cls, con: duckdb.DuckDBPyConnection) -> JobGraph:
        """From the `jobs` and `edges` tables of the connection (`LineageQuery._load`)."""
        graph = cls()
        jobs = con.execute(f"SELECT {JOB_COLUMNS} FROM jobs ORDER BY job_namespace, job_name").fetchall()
        edges = con.execute(f"SELECT {EDGE_COLUMNS}, job_namespace, job_name FROM edges ORDER BY 1, 2, 3").fetchall()
        for row in jobs:
            graph.job_index[(row[1], row[2])] = len(graph.job_rows)
            graph.job_rows.append(row)
        for row in edges:  # a job known only from its edges still gets a node
            if (row[7], row[8]) not in graph.job_index:
                graph.job_index[(row[7], row[8])] = len(graph.job_rows)
                graph.job_rows.append(None)
        graph.edges_of = [[] for _ in graph.job_rows]
        count = len(graph.job_rows)
        source, target = np.empty(len(edges), dtype=np.int64), np.empty(len(edges), dtype=np.int64)
        for i, row in enumerate(edges):
            job = graph.job_index[(row[7], row[8])]
            dataset = graph.dataset_index.setdefault((row[3], row[4]), count + len(graph.dataset_index))
            graph.edges_of[job].append(row[:7])
            source[i], target[i] = job, dataset
        size = count + len(graph.dataset_index)
        free = np.zeros(size, dtype=bool)
        free[count:] = True  # entering a dataset is no job hop
        graph.adjacency = Adjacency(size, source, target, free)
        return graph

    def has_job(self, namespace: str, name: str) -> bool:
        return (namespace, name) in self.job_index

    def has_dataset(self, namespace: str, name: str) -> bool:
        return (namespace, name) in self.dataset_index

    def around(self, kind: str, namespace: str, name: str, depth: int) -> tuple[list[tuple], list[tuple]]:
        """(job rows, edge rows) of the jobs within `depth` job hops of a job, or of the jobs
        touching a dataset (those at hop 0)."""
        if kind == "job":
            seeds = [self.job_index[(namespace, name)]]
        else:
            node = self.dataset_index.get((namespace, name))
            seeds = [] if node is None else self.adjacency.backward.around(node)[0].tolist()
        hops = self.adjacency.walk(seeds, depth, both=True, bridge=True)
        found = [n for n in hops if n < len(self.job_rows)]
        edges = sorted((e for n in found for e in self.edges_of[n]), key=lambda e: e[:3])
        return [self.job_rows[n] for n in found if self.job_rows[n] is not None], edges
