"""Which module serves a dialect, and the few statements spelt differently in each.

The store's queries are SQLAlchemy Core and compile for SQLite and PostgreSQL alike. What
does not: an insert that updates or skips on a key conflict (`ON CONFLICT`, the same syntax
in both, but a dialect-specific construct in SQLAlchemy), advisory locks (PostgreSQL only;
SQLite has one writer anyway) and reading a text's leading number for numeric sorts
(SQLite's CAST reads "12 kg" as 12 and "abc" as 0; PostgreSQL's CAST raises on both, which
would make a whole sort fail on one odd cell).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import ModuleType

from sqlalchemy import Connection, Numeric, String, Table
from sqlalchemy.dialects import sqlite as lite
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from engine.store import postgres, sqlite

_BACKENDS: dict[str, ModuleType] = {"sqlite": sqlite, "postgresql": postgres}


def backend(dialect: str) -> ModuleType:
    """`store.sqlite` or `store.postgres`: connection setup, create/open checks, locks and
    blob reads of that dialect."""
    return _BACKENDS[dialect]


def backend_of(conn: Connection) -> ModuleType:
    return _BACKENDS[conn.dialect.name]


def conflict_insert(conn: Connection, table: Table):
    """An INSERT for `table` with `.on_conflict_do_update` / `.on_conflict_do_nothing`."""
    if conn.dialect.name == "postgresql":
        # Imported for server projects only: SQLAlchemy's PostgreSQL dialect brings asyncio
        # and its async drivers' modules, a cost every file project would pay at start.
        from sqlalchemy.dialects import postgresql as pg

        return pg.insert(table)
    return lite.insert(table)


def upsert(conn: Connection, table: Table, values: Mapping, keys: Sequence[str]) -> None:
    """Insert the row, or update the other columns of the row with the same `keys`.

    One statement, so two writers never both miss the row and both insert it (a delete
    followed by an insert fails with a unique violation for one of them on PostgreSQL)."""
    stmt = conflict_insert(conn, table).values(**values)
    update = {c: stmt.excluded[c] for c in values if c not in keys}
    conn.execute(stmt.on_conflict_do_update(index_elements=list(keys), set_=update)
                 if update else stmt.on_conflict_do_nothing(index_elements=list(keys)))


def insert_missing(conn: Connection, table: Table, rows: Sequence[Mapping],
                   keys: Sequence[str]) -> int:
    """Insert the rows whose `keys` are not taken yet (by this transaction or a concurrent
    one, which it waits for), skip the others; how many were inserted."""
    if not rows:
        return 0
    # SQLAlchemy reports -1 for psycopg's rowcount (executemany, or an implicit RETURNING of
    # the new id) unless asked to keep it
    stmt = conflict_insert(conn, table).on_conflict_do_nothing(
        index_elements=list(keys)).execution_options(preserve_rowcount=True)
    if len(rows) == 1:
        return conn.execute(stmt.values(**rows[0])).rowcount
    return conn.execute(stmt, list(rows)).rowcount


def lock(conn: Connection, key: str) -> None:
    """Make the rest of this write transaction the only one holding `key` (see
    `store.postgres.lock`); a no-op on SQLite, which has one writer at a time."""
    backend_of(conn).lock(conn, key)


class binary_order(FunctionElement):  # noqa: N801 - reads as the SQL it stands for
    """A text to sort by code point, as SQLite's default BINARY collation does, so that a
    server project sorts exactly as a file does whatever the database's locale (whose
    collation, en_US say, would also ignore spaces and punctuation at first)."""

    type = String()
    inherit_cache = True


@compiles(binary_order, "sqlite")
def _binary_order_sqlite(element, compiler, **kw) -> str:
    return compiler.process(element.clauses, **kw)


@compiles(binary_order, "postgresql")
def _binary_order_postgresql(element, compiler, **kw) -> str:
    return f'({compiler.process(element.clauses, **kw)}) COLLATE "C"'


class leading_number(FunctionElement):  # noqa: N801 - reads as the SQL function it is
    """The number a text starts with, else 0: SQLite's CAST(x AS REAL) on both dialects."""

    type = Numeric()
    inherit_cache = True


@compiles(leading_number, "sqlite")
def _leading_number_sqlite(element, compiler, **kw) -> str:
    return f"CAST({compiler.process(element.clauses, **kw)} AS REAL)"


# An optional sign, digits with an optional fraction (or a bare fraction), an optional
# exponent of at most four digits (NUMERIC takes any of them without overflowing).
_NUMBER_PREFIX = r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]{1,4}(?![0-9]))?"


@compiles(leading_number, "postgresql")
def _leading_number_postgresql(element, compiler, **kw) -> str:
    value = compiler.process(element.clauses, **kw)
    return f"COALESCE(CAST(substring({value} FROM '{_NUMBER_PREFIX}') AS NUMERIC), 0)"
