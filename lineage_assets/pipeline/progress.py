"""What remains to be done, as properties of the latest commit.

Progress is recorded by the commit of the work it stands for (DESIGN.md section 11), so it can
never run ahead of the work: a landing batch adds the days its events fall in to
`event_days_to_build` in the same commit as the events; the `events` commit of those days takes
them off and moves `fold_from` back to the earliest of them; a fold from that day on clears it
(days built after the fold's last day stay pending) and marks the snapshot stale; the snapshot
commit clears that. A failed or killed run commits nothing, so its work is still pending at the
next sensor tick and is requested again.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from lineage_assets.warehouse import commits

EVENT_DAYS = "event_days_to_build"
FOLD_FROM = "fold_from"
FOLD_THROUGH = "fold_through"  # the last day the fold has processed
EVENTS_THROUGH = "events_through"  # the last day `events` has been built for
SNAPSHOT_STALE = "snapshot_stale"


@dataclass(frozen=True)
class Pending:
    event_days: tuple[str, ...]  # days whose `events` partition must be (re)built
    fold_from: str | None  # the earliest day whose events changed since the fold read them
    fold_through: str | None
    snapshot_stale: bool
    events_through: str | None = None

    @classmethod
    def of(cls, commit: commits.Commit) -> "Pending":
        props = commit.props
        return cls(
            tuple(sorted(props.get(EVENT_DAYS) or ())), props.get(FOLD_FROM), props.get(FOLD_THROUGH), bool(props.get(SNAPSHOT_STALE)),
            props.get(EVENTS_THROUGH),
        )

    def fold_range(self) -> tuple[str, str] | None:
        """The days the fold is behind on: from `fold_from` to the last day built or folded."""
        if self.fold_from is None:
            return None
        return self.fold_from, max(d for d in (self.fold_from, self.fold_through, self.events_through) if d)

    @property
    def nothing(self) -> bool:
        return not self.event_days and self.fold_from is None and not self.snapshot_stale


def after_landing(base: commits.Commit, days) -> dict:
    return {EVENT_DAYS: sorted(set(Pending.of(base).event_days) | {str(d) for d in days})}


def after_events(base: commits.Commit, built: list[str]) -> dict:
    pending = Pending.of(base)
    left = sorted(set(pending.event_days) - set(built))
    earliest = min([*built, *([pending.fold_from] if pending.fold_from else [])], default=None)
    through = max([*built, *([pending.events_through] if pending.events_through else [])], default=None)
    return {EVENT_DAYS: left, FOLD_FROM: earliest, EVENTS_THROUGH: through}


def after_fold(base: commits.Commit, first: dt.date, last: dt.date, floor: dt.date | None = None) -> dict:
    """A fold of [first, last] has done what `fold_from` asked only when that day is inside it:
    an earlier day (a fold asked for a later range) or a later one (built days the fold has not
    reached) stays pending, and days built after `last` (`events_through`) are pending from
    the day after it. `floor`: the first daily partition (the start date); a `fold_from`
    before it (a start date raised since) asks for a fold from the floor, which is no partition
    earlier."""
    pending = Pending.of(base)
    asked = pending.fold_from
    if asked is not None and floor is not None:
        asked = max(asked, str(floor))
    done = asked is not None and str(first) <= asked <= str(last)
    fold_from = None if done else pending.fold_from
    # `last` is at least the day folded through before (`run_fold` extends a range to it), so days
    # built after it were never folded: they stay pending from the next day on (before: a fold of
    # a part of the pending range, say from the UI, cleared `fold_from`, and the built days after
    # it were never folded, nothing pending)
    if pending.events_through is not None and pending.events_through > str(last):
        after = str(last + dt.timedelta(days=1))
        fold_from = after if fold_from is None else min(fold_from, after)
    return {FOLD_FROM: fold_from, FOLD_THROUGH: str(last), SNAPSHOT_STALE: True}


def after_snapshot() -> dict:
    return {SNAPSHOT_STALE: None}
