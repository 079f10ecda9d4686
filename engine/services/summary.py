"""`summarize`: what a project holds, in counts, without loading a model or an index."""

from __future__ import annotations

from engine.store import items as item_store
from engine.store import vectors as vector_store
from engine.store.database import Store
from engine.store.migrations import SCHEMA_VERSION
from engine.store.schema import indexes


def summarize(store: Store, active: dict | None) -> dict:
    """Counts and state of the project whose active model row is `active`: cheap enough to
    answer `duplens info` and the window's status bar after every job."""
    with store.read() as conn:
        model_id = active["id"] if active else None
        index_row = None
        if model_id is not None:
            index_row = conn.execute(
                indexes.select().where(indexes.c.model_id == model_id)).mappings().first()
        return {
            "project": store.location.display,  # a server project: its URL, no password
            "schema_version": SCHEMA_VERSION,
            "items": item_store.count_items(conn),
            "texts": item_store.count_texts(conn),
            "encoded": vector_store.count_embeddings(conn, model_id) if model_id else 0,
            "truncated": vector_store.count_truncated(conn, model_id) if model_id else 0,
            "model": active["name"] if active else None,
            "model_location": active["location"] if active else None,
            "index_items": index_row["count"] if index_row else 0,
            "device": store.get_meta("last_device"),
            "sources": [
                {"file_name": s["file_name"], "rows_imported": s["rows_imported"],
                 "rows_empty": s["rows_empty"], "bad_lines": len(s["bad_lines"])}
                for s in item_store.list_sources(conn)
            ],
        }
