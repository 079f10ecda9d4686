"""The PostgreSQL word ranking's rule, the changed-word queries it is asked, its page, and
that the product's ranking is the one chosen on validation (where it has been measured)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from benchmarks import postgres_words_choice as pwc
from engine.store.text_words import query_words

RESULTS = (Path(__file__).resolve().parents[2] / "benchmarks" / "results"
           / "postgres_words_choice.json")
EVERY, RAREST = pwc.RANKINGS


def _arm(*shares: float) -> dict:
    return {f"set {i}": {"queries": 10, "named": s, "ms": {"median": 2.0, "p95": 3.0}}
            for i, s in enumerate(shares)}


def test_the_rarest_words_win_only_by_more_than_a_point():
    assert pwc.choose({EVERY: _arm(0.80, 0.60), RAREST: _arm(0.85, 0.70)}) == RAREST
    assert pwc.choose({EVERY: _arm(0.80, 0.60), RAREST: _arm(0.81, 0.60)}) == EVERY
    assert pwc.choose({EVERY: _arm(0.90, 0.90), RAREST: _arm(0.80, 0.80)}) == EVERY


def test_one_word_is_changed_to_one_the_text_does_not_hold():
    rng = np.random.default_rng(0)
    text = "The ferry stayed tied up, while our sea wall was mended at low tide."
    vocabulary = ["ferry", "harbour", "pastry", "lantern", "tide"]
    for _ in range(30):
        changed = pwc.one_word_changed(text, vocabulary, rng)
        before, after = query_words(text), query_words(changed)
        assert len(after) == len(before) and after[0] == before[0]
        assert after[-1] == before[-1]
        differ = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
        assert len(differ) == 1 and after[differ[0]] in {"harbour", "pastry", "lantern"}
    assert pwc.one_word_changed("two words", vocabulary, rng) == "two words"


def test_the_page_marks_the_choice():
    sets = {"typed, as drawn": 10, "typed, a word changed": 10}
    arms = {arm: {s: {"queries": 10, "named": 0.5, "ms": {"median": 2.0, "p95": 3.0}}
                  for s in sets} for arm in pwc.ARMS}
    arms[RAREST]["typed, a word changed"]["named"] = 0.9
    result = {"documents": 2000, "seed": 2, "left_out_seed": 3, "changed_seed": 4,
              "queries": sets, "arms": arms, "chosen": RAREST, "product": RAREST,
              "engine": {"commit": "abc"}, "cpu": {"cores": 2}}
    page = pwc.present(result)
    (table,) = page["tables"]
    assert [row[0] for row in table["rows"]][-1] == RAREST + " (chosen)"
    assert table["rows"][-1][2] == "90%" and table["rows"][-1][3] == "70.0%"


def test_the_product_ranks_as_chosen_on_validation():
    if not RESULTS.exists():
        return   # not measured yet: nothing to hold the product to
    result = json.loads(RESULTS.read_text()).get("result", {})
    if "chosen" not in result:
        return   # a skipped run (no server, no corpus)
    assert result["chosen"] == pwc.PRODUCT
