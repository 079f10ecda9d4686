"""Reading the `indexes` rows: what is recorded of each model's saved search index (its
size, parameters, checksum). The index layer (`engine.index.persist`) writes them with the
index's bytes; services read them here, without loading hnswlib or the index."""

from __future__ import annotations

from sqlalchemy import Connection, select

from engine.store.schema import indexes


def saved_row(conn: Connection, model_id: int) -> dict | None:
    """The `indexes` row of `model_id`'s saved index, or None when none was saved."""
    row = conn.execute(select(indexes).where(indexes.c.model_id == model_id)).mappings().first()
    return dict(row) if row is not None else None
