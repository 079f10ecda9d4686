"""How a team project (PostgreSQL) names documents by a query's words, chosen on validation
queries.

    DUPLENS_SHARED=/work/shared python -m benchmarks --only postgres_words_choice

A short query names documents by its words (`engine.store.text_words.texts_by_words`): those
holding its words in its order (a phrase), then documents ranked by its words. On SQLite the
ranking is FTS5's BM25 over the query's 16 rarest words (`rarest_words_choice`). PostgreSQL
ranked the documents holding every word by `ts_rank`, over vectors of PostgreSQL's own parse
of the text, which keeps "os.path", "3.11" or "café" whole while a query's words are split
and folded ("os", "path", "cafe"): such a word matched nothing, and with it the whole AND.

The setting is `close_up_choice`'s: its 2,000 documents imported by `duplens import`, then
copied to a private PostgreSQL server by `duplens copy` (`devtools/postgres_server.py`; the
benchmark is skipped, saying why, where none can start). Its 150 pasted passages and 150
typed sentences, each asked three ways: as drawn (a copy), with one word left out
(`rarest_words_choice.left_one_out`: no phrase holds it), and with one word changed to a
word of another document (a sentence remembered wrong). Measured per arm: the share of the
queries whose document is among the `WORD_CANDIDATES` documents named, and ms a query.

The arms, on the same documents and queries:
- SQLite, the product (for reference);
- PostgreSQL before: its own parse, then every word (reproduced here in SQL);
- PostgreSQL, words split as a query splits them, then every word (reproduced here);
- PostgreSQL, words split as a query splits them, then the 16 rarest by their inverse
  document frequency (the product now).
The split is not a choice (index and query must split alike). The ranking is: the rule,
fixed before the run, takes the higher mean share over the six query sets, or every word
(the old ranking, which reads fewer lists) where the other is within one point.
"""

from __future__ import annotations

import re
import time

import numpy as np

ARMS = ("sqlite", "postgresql before", "postgresql split, every word",
        "postgresql split, rarest words")
RANKINGS = ("postgresql split, every word", "postgresql split, rarest words")
# The arm that runs the product's own `texts_by_words` on PostgreSQL (the others are
# reproduced here); tests/engine/store/test_text_words.py checks on a server that it names a
# text whose words no text all holds, which every word's ranking cannot.
PRODUCT = RANKINGS[1]
WITHIN = 0.01
CHANGED_SEED = 4
LEFT_OUT_SEED = 3
_WORD = re.compile(r"[^\W_]+")


def run(quick: bool) -> dict:
    from benchmarks import close_up_choice as cc
    from benchmarks import document_corpus as dc
    from benchmarks import document_search as ds
    from benchmarks.documents import _engine_state
    from benchmarks.rarest_words_choice import left_one_out
    from devtools.postgres_server import ANALYST_PASSWORD, NoServer, PostgresServer

    try:
        server = PostgresServer().start()
    except NoServer as exc:
        return {"skipped": f"no PostgreSQL server could be started here: {exc}"}
    try:
        for project, texts, queries, _ in cc.validation_queries(quick,
                                                                "duplens-postgres-words-"):
            vocabulary = sorted({w for t in texts.values() for w in _WORD.findall(t.lower())})
            left, changed = (np.random.default_rng(LEFT_OUT_SEED),
                             np.random.default_rng(CHANGED_SEED))
            sets = {}
            for kind, qs in queries.items():
                sets[f"{kind}, as drawn"] = qs
                sets[f"{kind}, a word left out"] = [
                    {**q, "text": left_one_out(q["text"], left)} for q in qs]
                sets[f"{kind}, a word changed"] = [
                    {**q, "text": one_word_changed(q["text"], vocabulary, changed)}
                    for q in qs]
            url = server.url(server.create_database(), password=ANALYST_PASSWORD)
            arms = _arms(project, url, sets)
    except dc.CorpusUnavailable as exc:
        return {"skipped": f"the corpus could not be read: {exc}"}
    finally:
        server.stop()
    return {"documents": cc.QUICK_SIZE if quick else cc.SIZE, "seed": cc.SEED,
            "left_out_seed": LEFT_OUT_SEED, "changed_seed": CHANGED_SEED,
            "queries": {name: len(qs) for name, qs in sets.items()}, "arms": arms,
            "chosen": choose(arms), "product": PRODUCT,
            "engine": _engine_state(), "cpu": ds._cpu()}


def one_word_changed(text: str, vocabulary: list[str], rng: np.random.Generator) -> str:
    """`text` with one word, among its first 64 and never the first or last of them,
    replaced by a word of `vocabulary` it does not hold; a text of under three words is
    kept."""
    spans = [m.span() for m in _WORD.finditer(text)][:64]
    if len(spans) < 3:
        return text
    start, end = spans[int(rng.integers(1, len(spans) - 1))]
    held = set(_WORD.findall(text.lower()))
    while (word := vocabulary[int(rng.integers(len(vocabulary)))]) in held:
        pass
    return text[:start] + word + text[end:]


def _arms(project, url: str, sets: dict[str, list[dict]]) -> dict[str, dict]:
    from sqlalchemy import select

    from engine.copy_project import copy_project
    from engine.documents.word_candidates import WORD_CANDIDATES
    from engine.store.database import Store
    from engine.store.schema import items
    from engine.store.text_words import texts_by_words

    copy_project(project, url)
    out: dict[str, dict] = {}
    for location in (project, url):
        store = Store.open(location)
        try:
            if location == url:
                with store.write() as conn:
                    _add_parsed_words(conn)
            with store.read() as conn:
                ext_of = {int(t): str(e) for e, t in conn.execute(
                    select(items.c.ext_id, items.c.text_id).where(~items.c.deleted))}
                finders = ({"sqlite": texts_by_words} if location == project else {
                    "postgresql before": lambda c, q, n: _every_word(c, q, n, "parsed"),
                    "postgresql split, every word": lambda c, q, n: _every_word(c, q, n,
                                                                                 "words"),
                    "postgresql split, rarest words": texts_by_words})
                for arm, find in finders.items():
                    out[arm] = {name: _score(conn, find, qs, ext_of, WORD_CANDIDATES)
                                for name, qs in sets.items()}
        finally:
            store.close()
    return out


def _add_parsed_words(conn) -> None:
    """The vectors PostgreSQL made before schema v12, beside the product's: its own parse
    of each indexed text."""
    from sqlalchemy import text

    conn.execute(text("ALTER TABLE text_words ADD COLUMN parsed tsvector"))
    conn.execute(text("UPDATE text_words SET parsed = to_tsvector('simple', texts.text) "
                      "FROM texts WHERE texts.id = text_words.text_id"))
    conn.execute(text("CREATE INDEX ix_text_words_parsed ON text_words USING gin (parsed)"))


def _every_word(conn, query: str, limit: int, column: str) -> list[int]:
    """The ranking before: the phrase, then the texts holding every word by `ts_rank`
    (the code of schema v10-v11, on `column`). On the split words it reads the index as
    the product does (`through_the_index`), so the two rankings' times compare; on the
    parsed ones it runs as it ran."""
    from contextlib import nullcontext

    from engine.store.text_words import through_the_index

    with through_the_index(conn) if column == "words" else nullcontext():
        return _every_word_now(conn, query, limit, column)


def _every_word_now(conn, query: str, limit: int, column: str) -> list[int]:
    from sqlalchemy import text

    from engine.store.text_words import MOST_WORDS, _sequence, query_words

    words = query_words(query)
    if not words:
        return []
    found: list[int] = []
    sequence = _sequence(query)[:MOST_WORDS]
    if len(sequence) >= 2:
        found = [int(t) for t in conn.execute(text(
            f"SELECT text_id FROM text_words, phraseto_tsquery('simple', :q) AS q "
            f"WHERE {column} @@ q ORDER BY ts_rank({column}, q) DESC, text_id LIMIT :n"),
            {"q": " ".join(sequence), "n": limit}).scalars()]
    if len(found) < limit:
        terms = " & ".join("'" + w.replace("'", "''") + "'" for w in words)
        found = list(dict.fromkeys(found + [int(t) for t in conn.execute(text(
            f"SELECT text_id FROM text_words, to_tsquery('simple', :q) AS q "
            f"WHERE {column} @@ q ORDER BY ts_rank({column}, q) DESC, text_id LIMIT :n"),
            {"q": terms, "n": limit}).scalars()]))
    return found[:limit]


def _score(conn, find, queries: list[dict], ext_of: dict[int, str], limit: int) -> dict:
    named, seconds = 0, []
    for q in queries:
        t0 = time.perf_counter()
        found = find(conn, q["text"], limit)
        seconds.append(time.perf_counter() - t0)
        named += bool({ext_of.get(t) for t in found} & set(q["truth"]))
    return {"queries": len(queries), "named": round(named / max(len(queries), 1), 4),
            "ms": {"median": round(float(np.median(seconds)) * 1e3, 2),
                   "p95": round(float(np.percentile(seconds, 95)) * 1e3, 2)}}


def mean_share(arm: dict) -> float:
    return float(np.mean([s["named"] for s in arm.values()]))


def choose(arms: dict[str, dict]) -> str:
    """The module docstring's rule between the two rankings of split words."""
    every, rarest = RANKINGS
    return rarest if mean_share(arms[rarest]) > mean_share(arms[every]) + WITHIN else every


def present(result: dict, results: dict | None = None) -> dict:
    """The arms by query set, and the choice (benchmarks/report.py)."""
    if "skipped" in result:
        return {"headline": [], "tables": [], "notes": [result["skipped"]]}
    sets = list(result["queries"])
    rows = []
    for arm, by_set in result["arms"].items():
        shown = arm + (" (chosen)" if arm == result["chosen"] else "")
        rows.append([shown, *[f"{by_set[s]['named']:.0%}" for s in sets],
                     f"{mean_share(by_set):.1%}",
                     f"{np.median([by_set[s]['ms']['median'] for s in sets]):.1f}"])
    cpu, engine = result.get("cpu", {}), result["engine"]
    return {
        "headline": [],
        "tables": [{
            "title": f"Validation queries among {result['documents']:,} documents, each "
                     "asked as drawn, with a word left out and with a word changed: the "
                     "share whose document is among the 3 the words name",
            "columns": ["arm", *sets, "mean", "ms a query (median of the sets' medians)"],
            "rows": rows}],
        "notes": [
            f"close_up_choice's queries (seed {result['seed']}; {result['queries'][sets[0]]} "
            f"a set); a word left out with seed {result['left_out_seed']}, changed with seed "
            f"{result['changed_seed']}. The rule: the rarest words where their mean share "
            "is more than one point above every word's; else every word.",
            f"Chosen: {result['chosen']}. The product ranked by {result['product']} when "
            "this ran" + ("." if result["chosen"] == result["product"] else
                          "; tests/benchmarks/test_postgres_words_choice.py holds it to "
                          "the choice."),
            f"Measured on {cpu.get('cores', '?')} cores ({cpu.get('vendor', '?')}), "
            f"PostgreSQL on this machine; engine {engine['commit']}"
            + (f" with {', '.join(engine['changed_since'])} changed"
               if engine.get("changed_since") else "") + "."]}
