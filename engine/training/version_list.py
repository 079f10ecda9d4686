"""Model versions of a project, listed for a versions table (`duplens models`, the window's
Versions dialog): each version with its folder, whether it is there, what serves it and how
much it has encoded; its fast form and its second opinion folded into it.

Cheap: it reads rows and counts and loads no model, so a table can be refreshed at will.
Where folders live and how versions are recorded is `engine.training.version_folders`'.
"""

from __future__ import annotations

from pathlib import Path

from engine.encoding import model_threshold
from engine.encoding.backends import split_fingerprint
from engine.encoding.model_spec import DEFAULT_MODEL
from engine.store import embeddings as embedding_store
from engine.store import items as item_store
from engine.store import version_rows as version_store
from engine.store.database import Store
from engine.store.folder_blobs import stored_folder_ids
from engine.training import version_blobs
from engine.training.judge_versions import is_judge, judge_entry
from engine.training.version_folders import model_folder, sibling_of


def list_versions(store: Store, active_id: int | None) -> list[dict]:
    """Every model the project has used, oldest first, for a versions table.

    Each: id, name, location, folder (absolute, None for Hub models), available (its folder
    is there), parent_id, objective, metrics, created_at, active, encoded (live texts it has
    embedded), texts (live texts in all), indexed (a saved index exists) and backend (what
    encodes with it), threshold (its default threshold and what it was chosen on,
    `engine.encoding.model_threshold`). A server project's version is available when the
    database holds its folder; `folder` is where this computer unpacks it.

    A version's fast form (`sibling_of`) is not listed apart: its version is active when it
    is, and shows its backend and encoded texts, which activating the version would use.
    Nor is its second opinion (a judge, `judge_versions`): it is the version's
    `second_opinion` (`judge_entry`; None for a version without one).
    """
    with store.read() as conn:
        rows = embedding_store.list_models(conn)
        texts = item_store.count_texts(conn)
        indexed = version_store.indexed_model_ids(conn)
        stored = set() if store.is_file else stored_folder_ids(conn)
        fast = {sibling_of(r): r for r in rows if sibling_of(r) is not None}
        judges = {r["judge_of"]: r for r in rows if is_judge(r)}
        by_id = {r["id"]: r for r in rows}
        out = []
        for row in rows:
            if sibling_of(row) is not None or is_judge(row):
                continue
            serving = row if row["id"] == active_id else fast.get(row["id"], row)
            folder, available = _where(store, row, stored)
            judge = judges.get(row["id"])
            out.append({
                "id": row["id"], "name": row["name"], "location": row["location"],
                "folder": str(folder) if folder is not None else None,
                "available": available,
                "parent_id": row["parent_id"], "objective": row["objective"],
                "metrics": row["metrics"] or {}, "created_at": row["created_at"],
                "active": active_id in (row["id"], serving["id"]),
                "encoded": embedding_store.count_embeddings(conn, serving["id"]),
                "texts": texts, "indexed": serving["id"] in indexed,
                "backend": split_fingerprint(serving["fingerprint"])[1] or "torch",
                "threshold": model_threshold.for_row(row, by_id.get).as_dict(),
                "second_opinion": None if judge is None else
                judge_entry(judge, *_where(store, judge, stored)),
            })
    return out


def _where(store: Store, row: dict, stored: set[int]) -> tuple[Path | None, bool]:
    """A listed model's folder on this computer (None for a Hub model or a server version
    not stored) and whether it is there (a server's: whether the database holds it)."""
    if store.is_file or row["location"] == DEFAULT_MODEL:
        folder = model_folder(store.path, row["location"])
        return folder, folder is None or folder.is_dir()
    stored_here = row["id"] in stored
    return (version_blobs.cached_path(store, row) if stored_here else None), stored_here


def listed_judge(store: Store, version_id: int) -> dict | None:
    """Version `version_id`'s second opinion as `list_versions` shows it (`judge_entry`),
    None when it has none; without counting anything, so a window may ask often."""
    with store.read() as conn:
        found = version_store.judge_ids(conn, int(version_id))
        row = embedding_store.get_model_row(conn, found[0]) if found else None
        stored = set() if store.is_file or row is None else stored_folder_ids(conn)
    return None if row is None else judge_entry(row, *_where(store, row, stored))
