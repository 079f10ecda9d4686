"""The close-up counts' rule and page, and that the product reads the counts chosen on the
validation queries (where the choice has been measured)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import close_up_choice
from engine.documents.close_up import CLOSE_UP_CANDIDATES
from engine.documents.word_candidates import WORD_CANDIDATES

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "close_up_choice.json"


def _arm(pasted: float, typed: float) -> dict:
    return {kind: {"queries": 10, "found_at_1": at1, "found_at_k": at1 + 0.05,
                   "passage_at_1": at1, "search_ms": {"median": 200.0, "p95": 300.0}}
            for kind, at1 in (("pasted", pasted), ("typed", typed))}


def test_the_rule_takes_the_fewest_documents_read_within_a_point_of_the_best():
    arms = {"0+0": _arm(0.9, 0.9), "5+0": _arm(0.70, 0.50), "10+0": _arm(0.76, 0.60),
            "20+0": _arm(0.77, 0.60)}
    assert close_up_choice.choose(arms) == (10, 0)     # 20 is 0.5 points better: within one
    arms["20+0"] = _arm(0.79, 0.61)
    assert close_up_choice.choose(arms) == (20, 0)     # 2 points better
    arms["10+5"] = _arm(0.785, 0.61)                    # within a point, 15 documents read
    assert close_up_choice.choose(arms) == (10, 5)
    arms["5+10"] = _arm(0.785, 0.61)                    # as many read: fewer named wins
    assert close_up_choice.choose(arms) == (10, 5)
    assert close_up_choice.choose({"0+0": _arm(1.0, 1.0), "5+0": _arm(0.1, 0.1)}) == (5, 0)


def test_the_page_marks_the_choice_and_says_whether_the_product_follows_it():
    result = {"documents": 2000, "seed": 2, "excluded_documents": 400,
              "queries": {"pasted": 10, "typed": 10},
              "arms": {"0+0": _arm(0.5, 0.3), "10+0": _arm(0.76, 0.6),
                       "10+5": _arm(0.9, 0.8)},
              "chosen": {"close_up": 10, "words": 5},
              "product": {"close_up": 10, "words": 5}, "engine": {"commit": "abc"},
              "cpu": {"cores": 2}}
    page = close_up_choice.present(result)
    (table,) = page["tables"]
    assert [row[0] for row in table["rows"]] == [
        "none (windows alone)", "first 10 long hits",
        "first 10 long hits + 5 named by words (chosen)"]
    assert any(n.startswith("Chosen: the first 10 long hits and 5 named by words. The "
                            "product read 10 and 5 when this ran.") for n in page["notes"])
    other = close_up_choice.present({**result, "product": {"close_up": 20, "words": 5}})
    assert any("set to the choice afterwards" in n for n in other["notes"])


def test_the_product_reads_the_counts_chosen_on_validation():
    if not RESULTS.exists():
        return   # not measured yet: nothing to hold the product to
    result = json.loads(RESULTS.read_text())
    if "chosen" not in result:
        return   # a skipped run (no corpus)
    assert (result["chosen"]["close_up"], result["chosen"]["words"]) == \
        (CLOSE_UP_CANDIDATES, WORD_CANDIDATES)
