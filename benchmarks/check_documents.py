"""Check a file against a project of documents: rows that are a sentence or a passage from a
document's middle, each with its truth key, checked as the window and `duplens match` check
them.

    python -m benchmarks --only check_documents [--quick]

The documents and queries are `document_search`'s (the same corpus, the same drawing of
documents and of queries with the same seed), so its search figures and these are of the
same rows. A row is found when its first match is a document holding it word for word.

Arms, same project, same rows, same run:

- **Check a file** as the product runs it: short rows read close up (`read_close_up_each`),
  with the documents holding their words (`engine.store.text_words`), as the search reads
  a typed query;
- **windows alone**: `close_up=0`, the check before short rows were read close up;
- **the search** of each row's text, to count the rows whose first hit and score Check a
  file gives differently (none, if one similarity is used in both places);
- **plain sentence-transformers**, truncating: every document encoded as the model reads it
  (its first 256 word pieces), each row's nearest by cosine (`document_search._plain_st`).

Time is the whole `check_file` call over all rows of a kind, per row, on this machine's
cores.
"""

from __future__ import annotations

import csv
import time
from pathlib import Path

from benchmarks import document_corpus as dc

QUICK_SIZES = (30,)
FULL_SIZES = (2_000,)
QUERIES = 200
QUICK_QUERIES = 15
K = 5


def run(quick: bool) -> dict:
    from benchmarks.document_scale import corpus_paragraphs, imported_documents, sizes_asked
    from benchmarks.document_search import SEED, _plain_st, _queries, _read_table
    from benchmarks.documents import _engine_state, cache_folder
    from engine.documents import close_up
    from engine.documents.word_candidates import WORD_CANDIDATES

    sizes = QUICK_SIZES if quick else sizes_asked("DUPLENS_CHECK_DOCUMENTS_SIZES", FULL_SIZES)
    try:
        package, paragraphs = corpus_paragraphs(cache_folder())
    except dc.CorpusUnavailable as exc:
        return {"skipped": f"the corpus could not be read: {exc}"}
    measured = []
    for done in imported_documents(sizes, paragraphs, "duplens-check-documents-"):
        texts = _read_table(done.table)
        queries = _queries(texts, QUICK_QUERIES if quick else QUERIES)
        arms = _checked(done.project, done.folder, queries)
        arms["plain"] = _plain_st(texts, queries)
        measured.append({"documents": done.size, "words": done.words,
                         "queries": {kind: len(qs) for kind, qs in queries.items()},
                         "arms": arms})
    return {"seed": SEED, "sizes_asked": list(sizes), "k": K,
            "close_up": {"candidates": close_up.CLOSE_UP_CANDIDATES,
                         "fewest_words": close_up.FEWEST_WORDS,
                         "words": WORD_CANDIDATES},
            "corpus": {"package": dc.PACKAGE, "version": package.version},
            "engine": _engine_state(), "cpu": _cpu(), "measured": measured}


def _checked(project_path: Path, folder: Path, queries: dict) -> dict:
    """Check a file with and without the close-up, and the search of the same rows."""
    from engine.project import Project

    out: dict[str, dict] = {"duplens": {}, "windows_alone": {}, "agreement": {}}
    with Project.open(project_path, read_only=True) as project:
        project.search("How do I read a file one line at a time?", K)   # windows read once
        for kind, qs in queries.items():
            rows = folder / f"{kind}.csv"
            with rows.open("w", newline="", encoding="utf-8") as fh:
                writer = csv.writer(fh)
                writer.writerow(["text"])
                writer.writerows([q["text"]] for q in qs)
            found = {}
            for arm, count in (("duplens", None), ("windows_alone", 0)):
                t0 = time.perf_counter()
                result = project.matching.check_file(rows, ["text"], k=K, close_up=count)
                seconds = time.perf_counter() - t0
                found[arm] = result.rows
                out[arm][kind] = _score(qs, result.rows, seconds)
            out["agreement"][kind] = _agreement(project, qs, found["duplens"])
    return out


def _score(queries: list[dict], rows: list, seconds: float) -> dict:
    """Found at 1 and in K against the truth key, and seconds per row."""
    at1 = atk = 0
    for q, row in zip(queries, rows, strict=True):
        ids = [h.id for h in row.matches]
        truth = set(q["truth"])
        at1 += bool(ids) and ids[0] in truth
        atk += bool(set(ids[:K]) & truth)
    n = max(len(queries), 1)
    return {"rows": len(queries), "found_at_1": round(at1 / n, 4),
            "found_at_k": round(atk / n, 4), "seconds": round(seconds, 2),
            "ms_per_row": round(seconds / n * 1e3, 1)}


def _agreement(project, queries: list[dict], rows: list) -> dict:
    """Rows whose first hit the search gives as Check a file does, and the largest score
    difference where it does."""
    same, largest = 0, 0.0
    for q, row in zip(queries, rows, strict=True):
        hits = project.search(q["text"], K)
        if hits and row.matches and hits[0].id == row.matches[0].id:
            same += 1
            largest = max(largest, abs(hits[0].score - row.matches[0].score))
    return {"rows": len(queries), "same_first_hit": same,
            "largest_score_difference": round(largest, 6)}


def _cpu() -> dict:
    from benchmarks.document_search import _cpu as search_cpu

    return search_cpu()


KINDS = (("pasted", "pasted passage (two paragraphs)"), ("typed", "typed sentence"))
ARMS = (("duplens", "Duplens (short rows read close up, as the search reads them)"),
        ("windows_alone", "Duplens, windows alone (the check before)"),
        ("plain", "plain sentence-transformers (first 256 word pieces)"))


def present(result: dict, results: dict | None = None) -> dict:
    """The table per size, kind and arm, and a headline for typed sentences at the largest
    size (benchmarks/report.py)."""
    if "skipped" in result:
        return {"headline": [], "tables": [], "notes": [result["skipped"]]}
    rows, headline = [], []
    for m in result["measured"]:
        for kind, kind_name in KINDS:
            for arm, arm_name in ARMS:
                got = m["arms"][arm][kind]
                per_row = (f"{got['ms_per_row']:.0f}" if "ms_per_row" in got
                           else f"{got['search_ms']['median']:.0f} (search)")
                rows.append([f"{m['documents']:,}", kind_name, arm_name,
                             f"{got['found_at_1']:.0%}", f"{got['found_at_k']:.0%}", per_row])
    last = result["measured"][-1]
    for kind, kind_name in KINDS:
        ours, plain = last["arms"]["duplens"][kind], last["arms"]["plain"][kind]
        headline.append({
            "figure": f"Check a file, a {kind_name} per row among {last['documents']:,} "
                      "documents: its document first",
            "duplens": f"{ours['found_at_1']:.0%}",
            "baseline": f"{plain['found_at_1']:.0%}",
            "baseline_is": "plain sentence-transformers, each document truncated to its "
                           "first 256 word pieces, nearest by cosine, same rows, same run",
            "ratio": f"{ours['found_at_1'] - plain['found_at_1']:+.0%} points",
            "goal": "–", "met": None})
    agree = "; ".join(
        f"{m['documents']:,} documents, {kind}: {a['same_first_hit']} of {a['rows']} rows "
        f"with the search's first hit (largest score difference "
        f"{a['largest_score_difference']:.4f})"
        for m in result["measured"] for kind, a in m["arms"]["agreement"].items())
    cpu = result.get("cpu", {})
    return {
        "headline": headline,
        "tables": [{"title": f"Rows from documents' middles, checked against the project: "
                             f"found first / in {result['k']}, and ms per row",
                    "columns": ["documents", "row", "arm", "found at 1",
                                f"found in {result['k']}", "ms per row"],
                    "rows": rows}],
        "notes": [
            f"The rows and documents of document_search (seed {result['seed']}); a row is "
            "found when its first match holds it word for word.",
            f"Check a file against the search of the same text: {agree}.",
            f"Rows of at most half a window (in word pieces) and "
            f"{result['close_up']['fewest_words']} words or more read their first "
            f"{result['close_up']['candidates']} long hits close up, as the search does"
            + (f", and the first {result['close_up']['words']} documents holding their words "
               "(the project's full-text index)" if "words" in result["close_up"] else "")
            + "; plain sentence-transformers' time is its search's median, not a whole "
            "check.",
            f"Measured on {cpu.get('cores', '?')} cores ({cpu.get('vendor', '?')}); engine "
            f"{result['engine']['commit']}"
            + (f" with {', '.join(result['engine']['changed_since'])} changed"
               if result["engine"].get("changed_since") else "") + "."]}
