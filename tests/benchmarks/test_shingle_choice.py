"""MinHash's paragraph rule: how it is chosen, and that the product follows the rule chosen
on the documents benchmark's validation half (where the choice has been measured)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import shingle_choice

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "documents.json"
ACROSS, WITHIN = shingle_choice.RULES


def _f1(across: float, within: float) -> dict:
    return {ACROSS: {"all": {"f1": across}}, WITHIN: {"all": {"f1": within}}}


def test_the_higher_validation_f1_wins_and_a_tie_keeps_the_rule_with_no_schema_step():
    assert shingle_choice.choose(_f1(0.98, 0.99)) == WITHIN
    assert shingle_choice.choose(_f1(0.99, 0.98)) == ACROSS
    assert shingle_choice.choose(_f1(0.99, 0.99)) == WITHIN     # the rule since schema v11


def test_the_product_follows_the_rule_chosen_on_validation():
    assert shingle_choice.product_rule() == WITHIN
    if not RESULTS.exists():
        return   # not measured yet: nothing to hold the product to
    result = json.loads(RESULTS.read_text()).get("result", {})
    duplens = result.get("arms", {}).get("duplens", {})
    choice = duplens.get("shingle_choice")
    if choice is None:
        return   # recorded before the choice was measured, or a run that did not get there
    assert shingle_choice.choose(choice) == shingle_choice.product_rule()
