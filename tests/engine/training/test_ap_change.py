"""The change in AP and its paired bootstrap interval: better or worse only when the
interval excludes 0, else how many more pairs to label."""

from __future__ import annotations

import numpy as np
import pytest

from engine.pair_metrics import threshold_curve
from engine.training.ap_change import (
    BETTER,
    MIN_MORE_PAIRS,
    NO_CHANGE,
    UNDECIDED,
    WORSE,
    ap_change,
    claim,
    evidence,
    more_needed,
)


def scores(n: int, separation: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """`n` pairs, 40% duplicates, whose similarity is noise plus `separation` for the
    duplicates: the larger it is, the better a model ranks them."""
    rng = np.random.default_rng(seed)
    labels = rng.random(n) < 0.4
    labels[:2] = [True, False]
    return rng.random(n) + separation * labels, labels


def test_a_clearly_better_model_on_many_pairs_is_called_better():
    before, labels = scores(1000, 0.3, seed=1)
    after = before + 0.4 * labels   # every duplicate moves up
    change = ap_change(before, after, labels, resamples=500)
    assert change.before == pytest.approx(100 * threshold_curve(before, labels).average_precision)
    assert change.after == pytest.approx(100 * threshold_curve(after, labels).average_precision)
    assert 0 < change.low < change.change < change.high
    assert change.conclusion == BETTER and change.shown and change.more_pairs is None
    assert claim(change) == "The new model ranks the held-out pairs better"
    worse = ap_change(after, before, labels, resamples=500)
    assert worse.high < 0 and worse.conclusion == WORSE
    assert claim(worse) == "The new model ranks the held-out pairs worse"


def test_identical_scores_give_the_interval_0_0_and_no_claim():
    before, labels = scores(60, 0.3, seed=2)
    change = ap_change(before, before.copy(), labels, resamples=300)
    assert (change.low, change.high, change.change) == (0.0, 0.0, 0.0)
    assert change.conclusion == NO_CHANGE and not change.shown
    assert change.more_pairs is None and change.more_held_out is None
    assert "better" not in claim(change) and "No difference" in claim(change)
    assert change.as_dict()["interval"] == [0.0, 0.0]


def test_a_small_change_on_few_pairs_asks_for_more_pairs():
    before, labels = scores(38, 0.5, seed=3)
    after = before + np.random.default_rng(4).normal(0, 0.05, len(before))
    change = ap_change(before, after, labels, held_out_share=0.5)
    assert change.change != 0 and change.low <= 0 <= change.high
    assert change.conclusion == UNDECIDED and not change.shown
    assert change.more_pairs >= MIN_MORE_PAIRS and change.more_pairs > 0
    # Half of the labelled pairs are held out: twice as many to label as to hold out.
    assert change.more_pairs >= 2 * change.more_held_out
    assert claim(change) == (f"Not enough labelled pairs to tell whether the new model ranks "
                             f"better or worse (38 held out); label about "
                             f"{change.more_pairs:,} more")
    assert evidence(change).startswith(f"average precision {change.before:.2f} → "
                                       f"{change.after:.2f} ({change.change:+.2f} points, "
                                       f"95% interval {change.low:+.2f} to")


def test_a_fixed_seed_gives_the_same_interval_twice_and_another_seed_another():
    before, labels = scores(50, 0.3, seed=5)
    after = before + np.random.default_rng(6).normal(0, 0.1, len(before))
    first, second = (ap_change(before, after, labels, seed=7) for _ in range(2))
    assert (first.low, first.high) == (second.low, second.high)
    other = ap_change(before, after, labels, seed=8)
    assert (other.low, other.high) != (first.low, first.high)


def test_resamples_with_one_kind_of_label_are_skipped():
    labels = np.array([True, False, False])
    before, after = np.array([0.9, 0.5, 0.1]), np.array([0.4, 0.5, 0.1])
    change = ap_change(before, after, labels, resamples=400)
    # A draw holds the duplicate and a non-duplicate with chance 1 − (1/27 + 8/27).
    assert 0 < change.used < change.resamples
    assert change.used == pytest.approx(400 * 18 / 27, rel=0.2)


def test_more_needed_follows_one_over_root_n_and_rounds_up():
    # Half-width twice the change: four times the pairs, 3 × 100 more held out.
    assert more_needed(100, 2.0, 1.0) == (300, 300)
    assert more_needed(100, 2.0, -1.0) == (300, 300)
    assert more_needed(100, 2.0, 1.0, held_out_share=0.5) == (300, 600)
    assert more_needed(38, 1.2, 1.0) == (17, 20)          # 54.72 held out needed
    assert more_needed(1000, 1.05, 1.0) == (103, 150)
    assert more_needed(100, 0.5, 1.0) == (0, MIN_MORE_PAIRS)  # never fewer than the floor
    with pytest.raises(ValueError):
        more_needed(100, 1.0, 0.0)


def test_one_kind_of_label_or_unequal_lengths_are_refused():
    with pytest.raises(ValueError):
        ap_change([0.1, 0.2], [0.3, 0.4], [True, True])
    with pytest.raises(ValueError):
        ap_change([0.1, 0.2], [0.3], [True, False])
