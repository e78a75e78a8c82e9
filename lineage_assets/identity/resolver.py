"""One dataset identity: a reported (namespace, name) at a time -> the canonical dataset and the
partition it named (partition rules first, then aliases as of that time)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lineage_assets.identity.aliases import AliasTimeline, Name
from lineage_assets.identity.partitions import DEFAULT_RULES, PartitionRule, fold_name


@dataclass
class Identity:
    rules: tuple[PartitionRule, ...] = DEFAULT_RULES
    aliases: AliasTimeline = field(default_factory=AliasTimeline)
    _folded: dict[Name, tuple[str, str | None]] = field(default_factory=dict, repr=False, compare=False)
    _families: dict[Name, Name] | None = field(default=None, repr=False, compare=False)

    def fold(self, namespace: str, name: str) -> tuple[str, str | None]:
        """(the name without its partition, the partition or None); cached per name."""
        key = (namespace, name)
        found = self._folded.get(key)
        if found is None:
            found = self._folded[key] = fold_name(namespace, name, self.rules)
        return found

    def resolve(self, namespace: str, name: str, at: int | None = None) -> tuple[str, str, str | None]:
        """(canonical namespace, canonical name, partition) of a reported name as of `at`
        (microseconds since the epoch; None: as of now)."""
        folded, partition = self.fold(namespace, name)
        canonical = self.aliases.resolve((namespace, folded), at)
        return canonical[0], canonical[1], partition

    def datasets(self, items: list[dict[str, Any]] | None, at: int | None) -> list[dict[str, Any]]:
        """Reported datasets (dicts with namespace and name) as their canonical datasets: each
        item gains `partition` and `reported` (the name it was reported by, when that differs)."""
        out = []
        for item in items or []:
            namespace, name, partition = self.resolve(item["namespace"], item["name"], at)
            reported = (item["namespace"], item["name"])
            out.append({
                **item, "namespace": namespace, "name": name, "partition": partition,
                "reported": None if reported == (namespace, name) else reported,
            })
        return out

    def family(self, namespace: str, name: str) -> Name:
        """The smallest name of every name that any alias statement of this identity ties to this
        one (at any time; names partition-folded): whatever a name resolves to at any time
        belongs to its family. The determinism check samples datasets by family."""
        if self._families is None:
            self._families = _families(self.aliases)
        key = (namespace, self.fold(namespace, name)[0])
        return self._families.get(key, key)

    def family_names(self) -> list[Name]:
        """Every (partition-folded) name an alias statement ties to another: the names whose
        family is not just themselves, or may not be."""
        if self._families is None:
            self._families = _families(self.aliases)
        return list(self._families)

    def __getstate__(self) -> dict:  # the caches stay behind when shipped to Spark's workers
        return {"rules": self.rules, "aliases": self.aliases}

    def __setstate__(self, state: dict) -> None:
        self.rules, self.aliases, self._folded, self._families = state["rules"], state["aliases"], {}, None


def _families(aliases: AliasTimeline) -> dict[Name, Name]:
    parent: dict[Name, Name] = {}

    def find(x: Name) -> Name:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for alias, history in aliases.changes.items():
        for statement in history:
            a, b = find(alias), find(statement.canonical)
            if a != b:
                parent[max(a, b)] = min(a, b)
    return {name: find(name) for name in list(parent)}
