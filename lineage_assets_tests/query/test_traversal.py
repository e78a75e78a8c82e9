"""The traversal engine (`query.traversal`): breadth-first walks that stop when nothing new is
found, 0-cost hops into free nodes, edges taken by position."""

from __future__ import annotations

import time

import numpy as np
import pytest

from lineage_assets.query.traversal import MAX_DEPTH, Adjacency, check_depth


def _chain(n: int) -> Adjacency:
    """0 -> 1 -> ... -> n-1."""
    return Adjacency(n, range(n - 1), range(1, n))


def test_hops_are_the_fewest_edges_from_a_seed():
    adj = _chain(6)
    assert adj.walk([0], 3) == {0: 0, 1: 1, 2: 2, 3: 3}
    assert adj.walk([5], 3, backward=True) == {5: 0, 4: 1, 3: 2, 2: 3}
    assert adj.walk([2], 1, both=True) == {2: 0, 1: 1, 3: 1}
    assert adj.walk([0, 2], 1) == {0: 0, 1: 1, 2: 0, 3: 1}  # the nearer seed wins


def test_depth_zero_is_the_seeds_alone():
    assert _chain(3).walk([1], 0, both=True) == {1: 0}


def test_a_cycle_ends_and_a_huge_depth_costs_what_the_answer_costs():
    n = 13
    ring = Adjacency(n, range(n), [(i + 1) % n for i in range(n)])
    small = ring.walk([0], 20)
    began = time.perf_counter()
    huge = ring.walk([0], MAX_DEPTH)
    assert time.perf_counter() - began < 0.5  # each node once, not once per hop of the bound
    assert huge == small == {i: i for i in range(n)}


def test_entering_a_free_node_costs_no_hop_only_when_bridging():
    # 0 -> 1 (free) -> 2 -> 3
    adj = Adjacency(4, [0, 1, 2], [1, 2, 3], free=[False, True, False, False])
    assert adj.walk([0], 1) == {0: 0, 1: 1}
    assert adj.walk([0], 1, bridge=True) == {0: 0, 1: 0, 2: 1}
    assert adj.walk([0], 2, bridge=True) == {0: 0, 1: 0, 2: 1, 3: 2}


def test_a_cheaper_path_found_later_replaces_a_dearer_one():
    # 0 -> 1 -> 2 -> 3 and 0 -> 4 (free) -> 3: node 3 is 0 hops away through the free node
    adj = Adjacency(5, [0, 1, 2, 0, 4], [1, 2, 3, 4, 3], free=[False, False, False, False, True])
    assert adj.walk([0], 3, bridge=True)[3] == 1
    assert adj.walk([0], 3)[3] == 2


def test_nodes_at_the_depth_are_not_expanded_even_into_free_nodes():
    adj = Adjacency(3, [0, 1], [1, 2], free=[False, False, True])
    assert adj.walk([0], 1, bridge=True) == {0: 0, 1: 1}


def test_edges_from_gives_edge_positions_in_either_direction():
    adj = Adjacency(4, [0, 0, 1, 2], [1, 2, 3, 3])
    assert adj.edges_from([0]).tolist() == [0, 1]
    assert adj.edges_from([3], backward=True).tolist() == [2, 3]
    assert adj.edges_from([0, 0, 1]).tolist() == [0, 1, 2]
    assert adj.edges_from([]).tolist() == []


def test_edges_must_name_known_nodes():
    with pytest.raises(ValueError, match="0..size-1"):
        Adjacency(2, [0], [2])
    with pytest.raises(ValueError, match="one flag per node"):
        Adjacency(2, [0], [1], free=[True])


@pytest.mark.parametrize("depth", [-1, MAX_DEPTH + 1, 2**31, 2.0, "3", True, None])
def test_a_depth_out_of_bounds_is_a_value_error(depth):
    with pytest.raises(ValueError, match="depth must be an integer"):
        check_depth(depth)


def test_depth_accepts_numpy_integers():
    assert check_depth(np.int64(4)) == 4
