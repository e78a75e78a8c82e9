"""One dataset identity: a reported (namespace, name) at a time -> the canonical dataset and the
partition it named (partition rules first, then aliases as of that time)."""

from __future__ import annotations

from dataclasses import dataclass, field

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

    def family(self, namespace: str, name: str) -> Name:
        """The smallest name of every name that any alias statement of this identity ties to this
        one (at any time; names partition-folded): whatever a name resolves to at any time
        belongs to its family. The determinism check samples datasets by family."""
        key = (namespace, self.fold(namespace, name)[0])
        return self._family_map().get(key, key)

    def family_names(self) -> list[Name]:
        """Every (partition-folded) name an alias statement ties to another: the names whose
        family is not just themselves, or may not be."""
        return list(self._family_map())

    def _family_map(self) -> dict[Name, Name]:
        """name -> its family, for every name an alias statement names (computed once)."""
        if self._families is None:
            self._families = _families(self.aliases)
        return self._families

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
