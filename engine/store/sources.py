"""Reading and writing sources: the imports (batches) of a project, one per file and column
mapping, numbered by their id; and which live rows each brought."""

from __future__ import annotations

import getpass
import time
from collections.abc import Iterable

from sqlalchemy import Connection, func, select

from engine.errors import ProjectError
from engine.store.dialects import insert_missing
from engine.store.schema import items, sources

# Stay well under every database's limit on bound parameters in one statement.
_IN_BATCH = 500


def find_source(conn: Connection, sha256: str, mapping_key: str) -> int | None:
    return conn.execute(
        select(sources.c.id).where(sources.c.sha256 == sha256,
                                   sources.c.mapping_key == mapping_key)
    ).scalar()


def add_source(conn: Connection, **values) -> int:
    """Record an imported file (a batch: its number is the source id); `ProjectError` when
    another process recorded the same file with the same mapping since the caller looked
    (two analysts importing it at once)."""
    values.setdefault("imported_at", time.time())
    values.setdefault("imported_by", who_imports())
    if insert_missing(conn, sources, [values], ["sha256", "mapping_key"]) == 0:
        raise ProjectError(f"{values.get('file_name', 'the file')}: was imported into the "
                           f"project by someone else just now; nothing was added twice")
    return conn.execute(select(sources.c.id).where(
        sources.c.sha256 == values["sha256"],
        sources.c.mapping_key == values["mapping_key"])).scalar_one()


def who_imports() -> str:
    """The name a batch records as who imported it: the computer's user name."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):   # no user name in the environment or the password file
        return ""


def remove_source(conn: Connection, source_id: int) -> list[int]:
    """Mark a batch removed and mark its rows deleted; the ids of the rows it had live.
    Its file's key is freed (the mapping key becomes "removed:<id>"), so the same file can
    be imported again as a new batch."""
    live = list(conn.execute(select(items.c.id).where(
        items.c.source_id == source_id, ~items.c.deleted).order_by(items.c.id)).scalars())
    conn.execute(sources.update().where(sources.c.id == source_id).values(
        removed_at=time.time(), mapping_key=f"removed:{source_id}"))
    return live


def update_source(conn: Connection, source_id: int, **values) -> None:
    conn.execute(sources.update().where(sources.c.id == source_id).values(**values))


def list_sources(conn: Connection) -> list[dict]:
    return [dict(r) for r in conn.execute(select(sources).order_by(sources.c.id)).mappings()]


def get_source(conn: Connection, source_id: int) -> dict | None:
    found = conn.execute(select(sources).where(sources.c.id == source_id)).mappings().first()
    return dict(found) if found else None


def live_rows_per_source(conn: Connection) -> dict[int, int]:
    """source id -> its rows still in the project."""
    return dict(conn.execute(select(items.c.source_id, func.count()).where(~items.c.deleted)
                             .group_by(items.c.source_id)).all())


def file_sha256(conn: Connection, source_id: int) -> str | None:
    """The digest of the file batch `source_id` was imported from (None: no such batch)."""
    return conn.execute(select(sources.c.sha256).where(sources.c.id == source_id)).scalar()


def live_rows_since(conn: Connection, batch: int) -> set[int]:
    """The live rows that batch `batch` and later imports brought."""
    return set(conn.execute(select(items.c.id).where(
        items.c.source_id >= batch, ~items.c.deleted)).scalars())


def live_among(conn: Connection, item_ids: Iterable[int]) -> set[int]:
    """Those of `item_ids` that are live rows (not deleted)."""
    wanted = list(item_ids)
    found: set[int] = set()
    for start in range(0, len(wanted), _IN_BATCH):
        found.update(conn.execute(select(items.c.id).where(
            items.c.id.in_(wanted[start:start + _IN_BATCH]), ~items.c.deleted)).scalars())
    return found
