"""`no_cycle_collection`: the collector is off inside, back as it was afterwards, whatever happens."""

from __future__ import annotations

import gc
import weakref

import pytest

from lineage_assets.cycle_collection import no_cycle_collection


@pytest.fixture
def collector_state():
    enabled = gc.isenabled()
    yield
    (gc.enable if enabled else gc.disable)()


def test_the_collector_is_off_inside_and_back_on_after(collector_state):
    gc.enable()
    with no_cycle_collection():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_nested_blocks_leave_it_off_until_the_outer_one_ends(collector_state):
    gc.enable()
    with no_cycle_collection():
        with no_cycle_collection():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off(collector_state):
    gc.disable()
    with no_cycle_collection():
        pass
    assert not gc.isenabled()


def test_an_exception_inside_turns_it_back_on_and_a_cycle_made_inside_is_collected_later(collector_state):
    gc.enable()

    class Node:
        pass

    with pytest.raises(RuntimeError):
        with no_cycle_collection():
            a, b = Node(), Node()
            a.other, b.other = b, a  # a cycle: reference counting alone never frees it
            alive = weakref.ref(a)
            del a, b
            # many times the allocations that start an automatic collection while it is on
            kept = [[] for _ in range(20 * gc.get_threshold()[0])]
            survived_inside = alive() is not None
            del kept
            raise RuntimeError("inside")
    assert survived_inside
    # back on (an automatic collection may already have freed the cycle: it is garbage now)
    assert gc.isenabled()
    gc.collect()
    assert alive() is None
