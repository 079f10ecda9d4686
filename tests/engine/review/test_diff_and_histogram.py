import numpy as np
import pytest

from engine.review.diff import word_diff
from engine.review.histogram import similarity_histogram


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


def test_histogram_range_starts_near_the_smallest_value():
    hist = similarity_histogram(np.array([0.62, 0.7, 0.99, np.nan]), bins=10)
    assert hist.total == 3 and hist.counts.sum() == 3
    assert hist.edges[0] == pytest.approx(0.6)
