"""`ItemsView`: the table of every row, with a filter box and sortable columns.

The engine decides which rows and in what order (`Rows.order`, on the bridge's table
pool). Its ids come a slice at a time (`RowPart`) and the table shows each as it comes:
reading a million ids takes seconds (2.7 s measured), the first slice milliseconds, so a
big project's rows show at once and the scroll bar grows while the rest are read. This
view holds the current `RowQuery`, asks again when the analyst types a filter or clicks a
header, and only the newest request's answer is shown (`latest`). Sorting by Cluster or
Verdict uses the review's latest cut, which only the window knows, so that reordering is
done here with `engine.browse.order_by_notes` on the ids already shown. The rows of each
page come from a worker as the table scrolls (`table_models.row_pages`); this view tells
it which rows are on screen, so it reads those first and skips the pages a scroll left.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from desktop_app.bridge import EngineBridge
from desktop_app.job_runner import Job, Pool
from desktop_app.table_models.items_model import (
    CLUSTER_COLUMN,
    FIXED_COLUMNS,
    VERDICT_COLUMN,
    ItemsTableModel,
)
from engine.browse import FILTER_ALL, FILTER_TEXT, SORT_IMPORT, RowQuery, order_by_notes

FILTER_DELAY_MS = 250   # a filter scans every row: wait for a pause in typing


@dataclass(frozen=True)
class RowSet:
    """The table's rows for one `RowQuery`: ids in order, the files' own columns, and how
    many rows the project has in all (to say "12 of 1,000,000")."""

    query: RowQuery
    order: np.ndarray
    columns: list[str]
    total: int


@dataclass(frozen=True)
class RowPart:
    """The next ids of a `RowQuery`'s answer, sent while the rest are still read."""

    ids: np.ndarray
    columns: list[str]


def read_rows(query: RowQuery, job: Job) -> RowSet:
    """The job: which rows `query` shows, in order, sent a slice at a time (`RowPart`) as
    well. Sorting a million rows takes seconds, hence the table's own pool: it must not
    wait behind an import or a re-cut."""
    project = job.project
    columns = project.rows.columns()
    order = project.rows.order(query, on_part=lambda ids: job.partial(RowPart(ids, columns)))
    total = project.rows.count() if query.text_filter else len(order)
    return RowSet(query, order, columns, total)


class ItemsView(QWidget):
    """Filter bar over a virtualised, sortable table of the project's rows."""

    rowsShown = Signal(int, int)   # rows shown, rows in the project

    def __init__(self, bridge: EngineBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.model = ItemsTableModel(bridge, self)
        self.query = RowQuery()
        self._note_sort: tuple[int, bool] | None = None    # (column, descending)
        self._shown = False      # an answer is on screen
        self._streamed = False   # the newest request's first ids are on screen
        self._laid_out = False   # column widths set for the columns shown
        self.reading = False     # the newest request's answer is still being read
        self._total = 0
        self._rows_key = f"table rows {id(self)}"

        self.filter_edit = QLineEdit(self)
        self.filter_edit.setPlaceholderText("Filter rows…")
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_column = QComboBox(self)
        self.filter_column.setToolTip("Where the filter looks")
        self.count_label = QLabel("", self)
        self.count_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.table = self._make_table()
        self.model.pages.visible = self._rows_on_screen
        self.table.verticalScrollBar().valueChanged.connect(
            lambda _value: self.model.pages.prefetch())
        self._set_filter_columns([])
        self._filter_timer = QTimer(self)
        self._filter_timer.setSingleShot(True)
        self._filter_timer.setInterval(FILTER_DELAY_MS)

        bar = QHBoxLayout()
        bar.addWidget(self.filter_edit, 1)
        bar.addWidget(QLabel("in", self))
        bar.addWidget(self.filter_column)
        bar.addWidget(self.count_label)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.table, 1)

        self.filter_edit.textChanged.connect(lambda _text: self._filter_timer.start())
        self.filter_edit.returnPressed.connect(self._apply_filter)
        self._filter_timer.timeout.connect(self._apply_filter)
        self.filter_column.activated.connect(lambda _i: self._apply_filter())
        self.model.sortRequested.connect(self._sort)

    def _make_table(self) -> QTableView:
        table = QTableView(self)
        table.setModel(self.model)
        table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        table.setWordWrap(False)
        table.setAlternatingRowColors(True)
        table.verticalHeader().hide()
        # Fixed heights and widths: "resize to contents" would read every page of the model.
        table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        header = table.horizontalHeader()
        header.setSortIndicatorShown(True)
        header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        header.setSectionsClickable(True)
        # Not setSortingEnabled: it would sort at once on the GUI thread; a click asks instead.
        header.sortIndicatorChanged.connect(self.model.sort)
        header.setStretchLastSection(False)
        return table

    def _rows_on_screen(self) -> tuple[int, int]:
        """The first and last row the table shows. From the rows' fixed height, not
        `rowAt` at the bottom, which says -1 both below the last row and for a view not
        laid out yet: taken as "to the end", it would ask for every page of the table."""
        first = max(self.table.rowAt(0), 0)
        height = max(self.table.verticalHeader().defaultSectionSize(), 1)
        last = first + self.table.viewport().height() // height
        return first, min(last, self.model.rowCount() - 1)

    def _layout_columns(self) -> None:
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        for column, width in ((0, 110), (CLUSTER_COLUMN, 80), (VERDICT_COLUMN, 110)):
            header.resizeSection(column, width)
        for column in range(len(FIXED_COLUMNS), self.model.columnCount()):
            header.resizeSection(column, 140)

    # -- requests --------------------------------------------------------------------------
    def reload(self, *, another_project: bool = False) -> None:
        """Ask again for the current query (after an import, or with `another_project`
        after opening a project: the rows shown, and the pages kept, were the last
        project's, and row ids repeat from one project to the next)."""
        if another_project:
            self.model.clear()
        self._request(self.query)

    def set_filter(self, text: str) -> None:
        """Filter now (as typing and pausing would)."""
        self.filter_edit.setText(text)
        self._apply_filter()

    def _apply_filter(self) -> None:
        self._filter_timer.stop()
        column = self.filter_column.currentData()
        query = replace(self.query, text_filter=self.filter_edit.text().strip(),
                        filter_column=None if column is None else column)
        if query != self.query:
            self._request(query)

    def _sort(self, key: object, descending: bool) -> None:
        if isinstance(key, int):   # a review column: reorder what is shown
            self._note_sort = (key, descending)
            self._request(replace(self.query, sort=SORT_IMPORT, descending=False))
        else:
            self._note_sort = None
            self._request(replace(self.query, sort=str(key), descending=descending))

    def _request(self, query: RowQuery) -> None:
        self.query = query
        self.reading = True
        busy = "Filtering…" if query.text_filter else "Sorting…"
        if self._shown:
            self.count_label.setText(busy)
        self._streamed = False
        # a table sorted by the review's columns is reordered here, once every id is read
        streams = self._note_sort is None
        self.bridge.run(lambda job: read_rows(query, job), pool=Pool.TABLE,
                        on_done=self._show, on_partial=self._show_parts if streams else None,
                        latest=self._rows_key)

    def _show_parts(self, parts: list[RowPart]) -> None:
        ids = np.concatenate([p.ids for p in parts])
        if self._streamed:
            self.model.append_rows(ids)
        else:
            self._streamed = True
            self._set_rows(ids, parts[0].columns)
        self.count_label.setText(f"Reading rows… {self.model.rowCount():,} so far")

    def _show(self, rows: RowSet) -> None:
        self._shown = True
        self.reading = False
        self._total = rows.total
        order = rows.order
        if self._note_sort is not None:
            column, descending = self._note_sort
            order = order_by_notes(order, self.model.notes(column), descending)
        if not (self._streamed and self.model.rowCount() == len(order)):
            self._set_rows(order, rows.columns)   # else every id came in parts: shown
        self._show_count()

    def _set_rows(self, order: np.ndarray, columns: list[str]) -> None:
        # The fixed columns are there before any rows, so "no columns yet" cannot tell the
        # first rows: a project with no columns of its own kept Qt's default widths.
        first = not self._laid_out or columns != self.model.original_columns
        self.model.set_rows(order, columns)
        if first:
            self._laid_out = True
            self._layout_columns()
            self._set_filter_columns(columns)

    def notes_changed(self) -> None:
        """The review's cut changed: a table sorted by cluster or verdict is re-sorted."""
        if self._note_sort is not None and self._shown:
            self.reload()

    def _show_count(self) -> None:
        shown = self.model.rowCount()
        if self.query.text_filter:
            self.count_label.setText(f"{shown:,} of {self._total:,} rows")
        else:
            self.count_label.setText(f"{shown:,} rows")
        self.rowsShown.emit(shown, self._total)

    def _set_filter_columns(self, columns: list[str]) -> None:
        current = self.filter_column.currentData()
        self.filter_column.clear()
        self.filter_column.addItem("Text", FILTER_TEXT)
        if columns:
            self.filter_column.addItem("All columns", FILTER_ALL)
            for c in columns:
                self.filter_column.addItem(c, c)
        found = self.filter_column.findData(current)
        self.filter_column.setCurrentIndex(max(found, 0))

    # -- selection -------------------------------------------------------------------------
    def select_item(self, item_id: int) -> bool:
        """Select and scroll to the row of `item_id`; False when the filter hides it."""
        row = self.model.row_of_item(item_id)
        if row is None:
            return False
        self.table.selectRow(row)
        self.table.scrollTo(self.model.index(row, 1),
                            QAbstractItemView.ScrollHint.PositionAtCenter)
        return True
