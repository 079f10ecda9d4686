"""Models a project has used and the embeddings each produced (float32 blobs).

Adding embeddings bumps the content change count (`engine.store.change_counters`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from sqlalchemy import Connection, exists, func, select, text

from engine.errors import ProjectError
from engine.store import change_counters
from engine.store.dialects import insert_missing
from engine.store.schema import embeddings, items, models

# NumPy is imported where vectors are read or written: `duplens info` reads counts only,
# and starting NumPy was a fifth of its time.
if TYPE_CHECKING:
    import numpy as np


def get_or_add_model(conn: Connection, *, name: str, location: str, fingerprint: str,
                     dim: int, max_seq_length: int, **extra) -> int:
    """The id of the model with this fingerprint, registering it on first use.

    Two analysts loading the same new model at once both try to register it: the insert
    skips a fingerprint that is taken (waiting for the other's transaction if need be), and
    the id is then read, so both get the one row.
    """
    found = find_model(conn, fingerprint)
    if found is not None:
        return found
    insert_missing(conn, models, [dict(
        name=name, location=location, fingerprint=fingerprint, dim=dim,
        max_seq_length=max_seq_length, created_at=time.time(), **extra,
    )], ["fingerprint"])
    return conn.execute(
        select(models.c.id).where(models.c.fingerprint == fingerprint)).scalar_one()


def find_model(conn: Connection, fingerprint: str) -> int | None:
    """The id of the model with this fingerprint, None when the project has none."""
    return conn.execute(select(models.c.id).where(models.c.fingerprint == fingerprint)).scalar()


def get_model_row(conn: Connection, model_id: int) -> dict | None:
    row = conn.execute(select(models).where(models.c.id == model_id)).mappings().first()
    return dict(row) if row else None


def list_models(conn: Connection) -> list[dict]:
    return [dict(r) for r in conn.execute(select(models).order_by(models.c.id)).mappings()]


def add_embeddings(conn: Connection, model_id: int, text_ids: Sequence[int],
                   vectors: np.ndarray, truncated: Sequence[bool]) -> int:
    """Store embeddings inside the caller's transaction; returns the new content change
    count.

    A text another process embedded meanwhile (two analysts encoding the same new rows) keeps
    the vector stored first: the same model gives the same vector, so either will do.
    """
    import numpy as np

    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    insert_missing(conn, embeddings, [
        {"model_id": model_id, "text_id": int(t), "vector": vectors[i].tobytes(),
         "truncated": bool(truncated[i])}
        for i, t in enumerate(text_ids)
    ], ["model_id", "text_id"])
    return change_counters.bump(conn, change_counters.CONTENT)


def count_model_embeddings(conn: Connection, model_id: int) -> int:
    """Embeddings stored for the model, live or not: a scan of the primary-key index only."""
    return conn.execute(
        select(func.count()).select_from(embeddings).where(embeddings.c.model_id == model_id)
    ).scalar()


def missing_text_ids(conn: Connection, model_id: int) -> list[int]:
    """Live texts with no embedding for this model yet, in id order (the resume point).

    PostgreSQL runs NOT IN (subquery) as a hash only while the ids fit in its hash memory
    (8 MB by default), and beyond scans the subquery's rows once per row (quadratic). So it
    gets
    an anti-join (NOT EXISTS: 0.20 s against NOT IN's 0.33 s at 200k rows), while SQLite,
    where NOT IN is the faster (0.38 s against 0.51 s at 200k), keeps it.
    """
    if conn.dialect.name == "postgresql":
        missing = ~exists().where(embeddings.c.model_id == model_id,
                                  embeddings.c.text_id == items.c.text_id)
    else:
        missing = items.c.text_id.not_in(
            select(embeddings.c.text_id).where(embeddings.c.model_id == model_id))
    return list(conn.execute(
        select(items.c.text_id).where(~items.c.deleted, missing)
        .distinct().order_by(items.c.text_id)
    ).scalars())


def count_embeddings(conn: Connection, model_id: int) -> int:
    live = select(items.c.text_id).where(~items.c.deleted)
    return conn.execute(
        select(func.count()).select_from(embeddings)
        .where(embeddings.c.model_id == model_id, embeddings.c.text_id.in_(live))
    ).scalar()


def count_truncated(conn: Connection, model_id: int) -> int:
    return conn.execute(
        select(func.count()).select_from(embeddings)
        .where(embeddings.c.model_id == model_id, embeddings.c.truncated)
    ).scalar()


def embedded_text_ids(conn: Connection, model_id: int) -> np.ndarray:
    import numpy as np

    return np.fromiter(conn.execute(
        select(embeddings.c.text_id).where(embeddings.c.model_id == model_id)
    ).scalars(), dtype=np.int64)


def iter_embeddings(conn: Connection, model_id: int, dim: int, *,
                    text_ids: Sequence[int] | None = None, batch: int = 50_000
                    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(text_ids, vectors) in batches, for rebuilding or completing an index."""
    query = select(embeddings.c.text_id, embeddings.c.vector).where(
        embeddings.c.model_id == model_id)
    if text_ids is not None:
        wanted = list(text_ids)
        for start in range(0, len(wanted), 500):
            part = wanted[start:start + 500]
            yield from _decode_rows(conn.execute(
                query.where(embeddings.c.text_id.in_(part))).all(), dim)
        return
    result = conn.execute(query.order_by(embeddings.c.text_id)).yield_per(batch)
    for part in result.partitions(batch):
        yield from _decode_rows(part, dim)


_RANGE = text("SELECT text_id, vector FROM embeddings"
              " WHERE model_id = :model AND text_id BETWEEN :lo AND :hi")


def read_vectors(conn: Connection, model_id: int, dim: int,
                 text_ids: Sequence[int] | np.ndarray) -> np.ndarray:
    """The stored vectors of `text_ids` (no repeats), in that order, as one (len, dim)
    float32 array.

    For bulk work that needs vectors by id, such as the neighbour graph: hnswlib returns an
    index's vectors through Python lists (about 0.2 ms a vector on 2 busy cores, a third
    of the graph's search time at 100k texts), while these are the blobs as stored.
    Raises ProjectError for an id without an embedding."""
    import numpy as np

    wanted = np.asarray(text_ids, dtype=np.int64)
    out = np.empty((len(wanted), dim), dtype=np.float32)
    filled = np.zeros(len(wanted), dtype=bool)
    order = np.argsort(wanted, kind="stable")
    ordered = wanted[order]
    if len(ordered) and ordered[-1] - ordered[0] < 2 * len(ordered):
        # Dense ids (a batch of the graph's sorted ids): one range scan of the primary key
        # instead of an IN list per 500, about 3 times faster; ids between are dropped.
        # Plain SQL text: the blobs come as the driver gives them, not each copied again by
        # the LargeBinary column's result processor (100k vectors in 4k batches: 2.9 s
        # against 4.2 s on 2 busy cores, load 16).
        batches = _decode_rows(conn.execute(_RANGE, {
            "model": model_id, "lo": int(ordered[0]), "hi": int(ordered[-1])}).all(), dim)
    else:
        batches = iter_embeddings(conn, model_id, dim, text_ids=ordered.tolist())
    for ids, vecs in batches:
        at = np.clip(np.searchsorted(ordered, ids), 0, len(ordered) - 1)
        hit = ordered[at] == ids
        out[order[at[hit]]] = vecs[hit]
        filled[order[at[hit]]] = True
    if not filled.all():
        raise ProjectError(f"no {model_id=} embedding for text {int(wanted[~filled][0])}")
    return out


def _decode_rows(rows, dim: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    import numpy as np

    if not rows:
        return
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    vecs = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dim)
    yield ids, vecs
