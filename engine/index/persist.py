"""Saving an HNSW index into the project file and loading it back, checked.

The bytes are stored as a chunked blob with their sha256 beside them: a damaged blob is
caught by the checksum before hnswlib ever parses it, and then rebuilt from the embeddings.
The checksum is in the same project file, so it cannot catch a crafted index: every file
hnswlib loads, from the blob or from the side file, is first checked by `index_check`
(through `HnswIndex.load`) against the project's embeddings and settings.
Both directions stream through a temporary file, chunk by chunk, so the index is never
held twice in memory (at 1M items it is about 1.8 GB). The file goes to /dev/shm when it has
room (writing to a disk-backed /tmp cost five times the CPU here), and the checksum
is computed on another thread while the chunks are read and written: hashlib, file writes
and SQLite's blob reads all release the GIL, so the two cores share the work. A server
project stores the same chunk rows and streams them from one query (`store.postgres`).

Beside the blob, a stamp (in `meta`) records the content change count the index matches
(`engine.store.change_counters`; stored as the stamp's "version") and how many embeddings
the model had then. When both still hold on load, the index is exactly what a full
reconcile with the embeddings would produce, and that reconcile (a few seconds at 1M
items) is skipped.

A file project also keeps the saved bytes in a file beside it (`index.side_file`), written
while the blob is, and loaded straight by hnswlib when the store's record says it is the
saved index: the blob route's copy and hash were most of a 1M-item project's open.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from sqlalchemy import Connection, delete, func, select

from engine.index import side_file
from engine.index.hnsw import HnswIndex, HnswParams
from engine.store import change_counters
from engine.store.blobs import blob_lock, chunk_bytes, delete_blob, iter_blob, put_blob_chunks
from engine.store.dialects import upsert
from engine.store.embeddings import count_model_embeddings
from engine.store.saved_indexes import saved_row
from engine.store.schema import embeddings, indexes, meta


def blob_name(model_id: int) -> str:
    return f"hnsw/{model_id}"


def stamp_key(model_id: int) -> str:
    return f"index_stamp/{model_id}"


def save_index(conn: Connection, model_id: int, index: HnswIndex, *,
               change_count: int | None = None) -> None:
    """Store the index (inside the caller's write transaction).

    `change_count`: the content change count the index is known to match, or None when
    unknown (the next load then reconciles it with the embeddings in full).

    One writer at a time per index, across processes: the blob's lock is taken first and
    held to the end of the transaction, so blob, checksum row and stamp always belong
    together. Another process (an analyst on a server, a second window or a CLI import on
    the same file) may have saved a newer index meanwhile; then that one is kept, not
    replaced by the one in our memory (see `_superseded`).
    """
    blob_lock(conn, blob_name(model_id))
    if _superseded(conn, model_id, change_count):
        return
    size = 0
    step = chunk_bytes(conn)
    # hnswlib saves to RAM (it does not report a short write); the side file is written from
    # the same chunks by Python, which does.
    side = side_file.SideWriter(side_file.side_path(conn, model_id))
    try:
        with _scratch_file(_expected_bytes(index)) as (path, fh), _Digest() as digest:
            index.save(path)

            def chunks() -> Iterator[bytes]:
                nonlocal size
                while chunk := fh.read(step):
                    digest.update(chunk)
                    side.write(chunk)
                    size += len(chunk)
                    yield chunk

            put_blob_chunks(conn, blob_name(model_id), chunks())
    except BaseException:
        side.discard()
        raise
    _record_saved(conn, model_id, index, digest.hexdigest(), size, change_count)
    finished = side.finish()
    if finished is not None:
        side_file.publish(conn, model_id, finished, digest.hexdigest())
    elif side.target is not None:
        side_file.forget(conn, model_id)   # the old file no longer matches: free its space


def _record_saved(conn: Connection, model_id: int, index: HnswIndex, sha256: str, size: int,
                  change_count: int | None) -> None:
    upsert(conn, indexes, dict(
        model_id=model_id, dim=index.dim, params=index.params_dict(),
        deleted=sorted(index.deleted), count=len(index),
        sha256=sha256, size=size, saved_at=time.time(),
    ), ["model_id"])
    write_stamp(conn, model_id, change_count)


def write_stamp(conn: Connection, model_id: int, change_count: int | None) -> None:
    """Record that the saved index matches content change count `change_count` (None:
    forget any record).

    Only recorded when `change_count` is the current one, read in this same transaction, so
    the embedding count stored beside it belongs to that count.
    """
    if change_count is None or change_count != change_counters.read(conn,
                                                                    change_counters.CONTENT):
        conn.execute(delete(meta).where(meta.c.key == stamp_key(model_id)))
        return
    stamp = {"version": change_count, "embeddings": count_model_embeddings(conn, model_id)}
    upsert(conn, meta, {"key": stamp_key(model_id), "value": json.dumps(stamp)}, ["key"])


def _superseded(conn: Connection, model_id: int, change_count: int | None) -> bool:
    """True when the saved index is at least as new as ours: stamped with a later change
    count than `change_count`, or stamped with the current one (so exact) while ours is of
    unknown count. Read inside the save's transaction, after its lock, so nobody saves between
    the check and the write."""
    stamped = _stamped_count(conn, model_id)
    if change_count is None:
        return stamped >= 0 and stamped == change_counters.read(conn, change_counters.CONTENT)
    return stamped > change_count


def _stamped_count(conn: Connection, model_id: int) -> int:
    """The content change count the saved index is stamped with (-1 when none)."""
    raw = conn.execute(select(meta.c.value).where(meta.c.key == stamp_key(model_id))).scalar()
    try:
        return int(json.loads(raw)["version"]) if raw else -1
    except (ValueError, KeyError, TypeError):
        return -1


def current_change_count(conn: Connection, model_id: int, index: HnswIndex) -> int | None:
    """The content change count when the loaded `index` is known to match it, else None.

    Read in the same transaction as the load. Any doubt (no stamp, another count, an
    embedding count or index size that differs from what was recorded) gives None.
    """
    raw = conn.execute(select(meta.c.value).where(meta.c.key == stamp_key(model_id))).scalar()
    row = conn.execute(select(indexes.c.count).where(indexes.c.model_id == model_id)).first()
    if raw is None or row is None:
        return None
    try:
        stamp = json.loads(raw)
        change_count, embedded = int(stamp["version"]), int(stamp["embeddings"])
    except (ValueError, KeyError, TypeError):
        return None
    if change_count != change_counters.read(conn, change_counters.CONTENT) \
            or row.count != len(index):
        return None
    if embedded != count_model_embeddings(conn, model_id):
        return None
    return change_count


def drop_index(conn: Connection, model_id: int) -> None:
    delete_blob(conn, blob_name(model_id))
    side_file.forget(conn, model_id)
    conn.execute(delete(indexes).where(indexes.c.model_id == model_id))
    conn.execute(delete(meta).where(meta.c.key == stamp_key(model_id)))


def load_index(conn: Connection, model_id: int, dim: int) -> tuple[HnswIndex | None, str]:
    """The stored index, or (None, why not) when it is absent, damaged or mismatched."""
    loaded = load_saved(conn, model_id, dim)
    if loaded.pending is not None:
        loaded.pending.unlink(missing_ok=True)
    return loaded.index, loaded.why


@dataclass
class Loaded:
    """What `load_saved` found. `route`: "side file", "blobs" or "" (nothing loaded).
    `pending`: with `refresh`, a fresh copy of the blob's bytes for `adopt_side_file`."""

    index: HnswIndex | None
    why: str
    route: str = ""
    sha256: str = ""
    pending: Path | None = None


def load_saved(conn: Connection, model_id: int, dim: int, *, refresh: bool = False) -> Loaded:
    """The stored index, from the side file when it matches the store's record, else from
    the blobs (checked by sha256). With `refresh` (a writable file project), the blobs'
    bytes are also written to a temporary side file, handed back as `pending`: a project
    that had no matching side file gets one without saving the index again."""
    row = saved_row(conn, model_id)
    if row is None:
        return Loaded(None, "no saved index")
    if row["dim"] != dim:
        return Loaded(None, f"saved index has dimension {row['dim']}, the model has {dim}")
    problem = _row_problem(row)
    if problem:
        return Loaded(None, f"the saved index cannot be read ({problem})")
    try:
        params = HnswParams(**row["params"])
    except TypeError as exc:
        return Loaded(None, f"the saved index cannot be read ({exc})")
    labels = label_range(conn, model_id)
    with side_file.open_matching(conn, model_id, row["sha256"]) as side:
        if side is not None:
            try:
                index = HnswIndex.load(side, dim, params, set(row["deleted"]), labels=labels)
                return Loaded(index, "", "side file", row["sha256"])
            except ValueError:
                pass   # unreadable after all: the blobs decide
    writer = side_file.SideWriter(side_file.side_path(conn, model_id) if refresh else None)
    try:
        index, why = _load_blob(conn, model_id, dim, row, params, labels, writer)
    except BaseException:
        writer.discard()
        raise
    pending = writer.finish() if index is not None else None
    if index is None:
        writer.discard()
    return Loaded(index, why, "blobs", row["sha256"], pending)


def adopt_side_file(conn: Connection, model_id: int, loaded: Loaded) -> None:
    """Make `loaded.pending` the side file, inside a write transaction, unless the index was
    saved again since it was read (then the save wrote its own)."""
    if loaded.pending is None:
        return
    blob_lock(conn, blob_name(model_id))
    now = conn.execute(select(indexes.c.sha256).where(indexes.c.model_id == model_id)).scalar()
    if now != loaded.sha256:
        loaded.pending.unlink(missing_ok=True)
        return
    side_file.publish(conn, model_id, loaded.pending, loaded.sha256)


def _row_problem(row) -> str:
    """What is wrong with the `indexes` row's own fields, if anything: the project file may
    come from someone else, so its record of the index is read as carefully as the index."""
    if not (type(row["size"]) is int and row["size"] >= 0 and isinstance(row["sha256"], str)
            and isinstance(row["params"], dict)):
        return "its record is malformed"
    deleted = row["deleted"]
    if not isinstance(deleted, list) or not all(type(label) is int for label in deleted):
        return "its list of deleted items is malformed"
    return ""


def label_range(conn: Connection, model_id: int) -> tuple[int, int]:
    """The lowest and highest text id `model_id` has an embedding of: every label of its
    index lies between them (an index only ever gets texts as their embeddings are stored,
    and embeddings are never deleted but with their model). Two queries, each one step down
    the primary key's index; (1, 0), an empty range, when there is none."""
    where = embeddings.c.model_id == model_id
    low = conn.execute(select(func.min(embeddings.c.text_id)).where(where)).scalar()
    high = conn.execute(select(func.max(embeddings.c.text_id)).where(where)).scalar()
    return (1, 0) if low is None or high is None else (int(low), int(high))


def _load_blob(conn: Connection, model_id: int, dim: int, row, params: HnswParams,
               labels: tuple[int, int], writer: side_file.SideWriter
               ) -> tuple[HnswIndex | None, str]:
    with _scratch_file(row["size"]) as (path, fh):
        size = 0
        with _Digest() as digest:
            for chunk in iter_blob(conn, blob_name(model_id)):
                digest.update(chunk)
                writer.write(chunk)
                size += len(chunk)
                fh.write(chunk)
        fh.flush()
        if size == 0 or size != row["size"]:
            return None, "the saved index is incomplete"
        if digest.hexdigest() != row["sha256"]:
            return None, "the saved index is damaged (checksum mismatch)"
        try:
            return HnswIndex.load(path, dim, params, set(row["deleted"]), labels=labels), ""
        except ValueError as exc:
            return None, f"the saved index cannot be read ({exc})"


def _expected_bytes(index: HnswIndex) -> int:
    """A generous guess of the saved size: vector, links and label per element."""
    total = len(index) + len(index.deleted)
    return total * (index.dim * 4 + index.params.M * 2 * 4 + 64) + (1 << 20)


@contextmanager
def _scratch_file(needed: int) -> Iterator[tuple[str, BinaryIO]]:
    """A temporary file for hnswlib to save to or load from: (a path hnswlib opens by
    itself, our own open file object on it, at offset 0).

    On Linux it lives in /dev/shm (RAM) when that has room for `needed` bytes twice over,
    and has no name at all: hnswlib opens it as /proc/self/fd/N, so a crash never leaves
    gigabytes behind in RAM. Elsewhere it is a named file in the temporary folder.
    """
    shm, fds = "/dev/shm", "/proc/self/fd"
    try:
        roomy = (os.path.isdir(shm) and os.path.isdir(fds) and os.access(shm, os.W_OK)
                 and shutil.disk_usage(shm).free > 2 * needed)
    except OSError:
        roomy = False
    if roomy:
        with tempfile.TemporaryFile(dir=shm, prefix="duplens-index-") as fh:
            yield f"{fds}/{fh.fileno()}", fh
        return
    with tempfile.TemporaryDirectory(prefix="duplens-index-") as tmp:
        path = Path(tmp) / "index.bin"
        path.touch()
        with path.open("r+b") as fh:
            yield str(path), fh


class _Digest:
    """sha256 over chunks fed in order, computed on a helper thread.

    At most `_PENDING` chunks wait, so memory stays bounded; `hexdigest()` waits for them.
    """

    _PENDING = 4

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="duplens-sha256")
        self._pending: deque[Future] = deque()

    def __enter__(self) -> _Digest:
        return self

    def __exit__(self, *_exc) -> None:
        self._pool.shutdown(wait=True)

    def update(self, chunk: bytes) -> None:
        self._pending.append(self._pool.submit(self._hash.update, chunk))
        while len(self._pending) > self._PENDING:
            self._pending.popleft().result()

    def hexdigest(self) -> str:
        while self._pending:
            self._pending.popleft().result()
        return self._hash.hexdigest()
