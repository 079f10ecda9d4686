"""`MainWindow`: the start page, then the search panel over the project's rows.

The window wires widgets to the bridge and reacts to its signals; it decides nothing about
data. Every slot is `guarded`: a bug shows an error dialog and is logged, and the window
carries on. Questions to the user (file pickers, the import dialog) are small `ask_*`
methods, so tests can answer them without a modal dialog.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QFileDialog,
    QHeaderView,
    QLabel,
    QMainWindow,
    QMessageBox,
    QSplitter,
    QStackedWidget,
    QTableView,
    QWidget,
)

from desktop_app.bridge import EngineBridge
from desktop_app.models.items_model import ItemsTableModel
from desktop_app.recent import RecentProjects
from desktop_app.safety import guarded
from desktop_app.views.import_dialog import ImportChoices, ImportDialog
from desktop_app.views.job_status import JobStatus
from desktop_app.views.search_panel import SearchPanel
from desktop_app.views.start_page import StartPage

log = logging.getLogger("duplens.gui")

PROJECT_FILTER = "Duplens projects (*.duplens);;All files (*)"
SHEET_FILTER = ("Spreadsheets (*.csv *.tsv *.txt *.xlsx *.xlsm *.parquet *.pq *.jsonl "
                "*.ndjson);;All files (*)")
LOADING_MODEL = "Loading the model…"


class MainWindow(QMainWindow):
    """The Duplens window; owns its widgets, borrows the bridge."""

    def __init__(self, bridge: EngineBridge, settings: QSettings | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.recent = RecentProjects(settings or QSettings("Duplens", "Duplens"))
        self.setWindowTitle("Duplens")
        self.resize(1000, 720)
        self._info: dict | None = None
        self._model_state = ""
        self._pending_import: ImportChoices | None = None
        self._opening: str | None = None
        self.error_box: QMessageBox | None = None

        self.start_page = StartPage(self)
        self.search_panel = SearchPanel(bridge, self)
        self.items_model = ItemsTableModel(bridge.count_items, bridge.items_page, self)
        self.table = self._make_table()
        splitter = QSplitter(Qt.Orientation.Vertical, self)
        splitter.addWidget(self.search_panel)
        splitter.addWidget(self.table)
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 3)
        splitter.setContentsMargins(8, 8, 8, 0)
        self.project_page = splitter
        self.pages = QStackedWidget(self)
        self.pages.addWidget(self.start_page)
        self.pages.addWidget(self.project_page)
        self.setCentralWidget(self.pages)

        self.status_label = QLabel("", self)
        self.job_status = JobStatus(self)
        self.statusBar().addWidget(self.status_label, 1)
        self.statusBar().addPermanentWidget(self.job_status)
        self._make_menu()
        self._connect()
        self.start_page.set_recent(self.recent.paths())
        self._show_status()

    # -- construction ----------------------------------------------------------------------
    def _make_table(self) -> QTableView:
        table = QTableView(self)
        table.setModel(self.items_model)
        table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        table.setWordWrap(False)
        table.setAlternatingRowColors(True)
        table.verticalHeader().hide()
        # Fixed heights and widths: "resize to contents" would read every page of the model.
        table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        header = table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(0, 110)
        header.setStretchLastSection(True)
        return table

    def _make_menu(self) -> None:
        menu = self.menuBar().addMenu("&File")
        self.new_action = QAction("&New project from spreadsheet…", self)
        self.new_action.setShortcut(QKeySequence.StandardKey.New)
        self.open_action = QAction("&Open project…", self)
        self.open_action.setShortcut(QKeySequence.StandardKey.Open)
        self.import_action = QAction("&Import spreadsheet…", self)
        self.import_action.setShortcut(QKeySequence("Ctrl+I"))
        self.import_action.setEnabled(False)
        quit_action = QAction("&Quit", self)
        quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        for action in (self.new_action, self.open_action, self.import_action):
            menu.addAction(action)
        menu.addSeparator()
        menu.addAction(quit_action)
        self.new_action.triggered.connect(self.new_project_from_spreadsheet)
        self.open_action.triggered.connect(self.open_project_dialog)
        self.import_action.triggered.connect(self.import_spreadsheet)
        quit_action.triggered.connect(self.close)

    def _connect(self) -> None:
        b = self.bridge
        b.projectOpened.connect(self.on_project_opened)
        b.progressed.connect(self.on_progress)
        b.finished.connect(self.on_finished)
        b.failed.connect(self.on_failed)
        b.cancelled.connect(self.on_cancelled)
        b.modelLoading.connect(self.on_model_loading)
        b.modelReady.connect(self.on_model_ready)
        self.start_page.newRequested.connect(self.new_project_from_spreadsheet)
        self.start_page.openRequested.connect(self.open_project_dialog)
        self.start_page.recentChosen.connect(self.open_project)
        self.search_panel.hitActivated.connect(self.select_item)
        self.job_status.cancelRequested.connect(b.cancel)

    # -- questions to the user (tests replace these) ---------------------------------------
    def ask_spreadsheet(self) -> str | None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a spreadsheet", "", SHEET_FILTER)
        return path or None

    def ask_import_choices(self, path: str) -> ImportChoices | None:
        dialog = ImportDialog(path, self)
        return dialog.choices() if dialog.exec() == QDialog.DialogCode.Accepted else None

    def ask_new_project_path(self, suggested: str) -> str | None:
        path, _ = QFileDialog.getSaveFileName(self, "Save the new project as", suggested,
                                              PROJECT_FILTER)
        if path and not Path(path).suffix:
            path += ".duplens"
        return path or None

    def ask_project_path(self) -> str | None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a project", "", PROJECT_FILTER)
        return path or None

    # -- user actions ----------------------------------------------------------------------
    @guarded
    def new_project_from_spreadsheet(self) -> None:
        """Spreadsheet, then its columns, then where to save: the import starts on open."""
        sheet = self.ask_spreadsheet()
        if not sheet:
            return
        choices = self.ask_import_choices(sheet)
        if choices is None:
            return
        target = self.ask_new_project_path(str(Path(sheet).with_suffix(".duplens")))
        if not target:
            return
        self._pending_import = choices
        self.open_project(target, create=True)

    @guarded
    def open_project_dialog(self) -> None:
        path = self.ask_project_path()
        if path:
            self.open_project(path)

    @guarded
    def open_project(self, path: str, create: bool = False) -> None:
        self._opening = path
        self.status_label.setText(f"Opening {Path(path).name}…")
        self.bridge.open_project(path, create=create)

    @guarded
    def import_spreadsheet(self) -> None:
        sheet = self.ask_spreadsheet()
        if sheet:
            choices = self.ask_import_choices(sheet)
            if choices is not None:
                self.start_import(choices)

    @guarded
    def start_import(self, choices: ImportChoices) -> None:
        self.job_status.start(f"Importing {Path(choices.path).name}…")
        self._set_busy(True)
        self.bridge.import_file(choices.path, choices.text_columns, id_column=choices.id_column,
                                sheet=choices.sheet)

    @guarded
    def select_item(self, item_id: int) -> None:
        """Select and show the table row of a search hit."""
        row = self.items_model.row_of_item(item_id)
        if row is None:
            self.statusBar().showMessage("That entry is no longer in the table", 5000)
            return
        index = self.items_model.index(row, 1)
        self.table.selectRow(row)
        self.table.scrollTo(index, QAbstractItemView.ScrollHint.PositionAtCenter)

    # -- bridge signals --------------------------------------------------------------------
    @guarded
    def on_project_opened(self, info: dict) -> None:
        self._opening = None
        self._info = info
        self._model_state = ""
        self.recent.add(info["project"])
        self.start_page.set_recent(self.recent.paths())
        self.setWindowTitle(f"{Path(info['project']).name} — Duplens")
        self.items_model.reload()
        self.pages.setCurrentWidget(self.project_page)
        self.import_action.setEnabled(True)
        self.search_panel.query.setFocus()
        self._show_status()
        for notice in info.get("notices", []):
            self.statusBar().showMessage(notice, 15000)
        pending, self._pending_import = self._pending_import, None
        if pending is not None:
            self.start_import(pending)

    @guarded
    def on_progress(self, stage: str, done: int, total: int, rate: float) -> None:
        self.job_status.update_progress(stage, done, total, rate)

    @guarded
    def on_finished(self, job: str, result: object) -> None:
        if job == "import" and isinstance(result, dict):
            self._import_done(result)
        elif job == "info" and isinstance(result, dict):
            self._info = result
            self._show_status()

    def _import_done(self, result: dict) -> None:
        self._set_busy(False)
        self._info = result["info"]
        self.items_model.reload()
        self._show_status()
        report = result["import"]
        if report.already_imported:
            message = f"{report.file_name}: already imported with these columns; nothing added"
        elif result["cancelled"]:
            left = result["encode"].remaining
            message = (f"Stopped: {report.rows_imported:,} rows kept, {left:,} texts still to "
                       f"encode (they are encoded on the next import)")
        else:
            message = (f"{report.file_name}: {report.rows_imported:,} rows imported, "
                       f"{report.rows_empty:,} empty skipped, {report.exact_duplicates:,} "
                       f"exact duplicates")
        self.statusBar().showMessage(message, 15000)
        if self.search_panel.query.text().strip():
            self.search_panel.refresh()

    @guarded
    def on_failed(self, job: str, message: str, details: str) -> None:
        if job == "import":
            self._set_busy(False)
        if job == "open":
            self._pending_import = None
            if self._opening and not Path(self._opening).exists():
                self.recent.remove(self._opening)
                self.start_page.set_recent(self.recent.paths())
            self._opening = None
        if job == "warm_up":
            self._model_state = "Model not loaded"
        self._show_status()
        self.show_error(message, details)

    @guarded
    def on_cancelled(self, job: str) -> None:
        if job == "import":
            self._set_busy(False)
            self.statusBar().showMessage("Import stopped; nothing from this file was added",
                                         15000)

    @guarded
    def on_model_loading(self) -> None:
        self._model_state = LOADING_MODEL
        self._show_status()

    @guarded
    def on_model_ready(self, device: str) -> None:
        self._model_state = ""
        if self._info is not None:
            self._info = {**self._info, "device": device}
        self._show_status()

    # -- display ---------------------------------------------------------------------------
    def show_error(self, message: str, details: str = "") -> None:
        """A non-blocking warning box; the traceback (if any) under "Show Details…"."""
        log.warning("error shown to the user: %s", message)
        box = QMessageBox(QMessageBox.Icon.Warning, "Duplens", message,
                          QMessageBox.StandardButton.Ok, self)
        if details:
            box.setDetailedText(details)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.error_box = box
        box.open()

    def _show_status(self) -> None:
        if self._info is None:
            text = "Open a project, or create one from a spreadsheet."
        else:
            info = self._info
            parts = [f"{info['items']:,} items"]
            if info.get("model"):
                device = f" on {info['device']}" if info.get("device") else ""
                parts.append(f"{info['model']}{device}")
            if info.get("encoded", 0) < info.get("texts", 0):
                parts.append(f"{info['texts'] - info['encoded']:,} texts not encoded yet")
            text = "  ·  ".join(parts)
        if self._model_state:
            text = f"{text}  ·  {self._model_state}"
        self.status_label.setText(text)

    def _set_busy(self, busy: bool) -> None:
        """One import at a time: the job pool is serial, a second would only queue."""
        self.import_action.setEnabled(not busy and self._info is not None)
        self.new_action.setEnabled(not busy)
        self.open_action.setEnabled(not busy)
        self.start_page.setEnabled(not busy)
        if not busy:
            self.job_status.stop()

    def closeEvent(self, event: QCloseEvent) -> None:
        self.bridge.shutdown()
        super().closeEvent(event)
