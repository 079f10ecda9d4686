"""Lexical overlap next to a similarity: token Jaccard and the content words that differ."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.review.overlap import jaccard, overlap, words


def test_jaccard_counts_distinct_lowercased_words() -> None:
    # {how, to, learn, python} vs {how, to, learn, java}: 3 shared of 5.
    assert jaccard("How to learn Python?", "how to learn JAVA") == pytest.approx(3 / 5)
    assert jaccard("same words here", "Here words SAME!") == 1.0
    assert jaccard("", "") == 1.0
    assert jaccard("alpha", "beta") == 0.0


def test_one_letter_words_count() -> None:
    assert words("Is C faster than R?") == ["is", "c", "faster", "than", "r"]
    assert overlap("Is C faster than Go?", "Is R faster than Go?").differing == ("c", "r")


def test_a_differing_content_word_is_named_and_marks_a_close_pair() -> None:
    found = overlap("Add two numbers", "Multiply two numbers")
    assert found.only_a == ("add",) and found.only_b == ("multiply",)
    assert found.marked(similarity=0.85, threshold=0.8)
    assert not found.marked(similarity=0.7, threshold=0.8)   # not called a duplicate anyway
    assert found.note() == "overlap 0.50, differs: add / multiply"


def test_stop_words_and_moved_words_are_no_difference() -> None:
    found = overlap("What is the best way to learn Python?", "Learn Python: what's the best way?")
    # "is", "to" are stop words, "s" is what is left of "what's"; "learn" only moved.
    assert found.differing == ()
    assert not found.marked(0.95, 0.8)
    assert found.note().startswith("overlap ")


def test_one_sided_difference_is_shown_with_a_dash() -> None:
    found = overlap("How do I reset my password", "How do I reset my router password")
    assert found.only_a == () and found.only_b == ("router",)
    assert found.note().endswith("differs: – / router")


_WORDS = ["add", "Add", "two", "numbers", "multiply", "Python?", "python,", "don't", "C",
          "c++", "e-mail", "the", "a", "is", "of", "learn", "Learn!", "(copy", "3)", "_x_",
          "Straße", "STRASSE", "über", "naïve", "ΣΟΦΟΣ", "σοφος", "—", "...", "42"]


@given(st.lists(st.sampled_from(_WORDS), max_size=12),
       st.lists(st.sampled_from(_WORDS), max_size=12),
       st.sampled_from([" ", "  ", "\t", " \n"]))
@settings(max_examples=400, deadline=None)
def test_the_differing_words_equal_what_the_word_diff_names(a_words, b_words, gap) -> None:
    """The overlap skips the word diff where case folding cannot make a diff key and a word
    disagree; it must name exactly what the diff-based rule names, casefold texts included."""
    from engine.review.diff import word_diff
    from engine.review.overlap import _only

    a, b = gap.join(a_words), gap.join(b_words)
    wa, wb = set(words(a)), set(words(b))
    spans_a, spans_b = word_diff(a, b)
    got = overlap(a, b)
    assert (got.only_a, got.only_b) == (_only(spans_a, wb), _only(spans_b, wa))
