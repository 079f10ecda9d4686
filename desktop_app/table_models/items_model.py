"""`ItemsTableModel`: the rows of a project in a given order, read a page at a time.

A project can hold millions of rows; reading them all would freeze the window and eat the
memory. The model keeps only the ids of the rows to show, in order (`engine.browse`: 8 bytes
a row, sorted and filtered by the engine off the GUI thread, and shown as they are read:
`append_rows`). The rows themselves come a 200-row page at a time, by id, as the view
scrolls: one small primary-key query each, as cheap at the end of the table as at its start,
read by a worker (`RowPages`), never in `data()`: on a team project each is a network round
trip. Until its page arrives a row shows `PLACEHOLDER`; the cluster and verdict columns and
a row's id (`ITEM_ID_ROLE`) need no page and show at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, Signal

from desktop_app.job_runner import JobRunner
from desktop_app.table_models.row_pages import LOADING, RowPages
from engine.browse import SORT_PUBLIC_ID, SORT_TEXT

TOOLTIP_CHARS = 1500
PLACEHOLDER = "…"   # a row whose page is still being read
ITEM_ID_ROLE = Qt.ItemDataRole.UserRole + 1
CLUSTER_COLUMN, VERDICT_COLUMN = 2, 3
FIXED_COLUMNS = ("ID", "Text", "Cluster", "Verdict")

_Index = QModelIndex | QPersistentModelIndex


class ItemsTableModel(QAbstractTableModel):
    """Read-only table of (id, text, cluster, verdict, the file's own columns…).

    Cluster and verdict come from the review screen's latest cut (`annotate`), kept as a
    dict by row id: clusters cover a small share of the rows, so this stays small. Sorting
    is asked for, not done here: `sortRequested` carries the engine's sort key (or the
    column number, for cluster and verdict) and the view answers with `set_rows`.
    """

    sortRequested = Signal(object, bool)   # engine sort key or CLUSTER/VERDICT_COLUMN, desc

    def __init__(self, runner: JobRunner, parent: object | None = None) -> None:
        super().__init__(parent)  # type: ignore[arg-type]
        self._order = np.zeros(0, dtype=np.int64)
        self._columns: list[str] = []
        self.pages = RowPages(runner, self)
        self.pages.pagesRead.connect(self._pages_read)
        self._notes: dict[int, tuple[int, str]] = {}   # item id -> (cluster id, verdict)

    # -- what is shown ---------------------------------------------------------------------
    def set_rows(self, order: np.ndarray, columns: Sequence[str]) -> None:
        """Show the rows with these ids, in this order, with these original columns."""
        self.beginResetModel()
        self._order = np.asarray(order, dtype=np.int64)
        self._columns = list(columns)
        self.pages.reset(self._order)
        self.endResetModel()

    def append_rows(self, ids: np.ndarray) -> None:
        """Show these rows after those shown: the rest of an order still being read."""
        if not len(ids):
            return
        start = len(self._order)
        self.beginInsertRows(QModelIndex(), start, start + len(ids) - 1)
        self._order = np.concatenate([self._order, np.asarray(ids, dtype=np.int64)])
        self.pages.extend(self._order, start)   # the last page was read short: again
        self.endInsertRows()

    def clear(self) -> None:
        self.set_rows(np.zeros(0, dtype=np.int64), [])

    @property
    def order(self) -> np.ndarray:
        """The ids shown, in order (read-only view)."""
        view = self._order.view()
        view.flags.writeable = False
        return view

    @property
    def original_columns(self) -> list[str]:
        return list(self._columns)

    def notes(self, column: int) -> dict[int, object]:
        """Row id -> its cluster id (CLUSTER_COLUMN) or verdict (VERDICT_COLUMN)."""
        slot = 0 if column == CLUSTER_COLUMN else 1
        return {item_id: note[slot] for item_id, note in self._notes.items()}

    def annotate(self, clusters: list) -> None:
        """Show each row's cluster and verdict from `clusters` (engine Cluster objects),
        replacing what was shown (a new cut)."""
        self._notes = {}
        for c in clusters:
            self._note(c)
        self._refresh_notes()

    def annotate_cluster(self, cluster: object) -> None:
        """One cluster changed after a verdict: update only its rows' notes."""
        self._note(cluster)
        self._refresh_notes()

    def _note(self, c) -> None:
        for m in c.members:
            self._notes[m.item_id] = (c.cluster_id, m.verdict)
        for m in c.rejected:   # moved out by a verdict: in no cluster, its verdict shown
            self._notes[m.item_id] = ("", m.verdict)

    def _pages_read(self, spans: list[tuple[int, int]]) -> None:
        last_column = self.columnCount() - 1
        for first, last in spans:
            self.dataChanged.emit(self.index(first, 0), self.index(last, last_column))

    def _refresh_notes(self) -> None:
        if len(self._order):
            self.dataChanged.emit(self.index(0, CLUSTER_COLUMN),
                                  self.index(len(self._order) - 1, VERDICT_COLUMN))

    # -- Qt model API ----------------------------------------------------------------------
    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008 - Qt's idiom
        return 0 if parent.isValid() else len(self._order)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(FIXED_COLUMNS) + len(self._columns)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            if section < len(FIXED_COLUMNS):
                return FIXED_COLUMNS[section]
            return self._columns[section - len(FIXED_COLUMNS)]
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Qt calls this on a header click: ask for the order (it comes back in `set_rows`)."""
        descending = order == Qt.SortOrder.DescendingOrder
        self.sortRequested.emit(self.sort_key(column), descending)

    def sort_key(self, column: int) -> object:
        """The engine's sort key of a column; CLUSTER/VERDICT_COLUMN for the review's."""
        if column == 0:
            return SORT_PUBLIC_ID
        if column == 1:
            return SORT_TEXT
        if column in (CLUSTER_COLUMN, VERDICT_COLUMN):
            return column
        return self._columns[column - len(FIXED_COLUMNS)]

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if not index.isValid() or role not in (Qt.ItemDataRole.DisplayRole,
                                               Qt.ItemDataRole.ToolTipRole, ITEM_ID_ROLE):
            return None
        row, column = index.row(), index.column()
        if not 0 <= row < len(self._order):
            return None
        if role == ITEM_ID_ROLE:
            return int(self._order[row])
        if column in (CLUSTER_COLUMN, VERDICT_COLUMN):
            note = self._notes.get(int(self._order[row]))
            if note is None or role != Qt.ItemDataRole.DisplayRole:
                return None
            return str(note[0]) if column == CLUSTER_COLUMN else note[1]
        item = self.pages.get(row)
        if item is LOADING:
            return PLACEHOLDER if role == Qt.ItemDataRole.DisplayRole else None
        if item is None:   # deleted since the order was read
            return None
        if column == 0:
            return str(item["id"])
        if column == 1:
            text = str(item["text"])
        else:
            value = (item["extra"] or {}).get(self._columns[column - len(FIXED_COLUMNS)])
            text = "" if value is None else str(value)
        if role == Qt.ItemDataRole.ToolTipRole:
            return text if len(text) <= TOOLTIP_CHARS else text[:TOOLTIP_CHARS] + "…"
        return " ".join(text.split())   # one line per row: uniform heights keep it fast

    # -- lookups ---------------------------------------------------------------------------
    def rows_loaded(self, first: int, last: int) -> bool:
        """Whether rows `first`..`last` are in memory (no placeholder among them)."""
        return self.pages.loaded(first, last)

    def row_of_item(self, item_id: int) -> int | None:
        """The table row showing `item_id`, or None when the filter hides it."""
        hits = np.flatnonzero(self._order == item_id)
        return int(hits[0]) if len(hits) else None
