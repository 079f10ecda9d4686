"""How many of a query's rarest words the word index ranks documents by, chosen on validation
queries.

    DUPLENS_SHARED=/work/shared python -m benchmarks --only rarest_words_choice

A short query names documents by its words (`engine.store.text_words.texts_by_words`):
first those holding its words in its order (a phrase), then, to fill what the phrase left,
documents ranked by its words, which on SQLite is BM25 over the query's `RAREST_WORDS`
rarest words. Fewer words read shorter lists; too few lose the document when its rarest
words are not the telling ones. The ranking matters where no phrase holds the query: a
sentence as the analyst remembers it rather than copies it. So the validation queries are
`close_up_choice`'s (the same 2,000 documents of `document_scale`, imported by `duplens
import`, queries drawn with its seed from the documents that hold none of
`document_search`'s), each with one word left out, chosen with a seed among its first
`MOST_WORDS` words and never its first or last, so that no document holds it as a phrase.

Measured per count of `GRID`: the share of the queries whose document is among the
`WORD_CANDIDATES` documents the words name, and the milliseconds a query takes. The rule,
fixed before the run: the best mean share of the two query kinds, or, among the counts
within one point of it, the fewest words. PostgreSQL ranks by every word (`ts_rank` over
an AND of them) and is not what this chooses.
"""

from __future__ import annotations

import re
import time

import numpy as np

GRID = (4, 8, 16, 32, 64)
WITHIN = 0.01
LEFT_OUT_SEED = 3
_WORD = re.compile(r"[^\W_]+")   # as the word index splits


def run(quick: bool) -> dict:
    from benchmarks import close_up_choice as cc
    from benchmarks import document_corpus as dc
    from benchmarks import document_search as ds
    from benchmarks.documents import _engine_state
    from engine.store.text_words import RAREST_WORDS

    size = cc.QUICK_SIZE if quick else cc.SIZE
    rng = np.random.default_rng(LEFT_OUT_SEED)
    try:
        for project, _, queries, _ in cc.validation_queries(quick,
                                                            "duplens-rarest-words-choice-"):
            remembered = {kind: [{**q, "text": left_one_out(q["text"], rng)} for q in qs]
                          for kind, qs in queries.items()}
            counts = _sweep(project, remembered)
    except dc.CorpusUnavailable as exc:
        return {"skipped": f"the corpus could not be read: {exc}"}
    chosen = choose(counts)
    return {"documents": size, "seed": cc.SEED, "left_out_seed": LEFT_OUT_SEED,
            "queries": {kind: len(qs) for kind, qs in remembered.items()},
            "counts": counts, "chosen": chosen, "product": RAREST_WORDS,
            "engine": _engine_state(), "cpu": ds._cpu()}


def left_one_out(text: str, rng: np.random.Generator) -> str:
    """`text` with one word taken out (and the space before it), drawn among its first
    `MOST_WORDS` words but never the first or last of them; a text of under three words
    is kept."""
    from engine.store.text_words import MOST_WORDS

    spans = [m.span() for m in _WORD.finditer(text)][:MOST_WORDS]
    if len(spans) < 3:
        return text
    start, end = spans[int(rng.integers(1, len(spans) - 1))]
    while start > 0 and text[start - 1] == " ":
        start -= 1
    return text[:start] + text[end:]


def _sweep(project_path, queries: dict[str, list[dict]]) -> dict[str, dict]:
    """For each count of `GRID`, per query kind: the share of queries whose document the
    words name among `WORD_CANDIDATES`, and the median and 95th percentile ms."""
    from sqlalchemy import select

    from engine.documents.word_candidates import WORD_CANDIDATES
    from engine.project import Project
    from engine.store.schema import items
    from engine.store.text_words import texts_by_words

    out: dict[str, dict] = {}
    with Project.open(project_path, read_only=True) as project, \
            project.store.read() as conn:
        ext_of = {int(t): str(e) for e, t in conn.execute(
            select(items.c.ext_id, items.c.text_id).where(~items.c.deleted))}
        for rarest in GRID:
            per_kind = {}
            for kind, qs in queries.items():
                named, seconds = 0, []
                for q in qs:
                    t0 = time.perf_counter()
                    found = texts_by_words(conn, q["text"], WORD_CANDIDATES, rarest=rarest)
                    seconds.append(time.perf_counter() - t0)
                    named += bool({ext_of.get(t) for t in found} & set(q["truth"]))
                per_kind[kind] = {
                    "queries": len(qs), "named": round(named / max(len(qs), 1), 4),
                    "ms": {"median": round(float(np.median(seconds)) * 1e3, 2),
                           "p95": round(float(np.percentile(seconds, 95)) * 1e3, 2)}}
            out[str(rarest)] = per_kind
    return out


def _mean(count: dict) -> float:
    return float(np.mean([count[kind]["named"] for kind in ("pasted", "typed")]))


def choose(counts: dict[str, dict]) -> int:
    """The rule of the module's docstring: the fewest words within a point of the best."""
    best = max(_mean(c) for c in counts.values())
    return min(int(r) for r, c in counts.items() if _mean(c) >= best - WITHIN)


def present(result: dict, results: dict | None = None) -> dict:
    """The table of counts and the choice (benchmarks/report.py)."""
    if "skipped" in result:
        return {"headline": [], "tables": [], "notes": [result["skipped"]]}
    chosen, product = result["chosen"], result["product"]
    rows = [[f"{r}" + (" (chosen)" if int(r) == chosen else ""),
             *[f"{c[k]['named']:.0%}" for k in ("pasted", "typed")], f"{_mean(c):.1%}",
             *[f"{c[k]['ms']['median']:.1f}" for k in ("pasted", "typed")]]
            for r, c in result["counts"].items()]
    cpu, engine = result.get("cpu", {}), result["engine"]
    return {
        "headline": [],
        "tables": [{
            "title": f"Validation queries with one word left out ({result['queries']['pasted']}"
                     f" pasted, {result['queries']['typed']} typed) among "
                     f"{result['documents']:,} documents: the share whose document is among "
                     "those the words name, and ms a query (median)",
            "columns": ["rarest words ranked by", "pasted", "typed", "mean", "pasted ms",
                        "typed ms"],
            "rows": rows}],
        "notes": [
            f"close_up_choice's queries (seed {result['seed']}), one word left out of each "
            f"(seed {result['left_out_seed']}); the rule: the best mean share, or, among the "
            "counts within one point of it, the fewest words.",
            f"Chosen: {chosen}. The product ranked by {product} when this ran"
            + ("." if chosen == product else "; it was set to the choice afterwards, and "
               "tests/benchmarks/test_rarest_words_choice.py holds it there."),
            f"Measured on {cpu.get('cores', '?')} cores ({cpu.get('vendor', '?')}); engine "
            f"{engine['commit']}" + (f" with {', '.join(engine['changed_since'])} changed"
                                     if engine.get("changed_since") else "") + "."]}
