"""How a short query's words name documents, chosen on validation queries, on SQLite and on
a team project's PostgreSQL.

    DUPLENS_SHARED=/work/shared python -m benchmarks --only word_ranking_choice

A short query names documents by its words (`engine.store.text_words.texts_by_words`):
those holding its words in its order (a phrase), then (`EVERY_WORD`) those holding every
one of its words, then those its 16 rarest words rank (SQLite: FTS5's BM25; PostgreSQL:
the summed inverse document frequency of the words each holds). Until schema v12
PostgreSQL asked only for the phrase and then every word, over vectors of its own parse of
the text, which keeps "os.path", "3.11" or "café" whole while a query's words are split and
folded ("os", "path", "cafe"): such a word matched nothing, and with it the whole query.

The setting is `close_up_choice`'s: its 2,000 documents imported by `duplens import`, and
copied to a private PostgreSQL server by `duplens copy` (`devtools/postgres_server.py`; the
benchmark is skipped, saying why, where none can start). Its 150 pasted passages and 150
typed sentences, each asked three ways: as drawn (a copy), with one word left out
(`rarest_words_choice.left_one_out`: no phrase holds it), and with one word changed to a
word of another document (a sentence remembered wrong). Measured per arm: the share of the
queries whose document is among the `WORD_CANDIDATES` documents named, and ms a query.

Every arm but the first PostgreSQL one runs the product's `texts_by_words` with its
settings: `every_word` on or off, and `rarest=0` for every word alone. The first is
reproduced here in SQL (the code before schema v12, on a column of PostgreSQL's own parse).
The choice is `EVERY_WORD`, one setting for both dialects; the rule, fixed before the run:
on when the mean share over both dialects' six query sets each is more than one point
above off's, else off (one query fewer).
"""

from __future__ import annotations

import re
import time

import numpy as np

# arm -> (dialect, every_word, rarest); None: the code before schema v12, reproduced.
ARMS: dict[str, tuple[str, bool, int] | None] = {
    "SQLite: phrase, rarest words": ("sqlite", False, 16),
    "SQLite: phrase, every word, rarest words": ("sqlite", True, 16),
    "PostgreSQL before (its own parse): phrase, every word": None,
    "PostgreSQL: phrase, every word": ("postgresql", True, 0),
    "PostgreSQL: phrase, rarest words": ("postgresql", False, 16),
    "PostgreSQL: phrase, every word, rarest words": ("postgresql", True, 16),
}
# The arms EVERY_WORD off and on run, one a dialect.
SETTINGS = {False: ("SQLite: phrase, rarest words", "PostgreSQL: phrase, rarest words"),
            True: ("SQLite: phrase, every word, rarest words",
                   "PostgreSQL: phrase, every word, rarest words")}
WITHIN = 0.01
CHANGED_SEED = 4
LEFT_OUT_SEED = 3
_WORD = re.compile(r"[^\W_]+")


def run(quick: bool) -> dict:
    from benchmarks import close_up_choice as cc
    from benchmarks import document_corpus as dc
    from benchmarks import document_search as ds
    from benchmarks.documents import _engine_state
    from devtools.postgres_server import ANALYST_PASSWORD, NoServer, PostgresServer
    from engine.store.text_words import EVERY_WORD

    try:
        server = PostgresServer().start()
    except NoServer as exc:
        return {"skipped": f"no PostgreSQL server could be started here: {exc}"}
    try:
        for project, texts, queries, _ in cc.validation_queries(quick,
                                                                "duplens-word-ranking-"):
            vocabulary = sorted({w for t in texts.values() for w in _WORD.findall(t.lower())})
            tested = ds._queries(texts, ds.QUICK_QUERIES if quick else ds.QUERIES)
            sets = _three_ways(queries, vocabulary)
            test_sets = _three_ways(tested, vocabulary)
            url = server.url(server.create_database(), password=ANALYST_PASSWORD)
            arms, test = _arms(project, url, [sets, test_sets])
    except dc.CorpusUnavailable as exc:
        return {"skipped": f"the corpus could not be read: {exc}"}
    finally:
        server.stop()
    return {"documents": cc.QUICK_SIZE if quick else cc.SIZE, "seed": cc.SEED,
            "left_out_seed": LEFT_OUT_SEED, "changed_seed": CHANGED_SEED,
            "queries": {name: len(qs) for name, qs in sets.items()}, "arms": arms,
            "chosen": choose(arms), "product": EVERY_WORD,
            "test_queries": {name: len(qs) for name, qs in test_sets.items()},
            "test": test,
            "engine": _engine_state(), "cpu": ds._cpu()}


def _three_ways(queries: dict[str, list[dict]], vocabulary: list[str]
                ) -> dict[str, list[dict]]:
    """Each kind's queries as drawn, with a word left out and with a word changed (the
    seeds drawn again for each call, so validation and test are asked alike)."""
    from benchmarks.rarest_words_choice import left_one_out

    left, changed = (np.random.default_rng(LEFT_OUT_SEED),
                     np.random.default_rng(CHANGED_SEED))
    sets = {}
    for kind, qs in queries.items():
        sets[f"{kind}, as drawn"] = qs
        sets[f"{kind}, a word left out"] = [
            {**q, "text": left_one_out(q["text"], left)} for q in qs]
        sets[f"{kind}, a word changed"] = [
            {**q, "text": one_word_changed(q["text"], vocabulary, changed)} for q in qs]
    return sets


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


def _arms(project, url: str, sets: list[dict[str, list[dict]]]) -> list[dict[str, dict]]:
    """Every arm on each of `sets` (validation, then test): {arm: {set: figures}} each."""
    from sqlalchemy import select

    from engine.copy_project import copy_project
    from engine.documents.word_candidates import WORD_CANDIDATES
    from engine.store.database import Store
    from engine.store.schema import items
    from engine.store.text_words import texts_by_words

    copy_project(project, url)
    out: list[dict[str, dict]] = [{} for _ in sets]
    for dialect, location in (("sqlite", project), ("postgresql", url)):
        store = Store.open(location)
        try:
            if dialect == "postgresql":
                with store.write() as conn:
                    _add_parsed_words(conn)
            with store.read() as conn:
                ext_of = {int(t): str(e) for e, t in conn.execute(
                    select(items.c.ext_id, items.c.text_id).where(~items.c.deleted))}
                for arm, how in ARMS.items():
                    if how is None and dialect == "postgresql":
                        find = _every_word_before
                    elif how is not None and how[0] == dialect:
                        def find(c, q, n, every=how[1], rarest=how[2]):
                            return texts_by_words(c, q, n, rarest=rarest, every_word=every)
                    else:
                        continue
                    for part, named in zip(out, sets, strict=True):
                        part[arm] = {name: _score(conn, find, qs, ext_of, WORD_CANDIDATES)
                                     for name, qs in named.items()}
        finally:
            store.close()
    return [{arm: part[arm] for arm in ARMS} for part in out]


def _add_parsed_words(conn) -> None:
    """The vectors PostgreSQL made before schema v12, beside the product's: its own parse
    of each indexed text."""
    from sqlalchemy import text

    conn.execute(text("ALTER TABLE text_words ADD COLUMN parsed tsvector"))
    conn.execute(text("UPDATE text_words SET parsed = to_tsvector('simple', texts.text) "
                      "FROM texts WHERE texts.id = text_words.text_id"))
    conn.execute(text("CREATE INDEX ix_text_words_parsed ON text_words USING gin (parsed)"))


def _every_word_before(conn, query: str, limit: int) -> list[int]:
    """The code before schema v12, on PostgreSQL's own parse: the phrase, then the texts
    holding every word, by `ts_rank`, read as the planner chose (a scan of every vector)."""
    from sqlalchemy import text

    from engine.store.text_words import MOST_WORDS, _sequence, query_words

    words = query_words(query)
    if not words:
        return []
    found: list[int] = []
    sequence = _sequence(query)[:MOST_WORDS]
    if len(sequence) >= 2:
        found = [int(t) for t in conn.execute(text(
            "SELECT text_id FROM text_words, phraseto_tsquery('simple', :q) AS q "
            "WHERE parsed @@ q ORDER BY ts_rank(parsed, q) DESC, text_id LIMIT :n"),
            {"q": " ".join(sequence), "n": limit}).scalars()]
    if len(found) < limit:
        terms = " & ".join("'" + w.replace("'", "''") + "'" for w in words)
        found = list(dict.fromkeys(found + [int(t) for t in conn.execute(text(
            "SELECT text_id FROM text_words, to_tsquery('simple', :q) AS q "
            "WHERE parsed @@ q ORDER BY ts_rank(parsed, q) DESC, text_id LIMIT :n"),
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


def setting_share(arms: dict[str, dict], every_word: bool) -> float:
    """The mean share over both dialects' query sets with `EVERY_WORD` so."""
    return float(np.mean([mean_share(arms[arm]) for arm in SETTINGS[every_word]]))


def choose(arms: dict[str, dict]) -> bool:
    """The module docstring's rule: `EVERY_WORD` on only when more than a point better."""
    return setting_share(arms, True) > setting_share(arms, False) + WITHIN


def _test_table(result: dict) -> list[dict]:
    """The test queries (document_search's, held out of the choice), reported once."""
    test = result.get("test")
    if not test:
        return []
    sets = list(result["test_queries"])
    chosen_arms = SETTINGS[result["chosen"]]
    rows = [[arm + (" (chosen)" if arm in chosen_arms else ""),
             *[f"{by_set[s]['named']:.0%}" for s in sets], f"{mean_share(by_set):.1%}"]
            for arm, by_set in test.items()]
    return [{"title": f"Test: document_search's queries among the same documents "
                      f"({result['test_queries'][sets[0]]} a set), asked the same three "
                      "ways; reported once, after the choice",
             "columns": ["arm", *sets, "mean"], "rows": rows}]


def present(result: dict, results: dict | None = None) -> dict:
    """The arms by query set, and the choice (benchmarks/report.py)."""
    if "skipped" in result:
        return {"headline": [], "tables": [], "notes": [result["skipped"]]}
    sets = list(result["queries"])
    chosen_arms = SETTINGS[result["chosen"]]
    rows = []
    for arm, by_set in result["arms"].items():
        shown = arm + (" (chosen)" if arm in chosen_arms else "")
        rows.append([shown, *[f"{by_set[s]['named']:.0%}" for s in sets],
                     f"{mean_share(by_set):.1%}",
                     f"{np.median([by_set[s]['ms']['median'] for s in sets]):.1f}"])
    arms, engine, cpu = result["arms"], result["engine"], result.get("cpu", {})
    on, off = setting_share(arms, True), setting_share(arms, False)
    said = {True: "on", False: "off"}
    return {
        "headline": [],
        "tables": [{
            "title": f"Validation queries among {result['documents']:,} documents, each "
                     "asked as drawn, with a word left out and with a word changed: the "
                     "share whose document is among the 3 the words name",
            "columns": ["arm", *sets, "mean", "ms a query (median of the sets' medians)"],
            "rows": rows}] + _test_table(result),
        "notes": [
            f"close_up_choice's queries (seed {result['seed']}; {result['queries'][sets[0]]} "
            f"a set); a word left out with seed {result['left_out_seed']}, changed with seed "
            f"{result['changed_seed']}. The rule: every word before the rarest words "
            "(EVERY_WORD) where it raises the mean share over both dialects by more than one "
            f"point; it gave {on:.1%} on against {off:.1%} off.",
            f"Chosen: EVERY_WORD {said[result['chosen']]}. The product had it "
            f"{said[result['product']]} when this ran"
            + ("." if result["chosen"] == result["product"] else
               "; tests/benchmarks/test_word_ranking_choice.py holds it to the choice."),
            f"Measured on {cpu.get('cores', '?')} cores ({cpu.get('vendor', '?')}), "
            f"PostgreSQL on this machine; engine {engine['commit']}"
            + (f" with {', '.join(engine['changed_since'])} changed"
               if engine.get("changed_since") else "") + "."]}
