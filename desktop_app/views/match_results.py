"""The results of checking a file against the project: each new row beside its best match.

A sortable table (row, id, the new row's text, its best existing match, the score, an
earlier row of the same file it repeats, the analyst's verdict). D / N or the buttons give
the verdict "Duplicate of this" / "New" on the selected rows; Export writes the file with its
matches and a `verdict` column; "Add the new rows" imports it (and its verdicts become
verdicts on pairs of project rows). Verdicts are kept in the project as they are given (the
controller's job), so a later check of the same file shows them again; closing with verdicts
whose rows are not added yet asks first, and says where they are kept (`ask_on_close`).
Once the active model's second opinion is offered, the selected row's suggestion shows under
the table (`SecondOpinionLine`, asked for through `opinionWanted`); A accepts it on that row,
as D or N would.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from desktop_app.views.search_panel import TOOLTIP_CHARS
from desktop_app.views.second_opinion_line import ACCEPT_KEY, SecondOpinionLine
from engine.review.calibration import format_threshold

COLUMNS = ("Row", "Id", "New row", "Best match", "Score", "Overlap", "Repeats row", "Verdict")
ROW, ID, TEXT, MATCH, SCORE, OVERLAP, REPEATS, VERDICT = range(len(COLUMNS))
VERDICT_TEXT = {1: "Duplicate", 0: "New", None: ""}
EXPORT_FILTER = "Spreadsheets (*.csv *.xlsx)"
SORT_ROLE = Qt.ItemDataRole.UserRole + 1
ADD, KEEP, CANCEL = "add", "keep", "cancel"   # what `ask_on_close` answers
OPINION_WORDS = {1: "duplicate of this", 0: "new"}   # the second opinion, in this table's words


class MatchResultsDialog(QDialog):
    """Shows a `MatchResult`; says what the analyst decided through its signals."""

    verdictGiven = Signal(int, object)    # file row number, 1 / 0 / None
    exportRequested = Signal(str)         # the path chosen
    addRequested = Signal()
    opinionWanted = Signal(int)           # the file row on screen, for its second opinion

    def __init__(self, result, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("matchResults")
        self.setWindowTitle(f"{result.file_name} checked against the project")
        self.resize(1100, 600)
        self.result = result
        self.verdicts: dict[int, int] = dict(result.verdicts)   # file row → 1 / 0
        self._added = self._adding = False
        repeats = sum(1 for r in result.rows if r.duplicate_in_file_of)
        # No reason from the engine: the threshold was the window's (moved in the review).
        why = f", {result.threshold_reason or 'as set in the review'}"
        kept = (f" {len(self.verdicts):,} verdicts from an earlier check of this file are "
                f"shown again." if self.verdicts else "")
        self._checked = (
            f"{len(result.rows):,} rows checked: {result.likely_duplicates():,} likely "
            f"duplicates of existing rows (score ≥ {format_threshold(result.threshold)}"
            f"{why}), {repeats:,} repeat an earlier row of the file.")
        self.summary = QLabel(f"{self._checked} Nothing was added to the project.{kept}")
        self.summary.setWordWrap(True)
        self.model = QStandardItemModel(0, len(COLUMNS), self)
        self.model.setHorizontalHeaderLabels(list(COLUMNS))
        self.model.setSortRole(SORT_ROLE)   # numbers sort as numbers, "⚠ 0.45" as 0.45
        for r in result.rows:
            self.model.appendRow(self._cells(r))
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(SCORE, Qt.SortOrder.DescendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(True)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        for column in range(len(COLUMNS)):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Stretch
                                        if column in (TEXT, MATCH) else
                                        QHeaderView.ResizeMode.ResizeToContents)
        self.duplicate_button = QPushButton("&Duplicate of this (D)")
        self.new_button = QPushButton("&New (N)")
        self.export_button = QPushButton("&Export…")
        self.export_button.setToolTip("Write the rows with their matches and a verdict column")
        self.add_button = QPushButton("&Add the new rows to the project")
        self.close_button = close = QPushButton("Close")
        self.duplicate_button.clicked.connect(lambda: self._judge(1))
        self.new_button.clicked.connect(lambda: self._judge(0))
        self.export_button.clicked.connect(self._export)
        self.add_button.clicked.connect(self._add)
        close.clicked.connect(self.close)
        self.shortcuts = [QShortcut(QKeySequence(key), self,
                                    lambda verdict=verdict: self._judge(verdict))
                          for key, verdict in (("D", 1), ("N", 0))]
        self.opinion = SecondOpinionLine(self, verdicts=OPINION_WORDS)
        self.opinion.accepted.connect(self.accept_opinion)
        self.accept_shortcut = QShortcut(QKeySequence(ACCEPT_KEY), self, self.accept_opinion)
        self.accept_shortcut.setEnabled(False)
        self._best = {r.row: r.matches[0].score for r in result.rows if r.matches}
        buttons = QHBoxLayout()
        for button in (self.duplicate_button, self.new_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        for button in (self.export_button, self.add_button, close):
            buttons.addWidget(button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.opinion)
        layout.addLayout(buttons)
        self.table.selectionModel().currentRowChanged.connect(
            lambda current, _previous: self._want_opinion(current.row()))
        if self.model.rowCount():
            self.table.selectRow(0)

    def showEvent(self, event) -> None:  # noqa: N802 - Qt's name
        """The keyboard on the table, its first row current, as the dialog appears, so
        that D / N judge that row at once. D and N are this window's shortcuts, so they act
        only while it has the keyboard, and a window shown when a background job ends (the
        check) is not always given it: not without a window manager (an X server alone),
        nor where one holds focus back from windows it thinks nobody asked for. They did
        nothing until a click on a row gave the dialog the keyboard."""
        super().showEvent(event)
        if not self.table.currentIndex().isValid() and self.model.rowCount():
            self.table.selectRow(0)
        self.table.setFocus(Qt.FocusReason.ActiveWindowFocusReason)
        self.raise_()
        self.activateWindow()

    def _cells(self, r) -> list[QStandardItem]:
        best = r.matches[0] if r.matches else None
        words = r.overlaps[0] if r.overlaps else None

        def cell(value, tip: str | None = None, shown: str | None = None) -> QStandardItem:
            item = QStandardItem()
            item.setData(value if shown is None else shown, Qt.ItemDataRole.DisplayRole)
            item.setData(value, SORT_ROLE)
            if tip:
                item.setToolTip(tip)
            return item

        shown = best.text if best else ""
        if best is not None and best.passage is not None:
            # A document is shown by the passage that matched, as the search shows it; its
            # first lines are seldom what the row resembles.
            shown = f"…{' '.join(best.text[best.passage[0]:best.passage[1]].split())}…"
        cells = [cell(r.row), cell(r.id), cell(r.text, r.text),
                 cell(best.text if best else "", _tip(shown) if best else None, shown),
                 cell(best.score if best else None, None,
                      f"{best.score:.3f}" if best else ""),
                 cell(words.jaccard if words else None, words.note() if words else None,
                      f"{words.jaccard:.2f}" if words else ""),
                 cell(r.duplicate_in_file_of or ""),
                 cell(VERDICT_TEXT[self.verdicts.get(r.row)])]
        if words is not None and words.marked(best.score, self.result.threshold):
            # a likely duplicate that a word changing the meaning sets apart ("first" / "last")
            cells[OVERLAP].setData(f"⚠ {words.jaccard:.2f}", Qt.ItemDataRole.DisplayRole)
        cells[ROW].setData(r.row, Qt.ItemDataRole.UserRole)
        return cells

    def file_row(self, table_row: int) -> int:
        return int(self.model.item(table_row, ROW).data(Qt.ItemDataRole.UserRole))

    def verdict_of(self, file_row: int) -> str:
        for i in range(self.model.rowCount()):
            if self.file_row(i) == file_row:
                return self.model.item(i, VERDICT).text()
        raise KeyError(file_row)

    # -- the second opinion ----------------------------------------------------------------
    def set_offered(self, offered: bool) -> None:
        """Whether the active model's second opinion is offered: only then its line shows,
        A works, and the row on screen is asked about."""
        offered = offered and not self._added
        self.opinion.set_offered(offered)
        self.accept_shortcut.setEnabled(offered)
        if offered:
            self._want_opinion(self.table.currentIndex().row())

    def _want_opinion(self, table_row: int) -> None:
        file_row = self.file_row(table_row) if 0 <= table_row < self.model.rowCount() \
            else None
        matched = file_row is not None and file_row in self._best
        self.opinion.expect(file_row if matched else None)
        if matched and self.opinion.offered:
            self.opinionWanted.emit(file_row)

    def show_opinion(self, file_row: int, probability: float) -> None:
        """The second opinion on `file_row` and its best match (shown if still on screen);
        the model's verdict beside it is its score against the check's threshold."""
        model = 1 if self._best.get(file_row, 0.0) >= self.result.threshold else 0
        self.opinion.show_for(file_row, probability, model)

    def accept_opinion(self) -> None:
        """A: the suggested verdict on the row on screen (only that row), then the next."""
        verdict, row = self.opinion.suggestion, self.table.currentIndex().row()
        if verdict is None or self._added or row < 0:
            return
        self._judge(verdict, [row])

    def _judge(self, verdict: int, rows: list[int] | None = None) -> None:
        """The verdict on every selected row (or `rows`), then move to the row after the
        last one."""
        if rows is None:
            rows = sorted({index.row() for index in self.table.selectionModel().selectedRows()})
        for i in rows:
            if self.model.item(i, MATCH).text():
                self.model.item(i, VERDICT).setText(VERDICT_TEXT[verdict])
                self.verdicts[self.file_row(i)] = verdict
                self.verdictGiven.emit(self.file_row(i), verdict)
        if rows and rows[-1] + 1 < self.model.rowCount():
            self.table.selectRow(rows[-1] + 1)

    def ask_export_path(self) -> str | None:
        path, _ = QFileDialog.getSaveFileName(self, "Export the checked rows",
                                              f"{self.result.file_name}-matches.xlsx",
                                              EXPORT_FILTER)
        return path or None

    def _export(self) -> None:
        path = self.ask_export_path()
        if path:
            self.exportRequested.emit(path)

    def _add(self) -> None:
        self._adding = True
        self.add_button.setEnabled(False)
        self.add_button.setText("Adding the rows…")
        self.addRequested.emit()

    def rows_added(self, said: str) -> None:
        """The file is in the project now (`said`: what adding it did, the rows and the
        clusters they joined): adding it again would do nothing, and its verdicts are on its
        rows (a verdict given now would wait for another import)."""
        self._added = True
        self.summary.setText(f"{self._checked} Added to the project: {said}.")
        self.add_button.setEnabled(False)
        self.add_button.setText("Added to the project")
        for widget in (self.duplicate_button, self.new_button, *self.shortcuts,
                       self.accept_shortcut):
            widget.setEnabled(False)
        self.opinion.set_offered(False)   # nothing left to accept here

    def add_failed(self) -> None:
        self._adding = False
        self.add_button.setEnabled(True)
        self.add_button.setText("&Add the new rows to the project")

    # -- closing ---------------------------------------------------------------------------
    def waiting(self) -> int:
        """Verdicts whose rows are not in the project yet (nor being added)."""
        return 0 if self._added or self._adding else len(self.verdicts)

    def ask_on_close(self, waiting: int) -> str:
        """Ask what to do with `waiting` verdicts before closing: ADD, KEEP or CANCEL."""
        box = QMessageBox(self)
        box.setIcon(QMessageBox.Icon.Question)
        box.setWindowTitle("Close the check?")
        if self.result.can_keep:
            box.setText(f"You gave {waiting:,} verdicts on rows of {self.result.file_name}.")
            box.setInformativeText(
                "They are kept with the project: checking this file again shows them, "
                "fine-tuning learns from them, and they stay with its rows when they are "
                "added.")
            add = box.addButton("Add the rows now", QMessageBox.ButtonRole.AcceptRole)
            keep = box.addButton("Close, keep them", QMessageBox.ButtonRole.DestructiveRole)
        else:
            box.setText(f"You gave {waiting:,} verdicts on rows of {self.result.file_name}.")
            box.setInformativeText("The project is open read-only, so they cannot be kept: "
                                   "Export… writes them to a file.")
            add = None
            keep = box.addButton("Close and lose them", QMessageBox.ButtonRole.DestructiveRole)
        cancel = box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(cancel)
        box.exec()
        clicked = box.clickedButton()
        return ADD if add is not None and clicked is add else KEEP if clicked is keep \
            else CANCEL

    def reject(self) -> None:
        """Close, Esc and the title bar's close all come here (QDialog's close event calls
        `reject`): ask first when verdicts wait for their rows."""
        if self._may_close():
            super().reject()

    def _may_close(self) -> bool:
        waiting = self.waiting()
        if not waiting:
            return True
        answer = self.ask_on_close(waiting)
        if answer == ADD:
            self._add()
            return False        # stays open: the status bar follows the adding
        return answer == KEEP


def _tip(text: str) -> str:
    """A match's tooltip: its text, or a document's passage, cut to what a tooltip holds."""
    return text if len(text) <= TOOLTIP_CHARS else text[:TOOLTIP_CHARS] + " …"
