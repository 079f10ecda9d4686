"""Picking pairs to ask about: nearest the threshold, no text too often, no topic twice."""

from __future__ import annotations

import numpy as np

from engine.review.picking import pair_vectors, per_text_cap, pick_spread, pick_uncertain


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_nearest_the_threshold_first() -> None:
    scores = np.array([0.95, 0.81, 0.60, 0.78, 0.30])
    texts = np.arange(10)
    picked = pick_uncertain(scores, texts[0::2], texts[1::2], 0.8, 3)
    assert picked == [1, 3, 0]     # 0.95 is 0.15 off, 0.60 is 0.20 off


def test_no_text_in_more_than_two_of_twenty() -> None:
    # Text 0 is in every one of 60 candidate pairs, all right at the threshold.
    scores = np.full(60, 0.8)
    a = np.zeros(60, dtype=int)
    b = np.arange(1, 61)
    picked = pick_uncertain(scores, a, b, 0.8, 20)
    assert per_text_cap(20) == 2
    assert len(picked) == 2      # only two may name text 0, and no other pair exists


def test_paraphrases_of_one_question_do_not_fill_the_list() -> None:
    rng = np.random.default_rng(0)
    topics = _unit(rng.normal(size=(21, 32)))
    # 20 pairs about topic 0, exactly at the threshold; one pair each about 20 other topics,
    # a little further off. Without the penalty the first 20 would all be topic 0.
    vec_a = np.vstack([topics[[0] * 20], topics[1:]])
    vec_b = _unit(vec_a + 0.05 * rng.normal(size=vec_a.shape))
    scores = np.concatenate([np.full(20, 0.80), np.full(20, 0.83)])
    ids = np.arange(80)
    picked = pick_uncertain(scores, ids[:40], ids[40:], 0.8, 20,
                            vectors=pair_vectors(vec_a, vec_b))
    same_topic = [i for i in picked if i < 20]
    assert len(picked) == 20 and len(set(picked)) == 20
    assert 1 <= len(same_topic) <= 2
    # ...and without pair vectors the pick is by uncertainty alone.
    assert sorted(pick_uncertain(scores, ids[:40], ids[40:], 0.8, 20)) == list(range(20))


def test_pick_spread_takes_any_cost_lowest_first_with_the_same_caps():
    """`pick_spread` is `pick_uncertain` for any measure: lowest cost first (a negative cost
    comes before every distance), and still no text in more pairs than its cap."""
    cost = np.array([0.30, -0.50, 0.10, 0.20, 0.05])
    a = np.array([1, 2, 3, 4, 5])
    b = np.array([10, 11, 12, 13, 14])
    assert pick_spread(cost, a, b, 3) == [1, 4, 2]
    shared = np.array([7, 7, 7, 7, 8])   # text 7 is in four pairs, the cap is 1 of 5
    assert pick_spread(cost, shared, b, 5, cap=1) == [1, 4]
    scores = np.array([0.81, 0.2, 0.79, 0.95])
    assert pick_uncertain(scores, a[:4], b[:4], 0.8, 2) == pick_spread(
        np.abs(scores - 0.8), a[:4], b[:4], 2)
