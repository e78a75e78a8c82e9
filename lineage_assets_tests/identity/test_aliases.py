"""Alias statements and their resolution as of a time (DESIGN.md section 10), in Python."""

from __future__ import annotations

import datetime as dt
import itertools
import random

from lineage_assets.identity.aliases import AliasTimeline, Statement, facet_statements, micros

T0 = dt.datetime(2024, 3, 1, tzinfo=dt.timezone.utc)
PATH = ("file", "/warehouse/tbl1")
TABLE = ("hive://metastore:9083", "default.tbl1")
OTHER = ("hive://other:9083", "db.tbl1")


def at(minutes: int) -> int:
    return micros(T0 + dt.timedelta(minutes=minutes))


def said(alias, canonical, minutes, event="e") -> Statement:
    return Statement(alias, at(minutes), f"{event}{minutes:04d}", canonical)


def test_the_table_identifier_is_canonical_and_every_other_name_its_alias():
    stated = facet_statements(PATH, [(*TABLE, "TABLE"), ("s3://b", "/warehouse/tbl1", "LOCATION")])
    assert stated == [(PATH, TABLE, None), (TABLE, TABLE, "TABLE"), (("s3://b", "/warehouse/tbl1"), TABLE, "LOCATION")]


def test_without_a_table_identifier_the_others_are_aliases_of_the_dataset_and_nothing_is_said_of_it():
    stated = facet_statements(PATH, [("s3://b", "/x", "LOCATION"), (*PATH, None)])
    assert stated == [(("s3://b", "/x"), PATH, "LOCATION")]


def test_a_later_facet_without_a_table_does_not_take_the_path_from_its_table():
    """DESIGN.md section 10: the TABLE identifier is canonical when there is one. At 10:00 the
    path's facet names its table; at 11:00 another producer's facet on the path lists only the
    path under another scheme: the three names are still one node, the table (before, the later
    facet made the path canonical again and left the table on its own)."""
    s3a = ("s3a://b", "/warehouse/tbl1")

    def facet(minutes: int, identifiers) -> list[Statement]:
        return [Statement(alias, at(minutes), f"e{minutes}", canonical) for alias, canonical, _ in facet_statements(PATH, identifiers)]

    timeline = AliasTimeline.of(facet(10, [(*TABLE, "TABLE")]) + facet(11, [(*s3a, "LOCATION")]))
    assert {name: timeline.resolve(name) for name in (PATH, s3a, TABLE)} == {PATH: TABLE, s3a: TABLE, TABLE: TABLE}
    assert timeline.current() == {PATH: TABLE, s3a: TABLE}
    later = AliasTimeline.of(facet(10, [(*TABLE, "TABLE")]) + facet(11, [(*s3a, "LOCATION")]) + facet(12, [(*OTHER, "TABLE")]))
    assert later.resolve(PATH) == OTHER and later.resolve(s3a) == OTHER  # a later TABLE does re-point them


def test_several_table_identifiers_pick_the_smallest():
    stated = dict((a, c) for a, c, _ in facet_statements(PATH, [(*OTHER, "TABLE"), (*TABLE, "table")]))
    assert set(stated.values()) == {min(TABLE, OTHER)}


def test_resolution_is_as_of_a_time_and_the_later_statement_wins():
    timeline = AliasTimeline.of([said(PATH, TABLE, 10), said(PATH, OTHER, 20)])
    assert timeline.resolve(PATH, at(5)) == PATH  # not yet known
    assert timeline.resolve(PATH, at(10)) == TABLE  # known from the statement's own time
    assert timeline.resolve(PATH, at(19)) == TABLE
    assert timeline.resolve(PATH, at(20)) == OTHER  # two producers disagree: the later one
    assert timeline.resolve(PATH) == OTHER
    assert timeline.current() == {PATH: OTHER}


def test_chains_are_followed_as_of_the_same_time():
    a, b, c = ("n", "a"), ("n", "b"), ("n", "c")
    timeline = AliasTimeline.of([said(a, b, 10), said(b, c, 20)])
    assert timeline.resolve(a, at(15)) == b
    assert timeline.resolve(a, at(20)) == c
    assert timeline.current() == {a: c, b: c}


def test_a_cycle_resolves_to_its_smallest_name():
    a, b = ("n", "a"), ("n", "b")
    timeline = AliasTimeline.of([said(a, b, 10), said(b, a, 20)])
    assert timeline.resolve(a, at(25)) == a and timeline.resolve(b, at(25)) == a
    assert timeline.resolve(b, at(15)) == b  # before the second statement, b is canonical


def test_only_changes_are_kept_and_a_repeat_is_no_news():
    timeline = AliasTimeline.of([said(PATH, TABLE, 10), said(PATH, TABLE, 20), said(PATH, OTHER, 30), said(PATH, TABLE, 40)])
    assert [(s.learnt_at, s.canonical) for s in timeline.changes[PATH]] == [(at(10), TABLE), (at(30), OTHER), (at(40), TABLE)]
    assert AliasTimeline.of([said(TABLE, TABLE, 10)]).changes == {}  # a canonical stating itself changes nothing


def test_a_same_time_disagreement_is_settled_by_the_event_id():
    first = Statement(PATH, at(10), "e-a", TABLE)
    second = Statement(PATH, at(10), "e-b", OTHER)
    for order in itertools.permutations([first, second]):
        assert AliasTimeline.of(order).resolve(PATH, at(10)) == OTHER


def test_any_order_of_statements_gives_the_same_answers():
    names = [("n", x) for x in "abcde"]
    rng = random.Random(7)
    statements = [said(rng.choice(names), rng.choice(names), rng.randrange(100), event=f"e{i}") for i in range(40)]
    reference = AliasTimeline.of(statements)
    for seed in range(5):
        shuffled = statements[:]
        random.Random(seed).shuffle(shuffled)
        timeline = AliasTimeline.of(shuffled)
        assert timeline.changes == reference.changes
        for name, minute in itertools.product(names, range(0, 101, 7)):
            assert timeline.resolve(name, at(minute)) == reference.resolve(name, at(minute))


def test_micros_of_aware_and_naive_times():
    assert micros(dt.datetime(1970, 1, 1, 0, 0, 1, 5, tzinfo=dt.timezone.utc)) == 1_000_005
    assert micros(dt.datetime(2024, 3, 1)) == micros(dt.datetime(2024, 3, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))))
