"""Aliases: the `symlinks` dataset facet names other identifiers of the same dataset (DESIGN.md
section 10). Every identifier resolves to one canonical node.

The rule, per facet instance: the canonical identifier is the facet's `TABLE` identifier (the
smallest by (namespace, name) if it lists several); every other identifier of the facet, and the
dataset itself, is then stated to be an alias of it. A facet without a `TABLE` identifier states
its other identifiers to be aliases of the dataset it is attached to, and nothing of that dataset
itself: a table it was stated to stand for stays its canonical (DESIGN.md section 10: the `TABLE`
identifier when there is one), so a producer that lists only paths does not take a path away
from its table.
Names are folded by the partition rules first (`partitions.fold_name`), so a partition path's
symlink speaks for its dataset.

Statements have a time (the event's eventTime, in microseconds since the epoch: the fold's
Spark and Python sides compare the same integers, with no time zone to convert) and an event. Resolution is as of a time: an
alias names the canonical of its latest statement at or before that time (ties: the greater
event_id, then the greater canonical name), and a canonical that is itself an alias is followed (A -> B, B -> C resolves A to C);
a cycle (two producers each calling the other's name canonical) resolves to its smallest
identifier. So two producers disagreeing give the answer of the later statement, and resolving
an event's names as of its own time gives the same answer in whatever order events arrive.

Only changes are kept: a statement that repeats an alias's current canonical is no news. The
changes are the `dataset_aliases` table (alias -> canonical, since when, from which event);
their validity by day is the fold's `state_aliases`.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

Name = tuple[str, str]  # (namespace, name)


@dataclass(frozen=True)
class Statement:
    """`alias` is `canonical` from `learnt_at` on (stated by `event_id`)."""

    alias: Name
    learnt_at: int  # microseconds since the epoch (`micros`)
    event_id: str
    canonical: Name
    identifier_type: str | None = None


def statement_order(s: Statement) -> tuple:
    """The order statements are read in: by alias, then time, event and canonical name (the
    later of two same-time statements wins). The fold's Spark window sorts the same way."""
    return (s.alias, s.learnt_at, s.event_id, s.canonical)


def facet_statements(dataset: Name, identifiers: Iterable[tuple[str, str, str | None]]) -> list[tuple[Name, Name, str | None]]:
    """(alias, canonical, the alias's identifier type) of one symlinks facet of `dataset`. With a
    `TABLE` identifier, the canonical itself is included as its own alias (a statement that it
    is canonical), and so is `dataset`; without one, only the other identifiers are stated (aliases
    of `dataset`), nothing of `dataset`."""
    named = sorted({((ns, name), kind) for ns, name, kind in identifiers if ns and name})
    tables = [n for n, kind in named if (kind or "").upper() == "TABLE"]
    canonical = min(tables) if tables else dataset
    out = {dataset: (canonical, None)} if tables else {}
    for n, kind in named:
        if (n not in out or out[n][1] is None) and (tables or n != dataset):
            out[n] = (canonical, kind)
    return [(alias, target, kind) for alias, (target, kind) in sorted(out.items())]


@dataclass
class AliasTimeline:
    """Every alias's changes in time order; resolves a name as of a time."""

    changes: dict[Name, list[Statement]] = field(default_factory=dict)

    @classmethod
    def of(cls, statements: Iterable[Statement]) -> "AliasTimeline":
        timeline = cls()
        for s in sorted(statements, key=statement_order):
            timeline.changes.setdefault(s.alias, []).append(s)
        for alias in list(timeline.changes):
            timeline.changes[alias] = _only_changes(timeline.changes[alias], alias)
            if not timeline.changes[alias]:
                del timeline.changes[alias]
        return timeline

    def direct(self, name: Name, at: int | None) -> Name:
        """The canonical of `name`'s latest statement at or before `at` (None: the latest of all)."""
        history = self.changes.get(name)
        if not history:
            return name
        if at is None:
            return history[-1].canonical
        index = bisect.bisect_right([s.learnt_at for s in history], at) - 1
        return history[index].canonical if index >= 0 else name

    def resolve(self, name: Name, at: int | None = None) -> Name:
        """`name` followed through its aliases as of `at` (None: as of now) to a canonical name."""
        seen = [name]
        current = name
        while True:
            target = self.direct(current, at)
            if target == current:
                return current
            if target in seen:  # a cycle: its smallest identifier
                return min(seen[seen.index(target):])
            seen.append(target)
            current = target

    def current(self) -> dict[Name, Name]:
        """Every alias that resolves to another name now: alias -> canonical."""
        out = {}
        for alias in self.changes:
            target = self.resolve(alias)
            if target != alias:
                out[alias] = target
        return out


def micros(when: dt.datetime) -> int:
    """Microseconds since the epoch of a datetime (naive: UTC)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    delta = when - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _only_changes(history: list[Statement], alias: Name) -> list[Statement]:
    """Statements that change the alias's canonical (an alias starts as its own canonical)."""
    out: list[Statement] = []
    current = alias
    for s in history:
        if s.canonical != current:
            out.append(s)
            current = s.canonical
    return out
