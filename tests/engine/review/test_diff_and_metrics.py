import numpy as np
import pytest
from sklearn.metrics import f1_score

from engine.review.diff import word_diff
from engine.review.metrics import similarity_histogram, threshold_curve


def changed_words(spans):
    return [s.text.strip() for s in spans if s.changed]


def test_word_diff_flags_only_the_differing_words():
    a, b = word_diff("How do I learn Python quickly?", "How do I learn Java quickly?")
    assert changed_words(a) == ["Python"] and changed_words(b) == ["Java"]
    assert "".join(s.text for s in a) == "How do I learn Python quickly?"


def test_word_diff_ignores_case_and_edge_punctuation():
    a, b = word_diff("Why is the sky blue?", "why is the SKY blue")
    assert not changed_words(a) and not changed_words(b)


def test_word_diff_of_unrelated_and_empty_texts():
    a, b = word_diff("", "Completely different")
    assert a == [] and changed_words(b) == ["Completely", "different"]


def test_threshold_curve_agrees_with_sklearn_f1():
    scores = np.array([0.95, 0.9, 0.85, 0.8, 0.7, 0.6, 0.55, 0.5])
    labels = np.array([1, 1, 0, 1, 0, 1, 0, 0])
    curve = threshold_curve(scores, labels)
    expected = max(f1_score(labels, scores >= t) for t in scores)
    assert curve.best_f1 == pytest.approx(expected)
    assert f1_score(labels, scores >= curve.best_threshold) == pytest.approx(expected)
    assert curve.positives == 4 and curve.negatives == 4


def test_threshold_curve_with_one_class_is_not_usable():
    curve = threshold_curve(np.array([0.9, 0.8]), np.array([1, 1]))
    assert not curve.usable and curve.best_threshold is None


def test_histogram_range_starts_near_the_smallest_value():
    hist = similarity_histogram(np.array([0.62, 0.7, 0.99, np.nan]), bins=10)
    assert hist.total == 3 and hist.counts.sum() == 3
    assert hist.edges[0] == pytest.approx(0.6)
