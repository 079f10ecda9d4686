"""`Rows`: the spreadsheet rows of a project — importing, deleting, browsing, and reading back.

Rows are what the analyst knows (their file's own columns, row numbers and ids); texts are
what the model sees. A change to rows can change what the index should hold (a deleted
row's text may have no live row left; a re-import brings such a text back), so imports and
deletions tell the live index, and drop the rows that cluster cuts keep between re-cuts.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from engine.browse import NUMBER_SAMPLE, SORT_IMPORT, RowQuery, looks_numeric
from engine.dedup.clustered_rows import RowsByText
from engine.errors import InputError
from engine.importer import ImportReport, import_table
from engine.services.live_index import LiveIndex
from engine.store import change_counters, cluster_records, pending_verdicts
from engine.store import items as item_store
from engine.store import sources as source_store
from engine.store.database import Store
from engine.store.items import IdSink


class Rows:
    """Import, delete and read the project's rows."""

    def __init__(self, store: Store, live: LiveIndex, kept_rows: RowsByText) -> None:
        self._store = store
        self._live = live
        self._kept = kept_rows  # the rows cluster cuts read; stale once rows change

    # -- changes ---------------------------------------------------------------------------
    def import_table(self, path: str | os.PathLike, text_columns: list[str], **options
                     ) -> ImportReport:
        """Store the rows of a spreadsheet (see `engine.importer.import_table`); no encoding.

        Rows whose text was embedded before but had no live row any more bring that text
        back into the loaded index at once (it was marked deleted there). Verdicts given
        while checking this file become verdicts on its rows now that they are in
        (`report.verdicts_adopted`), by whichever way the file is imported.
        """
        try:
            report = import_table(self._store, path, text_columns, **options)
        except BaseException:
            self._kept.clear()
            raise
        if report.rows_change_count is not None:
            with self._store.read() as conn:
                texts = item_store.text_ids_of_source(conn, report.source_id)
            self._kept.rows_changed(texts, report.rows_change_count)
        if report.revived_texts:
            self._live.revive(report.revived_texts, report.content_change_count)
        if report.source_id is not None and not self._store.read_only:
            report.verdicts_adopted = self._adopt_verdicts(report.source_id)
        return report

    def _adopt_verdicts(self, source_id: int) -> int:
        with self._store.read() as conn:
            sha = source_store.file_sha256(conn, source_id)
            waiting = sha is not None and bool(pending_verdicts.for_file(conn, sha))
        if not waiting:
            return 0
        with self._store.write() as conn:
            return pending_verdicts.adopt(conn, sha, source_id)

    def delete(self, item_ids: list[int]) -> int:
        """Remove rows from the project; texts no row uses leave the index (marked deleted).
        Returns how many texts were left without a row."""
        try:
            with self._store.write() as conn:
                orphaned = self._delete(conn, item_ids)
                count = (change_counters.bump(conn, change_counters.CONTENT)
                         if orphaned else None)
        except BaseException:
            self._kept.clear()
            raise
        self._live.forget(orphaned, count)
        return len(orphaned)

    def _delete(self, conn, item_ids: Sequence[int]) -> set[int]:
        """Rows deleted and out of their clusters' records, the rows kept for cuts told;
        the texts left without a row."""
        touched = item_store.text_ids_of_rows(conn, item_ids)
        orphaned = item_store.mark_items_deleted(conn, item_ids)
        cluster_records.forget_rows(conn, item_ids)
        self._kept.rows_changed(touched, change_counters.bump(conn, change_counters.ROWS))
        return orphaned

    # -- imports (batches) ----------------------------------------------------------------
    def imports(self) -> list[dict]:
        """Every import, oldest first: `batch` (its number, the source id), `file_name`,
        `imported_at`, `imported_by`, `rows` (imported), `live` (still in the project) and
        `removed_at` (None unless taken back out)."""
        with self._store.read() as conn:
            found = source_store.list_sources(conn)
            live = source_store.live_rows_per_source(conn)
        return [{"batch": s["id"], "file_name": s["file_name"],
                 "imported_at": s["imported_at"], "imported_by": s["imported_by"] or "",
                 "rows": s["rows_imported"], "live": live.get(s["id"], 0),
                 "removed_at": s["removed_at"]} for s in found]

    def remove_import(self, batch: int) -> int:
        """Undo an import: every row batch `batch` brought is deleted, in one transaction,
        and the batch is marked removed (its number is never reused; its file can be
        imported again). Clusters follow at the next cut, by the id rules. Returns the rows
        removed; `InputError` for a batch that does not exist or was removed already."""
        try:
            with self._store.write() as conn:
                source = source_store.get_source(conn, batch)
                if source is None:
                    raise InputError(f"there is no import {batch} in this project")
                if source["removed_at"] is not None:
                    raise InputError(f"import {batch} ({source['file_name']}) was removed "
                                     f"already")
                rows = source_store.remove_source(conn, batch)
                orphaned = self._delete(conn, rows)
                count = (change_counters.bump(conn, change_counters.CONTENT)
                         if orphaned else None)
        except BaseException:
            self._kept.clear()
            raise
        self._live.forget(orphaned, count)
        return len(rows)

    # -- reading ---------------------------------------------------------------------------
    def count(self) -> int:
        """Live rows; one indexed COUNT."""
        with self._store.read() as conn:
            return item_store.count_items(conn)

    def columns(self) -> list[str]:
        """The imported files' own columns that tables show beside the text: every column
        but the text and id columns, in first-seen order."""
        with self._store.read() as conn:
            sources = source_store.list_sources(conn)
        used = {c for s in sources for c in (*s["text_columns"], s["id_column"]) if c}
        return [c for c in source_columns(sources) if c not in used]

    def order(self, query: RowQuery | None = None, *,
              on_part: IdSink | None = None) -> np.ndarray:
        """Ids of the live rows `query` keeps, in its order (`engine.browse`); the default
        is every row in import order. Reads one or two columns, never whole rows.
        `on_part(ids)` gets the ids a slice at a time as they are read, in order, so a
        table can show its first rows long before a million ids are read."""
        query = query or RowQuery()
        with self._store.read() as conn:
            condition = item_store.row_filter(
                query.text_filter, query.filter_columns(self.columns()))
            if query.sort == SORT_IMPORT:
                return item_store.filtered_item_ids(conn, condition,
                                                    descending=query.descending,
                                                    on_part=on_part)
            sample = item_store.sample_sort_values(conn, query.sort, condition, NUMBER_SAMPLE)
            return item_store.sorted_item_ids(conn, query.sort, condition,
                                              numeric=looks_numeric(sample),
                                              descending=query.descending, on_part=on_part)

    def by_ids(self, item_ids: Sequence[int]) -> list[dict]:
        """The rows with these ids, in this order, in `page`'s form; ids of deleted or
        unknown rows are left out."""
        with self._store.read() as conn:
            found = item_store.items_by_ids(conn, [int(i) for i in item_ids])
        return [browse_row(found[i]) for i in map(int, item_ids)
                if i in found and not found[i]["deleted"]]

    def by_public_id(self, public: str) -> dict:
        """The one live row users call `public` (their id, else its row number), in
        `page`'s form; InputError when no row or more than one row is called that."""
        with self._store.read() as conn:
            found = item_store.live_items_by_public_id(conn, str(public))
        if not found:
            raise InputError(f"no row has the id {public!r}")
        if len(found) > 1:
            raise InputError(f"{len(found)} rows have the id {public!r} (several imported "
                             "files share it)")
        return browse_row(found[0])

    def page(self, offset: int, limit: int) -> list[dict]:
        """Rows `offset`..`offset+limit` in import order: `id` (public), `row`, `text`,
        `item_id`, `source_id` and the original columns under `extra`."""
        with self._store.read() as conn:
            rows = item_store.items_page(conn, offset, limit)
        return [browse_row(r) for r in rows]


def browse_row(r: dict) -> dict:
    """A stored row as tables show it: `id` (public), `row`, `text`, `item_id`,
    `source_id` and the original columns under `extra`."""
    return {"id": item_store.public_id(r), "row": r["row"], "text": r["text"],
            "item_id": r["id"], "source_id": r["source_id"], "extra": r["extra"]}


def source_columns(sources: list[dict]) -> list[str]:
    """The union of the imported files' columns, in first-seen order (removed imports'
    columns left out: none of their rows is in the project)."""
    return list(dict.fromkeys(c for s in sources if s.get("removed_at") is None
                              for c in s["columns"]))
