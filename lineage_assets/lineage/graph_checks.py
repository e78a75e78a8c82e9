"""Checks on the current graph: every start node of a component sees the same component."""

from __future__ import annotations

from collections import defaultdict, deque

from lineage_assets.lineage.current import dataset_node, job_node


def _adjacency(jobs: list[dict], edges: list[dict]) -> dict[str, set[str]]:
    adj: dict[str, set[str]] = defaultdict(set)
    for job in jobs:
        adj[job_node(job["job_namespace"], job["job_name"])]
    for edge in edges:
        j = job_node(edge["job_namespace"], edge["job_name"])
        d = dataset_node(edge["dataset_namespace"], edge["dataset_name"])
        adj[j].add(d)
        adj[d].add(j)
    return adj


def _reach(adj: dict[str, set[str]], start: str) -> tuple[frozenset, frozenset]:
    seen = {start}
    queue = deque([start])
    found_edges = set()
    while queue:
        node = queue.popleft()
        for other in adj[node]:
            found_edges.add(tuple(sorted((node, other))))
            if other not in seen:
                seen.add(other)
                queue.append(other)
    return frozenset(seen), frozenset(found_edges)


def component_problems(jobs: list[dict], edges: list[dict]) -> list[str]:
    """Traverse each component from its smallest, largest and middle node; all must agree, and
    the recorded component_id of every node must be the component's smallest node id."""
    adj = _adjacency(jobs, edges)
    recorded: dict[str, str] = {job_node(j["job_namespace"], j["job_name"]): j["component_id"] for j in jobs}
    for e in edges:
        recorded.setdefault(dataset_node(e["dataset_namespace"], e["dataset_name"]), e["component_id"])
        if recorded[dataset_node(e["dataset_namespace"], e["dataset_name"])] != e["component_id"]:
            recorded[dataset_node(e["dataset_namespace"], e["dataset_name"])] = "<conflicting>"
    problems = []
    done: set[str] = set()
    for node in sorted(adj):
        if node in done:
            continue
        nodes, found = _reach(adj, node)
        done |= nodes
        ordered = sorted(nodes)
        for start in {ordered[0], ordered[-1], ordered[len(ordered) // 2]}:
            if _reach(adj, start) != (nodes, found):
                problems.append(f"traversal from {start} differs from traversal from {node}")
        expected = ordered[0]
        wrong = [n for n in ordered if recorded.get(n) != expected]
        if wrong:
            problems.append(f"component of {expected}: {len(wrong)} node(s) carry another component_id, e.g. {wrong[0]}")
    return problems
