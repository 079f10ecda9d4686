"""The document search benchmark's page and the dynamic int8 choice's table are derived from
their results, not stored text."""

from __future__ import annotations

from benchmarks import document_search, dynamic_int8_choice


def _kind(at1: float, atk: float, passage: bool) -> dict:
    out = {"queries": 10, "found_at_1": at1, "found_at_k": atk,
           "search_ms": {"median": 12.0, "p95": 20.0}}
    if passage:
        out["passage_at_1"] = at1
    return out


def _size(documents: int, ours: float, plain: float) -> dict:
    arms = {"plain": {k: _kind(0.0, plain, False) for k in ("pasted", "typed")},
            "by_mean": {k: _kind(0.1, 0.2, True) for k in ("pasted", "typed")},
            "duplens": {k: _kind(0.3, ours, True) for k in ("pasted", "typed")},
            "every_text": {k: _kind(0.3, ours, False) for k in ("pasted", "typed")},
            "windows": documents * 10, "window_matrix_mib": 1.5,
            "first_search_seconds": 0.2}
    return {"documents": documents, "queries": {"pasted": 10, "typed": 9},
            "import": {"seconds": 30.0}, "arms": arms}


def test_the_headline_is_the_largest_size_and_says_the_difference_in_points():
    result = {"k": 5, "middle_words": 300, "full_sizes": [2000, 10000],
              "engine": {"commit": "abc"}, "cpu": {"cores": 2},
              "measured": [_size(2000, 0.78, 0.0), _size(10000, 0.635, 0.005)]}
    page = document_search.present(result)
    (headline,) = page["headline"]
    assert "10,000 documents" in headline["figure"]
    assert (headline["duplens"], headline["baseline"]) == ("64%", "0%")
    assert headline["ratio"] == "+64 points"     # the shown percentages' difference
    assert [t["title"].split(" ")[0] for t in page["tables"]] == ["2,000", "10,000"]
    assert not any("Not measured" in n for n in page["notes"])
    short = document_search.present({**result, "measured": result["measured"][:1]})
    assert any("Not measured in this run: 10,000" in n for n in short["notes"])


def test_the_shipped_dynamic_recipe_is_marked_and_failures_say_why():
    gate = {"stsb_spearman_loss": 0.0, "quora_ap_loss": 0.0, "sample_pairs_ap_loss": 0.1,
            "partner_top5_loss": -0.1}
    rows = {"exact": {"what": "exact", "sentences_per_s": 500.0},
            "a": {"what": "all", "group": 32, "float32_layers": [], "sentences_per_s": 800.0,
                  "cut_f1": 0.9791, **gate,
                  "gate": {"passed": False, "failed": ["the cut's pair F1 0.9791"]}},
            "b": {"what": "kept", "group": 32, "float32_layers": ["x"],
                  "sentences_per_s": 700.0, "cut_f1": 0.9855, **gate,
                  "gate": {"passed": True, "failed": []}}}
    result = {"rows": rows, "timed_texts": 2000, "load_average": [1.0],
              "shipped": {"group": 32, "float32_layers": ["x"]},
              "data": {"stsb_pairs": 1500, "quora_pairs": 4000, "sample_pairs": 1290,
                       "cut_questions": 20000, "threshold": 0.75}}
    (table,) = dynamic_int8_choice.present(result)["tables"]
    by_name = {r[0]: r for r in table["rows"]}
    assert by_name["b"][-1] == "ships" and by_name["a"][-1] == ""
    assert by_name["a"][3] == "1.60×" and by_name["b"][3] == "1.40×"
    assert by_name["a"][-2].startswith("fails: the cut's pair F1")
