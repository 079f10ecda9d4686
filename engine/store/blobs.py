"""Store a large byte string as numbered chunks, and read it back whole or as a stream.

Used for the HNSW index and the cached neighbour graph, which can exceed SQLite's 1 GB
value limit on big projects and should never be held twice in memory.

Replacing a blob is delete-then-insert of its chunks; two writers doing that at once on a
server would interleave chunks or collide on (name, seq), so a writer first takes the blob's
advisory lock (`dialects.lock`) and holds it until it commits.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from sqlalchemy import Connection, delete, insert, select

from engine.store.dialects import backend_of, lock
from engine.store.schema import blobs
from engine.store.sqlite import BLOB_CHUNK_BYTES


def chunk_bytes(conn: Connection) -> int:
    """The chunk size the project's dialect writes."""
    return backend_of(conn).BLOB_CHUNK_BYTES


def put_blob(conn: Connection, name: str, data: bytes, chunk_bytes: int = BLOB_CHUNK_BYTES
             ) -> None:
    """Replace the blob `name` with `data`, inside the caller's transaction."""
    view = memoryview(data)
    put_blob_chunks(conn, name, (bytes(view[start:start + chunk_bytes])
                                 for start in range(0, max(len(data), 1), chunk_bytes)))


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


def delete_blobs_under(conn: Connection, prefix: str) -> None:
    """Delete every blob whose name starts with `prefix` (a folder of blobs)."""
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    conn.execute(delete(blobs).where(blobs.c.name.like(f"{escaped}%", escape="\\")))


def put_blob_chunks(conn: Connection, name: str, chunks: Iterable[bytes]) -> None:
    """Replace the blob `name` with the concatenation of `chunks`, one row each, so a value
    larger than memory can be written from a stream (the caller picks chunk sizes).

    The blob's lock is held to the end of the caller's transaction: whatever else it
    records about the blob (an index's checksum, say) is written by the same single writer.
    """
    blob_lock(conn, name)
    conn.execute(delete(blobs).where(blobs.c.name == name))
    for seq, chunk in enumerate(chunks):
        conn.execute(insert(blobs).values(name=name, seq=seq, data=chunk))


def blob_lock(conn: Connection, name: str) -> None:
    """Be the only writer of blob `name` until this transaction ends (all processes)."""
    lock(conn, f"blob:{name}")


def iter_blob(conn: Connection, name: str) -> Iterator[bytes]:
    """The blob `name` piece by piece, never whole in memory (nothing when never stored):
    SQLite's incremental blob I/O, or one streamed query on PostgreSQL."""
    yield from backend_of(conn).iter_blob_rows(conn, name)
