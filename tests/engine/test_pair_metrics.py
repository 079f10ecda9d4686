"""The one AP / best-F1 computation agrees with scikit-learn and sentence-transformers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score, f1_score, precision_recall_curve

from engine.pair_metrics import sampled_points, threshold_curve

SCORES = np.array([0.95, 0.90, 0.80, 0.72, 0.70, 0.55, 0.40, 0.30])
LABELS = np.array([1, 1, 0, 1, 1, 0, 0, 0])


def test_a_hand_made_example():
    curve = threshold_curve(SCORES, LABELS)
    # Calling duplicates from 0.70 up catches all 4 with one false alarm: F1 = 8/9.
    assert curve.best_f1 == pytest.approx(8 / 9)
    assert curve.best_threshold == 0.70
    assert (curve.best_precision, curve.best_recall) == pytest.approx((0.8, 1.0))
    # One point per distinct score, rising, as scikit-learn's curve has them.
    assert list(curve.thresholds) == sorted(SCORES)
    assert curve.thresholds[curve.best_index] == 0.70


def test_one_kind_of_label_is_not_usable():
    curve = threshold_curve(np.array([0.9, 0.8]), np.array([1, 1]))
    assert not curve.usable and curve.best_threshold is None
    assert len(sampled_points(curve, 10)) == 0


labelled = st.integers(2, 60).flatmap(lambda n: st.tuples(
    # Few distinct values, so ties are common: a threshold must take a tie whole.
    st.lists(st.integers(0, 12).map(lambda v: v / 12), min_size=n, max_size=n),
    st.lists(st.booleans(), min_size=n, max_size=n)))


@settings(max_examples=300, deadline=None)
@given(labelled)
def test_agrees_with_scikit_learn_to_the_last_digit(data):
    scores, labels = np.array(data[0]), np.array(data[1], dtype=int)
    curve = threshold_curve(scores, labels)
    if labels.min() == labels.max():
        assert not curve.usable
        return
    assert curve.average_precision == pytest.approx(
        average_precision_score(labels, scores), abs=1e-12)
    precision, recall, thresholds = precision_recall_curve(labels, scores)
    assert np.array_equal(curve.thresholds, thresholds)
    assert np.allclose(curve.precision, precision[:-1], atol=1e-12)
    assert np.allclose(curve.recall, recall[:-1], atol=1e-12)
    best = max(f1_score(labels, scores >= t) for t in np.unique(scores))
    assert curve.best_f1 == pytest.approx(best, abs=1e-12)
    assert f1_score(labels, scores >= curve.best_threshold) == pytest.approx(best, abs=1e-12)
    # Among equally good thresholds the highest is named.
    assert not any(f1_score(labels, scores >= t) >= best - 1e-12
                   for t in np.unique(scores) if t > curve.best_threshold)


# An exact F1 tie (2/3 at two thresholds) that CI's Hypothesis run found.
_TIED = ([int(c) / 12 for c in "00110111222222000000000121111112222222"],
         [c == "T" for c in "FFTTFFFTTFTTTTFFFFFFFTTTTFFFFFFFFFTTTT"])


@settings(max_examples=200, deadline=None)
@given(labelled)
@example(_TIED)
def test_agrees_with_sentence_transformers_evaluator(data):
    from sentence_transformers.sentence_transformer.evaluation import (
        BinaryClassificationEvaluator,
    )

    scores, labels = np.array(data[0]), np.array(data[1], dtype=int)
    if labels.min() == labels.max():
        return
    curve = threshold_curve(scores, labels)
    f1, precision, recall, threshold = BinaryClassificationEvaluator.find_best_f1_and_threshold(
        scores, labels, high_score_more_similar=True)
    assert curve.best_f1 == pytest.approx(f1, abs=1e-12)
    if np.array_equal(scores >= curve.best_threshold, scores >= threshold):
        # Theirs is the midpoint to the next lower score: the same pairs are called duplicates.
        assert (curve.best_precision, curve.best_recall) == pytest.approx(
            (precision, recall), abs=1e-12)
    else:
        # An exact F1 tie that their running maximum breaks by rounding noise
        # (2PR/(P+R) differs in the last bit); ours names the highest of the tied thresholds.
        assert f1_score(labels, scores >= threshold) == pytest.approx(f1, abs=1e-12)
        assert curve.best_threshold > threshold


def test_sampled_points_keep_both_ends():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 5000)
    curve = threshold_curve(rng.random(5000) + 0.3 * labels, labels)
    keep = sampled_points(curve, 200)
    assert len(keep) == 200 and keep[0] == 0 and keep[-1] == len(curve.thresholds) - 1
