"""Where a Jaccard sits on the similarity scale: how the rules are named and compared, and
that the product's rule is among the best on both benchmarks' validation halves (where
both have been measured)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import jaccard_scale_choice as choice

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def _side(f1s: dict[float, float], product: float = 0.5) -> dict:
    return {"threshold": 0.75, "product_reads_as": product,
            "rules": {choice.rule_name(r): {"reads_as": r, "all": {
                "precision": f, "recall": f, "f1": f}, "decoy": 0.0, "reworded_decoy": 0.0}
                for r, f in f1s.items()}}


def test_rules_are_named_by_the_jaccard_that_reads_as_the_threshold():
    from engine.documents.minhash import JACCARD_POWER, on_similarity_scale

    assert choice.power_of(0.75) == pytest.approx(1.0)
    assert choice.rule_name(0.75) == "the Jaccard itself"
    assert choice.power_of(0.5) == pytest.approx(JACCARD_POWER)
    assert choice.product_reads_as() == 0.5
    for reads_as in choice.GRID:
        assert reads_as ** choice.power_of(reads_as) == pytest.approx(0.75)
    assert on_similarity_scale(choice.product_reads_as()) == pytest.approx(0.75)


def test_the_best_rules_are_those_of_the_best_mean_validation_f1():
    grid = choice.GRID
    documents = _side({r: 0.99 for r in grid})
    revisions = _side({r: 0.98 if r <= 0.55 else 0.96 for r in grid})
    best, mean = choice.best_rules({"documents": documents, "document_revisions": revisions})
    assert best == [choice.rule_name(r) for r in grid if r <= 0.55]
    assert mean[choice.rule_name(0.75)] == pytest.approx((0.99 + 0.96) / 2)


def test_the_table_waits_for_both_benchmarks_and_marks_the_product():
    documents = {"result": {"arms": {"duplens": {"jaccard_scale_choice": _side(
        {r: 0.99 for r in choice.GRID})}}}}
    revisions = {"result": {"arms": {"duplens": {"jaccard_scale_choice": _side(
        {r: 0.98 if r <= 0.55 else 0.96 for r in choice.GRID})}}}}

    def pct(x: float) -> str:
        return f"{100 * x:.0f}%"

    assert choice.choice_table({"documents": documents}, pct) is None
    table = choice.choice_table({"documents": documents, "document_revisions": revisions},
                                pct)
    marked = {row[0] for row in table["rows"] if "the product's" in row[0]}
    assert marked == {"Jaccard 0.5 reads as 0.75 (best, the product's)"}
    assert table["rows"][0][0] == "the Jaccard itself"


def test_the_product_uses_a_rule_of_the_best_validation_f1():
    sides = {}
    for name in choice.SIDES:
        path = RESULTS / f"{name}.json"
        if not path.exists():
            return   # not measured yet: nothing to hold the product to
        arm = json.loads(path.read_text()).get("result", {}).get("arms", {}).get("duplens", {})
        if not arm.get("jaccard_scale_choice"):
            return   # recorded before the choice was measured
        sides[name] = arm["jaccard_scale_choice"]
    best, _ = choice.best_rules(sides)
    assert choice.rule_name(choice.product_reads_as()) in best
