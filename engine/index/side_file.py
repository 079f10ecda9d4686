"""The saved index's copy beside a project file: `questions.duplens.index/hnsw-<model id>.bin`.

Why a copy: opening a 1M-item project spent most of its time moving the 1.7 GB index out of
SQLite's blob chunks into a scratch file and hashing it before hnswlib could load it. On a
150k-vector (272 MB) index that route took 2.01-2.31 s, loading a file kept beside the
project 0.73-0.80 s, and hashing that file first 1.26-1.28 s: the copy and the hash cost,
not SQLite. So a file project keeps the same bytes twice: the blob (the source of truth,
copied by `duplens copy`, the only form a server project has) and this file, which opening
loads straight with hnswlib when it is provably the same saved index. Measured again with
`benchmarks.scale_1m` on 100k items (173 MB index), the two routes alternated on a shared
machine (load 11-22): open to first search, median of 3, 2.19 s against 4.62 s warm and
3.04 s against 7.64 s cold (after drop_caches).

The rule (docs/architecture.md, "The index beside a project file"): the store records, in
`meta` under `index_file/<model id>`, the blob's sha256 the file was written with and the
file's size, mtime_ns and inode, inside the same write transaction that saved the blob
(after its lock). The file is used only when the record's sha256 is the saved blob's and the
file opened now has that size, mtime_ns and inode (checked on the open descriptor, which is
what hnswlib then reads). A stat is free, where hashing 1.7 GB costs about a second. Anything
that replaces the file makes a new inode (a copy, a restore from backup, another process's
save, which writes a temporary file and renames it over); anything that writes into it moves
its mtime. A crash or a full disk between the rename and the commit leaves a new file with
the old record: a mismatch. Every mismatch loads the blobs (checked by their sha256) and
writes the file again; a project copied without its folder just has no file yet.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from sqlalchemy import Connection, delete, select

from engine.store.dialects import upsert
from engine.store.schema import meta

SUFFIX = ".index"   # questions.duplens -> questions.duplens.index/
_FDS = "/proc/self/fd"


def folder_for(project_path: Path) -> Path:
    """`questions.duplens` -> `questions.duplens.index`, beside it."""
    return project_path.with_name(project_path.name + SUFFIX)


def side_path(conn: Connection, model_id: int) -> Path | None:
    """Where `model_id`'s index file lives, or None when the project is not a file."""
    if conn.dialect.name != "sqlite":
        return None
    url = conn.engine.url
    database = url.database
    if database and url.query.get("uri") == "true" and database.startswith("file:"):
        database = database[len("file:"):]   # a read-only open names the file as a URI
    if not database or database == ":memory:":
        return None
    return folder_for(Path(database)) / f"hnsw-{model_id}.bin"


def record_key(model_id: int) -> str:
    return f"index_file/{model_id}"


def _identity(st: os.stat_result) -> dict:
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino}


@contextmanager
def open_matching(conn: Connection, model_id: int, sha256: str) -> Iterator[str | None]:
    """A path hnswlib can load the side file from when it is the saved index (sha256 of the
    blob), else None. The file is opened first and its descriptor checked, so the bytes
    checked are the bytes loaded even if another process renames a new file over meanwhile
    (on Linux, through /proc/self/fd; elsewhere the path, checked just before)."""
    path = side_path(conn, model_id)
    raw = conn.execute(select(meta.c.value).where(meta.c.key == record_key(model_id))).scalar()
    if path is None or raw is None:
        yield None
        return
    try:
        record = json.loads(raw)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    except (OSError, ValueError):
        yield None
        return
    try:
        same = (isinstance(record, dict) and record.get("sha256") == sha256
                and {k: record.get(k) for k in ("size", "mtime_ns", "inode")}
                == _identity(os.fstat(fd)))
        via_fd = os.path.isdir(_FDS)
        yield (f"{_FDS}/{fd}" if via_fd else str(path)) if same else None
    finally:
        os.close(fd)


class SideWriter:
    """Writes the saved bytes, chunk by chunk, to a temporary file in the side folder.

    It never fails the save or the load it rides along: a full disk or a folder it cannot
    write makes it give up (`failed`), delete what it wrote, and the project goes on from its
    blob. Python's own writes are used, not hnswlib's (which does not report a short write),
    so a full disk is always noticed.
    """

    def __init__(self, target: Path | None) -> None:
        self.target = target
        self.failed = target is None
        self._fh = None
        self.temp: Path | None = None
        if target is None:
            return
        try:
            target.parent.mkdir(exist_ok=True)
            fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                        suffix=".tmp")
            self.temp = Path(name)
            self._fh = os.fdopen(fd, "wb")
        except OSError:
            self._give_up()

    def write(self, chunk: bytes) -> None:
        if self.failed:
            return
        try:
            self._fh.write(chunk)
        except OSError:
            self._give_up()

    def finish(self) -> Path | None:
        """Flush and fsync; the temporary file, or None when it was given up."""
        if self.failed:
            return None
        try:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
        except OSError:
            self._give_up()
            return None
        return self.temp

    def discard(self) -> None:
        self._give_up()

    def _give_up(self) -> None:
        self.failed = True
        if self._fh is not None:
            with suppress(OSError):
                self._fh.close()
            self._fh = None
        if self.temp is not None:
            self.temp.unlink(missing_ok=True)
            self.temp = None


def publish(conn: Connection, model_id: int, temp: Path, sha256: str) -> bool:
    """Rename `temp` (finished by `SideWriter`) onto the side file and record it, inside the
    caller's write transaction, which holds the index blob's lock and recorded `sha256`.
    False (and nothing left behind) when the file system refuses."""
    path = side_path(conn, model_id)
    try:
        if path is None:
            raise OSError("not a file project")
        os.replace(temp, path)
        _fsync_folder(path.parent)
        identity = _identity(os.stat(path))
    except OSError:
        temp.unlink(missing_ok=True)
        forget(conn, model_id)
        return False
    upsert(conn, meta, {"key": record_key(model_id),
                        "value": json.dumps({"sha256": sha256, **identity})}, ["key"])
    return True


def forget(conn: Connection, model_id: int) -> None:
    """No side file for `model_id` (its saved index changed without one, or was dropped):
    the record goes and the file too, which is only wasted space once it cannot match."""
    conn.execute(delete(meta).where(meta.c.key == record_key(model_id)))
    path = side_path(conn, model_id)
    if path is not None:
        with suppress(OSError):
            path.unlink(missing_ok=True)


def _fsync_folder(folder: Path) -> None:
    """Make the rename durable where the platform allows fsync on a folder (not Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
