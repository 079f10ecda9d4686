"""`ImportsDialog`: File → Imports…, every import (batch) of the project, and taking one out.

A table of `Rows.imports()`: the import's number (what exports call `first_seen` and what
`duplens duplicates --changes-since` and the review's "since import" take), its file, rows,
when and who, and whether it was removed. **Remove import…** asks first, then hands the
number to the main window (`removeRequested`), which runs the removal on the changes pool with
its status bar; clusters and their ids follow the rules at the next cut. The list is read on
the table pool (the newest request counts).
"""

from __future__ import annotations

from datetime import datetime

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop_app.bridge import EngineBridge
from desktop_app.job_runner import Pool

COLUMNS = ["Import", "File", "Rows", "In the project", "Imported", "By", "Status"]


def when(stamp: float | None) -> str:
    return datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M") if stamp else ""


class ImportsDialog(QDialog):
    """Lists the project's imports; asks before one is taken out."""

    removeRequested = Signal(int)     # the import's number: the main window removes it

    def __init__(self, bridge: EngineBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self._key = f"imports {id(self)}"
        self.setWindowTitle("Imports")
        self.resize(860, 360)
        self.batches: list[dict] = []
        intro = QLabel("Every file imported into this project, numbered. Exports say which "
                       "import brought each row (first_seen); Review can show what an "
                       "import changed. Removing an import deletes its rows; clusters keep "
                       "their ids by the usual rules, and the file can be imported again.")
        intro.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS), self)
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.remove_button = QPushButton("&Remove import…", self)
        self.remove_button.setEnabled(False)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        row = QHBoxLayout()
        row.addWidget(self.remove_button)
        row.addStretch(1)
        row.addWidget(buttons)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.table, 1)
        layout.addLayout(row)
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.remove_button.clicked.connect(self.remove_selected)
        self.reload()

    def reload(self) -> None:
        self.bridge.run(lambda job: job.project.rows.imports(), pool=Pool.TABLE,
                        on_done=self.show_batches, latest=self._key)

    def show_batches(self, batches: list[dict]) -> None:
        self.batches = list(batches)
        self.table.setRowCount(len(self.batches))
        for r, b in enumerate(self.batches):
            status = f"removed {when(b['removed_at'])}" if b["removed_at"] else ""
            cells = [str(b["batch"]), b["file_name"], f"{b['rows']:,}", f"{b['live']:,}",
                     when(b["imported_at"]), b["imported_by"], status]
            for c, text in enumerate(cells):
                self.table.setItem(r, c, QTableWidgetItem(text))
        self._selection_changed()

    def selected(self) -> dict | None:
        rows = {i.row() for i in self.table.selectedIndexes()}
        return self.batches[rows.pop()] if len(rows) == 1 else None

    def _selection_changed(self) -> None:
        chosen = self.selected()
        self.remove_button.setEnabled(chosen is not None and chosen["removed_at"] is None)

    def remove_selected(self) -> None:
        chosen = self.selected()
        if chosen is None or chosen["removed_at"] is not None:
            return
        if self.confirm(chosen):
            self.removeRequested.emit(chosen["batch"])

    def confirm(self, batch: dict) -> bool:
        """Ask before anything is deleted (tests answer for the user here)."""
        answer = QMessageBox.question(
            self, "Remove import",
            f"Remove the {batch['live']:,} rows of import {batch['batch']} "
            f"({batch['file_name']})?\n\nClusters keep their ids by the usual rules. The "
            f"file can be imported again.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Cancel)
        return answer == QMessageBox.StandardButton.Yes
