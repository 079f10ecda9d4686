"""`Exports`: the project's rows written back out as spreadsheets (CSV or XLSX).

The default export is the analyst's own spreadsheet, every imported row in import order with
every original column as it was read, plus what the review found (`ADDED_COLUMNS`: the
stored cluster id, and `first_seen`, the import that brought the row). Rows are read from the
store in pages and written as they come, so a million-row project exports in bounded memory
(see benchmarks/export_rows.py for the measured time and peak RSS).
"""

from __future__ import annotations

import gc
import os
from collections import deque
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Connection

from engine.dedup.row_clusters import Cluster, Member
from engine.errors import InputError
from engine.io import write_rows
from engine.io.writers import write_csv_pages
from engine.services.cluster_ids import Change
from engine.services.documents import Documents
from engine.services.export_lines import ExportLines, is_dropped
from engine.services.rows import source_columns
from engine.store import items as item_store
from engine.store import sources as source_store
from engine.store.database import Store

XLSX_MAX_ROWS = 1_048_575
PAGE_ROWS = 5_000   # rows read from the store per step: a few MB of row dicts at most
# Rows a page of the every-row CSV export holds (`ExportLines.csv_page`). Measured on 1M
# rows: 10k, 20k and 50k rows a page cost the same time within 5%, and two pages in hand
# at 50k added about 60 MB more to the peak than at 10k.
CSV_PAGE_ROWS = 10_000

# The three forms an export takes: every row; only rows in a cluster (what the export was
# before every row went out); one row per cluster (its canonical) plus every row in none.
ALL, ONLY_CLUSTERS, DEDUPLICATED = "all", "only-clusters", "deduplicated"
FORMS = (ALL, ONLY_CLUSTERS, DEDUPLICATED)

# `decision` is the member's verdict (`Member.verdict`); the column keeps its name, since
# users' scripts read it.
# `threshold` is the similarity the clusters were cut at, the same on every row: a file
# passed on says what it was made with.
ADDED_COLUMNS = ["cluster_id", "canonical_id", "duplicate_of", "similarity", "is_canonical",
                 "decision", "first_seen", "threshold"]
# With `changes` (`duplens duplicates --changes-since N`): what happened to the row's cluster
# and the id it had before (for a merge: the retired id; cluster_id is what it became); for
# "canonical", the row that led the cluster before (canonical_id is the row that leads now).
CHANGE_COLUMNS = ["change", "previous_cluster_id", "previous_canonical_id"]
# Where the project holds documents (texts read in several windows): how a row's text and its
# cluster's canonical's share passages (`Documents.export_shares`): the share of both texts
# the other holds, the share of this row's text the canonical holds, and the share of the
# canonical's text this row holds ("B holds all of A, with a new introduction": 1.0 there).
DOCUMENT_COLUMNS = ["resemblance", "share_in_canonical", "share_of_canonical"]


class Exports:
    """Write what the analyst reviewed, with their own columns, to a file."""

    def __init__(self, store: Store, documents: Documents | None = None) -> None:
        self._store = store
        self._documents = documents

    def clusters(self, path: str | os.PathLike, clusters: list[Cluster], threshold: float
                 ) -> int:
        """Rows in a cluster only, cluster by cluster; returns rows written."""
        return self.rows(path, clusters, threshold, form=ONLY_CLUSTERS)

    def rows(self, path: str | os.PathLike, clusters: list[Cluster], threshold: float,
             form: str = ALL, *, changes: Mapping[int, Change] | None = None) -> int:
        """Write the project's rows in `form` (one of `FORMS`) with the review's columns
        added; returns rows written. `clusters` is a cut (`project.clusters.cut`) at
        `threshold`: rows sharing a normalised text are already in one cluster there,
        threshold or not. Every row says the threshold in its last column.

        `changes` (`ClusterIds.changes_since`): only those rows, in import order, with
        `CHANGE_COLUMNS` added (the form is then ignored)."""
        if form not in FORMS:
            raise InputError(f"unknown export form {form!r}; use one of {', '.join(FORMS)}")
        path = Path(path)
        # The rows moved out of a cluster by a verdict are in no cluster (`verdict_overlay`).
        placed = {m.item_id: (c, m) for c in clusters for m in c.members}
        shares = (self._documents.export_shares(clusters, threshold)
                  if self._documents is not None else None)
        with self._store.read() as conn:
            sources = {s["id"]: s for s in source_store.list_sources(conn)}
            total = (len(changes) if changes is not None
                     else _row_count(conn, form, clusters, placed))
            if path.suffix.lower() == ".xlsx" and total > XLSX_MAX_ROWS:
                raise InputError(f"{path.name}: {total} rows do not fit in an XLSX sheet; "
                                 f"export to .csv instead")
            columns = source_columns(list(sources.values()))
            dropped = ({i for i, found in placed.items() if is_dropped(found)}
                       if form == DEDUPLICATED else set())
            lines = ExportLines(sources, columns, placed, dropped,
                                f"{threshold:.4f}".rstrip("0").rstrip("."), shares)
            header = [*columns, *ADDED_COLUMNS, *(DOCUMENT_COLUMNS if shares is not None
                                                   else [])]
            if changes is not None:
                found = _changed_items(conn, sorted(changes))
                rows = ([*lines.line(item), changes[item["id"]].change,
                         changes[item["id"]].previous, changes[item["id"]].previous_canonical]
                        for item in found)
                return write_rows(path, [*header, *CHANGE_COLUMNS], rows)
            if form == ONLY_CLUSTERS:
                return write_rows(path, header, map(lines.line, _cluster_items(conn, clusters)))
            if path.suffix.lower() == ".csv":
                with _collector_paused():
                    return write_csv_pages(path, header, _csv_pages(conn, lines))
            return write_rows(path, header, map(lines.line, _all_items(conn, dropped)))


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while pages of row tuples come and go: each page makes
    hundreds of thousands of objects, and the collections they trigger walk every object
    the process holds (the cut's members among them); a million-row export spent a third
    of its time there. The pages hold no cycles, so nothing is left for it to find."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _row_count(conn: Connection, form: str, clusters: list[Cluster],
               placed: dict[int, tuple[Cluster, Member]]) -> int:
    if form == ONLY_CLUSTERS:
        return len(placed)
    live = item_store.count_items(conn)
    if form == ALL:
        return live
    return live - sum(is_dropped(found) for found in placed.values())


def _all_items(conn: Connection, dropped: set[int]) -> Iterator[dict]:
    """Live rows in import order, a page at a time, less the `dropped` ones."""
    after = 0
    while page := item_store.items_after(conn, after, PAGE_ROWS):
        after = page[-1]["id"]
        yield from (item for item in page if item["id"] not in dropped)


def _csv_pages(conn: Connection, lines: ExportLines
               ) -> Iterator[tuple[bytes | memoryview, int]]:
    """Live rows in import order, less the ones `lines` drops, as pages of CSV bytes. A
    thread encodes each page while the next one is read: SQLite builds a page and Arrow
    encodes one with the GIL released, so the two overlap on two cores. At most two pages
    are in hand at once."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="duplens-export") as encoder:
        ahead: deque[Future] = deque()
        after = 0
        while page := item_store.cell_page_after(conn, after, CSV_PAGE_ROWS):
            after = int(page.ids[-1])
            ahead.append(encoder.submit(lines.csv_page, page))
            if len(ahead) > 1:
                yield ahead.popleft().result()
        while ahead:
            yield ahead.popleft().result()


def _cluster_items(conn: Connection, clusters: list[Cluster]) -> Iterator[dict]:
    """Rows in a cluster, cluster by cluster (canonical first), read a page at a time."""
    ids = [m.item_id for c in clusters for m in c.members]
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
