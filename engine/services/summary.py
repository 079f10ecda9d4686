"""`summarize` and `describe`: what a project holds, without loading a model or an index."""

from __future__ import annotations

from engine.dedup.id_rules import label
from engine.store import cluster_records
from engine.store import embeddings as embedding_store
from engine.store import items as item_store
from engine.store import sources as source_store
from engine.store.database import Store
from engine.store.migrations import SCHEMA_VERSION
from engine.store.saved_indexes import saved_row

COUNTS = ("items", "texts", "encoded", "truncated")


def summarize(store: Store, active: dict | None) -> dict:
    """Counts and state of the project whose active model row is `active`: cheap enough to
    answer `duplens info` and the window's status bar after every job."""
    described = describe(store, active)
    with store.read() as conn:
        model_id = active["id"] if active else None
        counts = {
            "items": item_store.count_items(conn),
            "texts": item_store.count_texts(conn),
            "encoded": embedding_store.count_embeddings(conn, model_id) if model_id else 0,
            "truncated": embedding_store.count_truncated(conn, model_id) if model_id else 0,
        }
    head = {"project": described["project"], "schema_version": SCHEMA_VERSION}
    return {**head, **counts, **described}   # the order `duplens info --json` always had


def summarize_store(store: Store) -> dict:
    """`summarize` for the store alone, its active model row read here (`duplens info`,
    which opens no project: what `ActiveModel.row` reads, without the services)."""
    model_id = store.get_meta("active_model_id")
    active = None
    if model_id is not None:
        with store.read() as conn:
            active = embedding_store.get_model_row(conn, int(model_id))
    return summarize(store, active)


def _backends(active: dict | None, device: str | None) -> dict:
    """Which backend serves the project's embeddings here (None before any model), and the
    backend a new project gets on this computer, with why (`backend_choice.why_default`)."""
    from engine.encoding import backend_choice

    where = "cpu" if device in (None, "", "auto", "cpu") else device
    serving = backend_choice.for_stored(active["fingerprint"], None, where) if active else None
    return {"backend": serving, "new_project_backend": backend_choice.why_default(where)}


def describe(store: Store, active: dict | None) -> dict:
    """`summarize` without its `COUNTS`: a few one-row reads. The counts scan the rows and
    vectors: 4.8 s on a 1M-row project, where this takes milliseconds, so a window opening a
    project shows it with this and fills the counts in when they come."""
    with store.read() as conn:
        model_id = active["id"] if active else None
        index_row = None
        if model_id is not None:
            index_row = saved_row(conn, model_id)
        return {
            "project": store.location.display,  # a server project: its URL, no password
            "schema_version": SCHEMA_VERSION,
            "model": active["name"] if active else None,
            "model_location": active["location"] if active else None,
            "index_items": index_row["count"] if index_row else 0,
            "device": store.get_meta("last_device"),
            **_backends(active, store.get_meta("last_device")),
            # Each import is a batch, numbered by its source id (`first_seen` in exports).
            "sources": [
                {"batch": s["id"], "file_name": s["file_name"],
                 "rows_imported": s["rows_imported"], "rows_empty": s["rows_empty"],
                 "bad_lines": len(s["bad_lines"]), "imported_at": s["imported_at"],
                 "imported_by": s["imported_by"] or "", "removed_at": s["removed_at"]}
                for s in source_store.list_sources(conn)
            ],
            # Each cluster id retired by a merge and the id it became (None: rows gone).
            "merged_into": {label(cid): (label(into) if into else None)
                            for cid, into in cluster_records.retired(conn).items()},
        }
