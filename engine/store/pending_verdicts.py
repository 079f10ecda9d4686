"""Reading and writing the verdicts given while checking a file, until its rows are added.

Checking a file adds nothing, so a verdict on one of its rows ("duplicate of this existing
row" / "new") cannot be a pair's verdict yet: that names two items. It is kept here, keyed
by the file's sha256 and data row, with the row's text as it was checked, so that checking
the same file again shows it, fine-tuning can learn from it (both texts are known), and an
import of that file turns it into a verdict on a pair of items (`adopt`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, delete, func, select

from engine.store import pair_verdicts
from engine.store.dialects import upsert
from engine.store.schema import items, pending_verdicts
from engine.text import norm_key

ORIGIN = "match"   # the origin of the pair's verdict a pending verdict becomes


@dataclass(frozen=True)
class PendingVerdict:
    """One row of a checked file judged against an existing item."""

    row: int          # the file's data row number (1 = the first data row)
    text: str         # the row's text as checked
    item_id: int      # the existing item it was judged against
    verdict: int | None  # 1 duplicate, 0 new (not a duplicate), None: forget it


def keep(conn: Connection, file_sha256: str, file_name: str,
         verdicts: Sequence[PendingVerdict]) -> None:
    """Store (or, with verdict None, forget) each verdict of the file's rows; one per row."""
    now = time.time()
    for v in verdicts:
        if v.verdict is None:
            conn.execute(delete(pending_verdicts).where(
                pending_verdicts.c.file_sha256 == file_sha256,
                pending_verdicts.c.row == v.row))
            continue
        upsert(conn, pending_verdicts,
               {"file_sha256": file_sha256, "row": int(v.row), "file_name": file_name,
                "text": v.text, "item_id": int(v.item_id), "label": int(v.verdict),
                "created_at": now}, ["file_sha256", "row"])


def for_file(conn: Connection, file_sha256: str) -> dict[int, PendingVerdict]:
    """The verdicts kept for a file, by row."""
    rows = conn.execute(select(pending_verdicts.c.row, pending_verdicts.c.text,
                               pending_verdicts.c.item_id, pending_verdicts.c.label)
                        .where(pending_verdicts.c.file_sha256 == file_sha256)).all()
    return {r.row: PendingVerdict(r.row, r.text, r.item_id, r.label) for r in rows}


def as_pairs(conn: Connection) -> list[dict]:
    """Every kept verdict against a live item, with both texts (`text_a` the checked row's,
    `text_b` the item's, `text_id_b` its text): training pairs, like `pair_verdicts.all_verdicts`
    rows less the checked row's text id, which has none until it is added."""
    rows = conn.execute(
        select(pending_verdicts.c.text.label("text_a"), items.c.text.label("text_b"),
               items.c.text_id.label("text_id_b"), pending_verdicts.c.label,
               pending_verdicts.c.file_name)
        .join(items, items.c.id == pending_verdicts.c.item_id)
        .where(~items.c.deleted)
        .order_by(pending_verdicts.c.created_at, pending_verdicts.c.row)).mappings().all()
    return [dict(r) for r in rows]


def count(conn: Connection) -> int:
    return conn.execute(select(func.count()).select_from(pending_verdicts)).scalar_one()


def adopt(conn: Connection, file_sha256: str, source_id: int) -> int:
    """The file is imported (`source_id`): each kept verdict whose row is now an item with
    the text it was checked with becomes a verdict on a pair of items, origin "match", and
    leaves this table. A row imported with other text columns than it was checked with keeps its
    verdict here (it was about another text). Returns how many pairs were stored."""
    kept = for_file(conn, file_sha256)
    if not kept:
        return 0
    imported = dict(conn.execute(
        select(items.c.row, items.c.id).where(items.c.source_id == source_id,
                                              items.c.row.in_(list(kept)),
                                              ~items.c.deleted)).all())
    texts = dict(conn.execute(select(items.c.id, items.c.text).where(
        items.c.id.in_(list(imported.values())))).all()) if imported else {}
    stored, done = 0, []
    for row, verdict in kept.items():
        item = imported.get(row)
        if item is None or norm_key(texts[item]) != norm_key(verdict.text):
            continue
        if item != verdict.item_id:
            pair_verdicts.set_verdict(conn, item, verdict.item_id, verdict.verdict, ORIGIN)
            stored += 1
        done.append(row)
    if done:
        conn.execute(delete(pending_verdicts).where(
            pending_verdicts.c.file_sha256 == file_sha256, pending_verdicts.c.row.in_(done)))
    return stored
