"""Texts that more than one live row holds: exact copies of each other.

Rows that share a normalised text are duplicates nobody has to judge, so the quality
estimate counts them apart from the drawn pairs (`engine.services.measuring`: "rows with at
least one duplicate").
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, func, select

from engine.store.schema import items


def rows_with_copies(conn: Connection, text_ids: Iterable[int]) -> tuple[int, set[int]]:
    """Live rows whose text has another live row (of `text_ids`, the graph's texts), and
    those texts."""
    counts = conn.execute(select(items.c.text_id, func.count()).where(~items.c.deleted)
                          .group_by(items.c.text_id).having(func.count() > 1)).all()
    known = set(text_ids)
    copied = {int(t): int(c) for t, c in counts if t in known}
    return sum(copied.values()), set(copied)
