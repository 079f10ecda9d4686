"""Saving an HNSW index into the project and loading it back, on both stores: streamed in
chunk rows, checked by checksum, stamped with the content version it matches."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import func, select, update

from engine.index import persist, side_file
from engine.index.hnsw import HnswIndex
from engine.index.persist import blob_name, current_change_count, drop_index, load_index, save_index
from engine.store import change_counters, postgres, sqlite
from engine.store import embeddings as embedding_store
from engine.store.blobs import iter_blob
from engine.store.database import Store
from engine.store.schema import blobs
from tests.engine.index.index_files import embed_texts

DIM = 16


@pytest.fixture
def store(store_location, monkeypatch):
    # small chunks, so that even a test-sized index spans many rows
    for dialect in (sqlite, postgres):
        monkeypatch.setattr(dialect, "BLOB_CHUNK_BYTES", 16 * 1024)
    opened = Store.open(store_location, create=True)
    yield opened
    opened.close()


@pytest.fixture
def model(store):
    """A model with embeddings of texts 100-799: an index's labels must be texts the model
    has embedded (`index_check`)."""
    with store.write() as conn:
        model_id = embedding_store.get_or_add_model(conn, name="m", location="default",
                                                    fingerprint="sha256:m", dim=DIM,
                                                    max_seq_length=8)
        embed_texts(conn, model_id, range(100, 800), DIM)
        return model_id


def _index(n: int = 600, seed: int = 0) -> tuple[HnswIndex, np.ndarray]:
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    index = HnswIndex(DIM)
    index.add(np.arange(100, 100 + n), vecs)
    index.mark_deleted(np.array([100, 101]))
    return index, vecs


def test_an_index_round_trips_through_many_chunk_rows(store, model):
    index, vecs = _index()
    with store.write() as conn:
        version = change_counters.bump(conn, change_counters.CONTENT)
        save_index(conn, model, index, change_count=version)
    with store.read() as conn:
        rows = conn.execute(select(func.count()).select_from(blobs)
                            .where(blobs.c.name == blob_name(model))).scalar()
        pieces = list(iter_blob(conn, blob_name(model)))
        loaded, why = load_index(conn, model, DIM)
        assert current_change_count(conn, model, loaded) == version
    # streamed one chunk row at a time, each no bigger than a chunk
    assert rows > 5 and len(pieces) == rows and max(map(len, pieces)) == 16 * 1024
    assert why == "" and len(loaded) == len(index) and loaded.deleted == {100, 101}
    assert np.array_equal(loaded.query(vecs[5:15], 5)[0], index.query(vecs[5:15], 5)[0])


def test_a_later_content_change_count_or_none_leaves_the_index_unstamped(store, model):
    index, _ = _index(50)
    with store.write() as conn:
        version = change_counters.bump(conn, change_counters.CONTENT)
        save_index(conn, model, index, change_count=version)
        change_counters.bump(conn, change_counters.CONTENT)
    with store.read() as conn:
        assert current_change_count(conn, model, load_index(conn, model, DIM)[0]) is None
    with store.write() as conn:
        save_index(conn, model, index, change_count=None)
    with store.read() as conn:
        assert current_change_count(conn, model, load_index(conn, model, DIM)[0]) is None


def test_a_damaged_or_missing_chunk_is_caught_before_hnswlib_reads_it(store, model):
    index, _ = _index()
    with store.write() as conn:
        save_index(conn, model, index)
        conn.execute(update(blobs).where(blobs.c.name == blob_name(model), blobs.c.seq == 2)
                     .values(data=b"\x00" * persist.chunk_bytes(conn)))
        side = side_file.side_path(conn, model)
    if side is not None:   # a file project keeps a copy beside it; this is about the blobs
        side.unlink()
    with store.read() as conn:
        assert load_index(conn, model, DIM) == (None, "the saved index is damaged "
                                                      "(checksum mismatch)")
    with store.write() as conn:
        conn.execute(blobs.delete().where(blobs.c.name == blob_name(model), blobs.c.seq == 3))
    with store.read() as conn:
        assert load_index(conn, model, DIM) == (None, "the saved index is incomplete")
        assert load_index(conn, model, DIM + 1)[1].startswith("saved index has dimension")
    with store.write() as conn:
        drop_index(conn, model)
    with store.read() as conn:
        assert load_index(conn, model, DIM) == (None, "no saved index")
        assert list(iter_blob(conn, blob_name(model))) == []
