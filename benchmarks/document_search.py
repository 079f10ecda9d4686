"""Search in documents: does a typed sentence, or a pasted passage, from a document's middle
find that document, and show the passage?

    DUPLENS_SHARED=/work/shared python -m benchmarks --only document_search [--quick]
    DUPLENS_DOCUMENT_SEARCH_SIZES=10000 python -m benchmarks --only document_search

The documents are `benchmarks/document_scale.py`'s (random paragraphs of the Python
documentation, 800-1,200 words each, seed 0), imported by `duplens import` in a fresh
process. Every document is about Python, so a passage's document must be told from
hundreds that read alike; paragraphs are drawn with replacement, so a paragraph may recur in
other documents, and every document holding the query word for word counts as right.

Queries (seed 1), from distinct documents, each from its middle (starting 300 words or more
into it, ending before its last paragraph):

- pasted: two consecutive paragraphs (about 70 words);
- typed: the first sentence of 6 words or more of such a paragraph.

Arms, the same queries, the same run:

- plain sentence-transformers: each document encoded as the model reads it (its first 256
  word pieces), exact cosine search (what a truncating tool finds);
- Duplens, candidates by mean vector: the search as it was, the `WIDE_CANDIDATES` texts
  nearest the query by mean vector, scored from their windows;
- Duplens, every window: adds the texts holding the windows nearest the query from every
  stored window (`engine.documents.window_finder`), scored from their windows;
- Duplens, close-up: then reads a short query's first long hits close up, on stretches of
  its own length (`engine.documents.close_up`);
- Duplens: the product's search (`Project.search`), which also reads close up the
  documents holding the query's words (`engine.store.text_words`,
  `engine.documents.word_candidates`);
- every text scored: each document's best window, exact, over all documents (for a
  one-window query this is the window score, `pair_similarity`): the ceiling of scoring by
  windows, with no candidate step.

Reported per query kind: the share of queries whose first hit holds the query (found at 1),
whose first five hits include one (at 5), and, for the Duplens arms, whose first hit's
passage overlaps where the query lies in it; search seconds (median and 95th percentile,
warm, each query searched once), the first search's (which reads the windows), and the
window matrix's memory.
"""

from __future__ import annotations

import csv
import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks import document_corpus as dc

SEED = 1
QUICK_SIZES = (30,)
FULL_SIZES = (2_000, 10_000)
QUERIES = 200
QUICK_QUERIES = 15
MIDDLE_WORDS = 300
K = 5
# Searched first, on its own: the first search reads every window into memory.
FIRST_QUERY = "How do I read a file one line at a time?"


def run(quick: bool) -> dict:
    from benchmarks.document_scale import corpus_paragraphs, imported_documents, sizes_asked
    from benchmarks.documents import _engine_state, cache_folder

    sizes = QUICK_SIZES if quick else sizes_asked("DUPLENS_DOCUMENT_SEARCH_SIZES", FULL_SIZES)
    try:
        package, paragraphs = corpus_paragraphs(cache_folder())
    except dc.CorpusUnavailable as exc:
        return {"skipped": f"the corpus could not be read: {exc}"}
    measured = []
    for done in imported_documents(sizes, paragraphs, "duplens-document-search-"):
        texts = _read_table(done.table)
        queries = _queries(texts, QUICK_QUERIES if quick else QUERIES)
        arms = _duplens_arms(done.project, texts, queries)
        arms["plain"] = _plain_st(texts, queries)
        measured.append({"documents": done.size, "words": done.words,
                         "import": done.imported,
                         "queries": {kind: len(qs) for kind, qs in queries.items()},
                         "arms": arms})
    from engine.documents import close_up
    from engine.documents.word_candidates import WORD_CANDIDATES

    return {"seed": SEED, "sizes_asked": list(sizes), "full_sizes": list(FULL_SIZES),
            "k": K, "middle_words": MIDDLE_WORDS,
            "close_up": {"candidates": close_up.CLOSE_UP_CANDIDATES,
                         "fewest_words": close_up.FEWEST_WORDS,
                         "words": WORD_CANDIDATES},
            "corpus": {"package": dc.PACKAGE, "version": package.version,
                       "paragraphs": len(paragraphs)},
            "engine": _engine_state(), "cpu": _cpu(), "measured": measured}


def _read_table(path: Path) -> dict[str, str]:
    csv.field_size_limit(1 << 30)
    with path.open(newline="", encoding="utf-8") as fh:
        return {row["id"]: row["text"] for row in csv.DictReader(fh)}


def _queries(texts: dict[str, str], count: int, seed: int = SEED,
             among: dict[str, str] | None = None) -> dict[str, list[dict]]:
    """Per kind, queries {text, truth (ids of the documents of `texts` holding it word for
    word)}, drawn with `seed` from the documents of `among` (default: all of `texts`)."""
    rng = np.random.default_rng(seed)
    pool = texts if among is None else among
    ids = list(pool)
    out: dict[str, list[dict]] = {"pasted": [], "typed": []}
    seen: set[str] = set()   # a recurring paragraph is asked once (a repeat is cached)
    for i in rng.permutation(len(ids)):
        if len(out["pasted"]) >= count:
            break
        paragraphs = pool[ids[i]].split("\n\n")
        starts, words = [], 0
        for j, paragraph in enumerate(paragraphs):
            if words >= MIDDLE_WORDS and j + 2 < len(paragraphs):
                starts.append(j)
            words += len(paragraph.split())
        if not starts:
            continue
        j = starts[int(rng.integers(len(starts)))]
        pasted = paragraphs[j] + "\n\n" + paragraphs[j + 1]
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", paragraphs[j])
                     if len(s.split()) >= 6]
        if pasted in seen:
            continue
        seen.add(pasted)
        out["pasted"].append({"text": pasted, "truth": _holding(texts, pasted)})
        if sentences and sentences[0] not in seen:
            seen.add(sentences[0])
            out["typed"].append({"text": sentences[0],
                                 "truth": _holding(texts, sentences[0])})
    return out


def _holding(texts: dict[str, str], query: str) -> list[str]:
    return [doc_id for doc_id, text in texts.items() if query in text]


def _duplens_arms(project_path: Path, texts: dict[str, str], queries: dict) -> dict:
    from engine.keystroke_search import search
    from engine.project import Project
    from engine.store.text_windows import read_windows, windowed_text_ids

    with Project.open(project_path, read_only=True) as project:
        encoder, index, model_id = project.vectors.serving()
        generation = project.vectors.generation()
        product = project.vectors.windows(model_id, generation, index)
        with project.store.read() as conn:
            windowed = windowed_text_ids(conn, model_id)
            every = read_windows(conn, model_id, index.dim, windowed)

        before = product.without_finder()
        unnamed = product.without_words()

        def by_mean(text: str):
            return search(project.store, encoder, index, text, K, before, close_up=0)

        def windows_only(text: str):
            return search(project.store, encoder, index, text, K, product, close_up=0)

        def close_up_only(text: str):
            return search(project.store, encoder, index, text, K, unnamed)

        t0 = time.perf_counter()
        first = project.search(FIRST_QUERY, K)   # reads the window matrix
        first_s = time.perf_counter() - t0
        finder = product.finder()
        arms = {"first_search_seconds": round(first_s, 3),
                "first_search_hits": len(first),
                "windows": len(finder) if finder is not None else 0,
                "window_matrix_mib": round(finder.nbytes / 2**20, 1) if finder else 0.0,
                "duplens": _score_arm(queries, texts,
                                      lambda q: project.search(q, K), passages=True),
                "by_mean": _score_arm(queries, texts, by_mean, passages=True),
                "every_window": _score_arm(queries, texts, windows_only,
                                           passages=True),
                "close_up_only": _score_arm(queries, texts, close_up_only, passages=True),
                "every_text": _every_text(queries, texts, encoder, every, project)}
    return arms


def _score_arm(queries: dict, texts: dict[str, str], find, passages: bool) -> dict:
    """found at 1 and at K, passage right at 1, search seconds, per query kind."""
    out = {}
    for kind, qs in queries.items():
        at1 = atk = passage = 0
        seconds = []
        for q in qs:
            t0 = time.perf_counter()
            hits = find(q["text"])
            seconds.append(time.perf_counter() - t0)
            truth = set(q["truth"])
            ids = [h.id for h in hits]
            at1 += bool(ids) and ids[0] in truth
            atk += bool(set(ids[:K]) & truth)
            if passages and ids and ids[0] in truth and hits[0].passage is not None:
                start = texts[ids[0]].find(q["text"])
                a, b = hits[0].passage
                passage += a < start + len(q["text"]) and start < b
        n = max(len(qs), 1)
        out[kind] = {"queries": len(qs), "found_at_1": round(at1 / n, 4),
                     "found_at_k": round(atk / n, 4),
                     **({"passage_at_1": round(passage / n, 4)} if passages else {}),
                     "search_ms": {"median": round(float(np.median(seconds)) * 1e3, 2),
                                   "p95": round(float(np.percentile(seconds, 95)) * 1e3, 2)}}
    return out


@dataclass(frozen=True)
class _Hit:
    """A hit of an arm that is not Duplens' search: a document, no passage."""

    id: str
    passage: None = None


def _every_text(queries: dict, texts: dict[str, str], encoder, every: dict, project) -> dict:
    """Each document scored by its best window, exactly (float32), over all documents."""
    from engine.store import items as item_store

    text_ids = sorted(every)
    owners = np.concatenate([np.full(len(every[t][1]), i) for i, t in enumerate(text_ids)])
    matrix = np.concatenate([every[t][1] for t in text_ids]).astype(np.float32)
    starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
    with project.store.read() as conn:
        rows = item_store.items_for_texts(conn, text_ids)
    public = [item_store.public_id(rows[t][0]) for t in text_ids]

    def find(text: str):
        q = encoder.encode([text])[0]
        best = np.maximum.reduceat(matrix @ q, starts)
        return [_Hit(public[i]) for i in np.argsort(-best, kind="stable")[:K]]

    return _score_arm(queries, texts, find, passages=False)


def _plain_st(texts: dict[str, str], queries: dict) -> dict:
    """Plain sentence-transformers, truncating: every document as the model reads it."""
    from sentence_transformers import SentenceTransformer

    from engine.encoding.model_spec import default_model_path

    model = SentenceTransformer(str(default_model_path()), device="cpu")
    ids = list(texts)
    t0 = time.perf_counter()
    vectors = model.encode([texts[i] for i in ids], batch_size=32, normalize_embeddings=True,
                           convert_to_numpy=True)
    encode_s = time.perf_counter() - t0

    def find(text: str):
        q = model.encode([text], normalize_embeddings=True, convert_to_numpy=True)[0]
        return [_Hit(ids[i]) for i in np.argsort(-(vectors @ q), kind="stable")[:K]]

    scored = _score_arm(queries, texts, find, passages=False)
    scored["encode_seconds"] = round(encode_s, 1)
    scored["max_seq_length"] = int(model.max_seq_length)
    return scored


def _cpu() -> dict:
    from benchmarks.document_scale import _cpu as measured_cpu
    from engine.encoding.cpu_features import cpu_vendor

    return {**measured_cpu(), "vendor": cpu_vendor()}


# -- the report ------------------------------------------------------------------------------
ARMS = (("plain", "plain sentence-transformers (first 256 word pieces)"),
        ("by_mean", "Duplens, candidates by mean vector only, scored by windows"),
        ("every_window", "Duplens, candidates from every window too, scored by windows"),
        ("close_up_only", "Duplens, short queries then read close up (first long hits "
                          "only)"),
        ("duplens", "Duplens (short queries read close up, with the documents holding "
                    "their words)"),
        ("every_text", "every document's best window, exact (the ceiling of window "
                       "scores)"))
KINDS = (("pasted", "pasted passage (two paragraphs)"),
         ("typed", "typed sentence"))


def present(result: dict, results: dict | None = None) -> dict:
    """Headline, tables and notes from the sizes measured (benchmarks/report.py)."""
    measured = result["measured"]
    if not measured:
        return {"headline": [], "tables": [], "notes": ["No size was measured."]}
    k = result["k"]
    biggest = measured[-1]
    ours = biggest["arms"]["duplens"]["pasted"]
    plain = biggest["arms"]["plain"]["pasted"]
    headline = [{
        "figure": f"a pasted passage from a document's middle, among {biggest['documents']:,} "
                  f"documents: its document in the first {k} hits",
        "duplens": f"{ours['found_at_k']:.0%}",
        "baseline": f"{plain['found_at_k']:.0%}",
        "baseline_is": "plain sentence-transformers, each document truncated to the model's "
                       "window, exact search, same queries, same run",
        "ratio": f"{round(ours['found_at_k'] * 100) - round(plain['found_at_k'] * 100):+d} "
                 "points",
        "goal": "", "met": None}]
    tables = []
    for m in measured:
        rows = []
        for kind, kind_name in KINDS:
            for arm, arm_name in ARMS:
                if arm not in m["arms"]:   # a results file from before the arm existed
                    continue
                got = m["arms"][arm][kind]
                timed = got["search_ms"]
                rows.append([kind_name, arm_name, f"{got['found_at_1']:.0%}",
                             f"{got['found_at_k']:.0%}",
                             f"{got['passage_at_1']:.0%}" if "passage_at_1" in got else "–",
                             f"{timed['median']:.1f} / {timed['p95']:.1f}"])
        tables.append({
            "title": f"{m['documents']:,} documents ({m['queries']['pasted']} pasted and "
                     f"{m['queries']['typed']} typed queries)",
            "columns": ["query", "search", "found at 1", f"found in {k}",
                        "passage right at 1", "ms median / p95"],
            "rows": rows})
    cpu = result.get("cpu", {})
    notes = [
        "Documents: random paragraphs of the Python documentation, 800–1,200 words each "
        "(`benchmarks/document_scale.py`'s); a query is from a document's middle, at least "
        f"{result['middle_words']} words in. Right: any document holding the query word for "
        "word (paragraphs recur across documents).",
        *[f"{m['documents']:,} documents: {m['arms']['windows']:,} windows, held in "
          f"{m['arms']['window_matrix_mib']} MiB; the first search read them in "
          f"{m['arms']['first_search_seconds']:.2f} s; import "
          f"{m['import']['seconds']:,.0f} s." for m in measured],
        "Passage right: the first hit's passage overlaps where the query lies in it, "
        "counted over all queries (a wrong first hit counts as no).",
        *([f"Read close up: the first {result['close_up']['candidates']} long hits of a "
           "query of at most half a window, on stretches of the query's word count around "
           "each hit's best window, end to end and then half a stretch either side of the "
           "best (`engine/documents/close_up.py`)"
           + (f", and the product also the first {result['close_up']['words']} documents "
              "its words name in the project's full-text index (`engine/store/"
              "text_words.py`)." if "words" in result["close_up"] else ".")]
          if "close_up" in result else []),
        f"Measured on {cpu.get('cores', '?')} cores ({cpu.get('vendor', '?')}, "
        f"{cpu.get('int8_kernels', '?')}, {'with' if cpu.get('bf16_units') else 'without'} "
        f"bf16 units); engine {result['engine']['commit']}"
        + (f" with {', '.join(result['engine']['changed_since'])} changed"
           if result["engine"].get("changed_since") else "") + ".",
    ]
    missing = [s for s in result["full_sizes"] if s not in [m["documents"] for m in measured]]
    if missing:
        notes.append("Not measured in this run: "
                     + ", ".join(f"{s:,}" for s in missing) + " documents.")
    return {"headline": headline, "tables": tables, "notes": notes}
