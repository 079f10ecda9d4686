"""benchmarks/check_documents.py's page: figures read from the results, the headline the
largest size's, and the agreement with the search said per kind."""

from __future__ import annotations

from benchmarks.check_documents import present


def _arm(at1: float, ms: float | None = None) -> dict:
    got = {"rows": 10, "found_at_1": at1, "found_at_k": min(1.0, at1 + 0.1)}
    return {**got, "ms_per_row": ms} if ms is not None else \
        {**got, "search_ms": {"median": 12.0, "p95": 20.0}}


def test_the_page_is_derived_from_the_measured_figures():
    kinds = ("pasted", "typed")
    measured = [{"documents": n, "arms": {
        "duplens": {k: _arm(0.9 if n == 2000 else 0.5, 300.0) for k in kinds},
        "windows_alone": {k: _arm(0.4, 20.0) for k in kinds},
        "plain": {k: _arm(0.1) for k in kinds},
        "agreement": {k: {"rows": 10, "same_first_hit": 10, "largest_score_difference": 2e-4}
                      for k in kinds}}} for n in (300, 2000)]
    page = present({"seed": 1, "k": 5, "close_up": {"candidates": 20, "fewest_words": 3},
                    "engine": {"commit": "abc1234", "changed_since": []},
                    "cpu": {"cores": 2, "vendor": "amd"}, "measured": measured})
    assert [h["duplens"] for h in page["headline"]] == ["90%", "90%"]   # the largest size
    assert page["headline"][0]["baseline"] == "10%"
    assert page["headline"][0]["ratio"] == "+80% points"
    rows = page["tables"][0]["rows"]
    assert len(rows) == 2 * 2 * 3
    assert rows[0][:4] == ["300", "pasted passage (two paragraphs)",
                           "Duplens (short rows read close up, as the search reads them)", "50%"]
    assert "2,000 documents, typed: 10 of 10 rows with the search's first hit" in \
        page["notes"][1]


def test_a_skipped_run_says_why():
    page = present({"skipped": "the corpus could not be read: no network"})
    assert page == {"headline": [], "tables": [],
                    "notes": ["the corpus could not be read: no network"]}
