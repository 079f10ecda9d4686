"""Everything PostgreSQL-specific (team projects): connecting through psycopg 3, what
"create" means on a server, read-only and snapshot transactions, advisory locks, blob reads.
The same set of names as `store.sqlite`.

A team's project is one database on a server the team already runs. "Create" fills an
existing empty database with the schema (creating databases is the administrator's job);
a database holding tables of anything else is refused untouched. Passwords come from the
URL, PGPASSWORD or ~/.pgpass (libpq reads the last two itself) and never appear in a message.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Iterator

from sqlalchemy import DDL, Connection, Engine, Table, create_engine, event, inspect, text
from sqlalchemy.exc import DBAPIError

from engine.errors import ProjectError
from engine.store import schema
from engine.store.location import Location
from engine.store.migrations import read_version

# Chunk rows of the `blobs` table. PostgreSQL stores a bytea over 2 kB out of line (TOAST,
# in ~2 kB pieces), so a row's size only sets how much a save or load holds at once and
# how many rows an index makes. Streaming 180 MB from a localhost server took 0.30 s in
# 1 MiB rows, 0.52 s in 4 MiB and 0.61 s in 16 MiB (2 cores, load average ~4.7).
BLOB_CHUNK_BYTES = 1024 * 1024

# A read sees one snapshot from its first statement to its end, as a SQLite read does under
# WAL (READ COMMITTED would let a read's second query see a write its first did not), and it
# cannot write: writes go through `Store.write()`. Read-only REPEATABLE READ transactions
# never fail with serialisation errors, so readers never retry.
READ_OPTIONS = {"isolation_level": "REPEATABLE READ", "postgresql_readonly": True}

# Advisory lock keys are 64-bit; ours are hashes of "duplens:<what>", so a project's locks
# never collide in practice with each other or with another application's in the same
# database.
_LOCK_PREFIX = b"duplens:"


# Chunks are hnswlib's bytes or a neighbour graph: pglz never shrank an index's (54 MB
# stored as 54 MB), yet trying made saving it 3 times slower (1.33 s against 0.44 s). So
# the column is stored out of line uncompressed (EXTERNAL), from the table's creation on.
event.listen(schema.blobs, "after_create", DDL(
    "ALTER TABLE blobs ALTER COLUMN data SET STORAGE EXTERNAL").execute_if(
    dialect="postgresql"))


def make_engine(location: Location, *, read_only: bool = False) -> Engine:
    """An engine on the server; write transactions are READ COMMITTED (each statement sees
    the latest commits; the write functions rely on row locks, ON CONFLICT and advisory
    locks, never on a snapshot), and a read-only project's sessions cannot write at all."""
    if importlib.util.find_spec("psycopg") is None:
        raise ProjectError(f"{location.name}: PostgreSQL projects need the psycopg driver: "
                           f'pip install "duplens[team]"')
    options = "-c default_transaction_read_only=on" if read_only else ""
    return create_engine(
        location.url,
        isolation_level="READ COMMITTED",
        # a laptop that slept or a restarted server leaves dead connections in the pool
        pool_pre_ping=True,
        connect_args={"application_name": "duplens", "connect_timeout": 15,
                      "options": options},
    )


def existing_version(location: Location, *, create: bool, read_only: bool) -> int | None:
    """The project's schema version; None for an empty database that `create` may fill.

    Raises `ProjectError` when the server cannot be reached or refuses the login, when the
    database is empty and `create` is not set, or when it holds other tables."""
    engine = make_engine(location, read_only=True)
    try:
        # One snapshot for every look: under READ COMMITTED another analyst's new project
        # could commit between "no meta table" and "which tables are there?", and the
        # team's own project would be refused as something else's.
        with engine.connect().execution_options(isolation_level="REPEATABLE READ") as conn:
            version = read_version(conn)
            if version is not None:
                return version
            others = inspect(conn).get_table_names()
    except DBAPIError as exc:
        raise unavailable(location, exc) from exc
    finally:
        engine.dispose()
    name = location.name
    if others:
        shown = ", ".join(sorted(others)[:3]) + (", …" if len(others) > 3 else "")
        raise ProjectError(f"{name}: is not a Duplens project (the database holds other "
                           f"tables: {shown}); use an empty database")
    if not create or read_only:
        raise ProjectError(f"{name}: no such project (the database is empty; import a file "
                           f"to create it)")
    return None


def unavailable(location: Location, exc: DBAPIError) -> ProjectError:
    """One line for a server that cannot be reached, refused the login or could not finish a
    transaction (deadlock, disk full, shut down), without the password or the SQL."""
    orig = exc.orig
    detail = str(orig).strip() if orig is not None else str(exc)
    lines = [line.strip() for line in detail.splitlines() if line.strip()]
    why = next((line.split("FATAL:", 1)[1].strip() for line in lines if "FATAL:" in line),
               lines[0] if lines else type(orig).__name__)
    if "no password supplied" in detail:
        why = "the server asks for a password: put it in PGPASSWORD or ~/.pgpass"
    elif why.startswith("connection failed:"):
        why = why.removeprefix("connection failed:").strip()
    return ProjectError(f"{location.name}: {why} ({location.display})")


def is_unavailable(exc: DBAPIError) -> bool:
    """True for errors of the server or the connection (SQLSTATE classes 08, 40, 53, 55, 57
    are psycopg's OperationalError), as opposed to a bug in a statement."""
    import psycopg

    return isinstance(exc.orig, psycopg.OperationalError)


def lock(conn: Connection, key: str) -> None:
    """Hold an exclusive advisory lock on `key` until the transaction ends.

    For operations that must have one writer at a time across every analyst's process:
    replacing a blob (delete its chunks, write new ones), saving an index, upgrading the
    schema, numbering model versions. Row locks cannot cover them: the rows are deleted and
    re-created, or do not exist yet."""
    digest = hashlib.sha256(_LOCK_PREFIX + key.encode("utf-8")).digest()
    conn.execute(text("SELECT pg_advisory_xact_lock(:key)"),
                 {"key": int.from_bytes(digest[:8], "big", signed=True)})


def iter_blob_rows(conn: Connection, name: str) -> Iterator[bytes]:
    """The chunks of blob `name` in order, from one query whose rows arrive one at a time.

    psycopg's `stream` (libpq's single-row mode) in binary format: the bytes come as they are
    stored, not hex-encoded, and only about one chunk is held at a time, however big the
    blob. One query instead of one per chunk: a round trip per 4 MiB costs little on
    localhost but adds up over a network. Inside the caller's transaction, so it sees the
    same snapshot as its other reads.
    """
    raw = conn.connection.dbapi_connection
    with raw.cursor(binary=True) as cur:
        for (data,) in cur.stream("SELECT data FROM blobs WHERE name = %s ORDER BY seq",
                                  (name,)):
            yield data


def follow_explicit_ids(conn: Connection, table: Table) -> None:
    """Move `table`'s id sequence past its largest id, after rows were inserted with ids
    of their own choosing: SERIAL hands out numbers regardless of what the table holds."""
    conn.execute(text(
        f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "
        f"(SELECT COALESCE(MAX(id), 0) + 1 FROM {table.name}), false)"))
