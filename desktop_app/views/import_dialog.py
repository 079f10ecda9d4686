"""`ImportDialog`: look at a spreadsheet before importing it and choose its columns.

Seeing the first rows with the detected encoding and delimiter catches a wrong guess
(mojibake, one giant column) before minutes of encoding. A file the engine cannot read
shows the engine's one-line message here instead of an error dialog after the fact.

The preview is read on the bridge's table pool, not the GUI thread (an Excel workbook or a
file on a network drive takes seconds to open); changing the encoding or the delimiter
quickly asks again, and only the newest answer is shown.

File → Check a file against this project reads the file with the same choices but adds
nothing: there the dialog is titled and its button named for the check (`purpose="check"`).

A file checked every week is often checked again within the hour (a wrong ID column, a
second look): the dialog then starts from the choices made last time for that file
(`remembered`: its text and ID columns, sheet, encoding and delimiter), not from the guess,
which would put the ID column back to "(none)".
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop_app.bridge import EngineBridge
from desktop_app.colors import ERROR_STYLE
from desktop_app.job_runner import Job, Pool
from engine.add_file import ImportChoices

if TYPE_CHECKING:  # engine.io pulls in pandas and pyarrow: imported in the pool thread
    from engine.io import TablePreview

NO_ID = "(none)"
PREVIEW_ROWS = 20
DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe", " ": "space"}
DELIMITERS = [(",", "comma ( , )"), (";", "semicolon ( ; )"), ("\t", "tab"), ("|", "pipe ( | )")]
# Offered when detection guessed wrong: the usual suspects for spreadsheets saved by Excel.
# What the dialog is for: (window title, the OK button's text).
PURPOSES = {"import": ("Import {name}", "Import"),
            "check": ("Check {name} against the project", "Check")}
ENCODINGS = ["utf-8", "utf-8-sig", "cp1252", "latin-1", "utf-16", "cp1250", "cp1251",
             "shift_jis", "gb18030"]

def read_preview(path: str, sheet: str | None, encoding: str | None, delimiter: str | None,
                 _job: Job) -> TablePreview:
    """The job: the first `PREVIEW_ROWS` rows of `path` as the engine parses them."""
    from engine.io import preview_table

    return preview_table(path, PREVIEW_ROWS, sheet=sheet, encoding=encoding,
                         delimiter=delimiter)


def describe_format(preview: TablePreview) -> str:
    """"CSV · encoding utf-8 · delimiter comma (,)" — what detection decided, in words."""
    fmt = preview.format
    parts = [fmt.kind.upper()]
    if fmt.encoding:
        parts.append(f"encoding {fmt.encoding}")
    if fmt.delimiter:
        name = DELIMITER_NAMES.get(fmt.delimiter, "")
        shown = "tab" if fmt.delimiter == "\t" else f"{name} ({fmt.delimiter})".strip()
        parts.append(f"delimiter {shown}")
    if fmt.sheet:
        parts.append(f"sheet {fmt.sheet}")
    return " · ".join(parts)


class ImportDialog(QDialog):
    """File preview, text-column checkboxes, optional id column; OK returns the choices."""

    previewed = Signal()   # a preview (or the reason there is none) is shown

    def __init__(self, path: str | os.PathLike[str], bridge: EngineBridge,
                 parent: QWidget | None = None, purpose: str = "import",
                 remembered: ImportChoices | None = None) -> None:
        super().__init__(parent)
        title, action = PURPOSES[purpose]
        self._path = os.fspath(path)
        self._bridge = bridge
        # Last time's choices for this file: applied to the first preview that has their
        # columns, then the dialog behaves as ever (a new encoding re-guesses).
        self._remembered = remembered
        self._encoding = remembered.encoding if remembered else None
        self._delimiter = remembered.delimiter if remembered else None
        self._loading = False
        self.setWindowTitle(title.format(name=Path(self._path).name))
        self.resize(760, 560)

        self.file_label = QLabel(f"<b>{Path(self._path).name}</b>", self)
        self.format_label = QLabel("", self)
        self.error_label = QLabel("", self)
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet(ERROR_STYLE)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.hide()
        self.sheet_combo = QComboBox(self)
        self.encoding_combo = QComboBox(self)
        self.encoding_combo.addItem("As detected", None)
        for name in ENCODINGS:
            self.encoding_combo.addItem(name, name)
        self.delimiter_combo = QComboBox(self)
        self.delimiter_combo.addItem("As detected", None)
        for value, label in DELIMITERS:
            self.delimiter_combo.addItem(label, value)
        for combo, value in ((self.encoding_combo, self._encoding),
                             (self.delimiter_combo, self._delimiter)):
            if value is not None and combo.findData(value) < 0:
                combo.addItem(value, value)          # a value the list does not offer
            combo.setCurrentIndex(max(combo.findData(value), 0))
        self.table = QTableWidget(self)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.verticalHeader().hide()
        self.columns_list = QListWidget(self)
        self.columns_list.setMaximumHeight(130)
        self.id_combo = QComboBox(self)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText(action)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

        form = QFormLayout()
        form.addRow("Sheet:", self.sheet_combo)
        form.addRow("Encoding:", self.encoding_combo)
        form.addRow("Delimiter:", self.delimiter_combo)
        form.addRow("Text to compare:", self.columns_list)
        form.addRow("ID column (optional):", self.id_combo)
        layout = QVBoxLayout(self)
        layout.addWidget(self.file_label)
        layout.addWidget(self.format_label)
        layout.addWidget(self.error_label)
        layout.addWidget(self.table, 1)
        layout.addLayout(form)
        layout.addWidget(self.buttons)
        self._form = form

        self.columns_list.itemChanged.connect(self._update_ok)
        self._load(remembered.sheet if remembered else None)
        self.sheet_combo.currentTextChanged.connect(self._sheet_changed)
        self.encoding_combo.currentIndexChanged.connect(self._format_changed)
        self.delimiter_combo.currentIndexChanged.connect(self._format_changed)

    # -- loading ---------------------------------------------------------------------------
    @property
    def loading(self) -> bool:
        """A preview is being read (Import / Check waits for it)."""
        return self._loading

    def _load(self, sheet: str | None) -> None:
        path, encoding, delimiter = self._path, self._encoding, self._delimiter
        self._loading = True
        self._update_ok()
        self._bridge.run(lambda job: read_preview(path, sheet, encoding, delimiter, job),
                         pool=Pool.TABLE, on_done=self._show_preview,
                         on_failed=self._preview_failed, latest=f"import preview {id(self)}")

    def _preview_failed(self, message: str, details: str) -> None:
        if details:   # a bug, not the file: its last line says more than "Unexpected error"
            last = details.strip().splitlines()[-1]
            message = f"{Path(self._path).name}: cannot be previewed ({last})"
        self._loading = False
        self._show_error(message)
        self.previewed.emit()

    def _show_preview(self, preview: TablePreview) -> None:
        self._loading = False
        self.error_label.hide()
        self.format_label.setText(describe_format(preview))
        text_file = preview.format.kind == "csv"
        self._form.setRowVisible(self.encoding_combo, text_file or self._encoding is not None)
        self._form.setRowVisible(self.delimiter_combo, text_file or self._delimiter is not None)
        self._fill_sheets(preview)
        self._fill_table(preview)
        self._fill_columns(preview)
        self._update_ok()
        self.previewed.emit()

    def _show_error(self, message: str) -> None:
        self.error_label.setText(message)
        self.error_label.show()
        self.format_label.setText("")
        self.table.clear()
        self.table.setRowCount(0)
        self.table.setColumnCount(0)
        self.columns_list.clear()
        self.id_combo.clear()
        self._update_ok()

    def _fill_sheets(self, preview: TablePreview) -> None:
        self.sheet_combo.blockSignals(True)
        self.sheet_combo.clear()
        self.sheet_combo.addItems(preview.sheets)
        if preview.format.sheet:
            self.sheet_combo.setCurrentText(preview.format.sheet)
        self.sheet_combo.blockSignals(False)
        self._form.setRowVisible(self.sheet_combo, bool(preview.sheets))

    def _fill_table(self, preview: TablePreview) -> None:
        self.table.clear()
        self.table.setColumnCount(len(preview.columns))
        self.table.setRowCount(len(preview.rows))
        self.table.setHorizontalHeaderLabels(preview.columns)
        for r, row in enumerate(preview.rows):
            for c, value in enumerate(row):
                cell = QTableWidgetItem(" ".join(str(value).split()))
                cell.setToolTip(str(value))
                self.table.setItem(r, c, cell)
        self.table.resizeColumnsToContents()
        for c in range(len(preview.columns)):
            self.table.setColumnWidth(c, min(self.table.columnWidth(c), 360))

    def _fill_columns(self, preview: TablePreview) -> None:
        guess = _longest_text_column(preview)
        self.columns_list.blockSignals(True)
        self.columns_list.clear()
        for name in preview.columns:
            item = QListWidgetItem(name)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if name == guess
                               else Qt.CheckState.Unchecked)
            self.columns_list.addItem(item)
        self.columns_list.blockSignals(False)
        self.id_combo.clear()
        self.id_combo.addItems([NO_ID, *preview.columns])
        self._apply_remembered(preview.columns)

    def _apply_remembered(self, columns: list[str]) -> None:
        """Tick last time's text columns and pick its ID column, once, if this preview has
        them all (the file may have changed since: then the guess stands)."""
        last, self._remembered = self._remembered, None
        wanted = [*last.text_columns, *([last.id_column] if last.id_column else [])] \
            if last else []
        if not wanted or not set(wanted) <= set(columns):
            return
        self.set_text_columns(last.text_columns)
        self.id_combo.setCurrentText(last.id_column or NO_ID)

    def _format_changed(self) -> None:
        """The user overrides the detected encoding or delimiter: preview again with it."""
        self._encoding = self.encoding_combo.currentData()
        self._delimiter = self.delimiter_combo.currentData()
        self._load(self.sheet_combo.currentText() or None)

    def _sheet_changed(self, sheet: str) -> None:
        if sheet:
            self._load(sheet)

    def _update_ok(self) -> None:
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        ok.setEnabled(not self._loading and bool(self.text_columns()))

    # -- the answer ------------------------------------------------------------------------
    def text_columns(self) -> list[str]:
        """Ticked columns in file order (several are joined one per line by the engine)."""
        return [self.columns_list.item(i).text() for i in range(self.columns_list.count())
                if self.columns_list.item(i).checkState() == Qt.CheckState.Checked]

    def set_text_columns(self, names: list[str]) -> None:
        for i in range(self.columns_list.count()):
            item = self.columns_list.item(i)
            item.setCheckState(Qt.CheckState.Checked if item.text() in names
                               else Qt.CheckState.Unchecked)

    def choices(self) -> ImportChoices:
        id_column = self.id_combo.currentText()
        return ImportChoices(
            path=self._path,
            text_columns=self.text_columns(),
            id_column=None if id_column in ("", NO_ID) else id_column,
            sheet=self.sheet_combo.currentText() or None,
            encoding=self._encoding,
            delimiter=self._delimiter,
        )


def _longest_text_column(preview: TablePreview) -> str | None:
    """Pre-tick the column with the longest values: usually the question, not an id."""
    if not preview.columns:
        return None
    def mean_length(c: int) -> float:
        values = [str(row[c]) for row in preview.rows if c < len(row)]
        return sum(map(len, values)) / len(values) if values else 0.0
    best = max(range(len(preview.columns)), key=mean_length)
    return preview.columns[best]
