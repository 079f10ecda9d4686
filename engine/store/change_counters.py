"""Change counters: numbers in `meta` that go up by one in every transaction changing one
kind of thing, so a process holding a copy of it can tell with one tiny read whether the
copy still holds.

- `CONTENT`: what an index should hold (embeddings added, texts becoming live again or no
  longer live). A saved index is stamped with the count it matches, so opening a project
  can tell in a few milliseconds that it needs no reconciling with every embedding id.
- `ROWS`: rows imported or deleted (encoding does not count); what the rows kept between
  cuts (`engine.dedup.clustered_rows`) are keyed by.
- `CLUSTER_IDS`: every write of the stable cluster ids (`engine.store.cluster_records`); a
  process whose `Before` was read at another count reads it again.

"Version" in Duplens means a model version or the schema's; these are counts of changes.
The keys they are stored under are the names they were first written with, kept so that
every existing project opens unchanged.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Connection, Text, cast, select

from engine.store.dialects import conflict_insert
from engine.store.schema import meta

CONTENT = "content_version"
ROWS = "rows_version"
CLUSTER_IDS = "cluster_ids_version"


def read(conn: Connection, counter: str) -> int:
    """The counter's value (0 for a project that never changed what it counts)."""
    value = conn.execute(select(meta.c.value).where(meta.c.key == counter)).scalar()
    return int(value) if value is not None else 0


def bump(conn: Connection, counter: str) -> int:
    """Add one to the counter inside the caller's write transaction; the new value.

    Every writer of what it counts calls it in the same transaction, so a value names
    exactly one state of it. Atomic under concurrent writers: one INSERT ... ON CONFLICT
    DO UPDATE adds one to the stored value (it locks the row until this transaction ends,
    so two writers bump it in turn and never both write the same number), then this
    transaction reads its own value.
    """
    stmt = conflict_insert(conn, meta).values(key=counter, value="1")
    conn.execute(stmt.on_conflict_do_update(
        index_elements=["key"], set_={"value": cast(cast(meta.c.value, BigInteger) + 1, Text)}))
    return read(conn, counter)
