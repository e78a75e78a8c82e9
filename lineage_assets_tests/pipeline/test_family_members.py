"""The determinism check's sampled families as names (`checks.family_members`): a canonical name
is a member exactly when its family (`Identity.family`) is sampled, so rows are marked by a join
on their name instead of computing each row's family (no Spark needed here)."""

from __future__ import annotations

import datetime as dt
import random

from lineage_assets.identity.aliases import AliasTimeline, Statement, micros
from lineage_assets.identity.resolver import Identity
from lineage_assets.pipeline.checks import family_members

T0 = dt.datetime(2024, 3, 1, tzinfo=dt.timezone.utc)
NAMES = [("file", f"/lake/t{i}") for i in range(6)] + [("hive://metastore:9083", f"db.t{i}") for i in range(6)]


def _identity(ties: list[tuple[tuple[str, str], tuple[str, str]]]) -> Identity:
    statements = [Statement(alias, micros(T0 + dt.timedelta(minutes=i)), f"e{i}", canonical) for i, (alias, canonical) in enumerate(ties)]
    return Identity(aliases=AliasTimeline.of(statements))


def test_a_family_brings_every_name_an_alias_ties_to_it_and_nothing_else():
    path, table, other = ("file", "/lake/t0"), ("hive://metastore:9083", "db.t0"), ("file", "/lake/t5")
    identity = _identity([(path, table)])
    family = identity.family(*path)
    assert identity.family(*table) == family
    assert family_members([family], identity) == sorted({path, table})
    assert family_members([identity.family(*other)], identity) == [other]  # a name no alias ties: itself
    assert family_members([], identity) == []


def test_a_chain_of_aliases_over_time_is_one_family():
    a, b, c = NAMES[0], NAMES[6], NAMES[7]
    identity = _identity([(a, b), (a, c)])  # a was b's, then c's: all three are one family
    assert family_members([identity.family(*b)], identity) == sorted({a, b, c})


def test_members_are_exactly_the_names_whose_family_is_sampled():
    rng = random.Random(11)
    for _ in range(200):
        ties = [(rng.choice(NAMES), rng.choice(NAMES)) for _ in range(rng.randint(0, 8))]
        identity = _identity(ties)
        families = sorted({identity.family(*n) for n in NAMES})
        sampled = rng.sample(families, rng.randint(0, len(families)))
        expected = sorted(n for n in NAMES if identity.family(*n) in set(sampled))
        members = family_members(sampled, identity)
        assert [n for n in members if n in NAMES] == expected, ties
        assert set(members) - set(NAMES) == set(), ties  # nothing outside the names the statements and families know
