"""Schema versions and the steps between them.

A hand-rolled, ordered list of migrations rather than Alembic: a project file is a user's
document opened by a frozen desktop app, so migrations must ship as plain code, run inside
the same transaction as the version bump, and work offline with no migration scripts folder.
Each step takes a connection already inside a transaction.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, bindparam, inspect, select, text

from engine.store import schema

APP_ID = "duplens"


def _v1_initial(conn: Connection) -> None:
    # The tables of the first release only: later steps add theirs, so that an old file
    # and a new one end up with exactly the same schema.
    schema.metadata.create_all(conn, tables=[
        t for name, t in schema.metadata.tables.items() if name not in _ADDED_LATER])


def _v2_canonical_items(conn: Connection) -> None:
    schema.canonical_items.create(conn, checkfirst=True)


def _v3_offered_pairs(conn: Connection) -> None:
    schema.offered_pairs.create(conn, checkfirst=True)


def _v4_pending_verdicts(conn: Connection) -> None:
    schema.pending_verdicts.create(conn, checkfirst=True)


def _v5_batches_and_cluster_ids(conn: Connection) -> None:
    # Imports as batches (who, removed) and the stable cluster ids. A project made by this
    # version already has the columns (`_v1_initial` creates today's `sources`).
    have = {c["name"] for c in inspect(conn).get_columns("sources")}
    for name, kind in (("imported_by", "TEXT"), ("removed_at", "FLOAT")):
        if name not in have:
            conn.execute(text(f"ALTER TABLE sources ADD COLUMN {name} {kind}"))
    for table in (schema.cluster_ids, schema.item_clusters, schema.cluster_history):
        table.create(conn, checkfirst=True)


def _v6_quality_samples(conn: Connection) -> None:
    schema.quality_samples.create(conn, checkfirst=True)
    schema.quality_draws.create(conn, checkfirst=True)


def _v7_canonical_history(conn: Connection) -> None:
    # Which row led each id's cluster at the last cut, and before each import's changes. A
    # project made by this version already has the column (`_v5` creates today's table).
    have = {c["name"] for c in inspect(conn).get_columns("cluster_ids")}
    if "canonical_item" not in have:
        conn.execute(text("ALTER TABLE cluster_ids ADD COLUMN canonical_item INTEGER"))
    schema.canonical_history.create(conn, checkfirst=True)


def _v8_text_windows(conn: Connection) -> None:
    # Texts read whole as windows, and long texts' MinHash signatures. Texts an older
    # version encoded from their start keep their `truncated` embedding until re-encoded.
    schema.text_windows.create(conn, checkfirst=True)
    schema.text_signatures.create(conn, checkfirst=True)


def _v9_judges(conn: Connection) -> None:
    # A version's second opinion (judge) kept as a `models` row that names its version. A
    # project made by this version already has the column (`_v1_initial` creates today's
    # `models`); NULL, the value every older row gets, is an encoder.
    have = {c["name"] for c in inspect(conn).get_columns("models")}
    if "judge_of" not in have:
        conn.execute(text("ALTER TABLE models ADD COLUMN judge_of INTEGER "
                          "REFERENCES models (id)"))


def _v10_text_words(conn: Connection) -> None:
    # Long texts' words, for a short query's candidates (`engine.store.text_words`): a
    # database feature, not a metadata table. An older project's documents are indexed here.
    from engine.store import text_words

    text_words.create(conn)
    text_words.fill(conn)


def _v11_paragraph_signatures(conn: Connection) -> None:
    # MinHash runs are now taken within paragraphs (`engine.documents.minhash`): every
    # stored signature is made again, and the neighbour graphs kept in the project, whose
    # document edges were scored with the old ones, are dropped (made again when next
    # needed). About 1 ms a long text (2.0 s for 2,000 documents of 1,000 words).
    from engine.documents import minhash

    remake_signatures(conn, lambda body: minhash.to_bytes(minhash.signature(body)))


def _v12_folded_words(conn: Connection) -> None:
    # PostgreSQL's word vectors made again from the words as a query splits them
    # (`engine.store.text_words.folded`); SQLite's FTS5 already splits them so.
    from engine.store import text_words

    if conn.dialect.name == "postgresql" and text_words.has_words(conn):
        indexed = conn.execute(text(f"SELECT text_id FROM {text_words.TABLE}")).scalars()
        ids = [int(t) for t in indexed]
        conn.execute(text(f"DELETE FROM {text_words.TABLE}"))
        text_words.add_words(conn, ids)


def _v13_jaccard_scale(conn: Connection) -> None:
    # A Jaccard of 5-word runs now reads as its power on the similarity scale
    # (`engine.documents.minhash.on_similarity_scale`): the neighbour graphs kept in a
    # project holding long texts were scored with the Jaccard itself, and are dropped (made
    # again when next needed). A project of questions has no signatures and keeps them.
    if conn.execute(select(schema.text_signatures.c.text_id).limit(1)).first() is not None:
        conn.execute(schema.blobs.delete().where(schema.blobs.c.name.startswith("knn/")))


def remake_signatures(conn: Connection, sign: Callable[[str], bytes]) -> int:
    """Make every stored MinHash signature again from its text with `sign`, inside the
    caller's transaction, 500 texts at a time, and drop the stored neighbour graphs; returns
    how many. For a change of how signatures are made: one made the old way is never
    compared with one made the new way. (Tables are used directly: `store.text_signatures`
    and `store.blobs` import the dialects, which import this module.)"""
    table, texts = schema.text_signatures, schema.texts
    ids = sorted(int(t) for t in conn.execute(select(table.c.text_id)).scalars())
    update = (table.update().where(table.c.text_id == bindparam("tid"))
              .values(signature=bindparam("sig")))
    for start in range(0, len(ids), 500):
        rows = conn.execute(select(texts.c.id, texts.c.text)
                            .where(texts.c.id.in_(ids[start:start + 500]))).all()
        conn.execute(update, [{"tid": int(t), "sig": sign(body)} for t, body in rows])
    conn.execute(schema.blobs.delete().where(schema.blobs.c.name.startswith("knn/")))
    return len(ids)


_ADDED_LATER = {"canonical_items", "offered_pairs", "pending_verdicts", "cluster_ids",
                "item_clusters", "cluster_history", "quality_samples", "quality_draws",
                "canonical_history", "text_windows", "text_signatures"}

# MIGRATIONS[i] brings a project from version i to version i + 1.
MIGRATIONS: list[Callable[[Connection], None]] = [_v1_initial, _v2_canonical_items,
                                                  _v3_offered_pairs, _v4_pending_verdicts,
                                                  _v5_batches_and_cluster_ids,
                                                  _v6_quality_samples,
                                                  _v7_canonical_history,
                                                  _v8_text_windows, _v9_judges,
                                                  _v10_text_words,
                                                  _v11_paragraph_signatures,
                                                  _v12_folded_words,
                                                  _v13_jaccard_scale]
SCHEMA_VERSION = len(MIGRATIONS)


def read_version(conn: Connection) -> int | None:
    """The project's schema version, or None when the file has no Duplens meta table."""
    if not inspect(conn).has_table("meta"):
        return None
    rows = dict(conn.execute(select(schema.meta.c.key, schema.meta.c.value)).all())
    if rows.get("app") != APP_ID:
        return None
    return int(rows.get("schema_version", "0"))


def upgrade(conn: Connection, current: int) -> None:
    """Apply every migration after `current` and record the new version."""
    for step in MIGRATIONS[current:]:
        step(conn)
    for key, value in (("app", APP_ID), ("schema_version", str(SCHEMA_VERSION))):
        conn.execute(schema.meta.delete().where(schema.meta.c.key == key))
        conn.execute(schema.meta.insert().values(key=key, value=value))
