"""The rarest-words count's rule, the queries it is chosen on, its page, and that the product
ranks by the count chosen on the validation queries (where the choice has been measured)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from benchmarks import rarest_words_choice as rwc
from engine.store.text_words import MOST_WORDS, RAREST_WORDS, query_words

RESULTS = (Path(__file__).resolve().parents[2] / "benchmarks" / "results"
           / "rarest_words_choice.json")


def _count(pasted: float, typed: float) -> dict:
    return {kind: {"queries": 10, "named": named, "ms": {"median": 5.0, "p95": 9.0}}
            for kind, named in (("pasted", pasted), ("typed", typed))}


def test_the_rule_takes_the_fewest_words_within_a_point_of_the_best():
    counts = {"4": _count(0.80, 0.70), "8": _count(0.90, 0.85), "16": _count(0.905, 0.85),
              "32": _count(0.93, 0.88)}
    assert rwc.choose(counts) == 32                     # 2.25 points better than 16
    counts["32"] = _count(0.91, 0.86)
    assert rwc.choose(counts) == 8                      # 16 and 32 within a point of 8
    assert rwc.choose({"64": _count(0.5, 0.5), "4": _count(0.5, 0.5)}) == 4


def test_one_word_is_left_out_never_the_first_or_last_of_those_a_phrase_reads():
    rng = np.random.default_rng(0)
    text = "The ferry stayed tied up, while our sea wall was mended at low tide."
    for _ in range(50):
        shorter = rwc.left_one_out(text, rng)
        before, after = query_words(text), query_words(shorter)
        assert len(after) == len(before) - 1
        assert after[0] == before[0] and after[-1] == before[-1]
        # the rest in order: exactly one word gone, so no phrase of the whole holds it
        assert any(after == before[:i] + before[i + 1:] for i in range(1, len(before) - 1))
    long = " ".join(f"w{i}" for i in range(MOST_WORDS + 20))
    for _ in range(50):
        gone = set(query_words(long)) - set(query_words(rwc.left_one_out(long, rng)))
        (word,) = gone
        assert 1 <= int(word[1:]) <= MOST_WORDS - 2     # within the words a phrase reads
    assert rwc.left_one_out("two words", rng) == "two words"


def test_the_page_marks_the_choice_and_says_whether_the_product_follows_it():
    result = {"documents": 2000, "seed": 2, "left_out_seed": 3,
              "queries": {"pasted": 10, "typed": 10},
              "counts": {"4": _count(0.5, 0.4), "8": _count(0.9, 0.8)}, "chosen": 8,
              "product": 8, "engine": {"commit": "abc"}, "cpu": {"cores": 2}}
    page = rwc.present(result)
    (table,) = page["tables"]
    assert [row[0] for row in table["rows"]] == ["4", "8 (chosen)"]
    assert any(n.startswith("Chosen: 8. The product ranked by 8 when this ran.")
               for n in page["notes"])
    other = rwc.present({**result, "product": 16})
    assert any("set to the choice afterwards" in n for n in other["notes"])


def test_the_product_ranks_by_the_count_chosen_on_validation():
    if not RESULTS.exists():
        return   # not measured yet: nothing to hold the product to
    result = json.loads(RESULTS.read_text())
    if "chosen" not in result:
        return   # a skipped run (no corpus)
    assert result["chosen"] == RAREST_WORDS
