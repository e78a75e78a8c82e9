"""Lineage of a recipe without looking at data: walk the schema step by step, then backtrack.

`lineage(recipe, input_columns, output_columns=None)` walks the recipe over a symbolic schema.
Each column is a chain of `Origin`s (the states it went through, each naming the directive that
made it and the states it was made from). Directives whose output columns only the data knows
(`parse-as-csv`, `parse-as-json`, `split-to-columns`, `extract-regex-groups`) leave a `Family`
in the schema ("all columns formatted body_%d"); a later directive that names one of its members
takes that member out of the family, and the run's output schema (when given) binds the rest.
A reference that the schema cannot settle without data is reported in `.unresolved` with its
reason, and the columns it might concern are kept as *possible* edges (`certain=False`), so
`forward` never misses a column the data could reach; nothing is guessed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from lineage_assets.recipes.syntax import Recipe, RecipeError, Step, parse

IDENTITY, TRANSFORMATION, FILTER = "IDENTITY", "TRANSFORMATION", "FILTER"
DIRECT, INDIRECT = "DIRECT", "INDIRECT"
READ, DROP, ADD, RENAME, MODIFY = "Read", "Drop", "Add", "Rename", "Modify"


@dataclass(frozen=True, eq=False)
class Origin:
    """One state of a column: the directive that made it and the states it was made from."""

    name: str
    step: Step | None  # None: an input column
    action: str  # input | add | modify | rename | copy | parse
    sources: tuple["Origin", ...] = ()
    subtype: str = IDENTITY  # of the hop from `sources` to this state
    masking: bool = False
    possible: tuple["Origin", ...] = ()  # states it may come from, depending on the data
    choice: bool = False  # exactly one of `possible` holds (the data decides which): what all of them reach for certain, it does


@dataclass(frozen=True)
class Operation:
    """One label a directive puts on one column (a `field_operations` row of the recipe)."""

    step: int
    line: int
    directive: str  # the directive's text
    name: str  # the directive's name
    column: str  # a column name; for a Read or an Add only, an "all columns ..." form only the data binds
    label: str  # Read | Drop | Add | Rename | Modify
    reads: tuple[str, ...] = ()  # for Add/Modify: the columns read (by name); for Rename: (old,)
    new_name: str | None = None  # for Rename: the name after
    pattern: bool = False  # `column` is an "all columns ..." form (never for a Rename or a Drop)


@dataclass(frozen=True)
class Unresolved:
    """A reference the recipe and the schemas cannot settle without data, and why."""

    step: int | None
    line: int | None
    directive: str | None
    column: str
    reason: str
    new_name: str | None = None  # the name a rename gives a column only the data can say (set-headers by position)


@dataclass(frozen=True)
class RecipeEdge:
    """An input column feeding an output column (OpenLineage column-lineage terms)."""

    input: str
    output: str
    type: str  # DIRECT | INDIRECT
    subtype: str  # IDENTITY | TRANSFORMATION | FILTER
    masking: bool
    certain: bool  # False: only if the data binds an unresolved reference this way
    steps: tuple[int, ...]  # directives on the way (for INDIRECT: the filters)
    maybe_steps: tuple[int, ...] = ()  # directives on the way only if the data says so


@dataclass(frozen=True)
class TraceNode:
    """One node of a backward tree: a column state, the directive that made it, its sources."""

    column: str
    step: int | None
    directive: str | None
    action: str
    subtype: str
    masking: bool
    sources: tuple["TraceNode", ...] = ()
    possible: tuple["TraceNode", ...] = ()
    filters: tuple["FilterNode", ...] = ()  # at the root: the filters every output row passed

    def to_dict(self) -> dict[str, Any]:
        """The tree as nested dicts. A directive's state that the tree reaches by more than one
        path (a column read twice, `a + b` then `a - b`) is written once, where it first comes,
        with an `id`, and as `{"ref": id}` at every later place: a recipe's tree can reach a
        state by exponentially many paths, and its dict stays the size of the recipe."""
        return _TreeDicts([self, *(r for f in self.filters for r in f.reads)]).node(self)

    def inputs(self) -> set[str]:
        """The input columns the tree reaches through certain sources."""
        found: set[str] = set()
        seen: set[int] = set()
        stack: list[TraceNode] = [self]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if node.step is None:
                found.add(node.column)
            else:
                stack.extend(node.sources)
        return found


class _TreeDicts:
    """`TraceNode.to_dict` over the nodes under `roots` (which may share nodes), without
    recursion (a chain of states is as deep as the recipe is long)."""

    def __init__(self, roots: list[TraceNode]):
        parents: dict[int, int] = {}
        for root in roots[1:]:  # a filter's read is one more place its state comes
            parents[id(root)] = parents.get(id(root), 0) + 1
        seen: set[int] = set()
        stack = list(roots)
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            for child in (*node.sources, *node.possible):
                parents[id(child)] = parents.get(id(child), 0) + 1
                stack.append(child)
        self._shared = {key for key, count in parents.items() if count > 1}
        self._ids: dict[int, int] = {}

    def node(self, root: TraceNode) -> dict[str, Any]:
        top: list[dict[str, Any]] = []
        stack: list[tuple[TraceNode, list[dict[str, Any]]]] = [(root, top)]
        while stack:
            node, into = stack.pop()
            if node.step is not None and id(node) in self._ids:
                into.append({"ref": self._ids[id(node)]})
                continue
            out: dict[str, Any] = {"column": node.column, "step": node.step, "directive": node.directive, "action": node.action}
            if node.step is not None:
                out["transformation"] = node.subtype
                out["masking"] = node.masking
                if id(node) in self._shared:
                    out["id"] = self._ids[id(node)] = len(self._ids) + 1
            into.append(out)
            later: list[tuple[TraceNode, list[dict[str, Any]]]] = []
            for key, children in (("sources", node.sources), ("possible", node.possible)):
                if children:
                    out[key] = []
                    later.extend((child, out[key]) for child in children)
            stack.extend(reversed(later))
        if root.filters:  # after the whole tree: a state it shares with a filter is written in the tree, first
            top[0]["filters"] = [f.to_dict(self) for f in root.filters]
        return top[0]


@dataclass(frozen=True)
class FilterNode:
    step: int
    directive: str
    reads: tuple[TraceNode, ...]

    def to_dict(self, dicts: _TreeDicts | None = None) -> dict[str, Any]:
        dicts = dicts or _TreeDicts(list(self.reads))
        return {"step": self.step, "directive": self.directive,
                "reads": [dicts.node(r) for r in self.reads]}


# --- the symbolic schema ----------------------------------------------------------------------


@dataclass(eq=False)
class Slot:
    origin: Origin

    @property
    def name(self) -> str:
        return self.origin.name


_UNKNOWN = object()  # a family member whose name before bulk renames cannot be recovered


@dataclass(eq=False)
class Family:
    """Columns one directive makes from the data: `body_1..body_n`, `body_<key>`, or a header."""

    step: Step
    source: Origin
    kind: str  # numbered | numbered2 | keyed | any
    prefix: str
    groups: int = 0
    renames: list[tuple[Step, Callable[[str], str], bool]] = field(default_factory=list)
    # members taken out (names before renames) -> the step that took each (None: the output schema)
    taken: dict[str, int | None] = field(default_factory=dict)
    minus: tuple[str, ...] = ()  # for a family the data names: the columns before it (DESIGN's "all columns minus ...")
    # what keeps its members from being named even with the output schema: (until, why): its
    # members at the steps before `until` (at every step when None) only the data names
    doubts: list[tuple[int | None, str]] = field(default_factory=list)
    dropped_at: Step | None = None  # a keep dropped the members it did not name
    replaced_by: "Family | None" = None  # the same directive made the same columns again

    def name_at(self, original: str, step: int) -> str:
        """A member's name when step `step` runs: after the bulk renames before it."""
        for rename_step, rename, _idem in self.renames:
            if rename_step.number >= step:
                break
            original = rename(original)
        return original

    @property
    def form(self) -> str:
        if self.kind == "numbered":
            return f"all columns formatted {self.prefix}%d"
        if self.kind == "numbered2":
            return f"all columns formatted {self.prefix}%d_%d"
        if self.kind == "keyed":
            return f"all columns formatted {self.prefix}%s"
        return "all columns minus " + " ".join(self.minus) if self.minus else "all columns"

    def current(self, original: str) -> str:
        for _step, rename, _idem in self.renames:
            original = rename(original)
        return original

    def admits(self, name: str) -> Any:
        """The member's name before renames if `name` can be a member, `_UNKNOWN` if it can but
        its earlier name is lost, or None."""
        if self.kind in ("numbered", "numbered2"):
            runs = [int(r) for r in re.findall(r"\d+", name)]
            candidates: list[str] = []
            if self.kind == "numbered":
                candidates = [f"{self.prefix}{i}" for i in runs if i >= 1]
            else:
                candidates = [f"{self.prefix}{m}_{g}" for m, g in zip(runs, runs[1:])
                              if m >= 1 and 1 <= g <= self.groups]
            for original in candidates:
                if original not in self.taken and self.current(original) == name:
                    return original
            return None
        if not self.renames:
            if name in self.taken:
                return None
            if self.kind == "keyed":
                return name if name.startswith(self.prefix) and len(name) > len(self.prefix) \
                    else None
            return name
        if all(idem for _s, _r, idem in self.renames):
            if self.current(name) != name:
                return None
            if self.kind == "keyed" and not name.startswith(self.current(self.prefix)):
                return None
        return _UNKNOWN


Entry = Slot | Family


class SchemaWalk:
    """The schema as the recipe changes it, and what each directive did to which column."""

    def __init__(self, recipe: Recipe, input_columns: Sequence[str]):
        self.recipe = recipe
        self.inputs = tuple(Origin(name, None, "input") for name in input_columns)
        self.entries: list[Entry] = [Slot(o) for o in self.inputs]
        self.operations: list[Operation] = []
        self.unresolved: list[Unresolved] = []
        self._noted: set[Unresolved] = set()
        self.filters: list[tuple[Step, tuple[Origin, ...]]] = []
        self.families: list[Family] = []
        # "all columns" forms a step touched, bound at the end (`settle`): (label, step, family,
        # the column a step reading every column writes)
        self.pending: list[tuple[str, Step, Family, str | None]] = []
        self._rests: dict[int, tuple[list[str] | None, str]] = {}  # `_rest` of each family, by id (they live as long as the walk)
        # a step reading every column -> the state it wrote, or the index of its filter
        self._readers: dict[int, Origin | int] = {}

    # -- records

    def touch(self, step: Step, column: str, label: str, reads: Iterable[str] = (),
              new_name: str | None = None, pattern: bool = False) -> None:
        """Label a column at a step: one label a column a step (a Read gives way to any other), and
        the same row never twice."""
        made = Operation(step.number, step.line, step.text, step.name, column, label, tuple(reads), new_name,
                         pattern)
        same = [i for i, o in enumerate(self.operations)
                if o.step == step.number and o.column == column and o.pattern == pattern]
        if (label == READ and same) or any(self.operations[i] == made for i in same):
            return
        if label != READ:
            for i in reversed(same):
                if self.operations[i].label == READ:
                    del self.operations[i]
        self.operations.append(made)

    def read_all(self, step: Step, target: str | None = None
                 ) -> tuple[list[Origin], list[str], tuple[Origin, ...]]:
        """A read of every column: the known ones labelled by name, each family by its form
        (bound to its members' names at the end, when they are known; `target`: the column the
        step writes, whose `reads` then name them too)."""
        origins = [s.origin for s in self.slots()]
        for name in self.names():
            self.touch(step, name, READ)
        families = [f for f in self.entries if isinstance(f, Family)]
        for family in families:
            self.touch(step, family.form, READ, pattern=True)
            self.pending.append((READ, step, family, target))
        return origins, self.names(), tuple(f.source for f in families)

    def note(self, step: Step | None, column: str, reason: str, new_name: str | None = None) -> None:
        """Record what only the data settles (once: a column named twice in a step is one note)."""
        note = Unresolved(step.number if step else None, step.line if step else None,
                          step.text if step else None, column, reason, new_name)
        if note not in self._noted:
            self._noted.add(note)
            self.unresolved.append(note)

    # -- lookups

    def slots(self) -> list[Slot]:
        return [e for e in self.entries if isinstance(e, Slot)]

    def names(self) -> list[str]:
        return [e.name for e in self.entries if isinstance(e, Slot)]

    def _slot_index(self, name: str) -> int | None:
        for i, entry in enumerate(self.entries):
            if isinstance(entry, Slot) and entry.name == name:
                return i
        return None

    def spark_names(self, names: Sequence[str]) -> tuple[str, ...]:
        """Column names an expression reads, as Spark resolves them: a name no column is spelt as
        stands for the one column equal to it without regard to case (`spark.sql.caseSensitive` is
        off by default, and `apply` refuses two names that differ only in case)."""
        out: dict[str, None] = {}
        for name in names:
            if self._slot_index(name) is None:
                same = [e.name for e in self.entries if isinstance(e, Slot) and e.name.lower() == name.lower()]
                if len(same) == 1:
                    name = same[0]
            out.setdefault(name, None)
        return tuple(out)

    def find(self, name: str, step: Step | None) -> Slot | None:
        """The column called `name` now, taking it out of a family if only the data names it."""
        index = self._slot_index(name)
        if index is not None:
            return self.entries[index]  # type: ignore[return-value]
        candidates = [(f, f.admits(name)) for f in self.entries if isinstance(f, Family)]
        candidates = [(f, original) for f, original in candidates if original is not None]
        if not candidates:
            return None
        if len(candidates) > 1:
            forms = "; ".join(f"{f.form} (step {f.step.number} {f.step.name})"
                              for f, _ in candidates)
            self.note(step, name, f"`{name}` is not a known column; more than one directive "
                                  f"may make it from the data: {forms}")
            for f, _ in candidates:
                f.doubts.append((step.number if step else None,
                                 f"{_where(name, step)} may be one of them or another directive's"))
            latest = candidates[-1][0].step
            slot = Slot(Origin(name, latest, "parse", (), TRANSFORMATION,
                               possible=tuple(self._member(f, name, None) for f, _ in candidates)))
            self.entries.append(slot)
            return slot
        family, original = candidates[0]
        return self._take(family, name, original, step)

    def _member(self, family: Family, name: str, original: Any, before: int | None = None) -> Origin:
        """The state chain of a member: made by the family's directive, then its bulk renames
        (those of steps before step `before` only, when given: its state when that step runs)."""
        if original is _UNKNOWN or original is None:
            return Origin(name, family.step, "parse", (family.source,), TRANSFORMATION)
        origin = Origin(original, family.step, "parse", (family.source,), TRANSFORMATION)
        current = original
        for step, rename, _idem in family.renames:
            if before is not None and step.number >= before:
                break
            renamed = rename(current)
            if renamed != current:
                origin = Origin(renamed, step, "rename", (origin,))
                current = renamed
        return origin

    def _take(self, family: Family, name: str, original: Any, step: Step | None) -> Slot:
        """Take a member out of a family at `step` (None: bound by the output schema)."""
        if original is _UNKNOWN:
            self.note(family.step, name,
                      f"`{name}` is taken to be one of the columns {family.step.name} (step "
                      f"{family.step.number}) made from the data; its name before the bulk "
                      f"renames after it is known only from the data")
            family.doubts.append((step.number if step else None,
                                  f"{_where(name, step)} is one of them under an earlier name only the data knows"))
        else:
            family.taken[original] = step.number if step else None
        bound = name if original is _UNKNOWN else original
        self.touch(family.step, bound, ADD, (family.source.name,))
        if original is not _UNKNOWN:
            current = original
            for rename_step, rename, _idem in family.renames:
                renamed = rename(current)
                if renamed != current:
                    self.touch(rename_step, current, RENAME, (current,), new_name=renamed)
                current = renamed
        slot = Slot(self._member(family, name, original))
        at = self.entries.index(family) + 1
        while at < len(self.entries) and isinstance(self.entries[at], Slot) \
                and _descends_from(self.entries[at].origin, family):
            at += 1  # after the members taken before it
        self.entries.insert(at, slot)
        return slot

    def read(self, step: Step, name: str, *, label: bool = True) -> Origin | None:
        slot = self.find(name, step)
        if slot is None:
            self.note(step, name, f"column `{name}` does not exist before this directive")
            return None
        if label:
            self.touch(step, name, READ)
        return slot.origin

    # -- effects

    def rename(self, step: Step, old: str, new: str) -> None:
        slot = self.find(old, step)
        if slot is None:
            self.note(step, old, f"column `{old}` does not exist: rename does nothing")
            return
        if old == new:
            return
        clash = self._slot_index(new)
        if clash is not None:
            self.note(step, new, f"rename replaces the existing column `{new}`")
            self.touch(step, new, DROP)
            del self.entries[clash]
        else:
            self._shadow(step, new)
        self.touch(step, old, RENAME, (old,), new_name=new)
        slot.origin = Origin(new, step, "rename", (slot.origin,))

    def drop(self, step: Step, name: str) -> None:
        slot = self.find(name, step)
        if slot is None:
            self.note(step, name, f"column `{name}` does not exist: nothing to drop")
            return
        self.touch(step, name, DROP)
        self.entries.remove(slot)

    def keep(self, step: Step, names: Sequence[str]) -> None:
        kept: list[Slot] = []
        for name in names:
            slot = self.find(name, step)
            if slot is None:
                self.note(step, name, f"column `{name}` does not exist: nothing to keep")
            elif slot not in kept:
                kept.append(slot)
        for entry in list(self.entries):
            if isinstance(entry, Slot) and entry not in kept:
                self.touch(step, entry.name, DROP)
            elif isinstance(entry, Family):
                # no Drop row: a Drop names every column it drops, and only the data names these
                entry.dropped_at = step
                self.note(step, entry.form,
                          f"keep drops the other columns {entry.step.name} (step "
                          f"{entry.step.number}) made from the data; only the data names them")
        self.entries = [e for e in self.entries if e in kept]

    def copy(self, step: Step, source: str, destination: str, *, force: bool) -> None:
        origin = self.read(step, source)
        existing = self._slot_index(destination)
        if existing is not None and not force:
            self.note(step, destination, f"column `{destination}` exists and force is false: "
                                         "the copy fails when run")
        made = Origin(destination, step, "copy", (origin,) if origin else ())
        self._put(step, made, (source,))

    def derive(self, step: Step, target: str, reads: Sequence[str], *,
               reads_all: bool = False) -> None:
        origins: list[Origin] = []
        read_names: list[str] = []
        for name in reads:
            origin = self.read(step, name, label=name != target)
            if origin is not None:
                origins.append(origin)
                read_names.append(name)
        possible: tuple[Origin, ...] = ()
        if reads_all:
            all_origins, all_names, possible = self.read_all(step, target)
            origins.extend(o for o in all_origins if o not in origins)
            read_names.extend(n for n in all_names if n not in read_names)
        made = Origin(target, step, "add", tuple(origins), TRANSFORMATION, possible=possible)
        self._put(step, made, read_names)
        if reads_all:  # the state written: `settle` adds the family members it read, once known
            self._readers[step.number] = self.entries[self._slot_index(target)].origin  # type: ignore[union-attr]

    def _put(self, step: Step, made: Origin, reads: Sequence[str]) -> None:
        # Only a known column is replaced: a column a family may also make from the data gets
        # the same values either way (the written one), so the family is left as it is.
        index = self._slot_index(made.name)
        if index is None:
            self._shadow(step, made.name)
            self.touch(step, made.name, ADD, reads)
            self.entries.append(Slot(made))
        else:
            self.touch(step, made.name, MODIFY, reads)
            action = "modify" if made.action == "add" else made.action
            self.entries[index] = Slot(Origin(made.name, step, action, made.sources,
                                              made.subtype, made.masking, made.possible))

    def _shadow(self, step: Step, name: str) -> None:
        """A column written under a name a family may also make from the data: whether that
        member existed (and is now written over) only the data knows."""
        for family in self.entries:
            if isinstance(family, Family) and family.admits(name) is not None:
                # the step's own reads of every column come before its write: they too
                family.doubts.append((step.number + 1, f"{_where(name, step)} may also be one of them, written over"))

    def swap(self, step: Step, first: str, second: str) -> None:
        a, b = self.find(first, step), self.find(second, step)
        for name, slot in ((first, a), (second, b)):
            if slot is None:
                self.note(step, name, f"column `{name}` does not exist: swap fails when run")
        if a is None or b is None or a is b:
            return
        self.touch(step, first, RENAME, (first,), new_name=second)
        self.touch(step, second, RENAME, (second,), new_name=first)
        a.origin, b.origin = (Origin(second, step, "rename", (a.origin,)),
                              Origin(first, step, "rename", (b.origin,)))

    def modify(self, step: Step, name: str, *, masking: bool = False) -> None:
        slot = self.find(name, step)
        if slot is None:
            self.note(step, name, f"column `{name}` does not exist before this directive")
            return
        self.touch(step, name, MODIFY, (name,))
        slot.origin = Origin(name, step, "modify", (slot.origin,), TRANSFORMATION, masking)

    def spawn(self, step: Step, column: str, *, kind: str, prefix: str, groups: int = 0) -> None:
        origin = self.read(step, column)
        if origin is None:
            return
        family = Family(step, origin, kind, prefix, groups, minus=tuple(self.names()) if kind == "any" else ())
        self.touch(step, family.form, ADD, (column,), pattern=True)
        self.pending.append((ADD, step, family, None))
        # the same directive on the same, unchanged column makes the same columns again
        same = [f for f in self.entries if isinstance(f, Family) and f.kind == kind
                and f.prefix == prefix and f.groups == groups and f.source is origin
                and not f.renames]
        retaken: list[Slot] = []
        for slot in self.slots():
            original = family.admits(slot.name)
            if original is None:
                continue
            if any(original in f.taken and slot.name == original
                   and _descends_from(slot.origin, f) for f in same):
                self.entries.remove(slot)
                family.taken[original] = step.number
                self.touch(step, original, ADD, (column,))
                retaken.append(Slot(self._member(family, original, original)))
                continue
            # the data decides whether this directive writes over the column: both may hold
            self.note(step, slot.name, f"`{slot.name}` exists and {step.name} writes over it if "
                                       "the data makes a column of that name")
            slot.origin = Origin(slot.name, step, "parse", (), TRANSFORMATION, possible=(
                slot.origin, self._member(family, slot.name, original)), choice=True)
        for f in same:
            f.replaced_by = family
        self.entries = [e for e in self.entries if not any(e is f for f in same)]
        self.entries.append(family)
        self.entries.extend(retaken)
        self.families.append(family)

    def filter(self, step: Step, names: Sequence[str], *, reads_all: bool = False) -> None:
        origins = [o for o in (self.read(step, n) for n in names) if o is not None]
        if reads_all:
            all_origins, _names, family_sources = self.read_all(step)
            origins.extend(o for o in all_origins if o not in origins)
            origins.extend(family_sources)
            self._readers[step.number] = len(self.filters)
        self.filters.append((step, tuple(origins)))

    def rename_all(self, step: Step, rename: Callable[[str], str], *, idempotent: bool) -> None:
        after: dict[str, str] = {}
        for entry in self.entries:
            if isinstance(entry, Family):
                # its members' Rename rows are written once they are known (`settle`)
                entry.renames.append((step, rename, idempotent))
                self.pending.append((RENAME, step, entry, None))
                continue
            new = rename(entry.name)
            if new in after:
                self.note(step, new, f"columns `{after[new]}` and `{entry.name}` would both be "
                                     f"called `{new}`: the directive fails when run")
            after[new] = entry.name
            if new != entry.name:
                self.touch(step, entry.name, RENAME, (entry.name,), new_name=new)
                entry.origin = Origin(new, step, "rename", (entry.origin,))

    def set_headers(self, step: Step, names: Sequence[str]) -> None:
        """Name columns by position. A position inside the columns a directive made from the
        data is only known from the data; such names are reported and kept as possible edges."""
        self._set_headers(step, names)
        self._check_unique(step)

    def _set_headers(self, step: Step, names: Sequence[str]) -> None:
        position = 0
        remaining = list(names)
        index = 0
        while remaining and index < len(self.entries):
            entry = self.entries[index]
            name = remaining[0]
            if isinstance(entry, Slot):
                self._rename_slot(step, entry, name)
                remaining.pop(0)
                position += 1
                index += 1
                continue
            family = entry
            is_last = index == len(self.entries) - 1
            # a numbered family none of whose members was taken out: its positions are 1, 2, ...
            if family.kind == "numbered" and not family.taken and not family.renames and is_last:
                number = 1
                while remaining:
                    slot = self._take(family, f"{family.prefix}{number}",
                                      f"{family.prefix}{number}", step)
                    self._rename_slot(step, slot, remaining.pop(0))
                    number += 1
                return
            self._positional_unknown(step, index, position, remaining)
            return
        if remaining:
            self.note(step, ",".join(remaining),
                      f"set-headers names {len(names)} columns; the schema has "
                      f"{len(names) - len(remaining)}: the rest are ignored when run")

    def _rename_slot(self, step: Step, slot: Slot, name: str) -> None:
        if slot.name == name:
            return
        self.touch(step, slot.name, RENAME, (slot.name,), new_name=name)
        slot.origin = Origin(name, step, "rename", (slot.origin,))

    def _check_unique(self, step: Step) -> None:
        seen: set[str] = set()
        for name in self.names():
            if name in seen:
                self.note(step, name, f"{step.name} leaves two columns called `{name}`")
            seen.add(name)

    def _positional_unknown(self, step: Step, index: int, position: int,
                            remaining: list[str]) -> None:
        region = self.entries[index:]
        families = [e for e in region if isinstance(e, Family)]
        slots = [e for e in region if isinstance(e, Slot)]
        # a region that is one family and members taken out of it: each name is one of its
        # columns for certain (made from the family's source); which one only the data knows
        single = len(families) == 1 and all(_descends_from(s.origin, families[0])
                                            for s in slots)
        made: list[Slot] = []
        for offset, name in enumerate(remaining):
            if single:
                family = families[0]
                base = Origin(f"(column {position + offset + 1}: {family.form})", family.step,
                              "parse", (family.source,), TRANSFORMATION)
                origin = Origin(name, step, "rename", (base,),
                                possible=tuple(s.origin for s in slots))
            else:
                origin = Origin(name, step, "rename", (), possible=tuple(
                    [s.origin for s in slots] + [f.source for f in families]))
            forms = ", ".join(f"{f.form} (step {f.step.number} {f.step.name})" for f in families)
            taken = ", ".join(f"`{s.name}`" for s in slots)
            self.note(step, name,
                      f"set-headers names position {position + offset + 1}, which falls among "
                      f"columns only the data names: {forms}"
                      + (f" and the columns {taken} among them" if taken else "")
                      + "; which column it renames is known only from the data", new_name=name)
            # no Rename row: a Rename names the column it renames, and only the data does
            made.append(Slot(origin))
        for family in families:
            family.doubts.append((step.number, f"{step.name} (step {step.number}) renames some of them by position"))
        for s in slots:
            self.note(step, s.name, f"`{s.name}` may have been renamed by this set-headers")
        self.entries[index:index] = made

    # -- the end

    def bind_outputs(self, output_columns: Sequence[str] | None) -> list[Slot]:
        if output_columns is None:
            return self.slots()
        bound: list[Slot] = []
        for name in output_columns:
            slot = self.find(name, None)
            if slot is None:
                self.note(None, name, f"output column `{name}` is not made by the recipe from the "
                                      "input columns")
                slot = Slot(Origin(name, None, "unknown"))
            bound.append(slot)
        wanted = set(output_columns)
        for slot in self.slots():
            if slot.name not in wanted:
                self.note(None, slot.name, f"the recipe leaves column `{slot.name}` but the "
                                           "output schema does not have it")
        return bound

    def settle(self, output_columns_known: bool) -> None:
        """Bind each "all columns" form a step touched to the members it stood for, where the
        recipe and the output schema name them all: a Read of a family becomes Reads of its
        members (and the step's Add or Modify names them in `reads`); an Add or Rename of one is
        already named by its members' rows, taken out by name. Where only the data names them, a
        Read or an Add keeps its form (DESIGN 9 allows it), with a note when the output schema
        was given and still could not bind it; a Rename is a note, never a row with a form."""
        groups: dict[tuple[int, str, str], list[tuple[Step, Family, str | None]]] = {}
        for label, step, family, target in self.pending:  # families of one form a step touched share its row
            groups.setdefault((step.number, label, family.form), []).append((step, family, target))
        rows: dict[tuple[int, str, str], list[Operation]] = {}  # (step, label, form) -> its members' rows
        unbound: set[tuple[int, str, str]] = set()
        reads: dict[tuple[int, str], list[str]] = {}  # (step, written column) -> members it read
        read_states: dict[int, list[Origin]] = {}  # step -> the members' states it read
        for key, items in groups.items():
            _number, label, form = key
            made = rows[key] = []
            doubts: dict[str, str] = {}  # "directive (step n)" -> why, for each family only the data names
            for step, family, target in items:
                members, why = self._members(family, family.step.number - 1 if label == ADD else step.number,
                                             output_columns_known)
                if members is None:
                    doubts.setdefault(f"{family.step.name} (step {family.step.number})", why)
                    continue
                if family.kind in ("numbered", "numbered2"):  # in the order the directive makes them
                    members.sort(key=lambda o: [int(n) for n in re.findall(r"\d+", o[len(family.prefix):])])
                for original in members:
                    name = family.name_at(original, step.number)
                    if label == READ:
                        made.append(Operation(step.number, step.line, step.text, step.name, name, READ))
                        if target is not None:
                            reads.setdefault((step.number, target), []).append(name)
                        read_states.setdefault(step.number, []).append(self._member(family, original, original, before=step.number))
                    elif label == ADD:
                        made.append(Operation(step.number, step.line, step.text, step.name, original, ADD,
                                              (family.source.name,)))
                    else:
                        renamed = family.name_at(original, step.number + 1)
                        if renamed != name:
                            made.append(Operation(step.number, step.line, step.text, step.name, name, RENAME,
                                                  (name,), renamed))
            if not doubts:
                continue
            unbound.add(key)
            step = items[0][0]
            shown = list(doubts)[:3]
            made_at = " and ".join(shown) + (f" and {len(doubts) - 3} more" if len(doubts) > 3 else "")
            why = "; ".join(dict.fromkeys(doubts[d] for d in shown))
            if label == RENAME:
                self.note(step, form, f"{step.name} renames the columns {made_at} made from the data ({form}); "
                                      f"{why}, so which columns it renames only the data knows")
            elif output_columns_known and label == READ:
                self.note(step, form, f"{step.name} reads the columns {made_at} made from the data ({form}); "
                                      f"{why}, so which columns it reads only the data knows")
            elif output_columns_known:
                self.note(step, form, f"{step.name} makes columns from the data ({form}); {why}, so which "
                                      "columns it makes only the data knows")
        for number, states in read_states.items():  # the members read join what the step's edges come from
            reader = self._readers.get(number)
            if isinstance(reader, int):
                step, origins = self.filters[reader]
                self.filters[reader] = (step, origins + tuple(states))
            elif reader is not None:  # settled before any traversal: the states are not yet walked
                object.__setattr__(reader, "sources", reader.sources + tuple(states))
        labelled = {(o.step, o.column) for o in self.operations if not o.pattern}
        out: list[Operation] = []
        for op in self.operations:
            key = (op.step, op.label, op.column)
            if op.pattern and key in rows and key not in unbound:
                for row in rows[key]:  # in the form's place; a column the step labelled already keeps its row
                    if (row.step, row.column) not in labelled:
                        labelled.add((row.step, row.column))
                        out.append(row)
                continue
            extra = reads.get((op.step, op.column)) if not op.pattern and op.label in (ADD, MODIFY) else None
            if extra:
                op = replace(op, reads=op.reads + tuple(n for n in dict.fromkeys(extra) if n not in op.reads))
            out.append(op)
        self.operations = out

    def _members(self, family: Family, after: int, output_columns_known: bool
                 ) -> tuple[list[str] | None, str]:
        """The members (names before renames) the family holds when the step after `after`
        runs, or None and why only the data names them: those taken out later, and what it
        holds at its end (`_rest`)."""
        rest, why = self._rest(family, output_columns_known)
        if rest is None:
            return None, why
        doubts = [w for until, w in family.doubts if until is None or after < until]
        if doubts:
            return None, "; ".join(dict.fromkeys(doubts))
        taken = [o for o, at in family.taken.items() if at is None or at > after]
        return taken + [o for o in rest if o not in taken], ""

    def _rest(self, family: Family, output_columns_known: bool) -> tuple[list[str] | None, str]:
        """What a family holds at its end and never gave up by name, or None and why: nothing
        when it lasts to the end and the output schema bound its members; for a family the same
        directive made again, what the later one holds whole that it had not given up; unknown
        after a keep. Worked out once along a chain of re-made families (as long as the recipe)."""
        cache = self._rests
        chain = [family]
        while id(chain[-1]) not in cache and chain[-1].replaced_by is not None:
            chain.append(chain[-1].replaced_by)
        for f in reversed(chain):
            if id(f) in cache:
                continue
            later = f.replaced_by
            if later is not None:
                rest, why = cache[id(later)]
                if later.doubts:
                    whole, why = None, "; ".join(dict.fromkeys(w for _u, w in later.doubts))
                else:
                    whole = None if rest is None else list(later.taken) + [o for o in rest if o not in later.taken]
                cache[id(f)] = (None, why) if whole is None else ([o for o in whole if o not in f.taken], "")
            elif f.dropped_at is not None:
                cache[id(f)] = (None, f"{f.dropped_at.name} (step {f.dropped_at.number}) drops those it does not name")
            elif not output_columns_known:
                cache[id(f)] = (None, "no output schema names them")
            else:
                cache[id(f)] = ([], "")
        return cache[id(family)]


def _where(name: str, step: Step | None) -> str:
    return f"the output column `{name}`" if step is None else f"`{name}` (step {step.number} {step.name})"


def _descends_from(origin: Origin, family: Family) -> bool:
    seen: set[int] = set()
    stack = [origin]
    while stack:
        state = stack.pop()
        if id(state) in seen:
            continue
        seen.add(id(state))
        if state.step is family.step and state.action == "parse":
            return True
        stack.extend(state.sources)
    return False


def _sources_first(root: Origin, known: Callable[[Origin], bool]) -> list[Origin]:
    """The states `root` is made from and itself, each after every state it is made from,
    leaving out those `known` accepts (and what only they lead to): without recursion, since a
    recipe's chain of states is as deep as the recipe is long."""
    order: list[Origin] = []
    seen: set[int] = set()
    stack: list[tuple[Origin, bool]] = [(root, False)]
    while stack:
        state, finished = stack.pop()
        if finished:
            order.append(state)
            continue
        if id(state) in seen or known(state):
            continue
        seen.add(id(state))
        stack.append((state, True))
        stack.extend((source, False) for source in reversed((*state.sources, *state.possible)))
    return order


# --- the answer -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Reach:
    identity: bool  # some path is identity all the way
    masked: bool  # every path passes a masking directive
    certain: bool  # some path uses only certain sources
    steps: frozenset[int]  # directives on certain paths
    maybe_steps: frozenset[int]  # directives only on possible paths


def _merge(a: _Reach, b: _Reach) -> _Reach:
    steps = a.steps | b.steps
    return _Reach(a.identity or b.identity, a.masked and b.masked, a.certain or b.certain, steps,
                  (a.maybe_steps | b.maybe_steps) - steps)


class RecipeLineage:
    """What a recipe does to columns: backward trees, forward sets, edges, labels, unresolved."""

    def __init__(self, walk: SchemaWalk, outputs: list[Slot], output_columns_known: bool):
        self.recipe = walk.recipe
        self.inputs: tuple[str, ...] = tuple(o.name for o in walk.inputs)
        self._walk = walk
        self._outputs = {slot.name: slot.origin for slot in outputs}
        self.outputs: tuple[str, ...] = tuple(self._outputs)
        self.families: tuple[str, ...] = () if output_columns_known else tuple(
            f.form for f in walk.entries if isinstance(f, Family))
        self._memo: dict[int, tuple[Origin, dict[Origin, _Reach]]] = {}
        self._trees: dict[int, tuple[Origin, TraceNode]] = {}
        self._filter_inputs: list[tuple[Step, dict[Origin, _Reach]]] = [
            (step, self._reach_all(origins)) for step, origins in walk.filters]

    @property
    def unresolved(self) -> tuple[Unresolved, ...]:
        return tuple(self._walk.unresolved)

    @property
    def operations(self) -> tuple[Operation, ...]:
        """Labels by step; an "all columns" form is replaced by the members bound to it
        (`SchemaWalk.settle`), and only a Read or an Add ever keeps one."""
        return tuple(sorted(self._walk.operations, key=lambda o: o.step))

    # -- traversal

    def _known(self, origin: Origin) -> bool:
        cached = self._memo.get(id(origin))
        return cached is not None and cached[0] is origin  # the origin kept in the memo: its id is not reused

    def _reach(self, origin: Origin) -> dict[Origin, _Reach]:
        for state in _sources_first(origin, self._known):  # each state after its sources: no recursion
            self._memo[id(state)] = (state, self._reach_of(state))
        return self._memo[id(origin)][1]

    def _reach_of(self, origin: Origin) -> dict[Origin, _Reach]:
        """The inputs `origin` reaches, its sources' reach known (`_reach`)."""
        result: dict[Origin, _Reach] = {}
        if origin.step is None:
            if origin.action == "input":
                result[origin] = _Reach(True, False, True, frozenset(), frozenset())
            return result
        hop_identity = origin.subtype == IDENTITY
        here = frozenset({origin.step.number})
        for certain, sources in ((True, origin.sources), (False, origin.possible)):
            for source in sources:
                for inp, r in self._reach(source).items():
                    sure = certain and r.certain
                    step_reach = _Reach(hop_identity and r.identity, origin.masking or r.masked,
                                        sure, r.steps | here if sure else frozenset(),
                                        r.maybe_steps | (frozenset() if sure else r.steps | here))
                    old = result.get(inp)
                    result[inp] = step_reach if old is None else _merge(old, step_reach)
        if origin.choice and not origin.sources:  # one of the alternatives holds: an input every one reaches for certain is certain
            alternatives = [self._reach(source) for source in origin.possible]
            for inp in set(alternatives[0]).intersection(*alternatives[1:]):
                if all(a[inp].certain for a in alternatives):
                    result[inp] = replace(result[inp], certain=True)
        return result

    def _reach_all(self, origins: Iterable[Origin]) -> dict[Origin, _Reach]:
        merged: dict[Origin, _Reach] = {}
        for origin in origins:
            for inp, r in self._reach(origin).items():
                old = merged.get(inp)
                merged[inp] = r if old is None else _merge(old, r)
        return merged

    def _origin(self, column: str) -> Origin:
        origin = self._outputs.get(column)
        if origin is None:
            if self.families:  # a member of a family the output schema did not bind: asked, not recorded
                candidates = [(f, f.admits(column)) for f in self._walk.entries if isinstance(f, Family)]
                candidates = [(f, original) for f, original in candidates if original is not None]
                if len(candidates) == 1:
                    return self._walk._member(candidates[0][0], column, candidates[0][1])
                if candidates:
                    return Origin(column, candidates[-1][0].step, "parse", (), TRANSFORMATION, possible=tuple(
                        self._walk._member(f, column, original) for f, original in candidates))
            raise KeyError(f"`{column}` is not an output column of the recipe; outputs: "
                           f"{', '.join(self.outputs)}"
                           + (f"; and {', '.join(self.families)}" if self.families else ""))
        return origin

    # -- questions

    def edges_of(self, column: str) -> tuple[RecipeEdge, ...]:
        origin = self._origin(column)
        edges = [RecipeEdge(inp.name, column, DIRECT, IDENTITY if r.identity else TRANSFORMATION,
                            r.masked, r.certain, tuple(sorted(r.steps)),
                            tuple(sorted(r.maybe_steps)))
                 for inp, r in self._reach(origin).items()]
        indirect: dict[str, tuple[bool, set[int]]] = {}
        for step, reach in self._filter_inputs:
            for inp, r in reach.items():
                certain, steps = indirect.get(inp.name, (False, set()))
                indirect[inp.name] = (certain or r.certain, steps | {step.number})
        edges.extend(RecipeEdge(name, column, INDIRECT, FILTER, False, certain,
                                tuple(sorted(steps)))
                     for name, (certain, steps) in indirect.items())
        order = {name: i for i, name in enumerate(self.inputs)}
        return tuple(sorted(edges, key=lambda e: (e.type, order[e.input])))

    @property
    def edges(self) -> tuple[RecipeEdge, ...]:
        return tuple(e for column in self.outputs for e in self.edges_of(column))

    def backward(self, column: str, *, direct_only: bool = False) -> frozenset[str]:
        """The input columns an output column came from (directly, or through filters)."""
        return frozenset(e.input for e in self.edges_of(column)
                         if not direct_only or e.type == DIRECT)

    def forward(self, column: str, *, direct_only: bool = False) -> frozenset[str]:
        """The output columns an input column impacted."""
        if column not in self.inputs:
            raise KeyError(f"`{column}` is not an input column; inputs: {', '.join(self.inputs)}")
        return frozenset(e.output for e in self.edges if e.input == column
                         and (not direct_only or e.type == DIRECT))

    def backward_tree(self, column: str) -> TraceNode:
        root = self._tree(self._origin(column))
        filters = tuple(FilterNode(step.number, step.text,
                                   tuple(self._tree(o) for o in origins))
                        for step, origins in self._walk.filters)
        return TraceNode(root.column, root.step, root.directive, root.action, root.subtype,
                         root.masking, root.sources, root.possible, filters)

    def _tree(self, origin: Origin) -> TraceNode:
        """The tree of `origin`: one node per state, shared where states are (so it is built in
        the recipe's size, whatever number of paths reach a state)."""
        trees = self._trees
        for state in _sources_first(origin, lambda o: id(o) in trees and trees[id(o)][0] is o):
            trees[id(state)] = (state, TraceNode(
                state.name, state.step.number if state.step else None, state.step.text if state.step else None,
                state.action, state.subtype, state.masking,
                tuple(trees[id(s)][1] for s in state.sources), tuple(trees[id(s)][1] for s in state.possible),
            ))
        return trees[id(origin)][1]


def lineage(recipe: Recipe | str, input_columns: Sequence[str],
            output_columns: Sequence[str] | None = None) -> RecipeLineage:
    """The recipe's column lineage from the input schema (and the run's output schema)."""
    if isinstance(recipe, str):
        recipe = parse(recipe)
    _check_columns("input", input_columns)
    if output_columns is not None:
        _check_columns("output", output_columns)
    walk = SchemaWalk(recipe, input_columns)
    for step in recipe.steps:
        step.directive.effect(walk, step)
    outputs = walk.bind_outputs(output_columns)
    walk.settle(output_columns is not None)
    return RecipeLineage(walk, outputs, output_columns is not None)


def _check_columns(which: str, columns: Sequence[str]) -> None:
    if isinstance(columns, str):
        raise RecipeError(f"{which} columns are a list of names, not one string")
    seen: set[str] = set()
    for name in columns:
        if not isinstance(name, str) or not name:
            raise RecipeError(f"{which} column names are non-empty strings, got {name!r}")
        if name in seen:
            raise RecipeError(f"{which} column `{name}` is listed twice")
        seen.add(name)
