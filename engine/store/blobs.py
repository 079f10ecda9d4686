"""Store a large byte string as numbered chunks, and read it back whole.

Used for the HNSW index and the cached neighbour graph, which can exceed SQLite's 1 GB
value limit on big projects.
"""

from __future__ import annotations

from sqlalchemy import Connection, delete, insert, select

from engine.store.schema import blobs
from engine.store.sqlite import BLOB_CHUNK_BYTES


def put_blob(conn: Connection, name: str, data: bytes, chunk_bytes: int = BLOB_CHUNK_BYTES
             ) -> None:
    """Replace the blob `name` with `data`, inside the caller's transaction."""
    conn.execute(delete(blobs).where(blobs.c.name == name))
    view = memoryview(data)
    for seq, start in enumerate(range(0, max(len(data), 1), chunk_bytes)):
        conn.execute(insert(blobs).values(name=name, seq=seq,
                                          data=bytes(view[start:start + chunk_bytes])))


def get_blob(conn: Connection, name: str) -> bytes | None:
    """The whole blob `name`, or None when it was never stored."""
    rows = conn.execute(
        select(blobs.c.data).where(blobs.c.name == name).order_by(blobs.c.seq)
    ).scalars().all()
    if not rows:
        return None
    return b"".join(rows)


def delete_blob(conn: Connection, name: str) -> None:
    conn.execute(delete(blobs).where(blobs.c.name == name))
