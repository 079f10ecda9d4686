"""How many hits a short query reads close up, chosen on validation queries.

    DUPLENS_SHARED=/work/shared python -m benchmarks --only close_up_choice

`engine.documents.close_up` scores a short query's first long hits again on stretches of
the query's own length, encoded at search time: more hits find more documents that their
windows ranked low, and cost more encoding per search. This chooses how many
(`CLOSE_UP_CANDIDATES`) on queries that `benchmarks/document_search.py` never asks: the
same 2,000 documents (`document_scale`'s, imported by `duplens import`), and queries drawn
with another seed from the documents that hold none of document_search's queries. That
benchmark reports the product once, on its own queries.

The rule, fixed before this run: the count with the best found-at-1 (the mean of the two
query kinds), or a smaller count within one point of it.
"""

from __future__ import annotations

import numpy as np

SIZE = 2_000
QUICK_SIZE = 300
SEED = 2                        # document_search draws its queries with 1
QUERIES = 150
QUICK_QUERIES = 40
COUNTS = (0, 5, 10, 20)         # 0: windows alone, no close-up (for reference)
WITHIN = 0.01


def run(quick: bool) -> dict:
    from benchmarks import document_corpus as dc
    from benchmarks import document_search as ds
    from benchmarks.document_scale import corpus_paragraphs, imported_documents
    from benchmarks.documents import _engine_state, cache_folder
    from engine.documents.close_up import CLOSE_UP_CANDIDATES

    try:
        _, paragraphs = corpus_paragraphs(cache_folder())
    except dc.CorpusUnavailable as exc:
        return {"skipped": f"the corpus could not be read: {exc}"}
    size = QUICK_SIZE if quick else SIZE
    count = QUICK_QUERIES if quick else QUERIES
    for done in imported_documents((size,), paragraphs, "duplens-close-up-choice-"):
        texts = ds._read_table(done.table)
        tested = ds._queries(texts, ds.QUICK_QUERIES if quick else ds.QUERIES)
        held = {d for qs in tested.values() for q in qs for d in q["truth"]}
        rest = {d: t for d, t in texts.items() if d not in held}
        queries = ds._queries(texts, count, seed=SEED, among=rest)
        counts = _arms(done.project, texts, queries)
    return {"documents": size, "seed": SEED, "excluded_documents": len(held),
            "queries": {kind: len(qs) for kind, qs in queries.items()},
            "counts": counts, "chosen": choose(counts), "product": CLOSE_UP_CANDIDATES,
            "engine": _engine_state(), "cpu": ds._cpu()}


def _arms(project_path, texts: dict[str, str], queries: dict) -> dict[str, dict]:
    from benchmarks.document_search import FIRST_QUERY, K, _score_arm
    from engine.keystroke_search import search
    from engine.project import Project

    with Project.open(project_path, read_only=True) as project:
        encoder, index, model_id = project.vectors.serving()
        windows = project.vectors.windows(model_id, project.vectors.generation(), index)
        project.search(FIRST_QUERY, K)   # reads the window matrix
        out = {}
        for count in COUNTS:
            def find(text: str, count: int = count):
                return search(project.store, encoder, index, text, K, windows,
                              close_up=count)

            out[str(count)] = _score_arm(queries, texts, find, passages=True)
    return out


def _at1(arm: dict) -> float:
    return float(np.mean([arm[kind]["found_at_1"] for kind in ("pasted", "typed")]))


def choose(counts: dict[str, dict]) -> int:
    """The rule of the module's docstring, over the counts that read close up."""
    tried = sorted(int(c) for c in counts if int(c) > 0)
    best = max(_at1(counts[str(c)]) for c in tried)
    return next(c for c in tried if _at1(counts[str(c)]) >= best - WITHIN)


def present(result: dict, results: dict | None = None) -> dict:
    """The table of counts and the choice (benchmarks/report.py)."""
    rows = []
    for count, arm in result["counts"].items():
        name = "none (windows alone)" if count == "0" else f"first {count} long hits"
        if int(count) == result["chosen"]:
            name += " (chosen)"
        rows.append([name, *[f"{arm[k]['found_at_1']:.0%} / {arm[k]['found_at_k']:.0%}"
                             for k in ("pasted", "typed")],
                     f"{_at1(arm):.1%}",
                     *[f"{arm[k]['search_ms']['median']:.0f}" for k in ("pasted", "typed")]])
    same = result["chosen"] == result["product"]
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
            "rule: the best mean found at 1, or a smaller count within one point of it.",
            f"Chosen: the first {result['chosen']}. The product read the first "
            f"{result['product']} when this ran"
            + ("." if same else "; it was set to the choice afterwards, and "
               "tests/benchmarks/test_close_up_choice.py holds it there."),
            f"Measured on {cpu.get('cores', '?')} cores ({cpu.get('vendor', '?')}, "
            f"{cpu.get('int8_kernels', '?')}); engine {result['engine']['commit']}"
            + (f" with {', '.join(result['engine']['changed_since'])} changed"
               if result["engine"].get("changed_since") else "") + "."]}
