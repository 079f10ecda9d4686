"""Everything SQLite-specific: connection pragmas, URLs and the blob chunk size.

Kept in one place so that a PostgreSQL-backed project only has to supply its own variant.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, create_engine, event

# SQLite refuses values over SQLITE_MAX_LENGTH (1 GB by default); 64 MiB chunks stay far
# below it and keep each write short enough not to stall readers.
BLOB_CHUNK_BYTES = 64 * 1024 * 1024

SQLITE_MAGIC = b"SQLite format 3\x00"


def is_sqlite_file(path: Path) -> bool:
    """True when the file starts with SQLite's header, so we can say "not a project" early."""
    try:
        with path.open("rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def make_engine(path: Path, *, read_only: bool = False) -> Engine:
    """An engine with WAL, foreign keys and a busy timeout on every connection.

    WAL lets the GUI's search and table views read while the engine thread writes.
    A read-only project is opened through SQLite's URI form so nothing is ever written to it.
    """
    if read_only:
        url = f"sqlite:///file:{path.resolve().as_posix()}?mode=ro&uri=true"
    else:
        url = f"sqlite:///{path.resolve().as_posix()}"
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record) -> None:  # pragma: no branch - tiny
        # Let SQLAlchemy's `begin()` own transactions instead of pysqlite's implicit ones.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=30000")
        if not read_only:
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn) -> None:
        conn.exec_driver_sql("BEGIN")

    return engine
