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


def test_a_one_letter_content_word_is_kept_and_a_contraction_end_is_not() -> None:
    found = overlap("Is vitamin D safe?", "Is vitamin B12 safe?")
    assert (found.only_a, found.only_b) == (("d",), ("b12",))
    assert found.note().endswith("differs: d / b12")
    assert overlap("What's a Galaxy S?", "What is a Galaxy?").differing == ("s",)
    assert overlap("I'd say it's fine", "I say it is fine").differing == ()


def test_the_comparison_highlights_exactly_the_words_the_summary_names() -> None:
    """The issue's pair: shared words in another order ("forecast", "rain", "the") were
    highlighted while the line below named only the truly different words."""
    from engine.review.diff import word_diff

    a = "Will it rain tomorrow according to the forecast?"
    b = "What does the forecast say about rain this weekend?"
    spans_a, spans_b = word_diff(a, b)
    marked_a = [s.text.strip() for s in spans_a if s.changed]
    marked_b = [s.text.strip() for s in spans_b if s.changed]
    found = overlap(a, b)
    assert found.only_a == ("tomorrow", "according") and marked_a == ["tomorrow", "according"]
    assert found.only_b == ("does", "say", "weekend")
    assert marked_b == ["does", "say", "weekend?"]
    assert not {"forecast", "rain", "the"} & {w.strip("?").lower() for w in marked_a + marked_b}


_WORDS = ["add", "Add", "two", "numbers", "multiply", "Python?", "python,", "don't", "C",
          "c++", "e-mail", "the", "a", "is", "of", "learn", "Learn!", "(copy", "3)", "_x_",
          "Straße", "STRASSE", "über", "naïve", "ΣΟΦΟΣ", "σοφος", "—", "...", "42", "D",
          "vitamin", "what's", "S"]


@given(st.lists(st.sampled_from(_WORDS), max_size=12),
       st.lists(st.sampled_from(_WORDS), max_size=12),
       st.sampled_from([" ", "  ", "\t", " \n"]))
@settings(max_examples=400, deadline=None)
def test_what_is_highlighted_is_what_the_summary_names(a_words, b_words, gap) -> None:
    """Every highlighted word holds a word the summary names, every named word is in a
    highlighted word, and no word both texts use is highlighted."""
    from engine.review.diff import word_diff

    a, b = gap.join(a_words), gap.join(b_words)
    found = overlap(a, b)
    for spans, named, other in ((word_diff(a, b)[0], found.only_a, b),
                                (word_diff(a, b)[1], found.only_b, a)):
        assert "".join(s.text for s in spans) in (a, b)
        keys = {w.casefold() for w in named}
        marked = {w.casefold() for s in spans if s.changed for w in words(s.text)}
        unmarked = [s for s in spans if not s.changed]
        assert keys <= marked
        assert all(keys & {w.casefold() for w in words(s.text)} for s in spans if s.changed)
        assert not any(keys & {w.casefold() for w in words(s.text)} for s in unmarked)
        assert not keys & {w.casefold() for w in words(other)}
