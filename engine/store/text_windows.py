"""The windows a long text was read in: their character spans and vectors, per model.

Vectors are kept as float16: a 1,000-word document has about ten windows, so float32
would make windows the bulk of a project of documents. Each float16 component is within
2e-3 of the float32 one (`tests/engine/encoding/test_windows.py` checks it), windows are
upcast before any product, and the benchmark's scores (`benchmarks/documents.py`) are
computed from these stored windows; the text's own embedding, the one the index and the
graph use, stays float32 in `embeddings`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sqlalchemy import Connection, delete, exists, func, select

from engine.store.dialects import insert_missing
from engine.store.schema import embeddings, items, text_windows

if TYPE_CHECKING:
    import numpy as np


def add_windows(conn: Connection, model_id: int, text_ids: Sequence[int],
                spans: Sequence[np.ndarray], vectors: Sequence[np.ndarray]) -> None:
    """Store each text's windows inside the caller's transaction (the one that stores its
    embedding); a text stored meanwhile by another process keeps the first row."""
    import numpy as np

    if not text_ids:
        return
    insert_missing(conn, text_windows, [
        {"model_id": model_id, "text_id": int(t),
         "spans": np.ascontiguousarray(spans[i], dtype="<i4").tobytes(),
         "vectors": np.ascontiguousarray(vectors[i], dtype="<f2").tobytes()}
        for i, t in enumerate(text_ids)
    ], ["model_id", "text_id"])


def read_windows(conn: Connection, model_id: int, dim: int, text_ids: Sequence[int]
                 ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """{text id: (spans (n, 2) int32, vectors (n, dim) float16)} of the texts among
    `text_ids` that were read as several windows; a text read in one has no entry."""
    import numpy as np

    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    wanted = sorted({int(t) for t in text_ids})
    for start in range(0, len(wanted), 500):
        part = wanted[start:start + 500]
        rows = conn.execute(select(text_windows.c.text_id, text_windows.c.spans,
                                   text_windows.c.vectors)
                            .where(text_windows.c.model_id == model_id,
                                   text_windows.c.text_id.in_(part))).all()
        for text_id, spans, vectors in rows:
            out[int(text_id)] = (np.frombuffer(spans, dtype="<i4").reshape(-1, 2),
                                 np.frombuffer(vectors, dtype="<f2").reshape(-1, dim))
    return out


def windowed_text_ids(conn: Connection, model_id: int) -> list[int]:
    """Texts read as several windows by this model, in id order."""
    return list(conn.execute(select(text_windows.c.text_id)
                             .where(text_windows.c.model_id == model_id)
                             .order_by(text_windows.c.text_id)).scalars())


def windowed_text_ids_among(conn: Connection, model_id: int, text_ids: Sequence[int]
                            ) -> list[int]:
    """Which of `text_ids` this model read in several windows."""
    wanted = sorted({int(t) for t in text_ids})
    out: list[int] = []
    for start in range(0, len(wanted), 500):
        out.extend(conn.execute(select(text_windows.c.text_id).where(
            text_windows.c.model_id == model_id,
            text_windows.c.text_id.in_(wanted[start:start + 500]))).scalars())
    return out


def count_windowed(conn: Connection, model_id: int) -> int:
    """How many texts this model read as several windows."""
    return conn.execute(select(func.count()).select_from(text_windows)
                        .where(text_windows.c.model_id == model_id)).scalar()


def read_from_start(conn: Connection, model_id: int) -> list[int]:
    """Live texts this model encoded from their start only, with no windows: what a
    version before long texts were read whole left. (A text cut short at `MAX_WINDOWS`
    has its windows and is not among them: reading it again would change nothing.)"""
    windowed = exists().where(text_windows.c.model_id == model_id,
                              text_windows.c.text_id == embeddings.c.text_id)
    live = select(items.c.text_id).where(~items.c.deleted)
    return list(conn.execute(
        select(embeddings.c.text_id)
        .where(embeddings.c.model_id == model_id, embeddings.c.truncated, ~windowed,
               embeddings.c.text_id.in_(live))
        .order_by(embeddings.c.text_id)).scalars())


def forget_embeddings(conn: Connection, model_id: int, text_ids: Sequence[int]) -> None:
    """Delete these texts' embeddings (and windows) by this model, so the encode job reads
    them again; inside the caller's transaction."""
    for start in range(0, len(text_ids), 500):
        part = [int(t) for t in text_ids[start:start + 500]]
        conn.execute(delete(embeddings).where(embeddings.c.model_id == model_id,
                                              embeddings.c.text_id.in_(part)))
        conn.execute(delete(text_windows).where(text_windows.c.model_id == model_id,
                                                text_windows.c.text_id.in_(part)))
