"""Node ids of the reference server: `job:ns:name`, `dataset:ns:name`, `datasetField:ns:name:field`,
optionally followed by `#<version_id>`. Namespaces may hold `://` and ports and names may hold
`:`, so a string id can split in several places; the helper resolves it against the nodes that
exist, and structured arguments (namespace=, name=, field=) are never ambiguous.
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = {"job": "JOB", "dataset": "DATASET", "datasetField": "DATASET_FIELD"}
MAX_ID_LENGTH = 8192  # characters of a string node id
MAX_READINGS = 500  # ways of splitting one string id at its colons (a field id with 32 colons has 496)


def job_node(namespace: str, name: str) -> str:
    return f"job:{namespace}:{name}"


def dataset_node(namespace: str, name: str) -> str:
    return f"dataset:{namespace}:{name}"


def field_node(namespace: str, name: str, field: str) -> str:
    return f"datasetField:{namespace}:{name}:{field}"


def job_node_sql(namespace: str = "job_namespace", name: str = "job_name") -> str:
    """The same id as a DuckDB expression over two columns."""
    return f"'job:' || {namespace} || ':' || {name}"


def dataset_node_sql(namespace: str = "dataset_namespace", name: str = "dataset_name") -> str:
    return f"'dataset:' || {namespace} || ':' || {name}"


class NodeNotFound(LookupError):
    """The node id is well formed but names nothing in the warehouse."""


@dataclass(frozen=True)
class NodeRef:
    kind: str  # job | dataset | datasetField
    namespace: str
    name: str
    field: str | None = None
    version: str | None = None

    @property
    def id(self) -> str:
        base = f"{self.kind}:{self.namespace}:{self.name}"
        if self.field is not None:
            base += f":{self.field}"
        return base


def split_version(node_id: str) -> tuple[str, str | None]:
    base, sep, version = node_id.rpartition("#")
    if sep and version and ":" not in version and "/" not in version:
        return base, version
    return node_id, None


def candidates(node_id: str) -> list[NodeRef]:
    """Every reading of a string id; raises ValueError when none is well formed. An id ending in
    `#<text>` is read both ways: with that version, and whole (a `#` in a name or field)."""
    if not isinstance(node_id, str) or not node_id:
        raise ValueError("node id must be a non-empty string like 'job:namespace:name'")
    if len(node_id) > MAX_ID_LENGTH:
        raise ValueError(f"node id of {len(node_id)} characters is longer than {MAX_ID_LENGTH}")
    base, version = split_version(node_id)
    found: list[NodeRef] = []
    error: ValueError | None = None
    for text, text_version in [(base, version), (node_id, None)] if version is not None else [(node_id, None)]:
        try:
            found += _readings(node_id, text, text_version)
        except ValueError as exc:
            error = error or exc
    if not found:
        raise error or ValueError(f"node id {node_id!r} has an empty namespace or name")
    return found


def _readings(node_id: str, text: str, version: str | None) -> list[NodeRef]:
    """The readings of `text` (the id, or the id without its version) split at its colons."""
    kind, sep, rest = text.partition(":")
    if not sep or kind not in KINDS:
        raise ValueError(f"node id {node_id!r} must start with one of {', '.join(k + ':' for k in KINDS)}")
    parts = rest.split(":")
    need = 3 if kind == "datasetField" else 2
    if len(parts) < need or any(p == "" for p in (parts[0], parts[-1])):
        shape = "datasetField:namespace:name:field" if kind == "datasetField" else f"{kind}:namespace:name"
        raise ValueError(f"node id {node_id!r} is not of the form {shape}")
    readings = (len(parts) - 1) * (len(parts) - 2) // 2 if kind == "datasetField" else len(parts) - 1
    if readings > MAX_READINGS:
        raise ValueError(
            f"node id {node_id[:80]!r}... has {len(parts) - 1} colons: {readings} ways to read it, more than {MAX_READINGS}; "
            "pass namespace=, name= (and field=)"
        )
    found = []
    if kind == "datasetField":
        for i in range(1, len(parts) - 1):
            for j in range(i + 1, len(parts)):
                ns, name, field = ":".join(parts[:i]), ":".join(parts[i:j]), ":".join(parts[j:])
                if ns and name and field:
                    found.append(NodeRef(kind, ns, name, field, version))
    else:
        for i in range(1, len(parts)):
            ns, name = ":".join(parts[:i]), ":".join(parts[i:])
            if ns and name:
                found.append(NodeRef(kind, ns, name, None, version))
    return found
