"""`Exports`: the project's rows written back out as spreadsheets (CSV or XLSX).

The default export is the analyst's own spreadsheet, every imported row in import order with
every original column as it was read, plus what the review found (`ADDED_COLUMNS`: the
stored cluster id, and `first_seen`, the import that brought the row). Rows are read from the
store in pages and written as they come, so a million-row project exports in bounded memory
(see benchmarks/export_rows.py for the measured time and peak RSS).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from sqlalchemy import Connection

from engine.dedup.row_clusters import NOT_DUPLICATE, Cluster, Member
from engine.errors import InputError
from engine.io import write_rows
from engine.services.cluster_ids import Change
from engine.services.rows import source_columns
from engine.store import items as item_store
from engine.store.database import Store

XLSX_MAX_ROWS = 1_048_575
PAGE_ROWS = 5_000   # rows read from the store per step: a few MB of row dicts at most

# The three forms an export takes: every row; only rows in a cluster (what the export was
# before every row went out); one row per cluster (its canonical) plus every row in none.
ALL, ONLY_CLUSTERS, DEDUPLICATED = "all", "only-clusters", "deduplicated"
FORMS = (ALL, ONLY_CLUSTERS, DEDUPLICATED)

ADDED_COLUMNS = ["cluster_id", "canonical_id", "duplicate_of", "similarity", "is_canonical",
                 "decision", "first_seen"]
# With `changes` (`duplens duplicates --changes-since N`): what happened to the row's cluster
# and the id it had before (for a merge: the retired id; cluster_id is what it became).
CHANGE_COLUMNS = ["change", "previous_cluster_id"]


class Exports:
    """Write what the analyst reviewed, with their own columns, to a file."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def clusters(self, path: str | os.PathLike, clusters: list[Cluster]) -> int:
        """Rows in a cluster only, cluster by cluster; returns rows written."""
        return self.rows(path, clusters, form=ONLY_CLUSTERS)

    def rows(self, path: str | os.PathLike, clusters: list[Cluster], form: str = ALL, *,
             changes: Mapping[int, Change] | None = None) -> int:
        """Write the project's rows in `form` (one of `FORMS`) with the review's columns
        added; returns rows written. `clusters` is a cut (`project.clusters.cut`): rows
        sharing a normalised text are already in one cluster there, threshold or not.

        `changes` (`ClusterIds.changes_since`): only those rows, in import order, with
        `CHANGE_COLUMNS` added (the form is then ignored)."""
        if form not in FORMS:
            raise InputError(f"unknown export form {form!r}; use one of {', '.join(FORMS)}")
        path = Path(path)
        placed = {m.item_id: (c, m) for c in clusters for m in (*c.members, *c.rejected)}
        with self._store.read() as conn:
            sources = {s["id"]: s for s in item_store.list_sources(conn)}
            total = (len(changes) if changes is not None
                     else _row_count(conn, form, clusters, placed))
            if path.suffix.lower() == ".xlsx" and total > XLSX_MAX_ROWS:
                raise InputError(f"{path.name}: {total} rows do not fit in an XLSX sheet; "
                                 f"export to .csv instead")
            columns = source_columns(list(sources.values()))
            if changes is not None:
                found = _changed_items(conn, sorted(changes))
                lines = ([*_line(item, sources, columns, placed.get(item["id"])),
                          changes[item["id"]].change, changes[item["id"]].previous]
                         for item in found)
                return write_rows(path, [*columns, *ADDED_COLUMNS, *CHANGE_COLUMNS], lines)
            if form == ONLY_CLUSTERS:
                items = _cluster_items(conn, clusters)
            else:
                items = _all_items(conn, placed if form == DEDUPLICATED else None)
            lines = (_line(item, sources, columns, placed.get(item["id"])) for item in items)
            return write_rows(path, [*columns, *ADDED_COLUMNS], lines)


def _is_dropped(found: tuple[Cluster, Member] | None) -> bool:
    """A duplicate the deduplicated form leaves out: in a cluster, not its canonical, and
    not moved out by the analyst (rejected rows are not duplicates, so they stay)."""
    if found is None:
        return False
    cluster, m = found
    return m.item_id != cluster.canonical.item_id and m.decision != NOT_DUPLICATE


def _row_count(conn: Connection, form: str, clusters: list[Cluster],
               placed: dict[int, tuple[Cluster, Member]]) -> int:
    if form == ONLY_CLUSTERS:
        return len(placed)
    live = item_store.count_items(conn)
    if form == ALL:
        return live
    return live - sum(_is_dropped(found) for found in placed.values())


def _all_items(conn: Connection, dedupe: dict[int, tuple[Cluster, Member]] | None
               ) -> Iterator[dict]:
    """Live rows in import order, a page at a time; duplicates skipped when `dedupe`."""
    after = 0
    while page := item_store.items_after(conn, after, PAGE_ROWS):
        after = page[-1]["id"]
        for item in page:
            if dedupe is None or not _is_dropped(dedupe.get(item["id"])):
                yield item


def _cluster_items(conn: Connection, clusters: list[Cluster]) -> Iterator[dict]:
    """Rows in a cluster, cluster by cluster (canonical first), read a page at a time."""
    ids = [m.item_id for c in clusters for m in (*c.members, *c.rejected)]
    for start in range(0, len(ids), PAGE_ROWS):
        part = ids[start:start + PAGE_ROWS]
        found = item_store.items_by_ids(conn, part)
        yield from (found[i] for i in part)


def _changed_items(conn: Connection, ids: list[int]) -> Iterator[dict]:
    """The rows with these ids (ascending: import order), read a page at a time."""
    for start in range(0, len(ids), PAGE_ROWS):
        part = ids[start:start + PAGE_ROWS]
        found = item_store.items_by_ids(conn, part)
        yield from (found[i] for i in part if i in found)


def _line(item: dict, sources: dict[int, dict], columns: Sequence[str],
          found: tuple[Cluster, Member] | None) -> list[object]:
    """One output row: the original cells (missing ones empty) and the review's columns."""
    cells = dict(item["extra"])
    id_column = sources[item["source_id"]]["id_column"]
    if id_column:
        cells[id_column] = item["ext_id"] or ""
    line: list[object] = [_cell(cells.get(c)) for c in columns]
    first_seen = item["source_id"]   # the import (batch) that brought the row
    if found is None:
        return [*line, "", "", "", "", "", "", first_seen]
    cluster, m = found
    canonical = m.item_id == cluster.canonical.item_id
    duplicate = _is_dropped(found)
    return [*line, cluster.cluster_id, cluster.canonical.id,
            cluster.canonical.id if duplicate else "", round(m.score, 4), canonical,
            m.decision or "unreviewed", first_seen]


def _cell(value: object) -> object:
    return "" if value is None else value
