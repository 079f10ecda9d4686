"""`Exports`: the project's rows written back out as spreadsheets (CSV or XLSX)."""

from __future__ import annotations

import os
from pathlib import Path

from engine.dedup.duplicates import Cluster
from engine.errors import InputError
from engine.io import export_table
from engine.services.rows import source_columns
from engine.store import items as item_store
from engine.store.database import Store

XLSX_MAX_ROWS = 1_048_575


class Exports:
    """Write what the analyst reviewed, with their own columns, to a file."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def clusters(self, path: str | os.PathLike, clusters: list[Cluster]) -> int:
        """Write cluster members with their original columns; returns rows written."""
        path = Path(path)
        members = [(c, m) for c in clusters for m in (*c.members, *c.rejected)]
        if path.suffix.lower() == ".xlsx" and len(members) > XLSX_MAX_ROWS:
            raise InputError(f"{path.name}: {len(members)} rows do not fit in an XLSX sheet; "
                             f"export to .csv instead")
        with self._store.read() as conn:
            full = item_store.items_by_ids(conn, [m.item_id for _, m in members])
            sources = {s["id"]: s for s in item_store.list_sources(conn)}
        columns = source_columns(list(sources.values()))
        records = []
        for cluster, m in members:
            item = full[m.item_id]
            row = dict(item["extra"])
            id_column = sources[item["source_id"]]["id_column"]
            if id_column:
                row[id_column] = item["ext_id"] or ""
            row.update({"cluster_id": cluster.cluster_id, "canonical_id": cluster.canonical.id,
                        "similarity": round(m.score, 4), "is_canonical": m is cluster.canonical,
                        "decision": m.decision or "unreviewed"})
            records.append(row)
        extra_cols = ["cluster_id", "canonical_id", "similarity", "is_canonical", "decision"]
        import pandas as pd  # only export needs it; keeps opening the window fast

        frame = pd.DataFrame.from_records(records, columns=[*columns, *extra_cols])
        export_table(frame, path)
        return len(frame)
