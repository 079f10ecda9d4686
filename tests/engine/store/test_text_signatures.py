"""`store.text_signatures`: long texts' MinHash signatures; schema v11, which made every
stored one again when runs came to be taken within paragraphs; and schema v13, which drops
the graphs scored before a Jaccard was put on the similarity scale."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import select

from engine.documents import minhash
from engine.store.blobs import get_blob, put_blob
from engine.store.database import Store
from engine.store.schema import meta, text_signatures
from engine.store.text_signatures import add_signatures, signatures_of
from tests.engine.store.stored_texts import add_texts, upgraded


def _document(rng: np.random.Generator, paragraphs: int) -> list[str]:
    return [" ".join(rng.choice([f"w{i}" for i in range(2000)], 80))
            for _ in range(paragraphs)]


def test_a_schema_10_project_gets_signatures_within_paragraphs(store_location):
    """Opening a schema-10 project makes every stored signature again with today's rule (a
    reordered copy's Jaccard goes from under 1 to 1) and drops the neighbour graphs whose
    document edges were scored with the old ones; other blobs stay."""
    rng = np.random.default_rng(3)
    paragraphs = _document(rng, 8)
    bodies = {"original": "\n\n".join(paragraphs),
              "reordered": "\n\n".join(paragraphs[i] for i in rng.permutation(8)),
              "short": "a question of a few words"}
    store = Store.open(store_location, create=True)
    try:
        tid = add_texts(store, bodies)
        with store.write() as conn:
            long = ["original", "reordered"]
            add_signatures(conn, [tid[k] for k in long], [minhash.to_bytes(
                minhash.signature(bodies[k], across_paragraphs=True)) for k in long])
            put_blob(conn, "knn/1/10", b"a graph scored with the old signatures")
            put_blob(conn, "other/kept", b"not a graph")
            conn.execute(meta.update().where(meta.c.key == "schema_version")
                         .values(value="10"))
        with store.read() as conn:
            old = {t: minhash.from_bytes(b) for t, b in signatures_of(conn, tid.values())
                   .items()}
        assert minhash.jaccard(old[tid["original"]], old[tid["reordered"]]) < 0.95
    finally:
        store.close()

    with upgraded(store_location) as conn:
        new = {t: minhash.from_bytes(b) for t, b in signatures_of(conn, tid.values()).items()}
        assert get_blob(conn, "knn/1/10") is None
        assert get_blob(conn, "other/kept") == b"not a graph"
        stored = conn.execute(select(text_signatures.c.text_id)).scalars().all()
    assert sorted(stored) == sorted(tid[k] for k in long)     # none added, none lost
    for key in long:
        assert new[tid[key]].tolist() == minhash.signature(bodies[key]).tolist()
    assert minhash.jaccard(new[tid["original"]], new[tid["reordered"]]) == 1.0


@pytest.mark.parametrize("with_signatures", [True, False])
def test_a_schema_12_project_drops_graphs_scored_with_the_jaccard_itself(store_location,
                                                                          with_signatures):
    """Opening a schema-12 project holding long texts drops its stored neighbour graphs,
    whose document edges read a Jaccard as itself (made again when next needed); a project
    of questions, with no signatures, has none of those edges and keeps its graphs."""
    rng = np.random.default_rng(4)
    store = Store.open(store_location, create=True)
    try:
        tid = add_texts(store, {"long": "\n\n".join(_document(rng, 3)), "short": "a question"})
        with store.write() as conn:
            if with_signatures:
                add_signatures(conn, [tid["long"]], [minhash.to_bytes(
                    minhash.signature("\n\n".join(_document(rng, 3))))])
            put_blob(conn, "knn/1/10", b"a graph")
            put_blob(conn, "other/kept", b"not a graph")
            conn.execute(meta.update().where(meta.c.key == "schema_version")
                         .values(value="12"))
    finally:
        store.close()

    with upgraded(store_location) as conn:
        assert (get_blob(conn, "knn/1/10") is None) == with_signatures
        assert get_blob(conn, "other/kept") == b"not a graph"
