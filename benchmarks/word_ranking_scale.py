"""How a short query's words name documents at 10,000 and 100,000 documents, on SQLite and
on a team project's PostgreSQL, and how long each takes to index their words.

    DUPLENS_SHARED=/work/shared python -m benchmarks --only word_ranking_scale

`word_ranking_choice` chose how the words rank among 2,000 documents. PostgreSQL counts
each of a query's rarest words through its GIN index only up to `COUNTED_AT_MOST` texts (a
word held by more ranks as if held by that many), to bound a query's cost as a project
grows; SQLite's FTS5 counts exactly. This asks whether the two still name a query's
document alike at scale, and what a query costs there.

The documents are `document_scale`'s (800 to 1,200 words of the corpus's paragraphs drawn
at random, seed 0), their texts stored and indexed by their words directly: the word index
reads texts only, so nothing is encoded. The queries are `document_search`'s draw (seed 1:
200 pasted passages of two paragraphs from a document's middle, and the first sentence of
each as a typed one), each asked as drawn, with a word left out and with a word changed
(`word_ranking_choice._three_ways`). Per dialect: the share of queries whose document (any
holding the query word for word) is among the `WORD_CANDIDATES` the words name, ms a
query, and the seconds to index every text's words, which on PostgreSQL is what schema
v12's step does to a team project. PostgreSQL also runs with its counts exact (the cap
lifted), to show what the cap changes.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

QUICK_SIZES = (2_000,)
FULL_SIZES = (10_000, 100_000)
QUERIES = 200
QUICK_QUERIES = 60


def run(quick: bool) -> dict:
    from benchmarks import document_corpus as dc
    from benchmarks import document_scale as dsc
    from benchmarks import document_search as ds
    from benchmarks import word_ranking_choice as wrc
    from benchmarks.documents import _engine_state, cache_folder
    from devtools.postgres_server import ANALYST_PASSWORD, NoServer, PostgresServer

    sizes = QUICK_SIZES if quick else dsc.sizes_asked("DUPLENS_WORD_RANKING_SIZES",
                                                      FULL_SIZES)
    try:
        _, paragraphs = dsc.corpus_paragraphs(cache_folder())
    except dc.CorpusUnavailable as exc:
        return {"skipped": f"the corpus could not be read: {exc}"}
    try:
        server = PostgresServer().start()
    except NoServer as exc:
        return {"skipped": f"no PostgreSQL server could be started here: {exc}"}
    measured = []
    try:
        for size in sizes:
            with tempfile.TemporaryDirectory(prefix="duplens-word-scale-") as tmp:
                table, words = dsc._write_table(Path(tmp) / "documents.csv", paragraphs,
                                                size)
                texts = ds._read_table(table)
                queries = ds._queries(texts, QUICK_QUERIES if quick else QUERIES)
                vocabulary = sorted({w for t in texts.values()
                                     for w in wrc._WORD.findall(t.lower())})
                sets = wrc._three_ways(queries, vocabulary)
                url = server.url(server.create_database(), password=ANALYST_PASSWORD)
                arms = {}
                for dialect, location in (("SQLite", Path(tmp) / "p.duplens"),
                                          ("PostgreSQL", url)):
                    arms.update(_arms(dialect, location, table, sets,
                                      exact=dialect == "PostgreSQL"))
                measured.append({"documents": size, "words": words,
                                 "queries": {n: len(q) for n, q in sets.items()},
                                 "arms": arms})
    finally:
        server.stop()
    return {"sizes": list(sizes), "seed": dsc.SEED, "query_seed": ds.SEED,
            "left_out_seed": wrc.LEFT_OUT_SEED, "changed_seed": wrc.CHANGED_SEED,
            "measured": measured, "engine": _engine_state(), "cpu": ds._cpu()}


def _arms(dialect: str, location, table: Path, sets: dict[str, list[dict]],
          exact: bool) -> dict[str, dict]:
    """The product's ranking on one dialect (and, with `exact`, PostgreSQL's counts
    uncapped) over every query set, with the seconds the word index took to fill. The
    table is stored by the product's importer (no encoding), then every text indexed."""
    from sqlalchemy import select

    from benchmarks import word_ranking_choice as wrc
    from engine.documents.word_candidates import WORD_CANDIDATES
    from engine.importer import import_table
    from engine.store import text_words
    from engine.store.database import Store
    from engine.store.schema import items

    store = Store.open(location, create=True)
    try:
        import_table(store, table, ["text"], id_column="id")
        with store.read() as conn:
            ext_of = {int(t): str(e) for e, t in conn.execute(
                select(items.c.ext_id, items.c.text_id))}
        started = time.perf_counter()
        with store.write() as conn:
            text_words.add_words(conn, sorted(set(ext_of)))
        filled = time.perf_counter() - started
        out = {}
        for name, cap in [(dialect, None)] + exact * [(f"{dialect}, counts exact", 1 << 62)]:
            kept = text_words.COUNTED_AT_MOST
            text_words.COUNTED_AT_MOST = cap or kept
            try:
                with store.read() as conn:
                    out[name] = {"index_seconds": round(filled, 1), "sets": {
                        s: wrc._score(conn, lambda c, q, n: text_words.texts_by_words(c, q, n),
                                      qs, ext_of, WORD_CANDIDATES)
                        for s, qs in sets.items()}}
            finally:
                text_words.COUNTED_AT_MOST = kept
        return out
    finally:
        store.close()


def mean_share(arm: dict) -> float:
    return float(np.mean([s["named"] for s in arm["sets"].values()]))


def present(result: dict, results: dict | None = None) -> dict:
    """Per size, each dialect's share named by query set, its ms and index seconds."""
    if "skipped" in result:
        return {"headline": [], "tables": [], "notes": [result["skipped"]]}
    tables = []
    for m in result["measured"]:
        sets = list(m["queries"])
        rows = [[name, *[f"{arm['sets'][s]['named']:.1%}" for s in sets],
                 f"{mean_share(arm):.1%}",
                 " / ".join(f"{arm['sets'][s]['ms']['median']:.0f}" for s in sets),
                 f"{arm['index_seconds']:.1f}"]
                for name, arm in m["arms"].items()]
        tables.append({
            "title": f"{m['documents']:,} documents ({m['words']['total']:,} words): the "
                     "share of queries whose document is among the words' candidates",
            "columns": ["dialect", *sets, "mean", "ms a query, median (per set)",
                        "s to index every text's words"],
            "rows": rows})
    engine, cpu = result["engine"], result.get("cpu", {})
    first = result["measured"][0]
    return {"headline": [], "tables": tables, "notes": [
        f"document_scale's tables (seed {result['seed']}); document_search's queries (seed "
        f"{result['query_seed']}, {first['queries'][next(iter(first['queries']))]} a set), "
        f"a word left out with seed {result['left_out_seed']}, changed with seed "
        f"{result['changed_seed']}. Texts stored and indexed directly, nothing encoded.",
        f"Measured on {cpu.get('cores', '?')} cores ({cpu.get('vendor', '?')}), PostgreSQL "
        f"on this machine; engine {engine['commit']}"
        + (f" with {', '.join(engine['changed_since'])} changed"
           if engine.get("changed_since") else "") + "."]}
