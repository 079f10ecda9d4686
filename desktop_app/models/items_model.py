"""`ItemsTableModel`: every row of a project, read a page at a time as the view scrolls.

A project can hold millions of rows; reading them all would freeze the window and eat the
memory. The view only asks for what is on screen, so the model keeps the row count and an
LRU of a few 500-row pages. Pages are read on the GUI thread through the bridge: one small
indexed SQLite query each, a few milliseconds, cheaper than a round trip through a thread.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

PAGE_SIZE = 500
CACHED_PAGES = 8
TOOLTIP_CHARS = 1500
ITEM_ID_ROLE = Qt.ItemDataRole.UserRole + 1

_Index = QModelIndex | QPersistentModelIndex


class ItemsTableModel(QAbstractTableModel):
    """Read-only table of (id, text, cluster, decision) over a count and a page fetcher.

    Cluster and decision come from the review screen's latest cut (`annotate`), kept as a
    dict by row id: clusters cover a small share of the rows, so this stays small.
    """

    COLUMNS = ("ID", "Text", "Cluster", "Decision")

    def __init__(self, count: Callable[[], int], fetch: Callable[[int, int], list[dict]],
                 parent: object | None = None) -> None:
        super().__init__(parent)  # type: ignore[arg-type]
        self._count_fn = count
        self._fetch = fetch
        self._rows = 0
        self._pages: OrderedDict[int, list[dict]] = OrderedDict()
        self._notes: dict[int, tuple[int, str]] = {}   # item id -> (cluster id, decision)

    def annotate(self, clusters: list) -> None:
        """Show each row's cluster and decision from `clusters` (engine Cluster objects),
        replacing what was shown (a new cut)."""
        self._notes = {}
        for c in clusters:
            self._note(c)
        self._refresh_notes()

    def annotate_cluster(self, cluster: object) -> None:
        """One cluster changed after a decision: update only its rows' notes."""
        self._note(cluster)
        self._refresh_notes()

    def _note(self, c) -> None:
        for m in (*c.members, *c.rejected):
            self._notes[m.item_id] = (c.cluster_id, m.decision)

    def _refresh_notes(self) -> None:
        if self._rows:
            self.dataChanged.emit(self.index(0, 2), self.index(self._rows - 1, 3))

    # -- refresh ---------------------------------------------------------------------------
    def reload(self) -> None:
        """Re-read the count and forget cached pages (after an import or opening)."""
        self.beginResetModel()
        self._pages.clear()
        self._rows = self._count_fn()
        self.endResetModel()

    # -- Qt model API ----------------------------------------------------------------------
    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008 - Qt's idiom
        return 0 if parent.isValid() else self._rows

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.COLUMNS[section]
        return None

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if not index.isValid() or role not in (Qt.ItemDataRole.DisplayRole,
                                               Qt.ItemDataRole.ToolTipRole, ITEM_ID_ROLE):
            return None
        item = self.item_at(index.row())
        if item is None:
            return None
        if role == ITEM_ID_ROLE:
            return item["item_id"]
        if index.column() == 0:
            return str(item["id"])
        if index.column() >= 2:
            note = self._notes.get(item["item_id"])
            if note is None:
                return None
            return str(note[0]) if index.column() == 2 else note[1]
        text = str(item["text"])
        if role == Qt.ItemDataRole.ToolTipRole:
            return text if len(text) <= TOOLTIP_CHARS else text[:TOOLTIP_CHARS] + "…"
        return " ".join(text.split())   # one line per row: uniform heights keep it fast

    # -- lookups ---------------------------------------------------------------------------
    def item_at(self, row: int) -> dict | None:
        """The row's dict (id, row, text, item_id, …), or None past the end."""
        if not 0 <= row < self._rows:
            return None
        page = self._page(row // PAGE_SIZE)
        offset = row % PAGE_SIZE
        return page[offset] if offset < len(page) else None

    def row_of_item(self, item_id: int) -> int | None:
        """The table row showing `item_id`, or None.

        Rows come in item-id order (the engine's `items_page` orders by id), so this is a
        binary search over pages: about log2(rows / 500) page reads, ~12 for a million rows.
        Relies on that order; an engine call giving a row's position would be exact.
        """
        lo, hi = 0, (self._rows - 1) // PAGE_SIZE
        while lo <= hi:
            mid = (lo + hi) // 2
            page = self._page(mid)
            if not page or item_id < page[0]["item_id"]:
                hi = mid - 1
            elif item_id > page[-1]["item_id"]:
                lo = mid + 1
            else:
                for offset, item in enumerate(page):
                    if item["item_id"] == item_id:
                        return mid * PAGE_SIZE + offset
                return None
        return None

    def _page(self, number: int) -> list[dict]:
        page = self._pages.get(number)
        if page is not None:
            self._pages.move_to_end(number)
            return page
        page = self._fetch(number * PAGE_SIZE, PAGE_SIZE)
        self._pages[number] = page
        while len(self._pages) > CACHED_PAGES:
            self._pages.popitem(last=False)
        return page
