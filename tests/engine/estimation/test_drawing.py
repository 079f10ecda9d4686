"""Drawing pairs at random inside a stratum: permanent random numbers and rejection."""

from __future__ import annotations

import numpy as np

from engine.estimation.drawing import (
    draw_unlisted,
    in_priority_order,
    next_listed,
    outside_keys,
    pair_keys,
    priorities,
    split_keys,
)


def test_pair_keys_are_unordered_and_split_back():
    keys = pair_keys(np.array([5, 9, 70000]), np.array([3, 12, 2]))
    assert keys.tolist() == pair_keys(np.array([3, 12, 2]), np.array([5, 9, 70000])).tolist()
    low, high = split_keys(keys)
    assert low.tolist() == [3, 9, 2] and high.tolist() == [5, 12, 70000]


def test_priorities_are_uniform_fixed_per_pair_and_depend_on_the_seed():
    keys = pair_keys(np.arange(0, 20000), np.arange(1, 20001))
    u = priorities(7, keys)
    assert ((u >= 0) & (u < 1)).all()
    assert np.allclose(np.histogram(u, bins=10, range=(0, 1))[0] / len(u), 0.1, atol=0.01)
    assert np.array_equal(u[:100], priorities(7, keys[:100]))    # the pair's own number
    assert not np.array_equal(u, priorities(8, keys))


def test_a_stratum_draws_in_priority_order_skipping_what_was_drawn():
    keys = pair_keys(np.arange(10), np.arange(10) + 100)
    order = in_priority_order(3, keys)
    assert sorted(order.tolist()) == sorted(keys.tolist())
    first = next_listed(order, set(), 3)
    assert first == order[:3].tolist()
    assert next_listed(order, {order[0], order[2]}, 2) == [order[1], order[3]]
    # A stratum that loses or gains pairs keeps the order of the pairs it still has.
    kept = in_priority_order(3, np.r_[keys[::2], pair_keys(np.array([50]), np.array([51]))])
    assert [k for k in kept.tolist() if k in set(keys.tolist())] == \
        [k for k in order.tolist() if k in set(keys[::2].tolist())]


def test_unlisted_draws_are_uniform_over_pairs_that_are_not_candidates():
    ids = np.arange(8)
    candidates = np.sort(pair_keys(np.array([0, 1, 2]), np.array([1, 2, 3])))
    allowed = set(outside_keys(ids, candidates).tolist())
    assert len(allowed) == 28 - 3
    rng = np.random.default_rng(0)
    counts: dict[int, int] = {}
    for _ in range(2000):
        for key in draw_unlisted(ids, candidates, [], 1, rng, len(allowed)):
            counts[key] = counts.get(key, 0) + 1
    assert set(counts) == allowed
    assert max(counts.values()) / min(counts.values()) < 1.6     # 80 expected each
    drawn = draw_unlisted(ids, candidates, list(allowed)[:20], 10, rng, 5)
    assert len(drawn) == 5 and set(drawn) == set(list(allowed)[20:])
