"""The close-up count's rule and page, and that the product reads the count chosen on the
validation queries (where the choice has been measured)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import close_up_choice
from engine.documents.close_up import CLOSE_UP_CANDIDATES

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "close_up_choice.json"


def _arm(pasted: float, typed: float) -> dict:
    return {kind: {"queries": 10, "found_at_1": at1, "found_at_k": at1 + 0.05,
                   "passage_at_1": at1, "search_ms": {"median": 200.0, "p95": 300.0}}
            for kind, at1 in (("pasted", pasted), ("typed", typed))}


def test_the_rule_takes_the_smallest_count_within_a_point_of_the_best():
    counts = {"0": _arm(0.9, 0.9), "5": _arm(0.70, 0.50), "10": _arm(0.76, 0.60),
              "20": _arm(0.77, 0.60)}
    assert close_up_choice.choose(counts) == 10        # 20 is 0.5 points better: within one
    counts["20"] = _arm(0.79, 0.61)
    assert close_up_choice.choose(counts) == 20        # 2 points better
    assert close_up_choice.choose({"0": _arm(1.0, 1.0), "5": _arm(0.1, 0.1)}) == 5


def test_the_page_marks_the_choice_and_says_whether_the_product_follows_it():
    result = {"documents": 2000, "seed": 2, "excluded_documents": 400,
              "queries": {"pasted": 10, "typed": 10},
              "counts": {"0": _arm(0.5, 0.3), "10": _arm(0.76, 0.6)}, "chosen": 10,
              "product": 10, "engine": {"commit": "abc"}, "cpu": {"cores": 2}}
    page = close_up_choice.present(result)
    (table,) = page["tables"]
    assert table["rows"][1][0] == "first 10 long hits (chosen)"
    assert table["rows"][0][0] == "none (windows alone)"
    assert any(n.startswith("Chosen: the first 10. The product read the first 10 when this "
                            "ran.") for n in page["notes"])
    other = close_up_choice.present({**result, "product": 5})
    assert any("set to the choice afterwards" in n for n in other["notes"])


def test_the_product_reads_the_count_chosen_on_validation():
    if not RESULTS.exists():
        return   # not measured yet: nothing to hold the product to
    result = json.loads(RESULTS.read_text())
    if "chosen" not in result:
        return   # a skipped run (no corpus)
    assert result["chosen"] == CLOSE_UP_CANDIDATES
