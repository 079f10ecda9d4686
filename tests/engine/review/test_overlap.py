"""Lexical overlap next to a similarity: token Jaccard and the content words that differ."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.review.overlap import content_word_differs, jaccard, overlap, words


def test_jaccard_counts_distinct_lowercased_words() -> None:
    # {how, to, learn, python} vs {how, to, learn, java}: 3 shared of 5.
    assert jaccard("How to learn Python?", "how to learn JAVA") == pytest.approx(3 / 5)
    assert jaccard("same words here", "Here words SAME!") == 1.0
    assert jaccard("", "") == 1.0
    assert jaccard("alpha", "beta") == 0.0


def test_one_letter_words_count() -> None:
    assert words("Is C faster than R?") == ["is", "c", "faster", "than", "r"]
    assert overlap("Is C faster than Go?", "Is R faster than Go?").differing == ("c", "r")


def test_a_differing_content_word_is_named_but_only_a_flip_marks_a_close_pair() -> None:
    found = overlap("How do I bake bread?", "How do I bake a cake?")
    assert found.differing == ("bread", "cake")
    assert not found.marked(similarity=0.85, threshold=0.8)   # named, highlighted, no ⚠
    assert found.note() == "overlap 0.57, differs: bread / cake"
    # Arithmetic operations are listed opposites: a different operation is a different task.
    found = overlap("Add two numbers", "Multiply two numbers")
    assert found.only_a == ("add",) and found.only_b == ("multiply",)
    assert found.marked(similarity=0.85, threshold=0.8)
    assert not found.marked(similarity=0.7, threshold=0.8)   # not called a duplicate anyway
    assert found.note() == "overlap 0.50, differs: add / multiply (opposite: add / multiply)"


def test_first_and_last_are_marked_and_highlighted() -> None:
    """The issue's pair (similarity 0.849): "first" and "last" are stop words, so neither was
    named, highlighted or marked."""
    from engine.review.diff import word_diff

    a, b = "Who was the first emperor of Rome?", "Who was the last emperor of Rome?"
    found = overlap(a, b)
    assert (found.only_a, found.only_b) == (("first",), ("last",))
    assert found.marked(similarity=0.849, threshold=0.8)
    assert "number: first / last" in found.note()
    spans_a, spans_b = word_diff(a, b)
    assert [s.text.strip() for s in spans_a if s.changed] == ["first"]
    assert [s.text.strip() for s in spans_b if s.changed] == ["last"]


def test_forms_of_a_word_and_synonyms_the_model_agrees_on_are_no_difference() -> None:
    quick = overlap("How can I learn to type quickly?", "How can I learn to type fast?")
    assert quick.differing == () and not quick.marked(0.95, 0.8)
    learn = overlap("How do I learn French?", "Learning French: where do I start?")
    assert "learning" not in learn.differing and not learn.marked(0.9, 0.8)
    assert overlap("Should I buy a car?", "Should I purchase a car?").differing == ()
    # Words the model's embeddings keep apart stay named.
    assert overlap("Is Python hard?", "Is Java hard?").differing == ("python", "java")


def test_forms_of_a_word_count_as_shared_in_the_overlap() -> None:
    assert jaccard("eggs", "egg and cakes") == pytest.approx(1 / 3)   # {egg(s)}, and, cakes
    assert overlap("eggs", "egg and cakes").jaccard > 0
    assert overlap("eggs", "egg and cakes").only_a == ()
    assert jaccard("How to learn Python?", "learning python") == pytest.approx(2 / 4)


def test_negation_on_one_side_marks_the_pair() -> None:
    for a, b in [("Why can't I sleep?", "Why can I sleep?"),
                 ("Is coffee not bad for you?", "Is coffee bad for you?"),
                 ("Have you never lied?", "Have you lied?"),
                 ("Can I cross the border without a visa?", "Can I cross the border with a visa?"),
                 ("Is there no life on Mars?", "Is there life on Mars?")]:
        found = overlap(a, b)
        assert found.marked(0.9, 0.8), (a, b)
        assert found.flips.negation and "negation" in found.note()
    # "don't" is "do not": the contraction is highlighted as the negating word.
    from engine.review.diff import word_diff

    spans, _ = word_diff("Why don't cats swim?", "Why do cats swim?")
    assert [s.text.strip() for s in spans if s.changed] == ["don't"]
    # Both negated, or a question left open: no flip.
    assert not overlap("Why don't cats swim?", "Why do cats never swim?").marked(0.9, 0.8)
    assert not overlap("Is it safe or not?", "Is it safe?").marked(0.9, 0.8)
    assert not overlap("Was he an atheist? Why or why not?", "Was he an atheist?").flips


def test_a_number_replaced_by_another_marks_the_pair() -> None:
    found = overlap("How do I add 3 numbers?", "How do I add 4 numbers?")
    assert (found.only_a, found.only_b) == (("3",), ("4",)) and found.marked(0.9, 0.8)
    assert overlap("Best phone under 15000?", "Best phone under 20000?").marked(0.9, 0.8)
    assert overlap("Lose weight in six months", "Lose weight in seven months").marked(0.9, 0.8)
    assert overlap("What caused World War II?", "What caused World War I and III?").flips
    # One value written two ways, or a number on one side only: no flip.
    assert not overlap("Detox in two days", "Detox in 2 days").flips
    assert not overlap("What caused World War II?", "What caused World War 2?").flips
    assert not overlap("Nikon D1300 review", "Nikon 1300D review").flips
    one_sided = overlap("How can I lose weight?", "How can I lose weight in 2017?")
    assert one_sided.only_b == ("2017",) and not one_sided.marked(0.9, 0.8)


def test_opposites_and_before_after_mark_the_pair() -> None:
    for a, b in [("What is the best phone?", "What is the worst phone?"),
                 ("How do I gain weight?", "How do I lose weight?"),
                 ("What happened before the war?", "What happened after the war?"),
                 ("Should I buy gold now?", "Should I sell gold now?")]:
        found = overlap(a, b)
        assert found.flips.opposites and found.marked(0.9, 0.8), (a, b)
        assert len(found.only_a) == 1 and len(found.only_b) == 1


def test_a_name_replaced_by_another_marks_the_pair() -> None:
    found = overlap("Gun laws of the NRA in Alaska?", "Gun laws of the NRA in Maine?")
    assert found.flips.names == (("alaska",), ("maine",)) and found.marked(0.9, 0.8)
    # The first word of a sentence is no name, nor is a word of a title-cased text.
    assert not overlap("Apples or pears?", "Pears or plums?").flips.names
    assert not overlap("What Is The Best Way To Learn Guitar",
                       "What Is The Best Way To Learn Piano").flips
    # A name on one side only is more precise, not another question.
    assert not overlap("How do I learn to cook?", "How do I learn to cook on Quora?").flips

def test_the_rule_before_is_kept_as_the_benchmarks_baseline() -> None:
    """benchmarks/meaning_flags.py measures the new ⚠ against this: any content word one
    text lacks, forms and synonyms included, stop words ("first", "not") never."""
    assert content_word_differs("How to learn quickly", "How to learn fast")
    assert content_word_differs("How do I learn French?", "Learning French")
    assert not content_word_differs("Who was the first emperor of Rome?",
                                    "Who was the last emperor of Rome?")
    assert not content_word_differs("Is it safe?", "Is it not safe?")


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


def test_a_note_names_a_dozen_differing_words_a_side_and_counts_the_rest():
    """Two documents differ in hundreds of words: the note beside the pair (one line in
    Review) names twelve a side and says how many more; the lists themselves are whole."""
    a = " ".join(f"alpha{i}" for i in range(40)) + " shared words here"
    b = "kettle shared words here"
    found = overlap(a, b)
    many = len(found.only_a)
    assert many > 30 and found.only_b == ("kettle",)
    shown = found.note().split("differs: ")[1]
    left, right = shown.split(" / ")
    assert left == " ".join(found.only_a[:12]) + f" … +{many - 12}"
    assert right == "kettle"
    # the reasons a pair is flagged name a few words a side too
    years = "2001 2002 2003 2004 2005 2006 2007 2008"
    flagged = overlap(f"Prices in {years} for apples", "Prices in 2019 for apples")
    assert flagged.note().endswith("(number: 2001 2002 2003 2004 2005 2006 … +2 / 2019)")
