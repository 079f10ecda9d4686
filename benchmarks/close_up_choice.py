"""How many hits a short query reads close up, and how many documents named by its words
join them, chosen on validation queries.

    DUPLENS_SHARED=/work/shared python -m benchmarks --only close_up_choice

`engine.documents.close_up` scores a short query's first long hits again on stretches of
the query's own length, encoded at search time: more hits find more documents that their
windows ranked low, and cost more encoding per search. The documents holding the query's
words (`engine.store.text_words`, the database's full-text index) can be read close up
beside them (`engine.documents.word_candidates`). This chooses both counts
(`CLOSE_UP_CANDIDATES`, `WORD_CANDIDATES`) on queries that `benchmarks/document_search.py`
never asks: the same 2,000 documents (`document_scale`'s, imported by `duplens import`),
and queries drawn with another seed from the documents that hold none of document_search's
queries. That benchmark and `check_documents` report the product once, on their own
queries.

The arms: the close-up alone at 0 (windows alone, for reference), 5, 10 and 20 hits; and
10 and 20 hits with 3, 5 or 10 documents named by words. The rule, fixed before the run:
the best found-at-1 (the mean of the two query kinds), or, among the arms within one point
of it, the one reading the fewest documents close up (hits plus named), then the fewest
named.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

SIZE = 2_000
QUICK_SIZE = 300
SEED = 2                        # document_search draws its queries with 1
QUERIES = 150
QUICK_QUERIES = 40
# (long hits read close up, documents named by words read too); (0, 0): windows alone.
ARMS = ((0, 0), (5, 0), (10, 0), (20, 0), (10, 3), (10, 5), (10, 10), (20, 3), (20, 5),
        (20, 10))
WITHIN = 0.01


def arm_key(count: int, words: int) -> str:
    return f"{count}+{words}"


def run(quick: bool) -> dict:
    from benchmarks import document_corpus as dc
    from benchmarks import document_search as ds
    from benchmarks.documents import _engine_state
    from engine.documents.close_up import CLOSE_UP_CANDIDATES
    from engine.documents.word_candidates import WORD_CANDIDATES

    size = QUICK_SIZE if quick else SIZE
    try:
        for project, texts, queries, held in validation_queries(quick,
                                                                "duplens-close-up-choice-"):
            arms, excluded = _arms(project, texts, queries), held
    except dc.CorpusUnavailable as exc:
        return {"skipped": f"the corpus could not be read: {exc}"}
    chosen = choose(arms)
    return {"documents": size, "seed": SEED, "excluded_documents": excluded,
            "queries": {kind: len(qs) for kind, qs in queries.items()},
            "arms": arms, "chosen": {"close_up": chosen[0], "words": chosen[1]},
            "product": {"close_up": CLOSE_UP_CANDIDATES, "words": WORD_CANDIDATES},
            "engine": _engine_state(), "cpu": ds._cpu()}


def validation_queries(quick: bool, prefix: str
                       ) -> Iterator[tuple[Path, dict[str, str], dict[str, list[dict]], int]]:
    """The validation setting, once: `document_scale`'s documents (`SIZE`, quick
    `QUICK_SIZE`) imported by `duplens import` into a scratch folder named from `prefix`,
    and (the project, its texts by id, the queries, how many documents were left out):
    queries drawn with `SEED` from the documents holding none of document_search's. The
    project is there until the loop over this goes on. Raises `CorpusUnavailable`."""
    from benchmarks import document_search as ds
    from benchmarks.document_scale import corpus_paragraphs, imported_documents
    from benchmarks.documents import cache_folder

    _, paragraphs = corpus_paragraphs(cache_folder())
    size = QUICK_SIZE if quick else SIZE
    for done in imported_documents((size,), paragraphs, prefix):
        texts = ds._read_table(done.table)
        tested = ds._queries(texts, ds.QUICK_QUERIES if quick else ds.QUERIES)
        held = {d for qs in tested.values() for q in qs for d in q["truth"]}
        rest = {d: t for d, t in texts.items() if d not in held}
        queries = ds._queries(texts, QUICK_QUERIES if quick else QUERIES, seed=SEED,
                              among=rest)
        yield done.project, texts, queries, len(held)


def _arms(project_path, texts: dict[str, str], queries: dict) -> dict[str, dict]:
    from benchmarks.document_search import FIRST_QUERY, K, _score_arm
    from engine.keystroke_search import search
    from engine.project import Project

    with Project.open(project_path, read_only=True) as project:
        encoder, index, model_id = project.vectors.serving()
        windows = project.vectors.windows(model_id, project.vectors.generation(), index)
        project.search(FIRST_QUERY, K)   # reads the window matrix
        out = {}
        for count, words in ARMS:
            def find(text: str, count: int = count, words: int = words):
                named = windows.by_words([text], words)[0] if words else []
                return search(project.store, encoder, index, text, K,
                              _Named(windows, named), close_up=count)

            out[arm_key(count, words)] = _score_arm(queries, texts, find, passages=True)
    return out


class _Named:
    """A project's `Windows` whose word search names `named` (one arm's count of the
    product's answer, asked before the search so each arm reads its own count)."""

    def __init__(self, windows, named: list[int]) -> None:
        self._windows, self._named = windows, named

    def __getattr__(self, name: str):
        return getattr(self._windows, name)

    def by_words(self, queries: list[str], limit: int | None = None) -> list[list[int]]:
        return [list(self._named) for _ in queries]


def _at1(arm: dict) -> float:
    return float(np.mean([arm[kind]["found_at_1"] for kind in ("pasted", "typed")]))


def choose(arms: dict[str, dict]) -> tuple[int, int]:
    """The rule of the module's docstring over the arms that read close up: (hits,
    documents named by words)."""
    tried = [tuple(int(x) for x in key.split("+")) for key in arms]
    tried = [(c, w) for c, w in tried if c > 0]
    best = max(_at1(arms[arm_key(c, w)]) for c, w in tried)
    near = [(c, w) for c, w in tried if _at1(arms[arm_key(c, w)]) >= best - WITHIN]
    return min(near, key=lambda arm: (arm[0] + arm[1], arm[1]))


def present(result: dict, results: dict | None = None) -> dict:
    """The table of arms and the choice (benchmarks/report.py)."""
    chosen = (result["chosen"]["close_up"], result["chosen"]["words"])
    product = (result["product"]["close_up"], result["product"]["words"])
    rows = []
    for key, arm in result["arms"].items():
        count, words = (int(x) for x in key.split("+"))
        name = ("none (windows alone)" if count == 0 else f"first {count} long hits"
                + (f" + {words} named by words" if words else ""))
        if (count, words) == chosen:
            name += " (chosen)"
        rows.append([name, *[f"{arm[k]['found_at_1']:.0%} / {arm[k]['found_at_k']:.0%}"
                             for k in ("pasted", "typed")],
                     f"{_at1(arm):.1%}",
                     *[f"{arm[k]['search_ms']['median']:.0f}" for k in ("pasted", "typed")]])
    same = chosen == product
    cpu = result.get("cpu", {})
    return {
        "headline": [],
        "tables": [{
            "title": f"Validation queries ({result['queries']['pasted']} pasted, "
                     f"{result['queries']['typed']} typed) among {result['documents']:,} "
                     "documents: found at 1 / in 5, and search ms (median)",
            "columns": ["read close up", "pasted", "typed", "found at 1, mean",
                        "pasted ms", "typed ms"],
            "rows": rows}],
        "notes": [
            f"Queries drawn with seed {result['seed']} from the documents holding none of "
            f"document_search's queries ({result['excluded_documents']:,} left out); the "
            "rule: the best mean found at 1, or, among the arms within one point of it, "
            "the one reading the fewest documents close up, then the fewest named by "
            "words.",
            f"Chosen: the first {chosen[0]} long hits and {chosen[1]} named by words. The "
            f"product read {product[0]} and {product[1]} when this ran"
            + ("." if same else "; it was set to the choice afterwards, and "
               "tests/benchmarks/test_close_up_choice.py holds it there."),
            f"Measured on {cpu.get('cores', '?')} cores ({cpu.get('vendor', '?')}, "
            f"{cpu.get('int8_kernels', '?')}); engine {result['engine']['commit']}"
            + (f" with {', '.join(result['engine']['changed_since'])} changed"
               if result["engine"].get("changed_since") else "") + "."]}
