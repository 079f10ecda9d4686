"""Saving an HNSW index into the project file and loading it back, checked.

The bytes are stored as a chunked blob with their sha256 beside them: a damaged blob is
caught by the checksum before hnswlib ever parses it, and then rebuilt from the embeddings.
"""

from __future__ import annotations

import hashlib
import time

from sqlalchemy import Connection, delete, insert, select

from engine.index.hnsw import HnswIndex, HnswParams
from engine.store.blobs import delete_blob, get_blob, put_blob
from engine.store.schema import indexes


def blob_name(model_id: int) -> str:
    return f"hnsw/{model_id}"


def save_index(conn: Connection, model_id: int, index: HnswIndex) -> None:
    data = index.to_bytes()
    put_blob(conn, blob_name(model_id), data)
    conn.execute(delete(indexes).where(indexes.c.model_id == model_id))
    conn.execute(insert(indexes).values(
        model_id=model_id, dim=index.dim, params=index.params_dict(),
        deleted=sorted(index.deleted), count=len(index),
        sha256=hashlib.sha256(data).hexdigest(), size=len(data), saved_at=time.time(),
    ))


def drop_index(conn: Connection, model_id: int) -> None:
    delete_blob(conn, blob_name(model_id))
    conn.execute(delete(indexes).where(indexes.c.model_id == model_id))


def load_index(conn: Connection, model_id: int, dim: int) -> tuple[HnswIndex | None, str]:
    """The stored index, or (None, why not) when it is absent, damaged or mismatched."""
    row = conn.execute(select(indexes).where(indexes.c.model_id == model_id)).mappings().first()
    if row is None:
        return None, "no saved index"
    if row["dim"] != dim:
        return None, f"saved index has dimension {row['dim']}, the model has {dim}"
    data = get_blob(conn, blob_name(model_id))
    if data is None or len(data) != row["size"]:
        return None, "the saved index is incomplete"
    if hashlib.sha256(data).hexdigest() != row["sha256"]:
        return None, "the saved index is damaged (checksum mismatch)"
    try:
        params = HnswParams(**row["params"])
        return HnswIndex.from_bytes(data, dim, params, set(row["deleted"])), ""
    except (ValueError, TypeError) as exc:
        return None, f"the saved index cannot be read ({exc})"
