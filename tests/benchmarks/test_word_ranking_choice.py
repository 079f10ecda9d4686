"""The word ranking's rule, the changed-word queries it is asked, its page, and that the
product's EVERY_WORD is the setting chosen on validation (where it has been measured)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from benchmarks import word_ranking_choice as wrc
from engine.store.text_words import EVERY_WORD, query_words

RESULTS = (Path(__file__).resolve().parents[2] / "benchmarks" / "results"
           / "word_ranking_choice.json")


def _arm(*shares: float) -> dict:
    return {f"set {i}": {"queries": 10, "named": s, "ms": {"median": 2.0, "p95": 3.0}}
            for i, s in enumerate(shares)}


def _arms(off: tuple[float, float], on: tuple[float, float]) -> dict:
    arms = {arm: _arm(0.5, 0.5) for arm in wrc.ARMS}
    for shares, setting in ((off, False), (on, True)):
        for arm, share in zip(wrc.SETTINGS[setting], shares, strict=True):
            arms[arm] = _arm(share, share)
    return arms


def test_every_word_is_asked_first_only_when_more_than_a_point_better():
    assert wrc.choose(_arms(off=(0.90, 0.90), on=(0.92, 0.92))) is True
    assert wrc.choose(_arms(off=(0.90, 0.90), on=(0.91, 0.90))) is False
    assert wrc.choose(_arms(off=(0.90, 0.90), on=(0.80, 0.99))) is False   # the mean


def test_one_word_is_changed_to_one_the_text_does_not_hold():
    rng = np.random.default_rng(0)
    text = "The ferry stayed tied up, while our sea wall was mended at low tide."
    vocabulary = ["ferry", "harbour", "pastry", "lantern", "tide"]
    for _ in range(30):
        changed = wrc.one_word_changed(text, vocabulary, rng)
        before, after = query_words(text), query_words(changed)
        assert len(after) == len(before) and after[0] == before[0]
        assert after[-1] == before[-1]
        differ = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
        assert len(differ) == 1 and after[differ[0]] in {"harbour", "pastry", "lantern"}
    assert wrc.one_word_changed("two words", vocabulary, rng) == "two words"


def test_the_page_marks_the_chosen_setting():
    sets = {"typed, as drawn": 10, "typed, a word changed": 10}
    arms = {arm: {s: {"queries": 10, "named": 0.5, "ms": {"median": 2.0, "p95": 3.0}}
                  for s in sets} for arm in wrc.ARMS}
    for arm in wrc.SETTINGS[True]:
        arms[arm]["typed, a word changed"]["named"] = 0.9
    result = {"documents": 2000, "seed": 2, "left_out_seed": 3, "changed_seed": 4,
              "queries": sets, "arms": arms, "chosen": True, "product": False,
              "engine": {"commit": "abc"}, "cpu": {"cores": 2}}
    page = wrc.present(result)
    (table,) = page["tables"]
    marked = [row[0] for row in table["rows"] if row[0].endswith("(chosen)")]
    assert marked == [f"{arm} (chosen)" for arm in wrc.SETTINGS[True]]
    assert any("70.0% on against 50.0% off" in n for n in page["notes"])
    assert any("holds it to the choice" in n for n in page["notes"])


def test_the_product_asks_for_every_word_as_chosen_on_validation():
    if not RESULTS.exists():
        return   # not measured yet: nothing to hold the product to
    result = json.loads(RESULTS.read_text()).get("result", {})
    if "chosen" not in result:
        return   # a skipped run (no server, no corpus)
    assert result["chosen"] == EVERY_WORD
