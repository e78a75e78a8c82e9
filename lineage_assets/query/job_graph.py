"""The current job/dataset graph of one loaded snapshot, indexed for `lineage()`.

Jobs and datasets are the nodes of one `traversal.Adjacency` (jobs 0..J-1, datasets after
them; an edge per job-dataset pair of `current_lineage`, whatever its direction). `lineage()`
counts job hops, so entering a dataset costs nothing and entering a job one hop: a walk from a
job reaches, within depth d, the jobs that share a dataset with it d times over, and stops when
nothing new is found. The rows of the answer are kept per job, so an answer costs its own jobs
and edges.

An answer's objects are mostly made at load and shared by the answers that hold them, read-only
(`models.ReadOnlyDict`/`ReadOnlyList`, frozen `Node` and `Edge`): each job's node (its data and
all its edges, the same in every answer), each dataset's node with all its edges, and one rank
per node in the answer's order. A dataset the walk expanded (nearer than `depth`) has all its
jobs in the answer, so its prepared node is the answer's; only the datasets at the answer's edge,
touched only by jobs at hop `depth`, get nodes of their own with the edges of those jobs. Answers that hide temporary datasets behind bridges are
built row by row (`lineage_query._graph`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter
from typing import NamedTuple

import duckdb
import numpy as np

from lineage_assets.query.models import Edge, LineageGraph, Node, ReadOnlyDict, ReadOnlyList, answer, edge, node
from lineage_assets.query.node_ids import dataset_node
from lineage_assets.query.traversal import Adjacency

JOB_COLUMNS = (
    "job_id, job_namespace, job_name, version_id, latest_run_id, latest_state, latest_ended_at, "
    "lineage_unknown, code_version, component_id, temporary_datasets"
)
EDGE_COLUMNS = "job_id, dataset_id, direction, dataset_namespace, dataset_name, component_id, temporary"


class Reach(NamedTuple):
    """What a walk of the job graph reached: its jobs (sorted), those of them at hop `depth`
    (not expanded), and the datasets it expanded (all their jobs are among `jobs`), as dataset
    numbers (node - number of jobs)."""

    jobs: np.ndarray
    boundary: np.ndarray
    interior: np.ndarray


@dataclass
class JobGraph:
    job_index: dict[tuple[str, str], int] = field(default_factory=dict)  # (namespace, name) -> node
    dataset_index: dict[tuple[str, str], int] = field(default_factory=dict)  # (namespace, name) -> node
    job_rows: list[tuple | None] = field(default_factory=list)  # per job node: its `jobs` row (JOB_COLUMNS)
    edges_of: list[list[tuple]] = field(default_factory=list)  # per job node: its `edges` rows (EDGE_COLUMNS), sorted
    adjacency: Adjacency = field(default_factory=lambda: Adjacency(0, [], []))
    # made at load for `answer` (index: job node, or dataset node - number of jobs)
    job_nodes: list[Node | None] = field(default_factory=list)  # shared by answers, read-only
    job_datasets: list[tuple[tuple[int, Edge, bool], ...]] = field(default_factory=list)  # (dataset, edge, is output)
    job_rank: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # order of job ids
    has_temporary: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    dataset_ids: list[str] = field(default_factory=list)
    dataset_data: list[ReadOnlyDict] = field(default_factory=list)  # shared by answers
    dataset_nodes: list[Node] = field(default_factory=list)  # with all their edges: shared by answers, read-only
    node_rank: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # jobs, then datasets: answer order
    shared_ids: frozenset[str] = frozenset()  # ids that two nodes have

    @classmethod
    def load(cls, con: duckdb.DuckDBPyConnection, aliases_of=lambda namespace, name: []) -> JobGraph:
        """From the `jobs` and `edges` tables of the connection (`LineageQuery._load`);
        `aliases_of(namespace, name)` gives a dataset's aliases for its data."""
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
        graph._prepare_answers(aliases_of)
        return graph

    def _prepare_answers(self, aliases_of) -> None:
        count = len(self.job_rows)
        self.dataset_ids = [""] * len(self.dataset_index)
        self.dataset_data = [{}] * len(self.dataset_index)
        self.has_temporary = np.zeros(count, dtype=bool)
        job_ids = [""] * count
        job_data: list[ReadOnlyDict | None] = []
        for j, row in enumerate(self.job_rows):
            if row is None:
                job_data.append(None)
                continue
            job_id, ns, name, version, run_id, state, ended_at, unknown, code, component, temporary = row
            job_ids[j] = job_id
            job_data.append(ReadOnlyDict({
                "namespace": ns, "name": name, "currentVersion": version, "latestRunId": run_id,
                "latestRunState": state, "latestRunEndedAt": ended_at.isoformat() if ended_at else None,
                "lineageUnknown": unknown, "codeVersion": code, "componentId": component,
                "temporaryDatasets": ReadOnlyList(dataset_node(d["namespace"], d["name"]) for d in temporary or []),
            }))
        dataset_edges: list[tuple[list, list]] = [([], []) for _ in range(len(self.dataset_index))]
        for j, rows in enumerate(self.edges_of):
            ins, outs, touched = [], [], []
            for job_id, dataset_id, direction, ns, name, component, temporary in rows:
                job_ids[j] = job_ids[j] or job_id
                d = self.dataset_index[(ns, name)] - count
                if not self.dataset_ids[d]:
                    self.dataset_ids[d] = dataset_id
                    self.dataset_data[d] = ReadOnlyDict({"namespace": ns, "name": name, "componentId": component,
                                                         "aliases": ReadOnlyList(aliases_of(ns, name)), "temporary": bool(temporary)})
                output = direction != "INPUT"
                link = edge(job_id, dataset_id) if output else edge(dataset_id, job_id)
                (outs if output else ins).append(link)
                touched.append((d, link, output))
                self.has_temporary[j] |= bool(temporary)
            data = job_data[j]
            for d, link, output in touched if data is not None else ():
                dataset_edges[d][0 if output else 1].append(link)
            self.job_nodes.append(None if data is None else node(
                self.job_rows[j][0], "JOB", data, ReadOnlyList(sorted(ins, key=_edge_key)), ReadOnlyList(sorted(outs, key=_edge_key)),
            ))
            self.job_datasets.append(tuple(touched))
        keys = [(job_ids[j], "JOB", *key) for key, j in self.job_index.items()]
        keys += [(self.dataset_ids[d - count], "DATASET", *key) for key, d in self.dataset_index.items()]
        index = [self.job_index[k[2:]] for k in keys[:count]] + [self.dataset_index[k[2:]] for k in keys[count:]]
        order = sorted(range(len(keys)), key=lambda i: keys[i])
        self.node_rank = np.empty(len(keys), dtype=np.int64)
        self.node_rank[np.asarray([index[i] for i in order], dtype=np.int64)] = np.arange(len(keys))
        self.job_rank = self.node_rank[:count]
        self.dataset_nodes = [
            node(self.dataset_ids[d], "DATASET", self.dataset_data[d], ReadOnlyList(sorted(ins, key=_edge_key)),
                 ReadOnlyList(sorted(outs, key=_edge_key)))
            for d, (ins, outs) in enumerate(dataset_edges)
        ]
        seen: set[str] = set()
        self.shared_ids = frozenset(k[0] for k in keys if k[0] in seen or seen.add(k[0]))

    def answer(self, reach: Reach, start: Node) -> LineageGraph:
        """The answer of a reach (no job of it touching a temporary dataset that is to be
        hidden): every job with all its edges, the datasets they touch with the edges to the
        answer's jobs, and `start` (the node asked for) when none of these is it."""
        count = len(self.job_rows)
        job_nodes = self.job_nodes
        built = [n for n in (job_nodes[j] for j in reach.jobs[np.argsort(self.job_rank[reach.jobs], kind="stable")].tolist()) if n is not None]
        interior = np.zeros(len(self.dataset_nodes), dtype=bool)
        interior[reach.interior] = True
        edge_of: dict[int, tuple[list, list]] = {}  # datasets at the edge: the edges of the answer's jobs to them
        add = list.append
        boundary = reach.boundary[np.argsort(self.job_rank[reach.boundary], kind="stable")]  # job id order: edges come sorted
        for j in boundary.tolist():
            if job_nodes[j] is None:
                continue
            for d, link, output in self.job_datasets[j]:
                if not interior[d]:
                    lists = edge_of.get(d)
                    if lists is None:
                        lists = edge_of[d] = (ReadOnlyList(), ReadOnlyList())
                    add(lists[0 if output else 1], link)
        touched = np.concatenate([reach.interior, np.fromiter(edge_of, dtype=np.int64, count=len(edge_of))])
        touched = touched[np.argsort(self.node_rank[count + touched], kind="stable")].tolist()
        dataset_nodes, dataset_ids, dataset_data = self.dataset_nodes, self.dataset_ids, self.dataset_data
        nodes = [dataset_nodes[d] if d not in edge_of else node(dataset_ids[d], "DATASET", dataset_data[d], *edge_of[d]) for d in touched]
        nodes += built  # every `dataset:` id sorts before every `job:` id
        key = (start.data["namespace"], start.data["name"])
        if start.type == "JOB":
            at = self.job_index.get(key, -1)
            present = at >= 0 and job_nodes[at] is not None and _holds(reach.jobs, at)
        else:
            at = self.dataset_index.get(key, count - 1) - count
            present = at >= 0 and (bool(interior[at]) or at in edge_of)
        if not present:
            nodes.append(start)
            nodes.sort(key=lambda n: (n.id, n.type, n.data["namespace"], n.data["name"]))
        if self.shared_ids:  # two nodes of this answer with one id: both say so (in copies of their shared data)
            ids = [n.id for n in nodes if n.id in self.shared_ids]
            nodes = [node(n.id, n.type, ReadOnlyDict({**n.data, "ambiguousId": True}), n.inEdges, n.outEdges)
                     if n.id in self.shared_ids and ids.count(n.id) > 1 else n for n in nodes]
        return answer(nodes)

    def has_job(self, namespace: str, name: str) -> bool:
        return (namespace, name) in self.job_index

    def has_dataset(self, namespace: str, name: str) -> bool:
        return (namespace, name) in self.dataset_index

    def reach(self, kind: str, namespace: str, name: str, depth: int) -> Reach:
        """The job nodes within `depth` job hops of a job, or of the jobs touching a dataset
        (those at hop 0), with those at hop `depth` and the datasets the walk expanded."""
        if kind == "job":
            seeds = [self.job_index[(namespace, name)]]
        else:
            at = self.dataset_index.get((namespace, name))
            seeds = [] if at is None else self.adjacency.backward.around(at)[0].tolist()
        nodes, hops = self.adjacency.walk_arrays(seeds, depth, both=True, bridge=True)
        count = len(self.job_rows)
        is_job = nodes < count
        jobs, job_hops = nodes[is_job], hops[is_job]
        return Reach(np.sort(jobs), jobs[job_hops >= depth], nodes[~is_job & (hops < depth)] - count)

    def rows(self, jobs: np.ndarray) -> tuple[list[tuple], list[tuple]]:
        """(job rows, edge rows) of job nodes."""
        found = jobs.tolist()
        return [self.job_rows[n] for n in found if self.job_rows[n] is not None], [e for n in found for e in self.edges_of[n]]

    def around(self, kind: str, namespace: str, name: str, depth: int) -> tuple[list[tuple], list[tuple]]:
        """(job rows, edge rows) of `reach`."""
        return self.rows(self.reach(kind, namespace, name, depth).jobs)


_edge_key = attrgetter("origin", "destination")


def _holds(ordered: np.ndarray, value: int) -> bool:
    at = int(np.searchsorted(ordered, value))
    return at < len(ordered) and int(ordered[at]) == value
