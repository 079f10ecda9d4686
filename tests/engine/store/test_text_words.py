"""`store.text_words`: long texts' words in the database's own full-text index, on SQLite
(FTS5) and PostgreSQL (tsvector), written once per text and filled for an older project."""

from __future__ import annotations

import numpy as np
from sqlalchemy import text

from engine.store import items, text_words
from engine.store import sources as source_store
from engine.store.database import Store
from engine.text import norm_key
from tests.engine.store.stored_texts import add_texts, indexed, upgraded

DOCS = {
    "tides": "The harbour master logged the spring tides; the ferry stayed tied up for "
             "three days while the sea wall was mended.",
    "pastry": "Fold the butter into the flour, rest the dough, then bake the pastry until "
              "golden and serve it with stewed apples.",
    "ferry": "The ferry timetable changed in March: boats leave the harbour every hour.",
}


def _texts(store: Store, docs: dict[str, str] = DOCS) -> dict[str, int]:
    return add_texts(store, docs)


def test_a_texts_words_find_it_rarest_first_once_indexed(store_location):
    store = Store.open(store_location, create=True)
    try:
        ids = _texts(store)
        with store.read() as conn:
            assert text_words.has_words(conn)
            assert text_words.texts_by_words(conn, "sea wall mended", 5) == []  # none indexed
        with store.write() as conn:
            text_words.add_words(conn, [ids["tides"], ids["ferry"]])
            text_words.add_words(conn, [ids["tides"]])          # again: left as it is
        with store.read() as conn:
            found = text_words.texts_by_words(conn, "the ferry stayed tied up while the "
                                              "sea wall was mended", 5)
            assert found[0] == ids["tides"]
            assert ids["pastry"] not in found                   # never indexed
            assert text_words.texts_by_words(conn, "Fold butter, flour", 5) == []
            assert text_words.texts_by_words(conn, "!!! ...", 5) == []
            if conn.dialect.name == "sqlite":
                # One row per text, however often it was added: its word counts are right.
                assert conn.execute(text("SELECT doc FROM text_words_vocab "
                                         "WHERE term = 'harbour'")).scalar_one() == 2
                # The rarest words rank: one shared word does not put "ferry" first.
                assert text_words.texts_by_words(conn, "ferry mended", 5)[0] == ids["tides"]
            else:
                assert conn.execute(text("SELECT count(*) FROM text_words")).scalar_one() == 2
    finally:
        store.close()


def test_query_words_split_and_fold_as_the_index_does():
    assert text_words.query_words("Café au lait, os.path_join(x) café") == [
        "cafe", "au", "lait", "os", "path", "join", "x"]
    assert len(text_words.query_words(" ".join(f"w{i}" for i in range(500)))) == \
        text_words.MOST_WORDS


def test_a_schema_9_project_gains_the_words_of_its_documents(store_location):
    """Before schema 10 there was no word index: opening makes it and indexes every text
    that some model read in several windows, and no other."""
    from engine.store.dialects import backend
    from engine.store.location import parse_location
    from engine.store.migrations import MIGRATIONS
    from engine.store.schema import meta, models, text_windows

    where = parse_location(store_location)
    engine = backend(where.dialect).make_engine(where)
    with engine.begin() as conn:
        for step in MIGRATIONS[:9]:
            step(conn)
        conn.execute(meta.insert(), [{"key": "app", "value": "duplens"},
                                     {"key": "schema_version", "value": "9"}])
    engine.dispose()
    store = Store.open(store_location)          # upgraded to 10 now, with nothing to index
    try:
        ids = _texts(store)
        with store.write() as conn:
            conn.execute(text("DROP TABLE text_words_vocab" if conn.dialect.name == "sqlite"
                              else "SELECT 1"))
            conn.execute(text("DROP TABLE text_words"))
            conn.execute(models.insert().values(
                id=1, name="base", location="default", fingerprint="sha256:aa", dim=2,
                max_seq_length=256, metrics={}, created_at=1.0))
            for key in ("tides", "pastry"):
                conn.execute(text_windows.insert().values(
                    model_id=1, text_id=ids[key],
                    spans=np.zeros((2, 2), "<i4").tobytes(),
                    vectors=np.zeros((2, 2), "<f2").tobytes()))
            conn.execute(meta.update().where(meta.c.key == "schema_version").values(value="9"))
    finally:
        store.close()
    with upgraded(store_location) as conn:
        assert text_words.texts_by_words(conn, "sea wall mended", 5) == [ids["tides"]]
        assert text_words.texts_by_words(conn, "stewed apples", 5) == [ids["pastry"]]
        assert text_words.texts_by_words(conn, "timetable", 5) == []   # one window


def test_a_copied_project_finds_its_documents_by_their_words(tmp_path, store_location):
    """`duplens copy` copies tables; the word index is the database's own, so the
    destination builds it from the copied texts (to a server, or to another file)."""
    from engine.copy_project import copy_project
    from engine.store.schema import models, text_windows

    source = tmp_path / "source.duplens"
    store = Store.open(source, create=True)
    try:
        ids = _texts(store)
        with store.write() as conn:
            conn.execute(models.insert().values(
                id=1, name="base", location="default", fingerprint="sha256:aa", dim=2,
                max_seq_length=256, metrics={}, created_at=1.0))
            conn.execute(text_windows.insert().values(
                model_id=1, text_id=ids["tides"], spans=np.zeros((2, 2), "<i4").tobytes(),
                vectors=np.zeros((2, 2), "<f2").tobytes()))
            text_words.add_words(conn, [ids["tides"]])
    finally:
        store.close()
    copy_project(source, store_location)
    copied = Store.open(store_location, read_only=True)
    try:
        with copied.read() as conn:
            assert text_words.texts_by_words(conn, "sea wall mended", 5) == [ids["tides"]]
    finally:
        copied.close()


def test_a_sentence_copied_word_for_word_finds_its_text_before_those_richer_in_its_words(
        store_location):
    """The phrase comes first: "boats leave the harbour" names the text holding it in that
    order before one that repeats every word in another order (which BM25 alone ranks
    first, being short and full of them); a sentence typed with a wrong word still finds
    texts by its words."""
    store = Store.open(store_location, create=True)
    try:
        ids = _texts(store)
        with store.write() as conn:
            source = source_store.add_source(conn, file_name="g.csv", file_path="/g.csv",
                                             sha256="t", mapping_key="m", format={},
                                             text_columns=["text"], columns=["text"])
            mixed = "Harbour boats leave; leave the boats. The harbour boats leave the quay."
            items.add_rows(conn, source, [items.NewRow(0, "mixed", mixed, norm_key(mixed),
                                                       {})])
            ids["mixed"] = items.text_ids_for_keys(conn, [norm_key(mixed)])[norm_key(mixed)]
            text_words.add_words(conn, list(ids.values()))
        with store.read() as conn:
            assert text_words.texts_by_words(conn, "Boats leave the harbour", 5)[0] == \
                ids["ferry"]
            if conn.dialect.name == "sqlite":
                words = text_words.query_words("Boats leave the harbour")
                assert text_words._ranked(conn, words, 5, text_words.RAREST_WORDS)[0] \
                    == ids["mixed"]   # the ground
                assert set(text_words.texts_by_words(conn, "boats leeve the harbour", 5)) \
                    >= {ids["ferry"], ids["mixed"]}
    finally:
        store.close()


def test_a_damaged_word_index_costs_only_its_candidates(tmp_path, caplog):
    """A project whose `text_words` is not an index (damaged, or made by hand) answers no
    words, says why in the log, and leaves the read it ran in usable."""
    store = Store.open(tmp_path / "project.duplens", create=True)
    try:
        ids = _texts(store)
        with store.write() as conn:
            conn.execute(text("DROP TABLE text_words_vocab"))
            conn.execute(text("DROP TABLE text_words"))
            conn.execute(text("CREATE TABLE text_words (body TEXT)"))
        with store.read() as conn, caplog.at_level("WARNING", logger="duplens.text_words"):
            assert text_words.texts_by_words(conn, "sea wall mended", 5) == []
            assert conn.execute(text("SELECT count(*) FROM texts")).scalar_one() == len(ids)
        assert "the word index could not be read" in caplog.text
    finally:
        store.close()


TECHNICAL = {
    "paths": "Use os.path_join(base, name) on Python 3.11, as www.python.org says; the "
             "café's menu is not a path.",
    "other": "Join the two paths by hand with a slash, then check the name of the base "
             "folder twice.",
}


def test_the_index_splits_words_as_a_query_does(store_location):
    """Dotted names, versions, hosts and accents are words as the query splits them, on
    both dialects (PostgreSQL's own parser keeps "os.path" or "café" whole)."""
    with indexed(store_location, TECHNICAL) as (conn, ids):
        for query in ("os path join", "Python 3.11", "python org", "CAFE'S MENU",
                      "the café"):
            assert text_words.texts_by_words(conn, query, 1) == [ids["paths"]], query


def test_a_sentence_remembered_with_a_word_changed_still_names_its_text(store_location):
    """No text holds every word and no phrase holds the query: its rarest words still
    name the text (PostgreSQL too, where the index once asked for every word)."""
    with indexed(store_location, DOCS) as (conn, ids):
        found = text_words.texts_by_words(
            conn, "the ferry stayed tied up while the sea wall was rebuilt", 5)
        assert found[0] == ids["tides"]
        if conn.dialect.name == "postgresql":   # read through the index, then as before
            assert conn.execute(text("SELECT current_setting('enable_seqscan')")
                                ).scalar_one() == "on"
        assert text_words.texts_by_words(conn, "ferry timetable", 5)[0] == ids["ferry"]


def test_a_schema_11_team_project_gets_its_words_split_as_a_query_does(postgres_url):
    """Before schema 12 a team project's vectors were PostgreSQL's own parse of the
    text; opening makes them again from the words as a query splits them."""
    store = Store.open(postgres_url, create=True)
    try:
        ids = _texts(store, TECHNICAL)
        with store.write() as conn:
            conn.execute(text("INSERT INTO text_words (text_id, words) SELECT id, "
                              "to_tsvector('simple', text) FROM texts"))
            conn.execute(text("UPDATE meta SET value = '11' WHERE key = 'schema_version'"))
        with store.read() as conn:
            assert text_words.texts_by_words(conn, "cafe", 5) == []   # as it was
    finally:
        store.close()
    with upgraded(postgres_url) as conn:
        assert text_words.texts_by_words(conn, "cafe", 5) == [ids["paths"]]
        assert text_words.texts_by_words(conn, "os path", 5) == [ids["paths"]]


def test_a_text_holding_every_word_comes_before_one_rich_in_the_rarest(store_location):
    """No phrase holds the query; one text holds all its words once, another its rarest
    word many times, and the query's other words are common: every word is asked first
    (EVERY_WORD), so the first comes first, where SQLite's BM25 over the rarest words alone
    puts the second."""
    docs = {"all": "The lighthouse keeper wrote down the harbour tides and the ferry times "
                   "every morning before the boats went out.",
            "rare": "Lighthouse, lighthouse, lighthouse: the lighthouse by the lighthouse "
                    "steps.",
            **{f"other{i}": f"Ferry notice {i}: times changed in March; the harbour office "
                            f"has list {i}." for i in range(6)}}
    with indexed(store_location, docs) as (conn, ids):
        query = "lighthouse ferry harbour"
        assert text_words.EVERY_WORD
        assert text_words.texts_by_words(conn, query, 3)[0] == ids["all"]
        if conn.dialect.name == "sqlite":
            alone = text_words.texts_by_words(conn, query, 3, every_word=False)
            assert alone[0] == ids["rare"]


def test_a_text_too_long_for_a_tsvector_is_indexed_from_its_start(store_location):
    """PostgreSQL refuses a vector over 1 MB, which 200,000 distinct words make: its words
    are indexed up to `MOST_FOLDED_CHARACTERS`, and the import's transaction goes on."""
    rng = np.random.default_rng(0)
    long = "lighthouse keeper " + " ".join(f"w{i}x" for i in rng.permutation(200_000))
    with indexed(store_location, {"long": long, "short": "a ferry and a harbour"}) \
            as (conn, ids):
        assert text_words.texts_by_words(conn, "lighthouse keeper", 2) == [ids["long"]]
    assert len(text_words.folded(long)) <= text_words.MOST_FOLDED_CHARACTERS
    assert text_words.folded(long).split()[-1] in long.split()   # cut between words
