"""Everything SQLite-specific: connection pragmas, what "create" means for a file, the blob
chunk size, blob reads. `store.postgres` is the same set of names for a server project.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import Connection, Engine, Table, create_engine, event
from sqlalchemy.exc import DatabaseError, OperationalError

from engine.errors import DiskFull, ProjectError
from engine.store.location import Location
from engine.store.migrations import read_version

# SQLite refuses values over SQLITE_MAX_LENGTH (1 GB by default); chunks stay far below it.
# Python's sqlite3 holds the GIL while it binds or returns a value, so a chunk is also how
# long a save or load can stall the window: 4 MiB keeps that to a few milliseconds (64 MiB
# chunks stalled it for about 100 ms when saving a 36 MB index). Files written with other
# chunk sizes read back the same.
BLOB_CHUNK_BYTES = 4 * 1024 * 1024

SQLITE_MAGIC = b"SQLite format 3\x00"

# A read is one connection: with WAL it sees one snapshot until it ends, as PostgreSQL's
# REPEATABLE READ does, so a read needs no options here.
READ_OPTIONS: dict = {}

# How long a write waits for another process's write to end before the user is told the
# project is busy (`engine.errors.ProjectBusy`). Our writes are short transactions (an
# import batch, an index save: seconds even at 1M items), so 30 s means "a real
# conflict". DUPLENS_BUSY_TIMEOUT_S changes it (tests use 1 s).
BUSY_TIMEOUT_S = float(os.environ.get("DUPLENS_BUSY_TIMEOUT_S", "30"))


def is_sqlite_file(path: Path) -> bool:
    """True when the file starts with SQLite's header, so we can say "not a project" early."""
    try:
        with path.open("rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def make_engine(location: Location | Path, *, read_only: bool = False,
                snapshot: bool = False) -> Engine:
    """An engine with WAL, foreign keys and a busy timeout on every connection.

    WAL lets the GUI's search and table views read while the engine thread writes.
    A read-only project is opened through SQLite's URI form so nothing is ever written to it.
    `snapshot`: the file read as it lies, in SQLite's immutable mode (`open_when_full`).
    """
    path = location.path if isinstance(location, Location) else location
    read_only = read_only or snapshot
    if snapshot:
        url = f"sqlite:///file:{path.resolve().as_posix()}?mode=ro&immutable=1&uri=true"
    elif read_only:
        url = f"sqlite:///file:{path.resolve().as_posix()}?mode=ro&uri=true"
    else:
        url = f"sqlite:///{path.resolve().as_posix()}"
    engine = create_engine(url, connect_args={"check_same_thread": False,
                                                "timeout": BUSY_TIMEOUT_S})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record) -> None:  # pragma: no branch - tiny
        # Let SQLAlchemy's `begin()` own transactions instead of pysqlite's implicit ones.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        if not read_only:
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn) -> None:
        # A write takes SQLite's one write lock up front, waiting up to the busy timeout for
        # another process's write to end (see docs/architecture.md, "Two processes on one
        # project file"); reads never wait (WAL).
        writes = conn.get_execution_options().get("duplens_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if writes else "BEGIN")

    return engine


def existing_version(location: Location, *, create: bool, read_only: bool) -> int | None:
    """The schema version of the project file, or None when there is none yet (a new or
    empty file that `create` may fill). Raises `ProjectError` for anything else: a folder,
    another kind of file, another SQLite database, a missing file without `create`."""
    path, name = location.path, location.name
    if path.is_dir():
        raise ProjectError(f"{name}: is a folder, not a Duplens project file")
    if not path.exists():
        if not create or read_only:
            raise ProjectError(f"{name}: no such project (import a file to create it)")
        folder = path.parent
        if not folder.exists():
            raise ProjectError(f"{name}: folder {folder} does not exist")
        if not os.access(folder, os.W_OK):
            raise ProjectError(f"{name}: cannot create a project in {folder} (read-only folder)")
        return None
    has_data = path.stat().st_size > 0
    if has_data and not is_sqlite_file(path):
        raise ProjectError(f"{name}: is not a Duplens project")
    if not read_only and not os.access(path, os.W_OK):
        raise ProjectError(f"{name}: the project file is read-only")
    if not has_data:
        return None
    version = _peek_version(path)
    if version is None:
        raise ProjectError(f"{name}: is not a Duplens project")
    return version


def _peek_version(path: Path, *, snapshot: bool = False) -> int | None:
    """The schema version, read through a read-only connection that changes nothing.

    None when the file is not a Duplens project (another SQLite database, say). `DiskFull`
    when SQLite found no room for the files a WAL reader needs (`open_when_full`).
    """
    engine = make_engine(path, read_only=True, snapshot=snapshot)
    try:
        with engine.connect() as conn:
            return read_version(conn)
    except (DatabaseError, OperationalError) as exc:
        if _no_room(exc.orig):
            raise DiskFull(path.name) from exc
        raise ProjectError(f"{path.name}: cannot be opened as a Duplens project ({exc.orig})"
                           ) from exc
    finally:
        engine.dispose()


# Why even a read-only open writes: a WAL reader maps the `-shm` file (32 KiB and up), and
# SQLite writes a byte into each of its pages to make sure they exist, so on a disk with no
# free block the open fails with SQLITE_IOERR_SHMSIZE ("disk I/O error"), leaving an empty
# `-wal` and a stub `-shm` behind (harmless: the next open starts them again).
_NO_ROOM_ERRORS = {"SQLITE_IOERR_SHMSIZE", "SQLITE_FULL"}


def _no_room(exc: BaseException | None) -> bool:
    return getattr(exc, "sqlite_errorname", None) in _NO_ROOM_ERRORS


def open_when_full(location: Location) -> int | None:
    """The schema version of a project that SQLite could not open for lack of room (see
    `_NO_ROOM_ERRORS`), read as a snapshot: SQLite's immutable mode takes no lock and needs
    neither `-wal` nor `-shm`, so it opens on a full disk. Searching, `info`, the review and
    exports to another disk then go on from what was saved (`Store.open`).

    Exact only when every commit is in the file itself: a `-wal` file that holds anything
    may hold commits not yet copied back, which immutable mode would not see, so then the
    project is not opened (`DiskFull`) rather than shown without them. A clean close copies
    the WAL back and removes it; a process that could not (the disk filled while it ran)
    leaves its `-shm` too, and then the ordinary open above succeeds without this.
    Immutable also means "nobody writes meanwhile": true while the disk stays full, and
    the store reopens normally before its first write (`Store.write`).
    """
    path = location.path
    try:
        pending = path.with_name(path.name + "-wal").stat().st_size
    except FileNotFoundError:
        pending = 0
    except OSError as exc:
        raise DiskFull(location.name) from exc
    if pending:
        raise DiskFull(location.name)
    return _peek_version(path, snapshot=True)


def lock(conn: Connection, key: str) -> None:
    """Nothing to do: SQLite lets one transaction write at a time, and `Store.write()`
    serialises this process's writers (PostgreSQL takes an advisory lock here)."""


def iter_blob_rows(conn: Connection, name: str, block: int = 1 << 20) -> Iterator[bytes]:
    """The chunks of blob `name` in order, read through SQLite's incremental blob I/O,
    `block` bytes at a time.

    Selecting a multi-MB value costs about five times the CPU of reading it with
    `blobopen` (measured on a 180 MB index: 0.23 s against 0.05 s), which matters when a
    1M-item project loads its 1.8 GB index; the read also releases the GIL. Inside the
    caller's transaction, so it sees the same snapshot as its other reads.
    """
    raw = conn.connection.dbapi_connection
    rowids = [r[0] for r in conn.exec_driver_sql(
        "SELECT rowid FROM blobs WHERE name = ? ORDER BY seq", (name,))]
    for rowid in rowids:
        with raw.blobopen("blobs", "data", rowid, readonly=True) as blob:
            while data := blob.read(block):
                yield data


def follow_explicit_ids(conn: Connection, table: Table) -> None:
    """Nothing to do: SQLite's next rowid is always past the largest one."""
