"""Long texts' words, indexed by the database's own full-text search, so a short query's
candidates include the documents that hold its words.

Why: a typed sentence is a few percent of the window that holds it, so the windows' cosine
ranks its document among dozens that read alike (pages of one manual), and the close-up
(`engine.documents.close_up`) can only lift a document it is asked to read. The words a
sentence was typed with find its document directly. They only propose candidates: every
candidate is scored by the model, as any other (`engine.keystroke_search`), so the one
similarity stays the model's.

A query names, each step filling what the ones before left: the texts holding its words in
its order (a phrase), then those holding every one of its words (`EVERY_WORD`), then those
ranked by its `RAREST_WORDS` rarest words. Each dialect uses what it ships with, no index
of ours:

- SQLite: an FTS5 table holding only the index (`content=''`; the texts stay in `texts`),
  ranked by FTS5's BM25 over the query's rarest words (their document counts read from an
  `fts5vocab` table), so a sentence's common words cost nothing.
- PostgreSQL: a `tsvector` column with a GIN index (`simple` configuration: no stemming, as
  FTS5's `unicode61`), made from the text's words as the query's are split (`folded`:
  lower case, accents removed, split at anything but letters and digits), since
  PostgreSQL's own parser keeps "os.path", "3.11", "www.python.org" and "café" as single
  tokens that a query's words "os", "path" or "cafe" never match (schema v12 made every
  vector again). The phrase and every word are ranked by `ts_rank`; the rarest words
  name the documents holding any of them, each scored by the sum of the inverse document
  frequency of those it holds (BM25's weight as FTS5 computes it, without the term
  frequency). Its queries read the GIN index (`through_the_index`).

Only texts read in several windows (documents) are indexed: a short text is found by its
one vector. Written in the transaction that stores a text's windows (`add_words`); a
project made before schema v10 is filled by its migration (`fill`). Where SQLite was built
without FTS5 the table is missing and the search goes on without it (`has_words`).
"""

from __future__ import annotations

import logging
import math
import re
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from sqlalchemy import Connection, bindparam, inspect, text
from sqlalchemy.exc import DatabaseError, OperationalError

log = logging.getLogger("duplens.text_words")

TABLE = "text_words"
VOCAB = "text_words_vocab"
# The query's words a SQLite search ranks by, rarest first: a sentence is found by its
# rarest few, and more words only make the ranking read longer lists. Chosen on validation
# queries no phrase holds (`benchmarks/rarest_words_choice.py`: close_up_choice's, one word
# left out of each): 16 named the document of every pasted passage among 3 and 79% of
# typed sentences, as 32 and 64 did, at 9-11 ms a query; 8 named 97% / 79%, 4 91% / 79%.
RAREST_WORDS = 16
# Whether the texts holding every word of a query come before those its rarest words rank:
# the way a sentence remembered with a word left out is named most surely, and one
# remembered with a word changed is held by no text, so the rarest words still name it.
# Chosen on validation queries (`benchmarks/word_ranking_choice.py`).
EVERY_WORD = True
# The most distinct words taken from a query at all (a pasted paragraph has more).
MOST_WORDS = 64
# PostgreSQL has no document counts to read (FTS5 has its vocabulary table), so a query's
# words are counted through the GIN index, each up to this many texts: what ranks is which
# words are rare, and a word held by more texts than this weighs as if held by this many
# (BM25's weight of a word held by half the texts or more is nil anyway, so up to 2,000
# texts this changes nothing).
COUNTED_AT_MOST = 1_000
# PostgreSQL refuses a tsvector over 1 MB ("string is too long for tsvector"), and the
# import's transaction with it: 200,000 words drawn from 200,000 distinct ones made 1.5 MB.
# 200,000 characters of words keep it under the limit whatever the words (their letters,
# two bytes a position, a few bytes a distinct word) and hold about 30,000 words, more
# than a text's windows read (256 windows, about 24,000 words).
MOST_FOLDED_CHARACTERS = 200_000
_WORD = re.compile(r"[^\W_]+")   # as FTS5's unicode61 splits: letters and digits only


def create(conn: Connection) -> None:
    """The table (and SQLite's vocabulary view of it); nothing where SQLite has no FTS5."""
    if conn.dialect.name == "postgresql":
        conn.execute(text(f"CREATE TABLE IF NOT EXISTS {TABLE} ("
                          "text_id INTEGER PRIMARY KEY REFERENCES texts (id) "
                          "ON DELETE CASCADE, words TSVECTOR NOT NULL)"))
        conn.execute(text(f"CREATE INDEX IF NOT EXISTS ix_{TABLE} ON {TABLE} "
                          "USING gin (words)"))
        return
    try:
        conn.execute(text(f"CREATE VIRTUAL TABLE IF NOT EXISTS {TABLE} USING fts5("
                          "body, content='', tokenize='unicode61 remove_diacritics 2')"))
        conn.execute(text(f"CREATE VIRTUAL TABLE IF NOT EXISTS {VOCAB} USING "
                          f"fts5vocab({TABLE}, 'row')"))
    except OperationalError as exc:
        if "fts5" not in str(exc).lower():
            raise


def has_words(conn: Connection) -> bool:
    """Whether the project has the table (SQLite without FTS5, or a read-only project not
    yet upgraded to schema v10, has not)."""
    return inspect(conn).has_table(TABLE)


def add_words(conn: Connection, text_ids: Sequence[int]) -> None:
    """Index the words of `text_ids` (rows of `texts`) inside the caller's transaction; a
    text already indexed is left as it is."""
    wanted = sorted({int(t) for t in text_ids})
    if not wanted or not has_words(conn):
        return
    for start in range(0, len(wanted), 500):
        part = wanted[start:start + 500]
        if conn.dialect.name == "postgresql":
            rows = conn.execute(text(f"SELECT id, text FROM texts WHERE id IN :ids AND id "
                                     f"NOT IN (SELECT text_id FROM {TABLE})")
                                .bindparams(bindparam("ids", expanding=True)),
                                {"ids": part}).all()
            if rows:
                conn.execute(text(f"INSERT INTO {TABLE} (text_id, words) VALUES "
                                  "(:id, to_tsvector('simple', :words)) "
                                  "ON CONFLICT (text_id) DO NOTHING"),
                             [{"id": int(t), "words": folded(body)} for t, body in rows])
            continue
        # An FTS5 table without content takes a second row of a rowid without complaint,
        # and its counts would then be wrong: skip those it has.
        have = set(conn.execute(text(f"SELECT rowid FROM {TABLE} WHERE rowid IN :ids")
                                .bindparams(bindparam("ids", expanding=True)),
                                {"ids": part}).scalars())
        missing = [t for t in part if t not in have]
        if missing:
            conn.execute(text(f"INSERT INTO {TABLE} (rowid, body) SELECT id, text "
                              "FROM texts WHERE id IN :ids")
                         .bindparams(bindparam("ids", expanding=True)), {"ids": missing})


def fill(conn: Connection) -> None:
    """Index every text read in several windows by any model (a project from before
    schema v10)."""
    ids = [int(t) for t in conn.execute(text("SELECT DISTINCT text_id FROM text_windows"))
           .scalars()]
    add_words(conn, ids)


def query_words(query: str) -> list[str]:
    """The query's distinct words as the index holds them: lower case, accents removed,
    split at anything but letters and digits; at most `MOST_WORDS`, in order."""
    return list(dict.fromkeys(_sequence(query)))[:MOST_WORDS]


def folded(body: str) -> str:
    """The text's words as the index and a query hold them, one space apart, up to
    `MOST_FOLDED_CHARACTERS` (what PostgreSQL's vector is made from)."""
    out = " ".join(_sequence(body))
    if len(out) <= MOST_FOLDED_CHARACTERS:
        return out
    return out[:MOST_FOLDED_CHARACTERS].rsplit(" ", 1)[0]


def _sequence(query: str) -> list[str]:
    """Every word of the query in order, as the index holds them: lower case, accents
    removed, split at anything but letters and digits."""
    folded = "".join(c for c in unicodedata.normalize("NFKD", query.lower())
                     if not unicodedata.combining(c))
    return _WORD.findall(folded)


def texts_by_words(conn: Connection, query: str, limit: int,
                   rarest: int | None = None, every_word: bool = EVERY_WORD) -> list[int]:
    """Up to `limit` text ids whose words best match the query's, best first: those
    holding the query's words in its order (a phrase), then (with `every_word`) those
    holding every one of its words, then those ranked by its `rarest` rarest words
    (`_ranked`, default `RAREST_WORDS`); each step only fills what the ones before left.
    None where the project has no index or the query no word.

    The phrase comes first because a sentence copied from a document is made of that
    document's common words as often as of rare ones: among 2,000 pages of one manual,
    "The C API version for this interpreter." ranked its three documents below ten pages
    about the C API by its words alone."""
    words = query_words(query)
    if not words or limit <= 0 or not has_words(conn):
        return []
    try:
        with conn.begin_nested(), through_the_index(conn):   # a failure leaves the read usable
            found = _phrase(conn, query, limit)
            if every_word and len(found) < limit:
                found = list(dict.fromkeys(found + _every_word(conn, words, limit)))
            if len(found) < limit:
                found = list(dict.fromkeys(found + _ranked(
                    conn, words, limit, RAREST_WORDS if rarest is None else rarest)))
    except DatabaseError as exc:
        # A damaged index (or a table of that name that is not one) only costs the search
        # these candidates: the model still finds what it finds, and the log says why.
        log.warning("the word index could not be read, searching without it: %s",
                    " ".join(str(exc).split())[:300])
        return []
    return found[:limit]


@contextmanager
def through_the_index(conn: Connection) -> Iterator[None]:
    """On PostgreSQL, the block's queries read the GIN index rather than every vector. The
    vectors are TOASTed, so the planner sees a table of a few pages and scans it, reading
    and decompressing every vector (5-6 ms a word among 2,000 documents, against 0.3-0.7
    ms through the index, measured with EXPLAIN ANALYZE). `enable_seqscan` is set off for
    the transaction and set back after the block; a block that fails leaves it to the
    caller's savepoint, whose rollback undoes the setting."""
    if conn.dialect.name != "postgresql":
        yield
        return
    before = conn.execute(text("SELECT current_setting('enable_seqscan')")).scalar_one()
    conn.execute(text("SELECT set_config('enable_seqscan', 'off', true)"))
    yield
    conn.execute(text("SELECT set_config('enable_seqscan', :v, true)"), {"v": before})


def _phrase(conn: Connection, query: str, limit: int) -> list[int]:
    """Texts holding the query's words in its order, ranked (BM25 or `ts_rank`)."""
    sequence = _sequence(query)[:MOST_WORDS]
    if len(sequence) < 2:
        return []
    if conn.dialect.name == "postgresql":
        return [int(t) for t in conn.execute(text(
            f"SELECT text_id FROM {TABLE}, phraseto_tsquery('simple', :q) AS q "
            "WHERE words @@ q ORDER BY ts_rank(words, q) DESC, text_id LIMIT :n"),
            {"q": " ".join(sequence), "n": limit}).scalars()]
    return [int(t) for t in conn.execute(
        text(f"SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH :m ORDER BY rank LIMIT :n"),
        {"m": '"' + " ".join(sequence) + '"', "n": limit}).scalars()]


def _every_word(conn: Connection, words: list[str], limit: int) -> list[int]:
    """Texts holding every one of `words`, in any order, ranked (BM25 or `ts_rank`)."""
    if len(words) < 2:    # one word: what the rarest words' ranking asks too
        return []
    if conn.dialect.name == "postgresql":
        return [int(t) for t in conn.execute(text(
            f"SELECT text_id FROM {TABLE}, plainto_tsquery('simple', :q) AS q "
            "WHERE words @@ q ORDER BY ts_rank(words, q) DESC, text_id LIMIT :n"),
            {"q": " ".join(words), "n": limit}).scalars()]
    match = " AND ".join('"' + w.replace('"', '""') + '"' for w in words)
    return [int(t) for t in conn.execute(
        text(f"SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH :m ORDER BY rank LIMIT :n"),
        {"m": match, "n": limit}).scalars()]


def _ranked(conn: Connection, words: list[str], limit: int, rarest: int) -> list[int]:
    """Texts ranked by the query's `rarest` rarest words: on SQLite by FTS5's BM25, on
    PostgreSQL by the summed inverse document frequency of those each holds."""
    if conn.dialect.name == "postgresql":
        return _ranked_postgresql(conn, words, limit, rarest)
    counts = dict(conn.execute(text(f"SELECT term, doc FROM {VOCAB} WHERE term IN :words")
                               .bindparams(bindparam("words", expanding=True)),
                               {"words": words}).all())
    by_rarity = sorted((w for w in words if w in counts), key=lambda w: (counts[w], w))
    if not by_rarity:
        return []
    match = " OR ".join('"' + w.replace('"', '""') + '"' for w in by_rarity[:rarest])
    return [int(t) for t in conn.execute(
        text(f"SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH :m ORDER BY rank LIMIT :n"),
        {"m": match, "n": limit}).scalars()]


def _ranked_postgresql(conn: Connection, words: list[str], limit: int, rarest: int
                       ) -> list[int]:
    """The texts holding any of the query's `rarest` rarest words, by the summed weight of
    those they hold: BM25's inverse document frequency as FTS5 computes it,
    ln((N - df + 0.5) / (df + 0.5)) and at least 1e-6, where df counts the texts holding
    the word (through the GIN index, up to `COUNTED_AT_MOST`) and N all the indexed
    texts."""
    total = conn.execute(text(f"SELECT count(*) FROM {TABLE}")).scalar_one()
    # One subquery a word, each its own GIN lookup (a word taken from an unnest() made the
    # planner scan every vector once a word: 300 ms for 53 words among 2,000 documents).
    counted = [f"SELECT {i} AS i, (SELECT count(*) FROM (SELECT 1 FROM {TABLE} WHERE "
               f"words @@ plainto_tsquery('simple', :w{i}) LIMIT {COUNTED_AT_MOST}) AS c)"
               for i in range(len(words))]
    counts = {words[i]: n for i, n in conn.execute(
        text(" UNION ALL ".join(counted)), {f"w{i}": w for i, w in enumerate(words)})}
    by_rarity = sorted((w for w in words if counts.get(w)),
                       key=lambda w: (counts[w], w))[:rarest]
    if not by_rarity:
        return []
    parts, params = [], {"n": limit}
    for i, word in enumerate(by_rarity):
        parts.append(f"SELECT text_id, CAST(:f{i} AS float8) AS weight FROM {TABLE} "
                     f"WHERE words @@ plainto_tsquery('simple', :w{i})")
        df = counts[word]
        params[f"w{i}"] = word
        params[f"f{i}"] = max(math.log((total - df + 0.5) / (df + 0.5)), 1e-6)
    return [int(t) for t in conn.execute(text(
        f"SELECT text_id FROM ({' UNION ALL '.join(parts)}) AS held GROUP BY text_id "
        # rounded: a sum of the same weights added in another order may differ in its
        # last bits, which would order two texts holding the same words differently
        "ORDER BY round(CAST(sum(weight) AS numeric), 9) DESC, text_id LIMIT :n"),
        params).scalars()]
