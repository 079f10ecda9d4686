"""Opening a project and handing out transactions: one writer per process, many readers.

A project is a `.duplens` file (SQLite) or a PostgreSQL database (a team's project, named by
a URL); `Store.open` takes either, and everything above the store works the same on both.
The dialect's own rules (connecting, what "create" means, read-only, locks, blob reads) are
in `store.sqlite` and `store.postgres`.

All writes go through `Store.write()`, which serialises this process's writers with a lock
and wraps them in a transaction, so a crash leaves either the whole write or none of it.
Several processes writing one server project at once (several analysts) are kept correct by
each write function itself (see docs/architecture.md, "Team projects on PostgreSQL").
A project is inspected through a read-only connection before anything is written to it, so
opening something that is not a project changes nothing.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Connection, select
from sqlalchemy.exc import DBAPIError

from engine.errors import DiskFull, NeedsUpgrade, ProjectError, user_error
from engine.store import schema
from engine.store.dialects import backend, upsert
from engine.store.location import Location, parse_location
from engine.store.migrations import SCHEMA_VERSION, read_version, upgrade


class Store:
    """A Duplens project database; use `Store.open`.

    `path` is the project file, or None for a server project: what lives "beside the project
    file" (model versions, say) has no place beside a server database. `name` is what
    messages call the project (file name or database name), `url` its SQLAlchemy URL without
    any password (safe to show, log and remember), `is_file` tells the two kinds apart.
    """

    def __init__(self, location: Location, *, read_only: bool, snapshot: bool = False) -> None:
        self.location = location
        self.path: Path | None = location.path
        self.name = location.name
        self.url = location.safe_url
        self.is_file = location.is_file
        # `snapshot`: opened on a full disk as last saved (`store.sqlite.open_when_full`);
        # read-only until a write finds room to open it as usual (`_reopen_with_room`).
        self.snapshot = snapshot
        self.read_only = read_only or snapshot
        self._asked_read_only = read_only
        self._backend = backend(location.dialect)
        self._engine = (self._backend.make_engine(location, snapshot=True) if snapshot
                        else self._backend.make_engine(location, read_only=read_only))
        self._write_lock = threading.RLock()

    @classmethod
    def open(cls, location: str | os.PathLike, *, create: bool = False,
             read_only: bool = False,
             on_upgrade: Callable[[str, int], None] = lambda name, version: None) -> Store:
        """Open (or, with `create`, make) a project, checking it really is one we can use.

        `location`: a project file's path, or a URL such as
        postgresql+psycopg://analyst@db.example:5432/support_faq. On a server, `create` fills
        an existing empty database; a database holding other tables is refused.
        `on_upgrade(name, version)` is told before a project saved by an older Duplens (at
        schema `version`) is upgraded, since some steps take a while on a large project.
        """
        where = parse_location(location)
        dialect, snapshot = backend(where.dialect), False
        try:
            version = dialect.existing_version(where, create=create, read_only=read_only)
        except DiskFull:
            if not where.is_file:
                raise
            # No room even for SQLite's reader files: read it as last saved (searching,
            # info, the review, exports elsewhere); writing waits for room (`write`).
            version, snapshot = dialect.open_when_full(where), True
        _check_version(where.name, version, read_only or snapshot)
        store = cls(where, read_only=read_only, snapshot=snapshot)
        if (version or 0) < SCHEMA_VERSION:
            if version:
                on_upgrade(where.name, version)
            try:
                store._upgrade()
            except BaseException:
                store.close()
                raise
        return store

    def _upgrade(self) -> None:
        """Create or migrate the schema; under a lock, re-reading the version, because
        another analyst's process may be doing the same to the same database right now."""
        with self.write() as conn:
            self._backend.lock(conn, "schema")
            current = read_version(conn) or 0
            _check_version(self.name, current, self.read_only)
            if current < SCHEMA_VERSION:
                upgrade(conn, current)

    def close(self) -> None:
        self._engine.dispose()

    def __repr__(self) -> str:
        return f"Store({self.url!r}{', read-only' if self.read_only else ''})"

    # -- transactions ----------------------------------------------------------------------
    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction: committed when the block ends, rolled back on any error."""
        if self.snapshot:
            self._reopen_with_room()
        if self.read_only:
            raise ProjectError(f"{self.name}: the project is open read-only")
        with self._write_lock, self._server_errors(), self._engine.connect() as conn:
            # SQLite: BEGIN IMMEDIATE (`store.sqlite`), so the write lock is taken (or waited
            # for) first; a deferred BEGIN that reads, then writes after another process
            # committed fails at once with "database is locked", whatever the busy timeout.
            conn.execution_options(duplens_write=True)
            with conn.begin():
                yield conn

    def _reopen_with_room(self) -> None:
        """A project opened as a snapshot (the disk was full) is opened as usual before its
        first write, if there is room now; else the write fails as it would have (`DiskFull`).
        What this process holds in memory stays right: the file did not change meanwhile
        (immutable mode's condition), and what others write from now on is followed as
        always (`LiveIndex._behind`)."""
        with self._write_lock:
            if not self.snapshot:
                return
            self._backend.existing_version(self.location, create=False,
                                           read_only=self._asked_read_only)
            old = self._engine
            self._engine = self._backend.make_engine(self.location,
                                                     read_only=self._asked_read_only)
            self.snapshot, self.read_only = False, self._asked_read_only
            old.dispose()

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read transaction that sees one consistent snapshot while writers work (SQLite's
        WAL; REPEATABLE READ on PostgreSQL) and cannot write."""
        with self._server_errors(), self._engine.connect() as conn:
            conn.execution_options(**self._backend.READ_OPTIONS)
            yield conn

    @contextmanager
    def _server_errors(self) -> Iterator[None]:
        """A server that went away, a deadlock or a full disk is the machine's limit, not a
        bug: a `ProjectError` naming it. On a file: `DiskFull` for SQLITE_FULL or ENOSPC,
        `ProjectBusy` when another process held the write lock past the busy timeout."""
        try:
            yield
        except DBAPIError as exc:
            if not self.is_file and self._backend.is_unavailable(exc):
                raise self._backend.unavailable(self.location, exc) from exc
            mapped = user_error(exc, self.name) if self.is_file else None
            if mapped is not None:
                raise mapped from exc
            raise

    # -- key/value settings ----------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        with self.read() as conn:
            value = meta_value(conn, key)
        return default if value is None else value

    def set_meta(self, key: str, value: str, conn: Connection | None = None) -> None:
        """Set a setting, inside the caller's transaction when one is given."""
        if conn is None:
            with self.write() as own:
                self.set_meta(key, value, own)
            return
        upsert(conn, schema.meta, {"key": key, "value": value}, ["key"])


def _check_version(name: str, version: int | None, read_only: bool) -> None:
    if version is not None and version > SCHEMA_VERSION:
        raise ProjectError(
            f"{name}: was saved by a newer Duplens (schema {version}, this version reads "
            f"up to {SCHEMA_VERSION}); update Duplens to open it"
        )
    if (version or 0) < SCHEMA_VERSION and read_only:
        raise NeedsUpgrade(f"{name}: needs an upgrade but was opened read-only")


def meta_value(conn: Connection, key: str) -> str | None:
    """A setting read inside the caller's transaction (None: not set); `Store.get_meta`
    reads one in a transaction of its own."""
    return conn.execute(select(schema.meta.c.value).where(schema.meta.c.key == key)).scalar()
