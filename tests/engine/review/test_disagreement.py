"""Ask me's other order: where the model and its second opinion disagree, surest first."""

from __future__ import annotations

import numpy as np
import pytest

from engine.review.disagreement import (
    AGREEMENT_COST,
    MOST_SCORED,
    SCORED_PER_PAIR,
    disagreement_cost,
    disagrees,
    shortlist,
)


def test_disagreements_cost_least_the_surer_the_judge_the_less():
    scores = np.array([0.90, 0.90, 0.70, 0.70, 0.90, 0.70])
    opinions = np.array([0.05, 0.40, 0.95, 0.55, 0.95, 0.05])
    cost = disagreement_cost(scores, 0.8, opinions)
    # model duplicate / judge sure not; model duplicate / judge leaning not; model not /
    # judge sure duplicate; model not / judge leaning duplicate; both agree (twice)
    assert list(np.argsort(cost, kind="stable")) == [0, 2, 1, 3, 4, 5]
    assert (cost[:4] < 0.5).all() and (cost[4:] >= 1.0).all()
    assert [disagrees(s, 0.8, o) for s, o in zip(scores, opinions, strict=True)] == \
        [True, True, True, True, False, False]


def test_a_pair_at_the_threshold_is_the_models_duplicate():
    assert disagrees(0.8, 0.8, 0.2) and not disagrees(0.8, 0.8, 0.5)
    assert disagreement_cost(np.array([0.8]), 0.8, np.array([0.2]))[0] == pytest.approx(0.2)
    # even a judge torn between the two stands on a side: 0.5 is its "duplicate"
    assert disagreement_cost(np.array([0.7, 0.9]), 0.8, np.array([0.5, 0.5])).tolist() == \
        pytest.approx([0.5, 0.5 + AGREEMENT_COST])


def test_no_agreement_comes_before_a_disagreement_even_when_it_repeats_one():
    """The spread-out pick's redundancy penalty cannot lift a disagreement past a pair both
    agree on."""
    from engine.review.picking import REDUNDANCY_WEIGHT, SIMILAR_PAIRS

    worst_disagreement = 0.5 + REDUNDANCY_WEIGHT * (1.0 - SIMILAR_PAIRS)
    best_agreement = disagreement_cost(np.array([0.9]), 0.8, np.array([0.5]))[0]
    assert worst_disagreement < best_agreement


def test_only_a_shortlist_nearest_the_threshold_is_scored():
    scores = np.linspace(0.0, 1.0, 10_001)
    short = shortlist(scores, 0.5, 3)
    assert len(short) == 3 * SCORED_PER_PAIR
    assert np.abs(scores[short] - 0.5).max() <= np.abs(np.delete(scores, short) - 0.5).min()
    assert len(shortlist(scores, 0.5, 10_000)) == MOST_SCORED
