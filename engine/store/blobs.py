"""Store a large byte string as numbered chunks, and read it back whole.

Used for the HNSW index and the cached neighbour graph, which can exceed SQLite's 1 GB
value limit on big projects.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from sqlalchemy import Connection, delete, insert, select

from engine.store.schema import blobs
from engine.store.sqlite import BLOB_CHUNK_BYTES, read_blob_rows


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


def put_blob_chunks(conn: Connection, name: str, chunks: Iterable[bytes]) -> None:
    """Replace the blob `name` with the concatenation of `chunks`, one row each, so a value
    larger than memory can be written from a stream (the caller picks chunk sizes)."""
    conn.execute(delete(blobs).where(blobs.c.name == name))
    for seq, chunk in enumerate(chunks):
        conn.execute(insert(blobs).values(name=name, seq=seq, data=chunk))


def iter_blob(conn: Connection, name: str) -> Iterator[bytes]:
    """The blob `name` piece by piece, never whole in memory (nothing when never stored).

    On SQLite through incremental blob I/O (`store.sqlite.read_blob_rows`), elsewhere one
    chunk row per query.
    """
    if conn.dialect.name == "sqlite":
        yield from read_blob_rows(conn, "blobs", "data", "name = ?", (name,))
        return
    seqs = conn.execute(
        select(blobs.c.seq).where(blobs.c.name == name).order_by(blobs.c.seq)).scalars().all()
    for seq in seqs:
        yield conn.execute(
            select(blobs.c.data).where(blobs.c.name == name, blobs.c.seq == seq)).scalar_one()
