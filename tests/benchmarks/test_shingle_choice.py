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


def test_a_project_is_copied_with_everything_named_after_it(tmp_path):
    source, into = tmp_path / "from", tmp_path / "into"
    source.mkdir()
    into.mkdir()
    (source / "p.duplens").write_bytes(b"file")
    (source / "p.duplens-wal").write_bytes(b"wal")
    (source / "p.duplens.index").mkdir()
    (source / "p.duplens.index" / "hnsw.bin").write_bytes(b"index")
    (source / "other.csv").write_bytes(b"not the project's")
    copy = shingle_choice.copied(source / "p.duplens", into)
    assert copy == into / "p.duplens" and copy.read_bytes() == b"file"
    assert sorted(p.name for p in into.iterdir()) == ["p.duplens", "p.duplens-wal",
                                                      "p.duplens.index"]
    assert (into / "p.duplens.index" / "hnsw.bin").read_bytes() == b"index"
