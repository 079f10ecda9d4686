"""Reading and writing the stable cluster ids: every id handed out, which rows are in which,
which row leads each, and what each row's id and each id's canonical row were before the
changes of each import.

The rules that decide the ids are `engine.dedup.id_rules`; this module only moves their
input (`Before`) out of the store and their outcome (`Assignment`) into it, inside the
caller's write transaction. On a server, the whole read-decide-write step holds the
`cluster-ids` advisory lock (`hold`), so two analysts cutting at once never hand out the
same new number or write over each other's assignment half-way.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from sqlalchemy import Connection, bindparam, delete, func, select

from engine.store import change_counters
from engine.store.dialects import insert_missing, lock
from engine.store.id_records import Assignment, Before, IdRecord
from engine.store.schema import (
    canonical_history,
    cluster_history,
    cluster_ids,
    item_clusters,
    items,
    sources,
)

_IN_BATCH = 500


def hold(conn: Connection) -> None:
    """Be the only process recording cluster ids until this transaction ends."""
    lock(conn, "cluster-ids")


def change_count(conn: Connection) -> int:
    """Bumped by every write here: a process whose `Before` was read at another count
    reads it again."""
    return change_counters.read(conn, change_counters.CLUSTER_IDS)


def current_batch(conn: Connection) -> int:
    """The latest import's number (0 before any): changes recorded now belong to it."""
    return conn.execute(select(func.max(sources.c.id))).scalar() or 0


def read_before(conn: Connection) -> Before:
    """Everything the id rules start from."""
    members = dict(conn.execute(select(item_clusters.c.item_id, item_clusters.c.cluster_id))
                   .all())
    records = {
        cid: IdRecord(cid, anchor, bool(retired), merged, canonical)
        for cid, anchor, retired, merged, canonical in conn.execute(select(
            cluster_ids.c.id, cluster_ids.c.anchor_item, cluster_ids.c.retired,
            cluster_ids.c.merged_into, cluster_ids.c.canonical_item))
    }
    top = max(records, default=0)
    anchors = select(cluster_ids.c.anchor_item).where(
        ~cluster_ids.c.retired, cluster_ids.c.anchor_item.is_not(None))
    alive = set(conn.execute(select(items.c.id).where(
        items.c.id.in_(anchors), ~items.c.deleted)).scalars())
    dead = {r.anchor for r in records.values()
            if not r.retired and r.anchor is not None and r.anchor not in alive}
    return Before(members, records, top + 1, dead)


def write(conn: Connection, result: Assignment, batch: int) -> None:
    """Record `result`, made from the `Before` read in this transaction; `batch` is the
    latest import (`current_batch`)."""
    now = time.time()
    if result.changed:
        # What each changed row was before this import's first change to it.
        insert_missing(conn, cluster_history, [
            {"batch": batch, "item_id": item, "cluster_id": old}
            for item, (old, _) in result.changed.items()], ["batch", "item_id"])
        moved = list(result.changed)
        for start in range(0, len(moved), _IN_BATCH):
            conn.execute(delete(item_clusters).where(
                item_clusters.c.item_id.in_(moved[start:start + _IN_BATCH])))
        placed = [{"item_id": item, "cluster_id": new}
                  for item, (_, new) in result.changed.items() if new is not None]
        if placed:
            conn.execute(item_clusters.insert(), placed)
    if result.minted:
        conn.execute(cluster_ids.insert(), [
            {"id": cid, "anchor_item": result.anchors.get(cid), "retired": False,
             "merged_into": None, "split_from": source, "created_batch": batch,
             "changed_batch": batch, "created_at": now,
             "canonical_item": result.canonicals.get(cid, (None, None))[1]}
            for cid, source in result.minted.items()])
    led = [(cid, was, lead) for cid, (was, lead) in result.canonicals.items()
           if cid not in result.minted]
    if led:
        # What each id was led by before this import's first change to it (a new id has
        # no before: it is "new" since then, whoever leads it).
        insert_missing(conn, canonical_history, [
            {"batch": batch, "cluster_id": cid, "item_id": was} for cid, was, _ in led],
            ["batch", "cluster_id"])
        conn.execute(cluster_ids.update().where(cluster_ids.c.id == bindparam("cid"))
                     .values(canonical_item=bindparam("lead")),
                     [{"cid": cid, "lead": lead} for cid, _, lead in led])
    for cid, into in result.retired.items():
        conn.execute(cluster_ids.update().where(cluster_ids.c.id == cid).values(
            retired=True, merged_into=into, changed_batch=batch))
    for cid in result.revived:
        conn.execute(cluster_ids.update().where(cluster_ids.c.id == cid).values(
            retired=False, merged_into=None, changed_batch=batch))
    for cid, anchor in result.anchors.items():
        if cid not in result.minted:
            conn.execute(cluster_ids.update().where(cluster_ids.c.id == cid)
                         .values(anchor_item=anchor))
    change_counters.bump(conn, change_counters.CLUSTER_IDS)


def forget_rows(conn: Connection, item_ids: Sequence[int]) -> None:
    """Deleted rows leave their clusters: they no longer count among an id's rows."""
    for start in range(0, len(item_ids), _IN_BATCH):
        conn.execute(delete(item_clusters).where(
            item_clusters.c.item_id.in_(list(item_ids[start:start + _IN_BATCH]))))
    change_counters.bump(conn, change_counters.CLUSTER_IDS)


def ids_of(conn: Connection) -> dict[int, dict]:
    """Every id's record: retired, merged_into, split_from, created_batch, changed_batch,
    canonical_item."""
    return {r["id"]: dict(r) for r in conn.execute(select(cluster_ids)).mappings()}


def retired(conn: Connection) -> dict[int, int | None]:
    """Every retired id and the id it merged into (None: its rows are gone)."""
    return dict(conn.execute(select(cluster_ids.c.id, cluster_ids.c.merged_into)
                             .where(cluster_ids.c.retired)).all())


def ids_before(conn: Connection, batch: int) -> dict[int, int | None]:
    """item -> its cluster id (None: in none) before the changes recorded since `batch`
    was imported, for the rows that changed since; the others have their id now."""
    first = (select(cluster_history.c.item_id, func.min(cluster_history.c.batch).label("b"))
             .where(cluster_history.c.batch >= batch)
             .group_by(cluster_history.c.item_id).subquery())
    rows = conn.execute(select(cluster_history.c.item_id, cluster_history.c.cluster_id)
                        .join(first, (first.c.item_id == cluster_history.c.item_id)
                              & (first.c.b == cluster_history.c.batch)))
    return dict(rows.all())


def canonicals_before(conn: Connection, batch: int) -> dict[int, int | None]:
    """cluster id -> its canonical row (None: not recorded) before the changes recorded
    since `batch` was imported, for the ids whose canonical changed since; the others are
    led by their `canonical_item` now."""
    first = (select(canonical_history.c.cluster_id,
                    func.min(canonical_history.c.batch).label("b"))
             .where(canonical_history.c.batch >= batch)
             .group_by(canonical_history.c.cluster_id).subquery())
    rows = conn.execute(select(canonical_history.c.cluster_id, canonical_history.c.item_id)
                        .join(first, (first.c.cluster_id == canonical_history.c.cluster_id)
                              & (first.c.b == canonical_history.c.batch)))
    return dict(rows.all())


def members_now(conn: Connection) -> dict[int, int]:
    """item -> cluster id, as recorded at the last cut."""
    return dict(conn.execute(select(item_clusters.c.item_id, item_clusters.c.cluster_id))
                .all())
