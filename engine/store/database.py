"""Opening a project file and handing out transactions: one writer, many readers.

All writes go through `Store.write()`, which serialises them with a lock (SQLite allows one
writer at a time anyway) and wraps them in a transaction, so a crash leaves either the whole
write or none of it. A file is inspected through a read-only connection before anything is
written to it, so opening something that is not a project changes nothing.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Connection, select
from sqlalchemy.exc import DatabaseError, OperationalError

from engine.errors import ProjectError
from engine.store import schema
from engine.store.migrations import SCHEMA_VERSION, read_version, upgrade
from engine.store.sqlite import is_sqlite_file, make_engine


class Store:
    """A Duplens project database; use `Store.open`."""

    def __init__(self, path: Path, *, read_only: bool) -> None:
        self.path = path
        self.read_only = read_only
        self._engine = make_engine(path, read_only=read_only)
        self._write_lock = threading.RLock()

    @classmethod
    def open(cls, path: str | os.PathLike, *, create: bool = False, read_only: bool = False
             ) -> Store:
        """Open (or, with `create`, make) a project, checking it really is one we can use."""
        path = Path(path)
        name = path.name
        _check_path(path, create=create, read_only=read_only)
        has_data = path.exists() and path.stat().st_size > 0
        version = _peek_version(path) if has_data else None
        if has_data and version is None:
            raise ProjectError(f"{name}: is not a Duplens project")
        if version is not None and version > SCHEMA_VERSION:
            raise ProjectError(
                f"{name}: was saved by a newer Duplens (schema {version}, this version reads "
                f"up to {SCHEMA_VERSION}); update Duplens to open it"
            )
        if (version or 0) < SCHEMA_VERSION and read_only:
            raise ProjectError(f"{name}: needs an upgrade but was opened read-only")
        store = cls(path, read_only=read_only)
        if (version or 0) < SCHEMA_VERSION:
            try:
                with store.write() as conn:
                    upgrade(conn, version or 0)
            except BaseException:
                store.close()
                raise
        return store

    def close(self) -> None:
        self._engine.dispose()

    # -- transactions ----------------------------------------------------------------------
    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction: committed when the block ends, rolled back on any error."""
        if self.read_only:
            raise ProjectError(f"{self.path.name}: the project is open read-only")
        with self._write_lock, self._engine.begin() as conn:
            yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read connection; WAL gives it a consistent snapshot while a writer works."""
        with self._engine.connect() as conn:
            yield conn

    # -- key/value settings ----------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        with self.read() as conn:
            value = conn.execute(
                select(schema.meta.c.value).where(schema.meta.c.key == key)
            ).scalar()
        return default if value is None else value

    def set_meta(self, key: str, value: str, conn: Connection | None = None) -> None:
        """Set a setting, inside the caller's transaction when one is given."""
        if conn is None:
            with self.write() as own:
                self.set_meta(key, value, own)
            return
        conn.execute(schema.meta.delete().where(schema.meta.c.key == key))
        conn.execute(schema.meta.insert().values(key=key, value=value))


def _check_path(path: Path, *, create: bool, read_only: bool) -> None:
    name = path.name
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
        return
    if path.stat().st_size > 0 and not is_sqlite_file(path):
        raise ProjectError(f"{name}: is not a Duplens project")
    if not read_only and not os.access(path, os.W_OK):
        raise ProjectError(f"{name}: the project file is read-only")


def _peek_version(path: Path) -> int | None:
    """The schema version, read through a read-only connection that changes nothing.

    None when the file is not a Duplens project (another SQLite database, say).
    """
    engine = make_engine(path, read_only=True)
    try:
        with engine.connect() as conn:
            return read_version(conn)
    except (DatabaseError, OperationalError) as exc:
        raise ProjectError(f"{path.name}: cannot be opened as a Duplens project ({exc.orig})"
                           ) from exc
    finally:
        engine.dispose()
