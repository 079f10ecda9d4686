"""The window's questions to the user: file pickers, and the small dialogs that answer a value.

Each is a function of the window it is asked over, returning the answer or None when the user
cancels. `MainWindow` keeps one `ask_*` method per question that calls these, so tests answer
them by replacing the method, never by driving a modal dialog.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QDialog, QFileDialog, QWidget

from desktop_app.views.import_dialog import ImportDialog
from desktop_app.views.settings_dialog import Preferences, SettingsDialog

if TYPE_CHECKING:
    from desktop_app.bridge import EngineBridge
    from engine.add_file import ImportChoices

PROJECT_FILTER = "Duplens projects (*.duplens);;All files (*)"
SHEET_FILTER = ("Spreadsheets (*.csv *.tsv *.txt *.xlsx *.xlsm *.parquet *.pq *.jsonl "
                "*.ndjson);;All files (*)")
EXPORT_FILTER = "Excel (*.xlsx);;CSV (*.csv)"


def ask_spreadsheet(parent: QWidget) -> str | None:
    path, _ = QFileDialog.getOpenFileName(parent, "Choose a spreadsheet", "", SHEET_FILTER)
    return path or None


def ask_import_choices(parent: QWidget, bridge: EngineBridge, path: str,
                       purpose: str = "import", remembered: ImportChoices | None = None
                       ) -> ImportChoices | None:
    """The import dialog's choices for `path`, starting from `remembered` (those made for
    it last time) when given; for a check (`purpose="check"`) it adds nothing, so its
    button says "Check"."""
    dialog = ImportDialog(path, bridge, parent, purpose=purpose, remembered=remembered)
    return dialog.choices() if dialog.exec() == QDialog.DialogCode.Accepted else None


def ask_new_project_path(parent: QWidget, suggested: str) -> str | None:
    path, _ = QFileDialog.getSaveFileName(parent, "Save the new project as", suggested,
                                          PROJECT_FILTER)
    if path and not Path(path).suffix:
        path += ".duplens"
    return path or None


def ask_project_path(parent: QWidget) -> str | None:
    path, _ = QFileDialog.getOpenFileName(parent, "Open a project", "", PROJECT_FILTER)
    return path or None


def ask_export_path(parent: QWidget, project: str | None) -> str | None:
    """Where to export the clusters; suggested beside `project` (its file), as .xlsx."""
    suggested = ""
    if project:
        suggested = str(Path(project).with_name(Path(project).stem + "-clusters.xlsx"))
    path, _ = QFileDialog.getSaveFileName(parent, "Export clusters", suggested, EXPORT_FILTER)
    if path and Path(path).suffix.lower() not in (".xlsx", ".csv"):
        path += ".xlsx"
    return path or None


def ask_report_path(parent: QWidget, project: str | None) -> str | None:
    """Where File → Export quality report writes its page (an .html beside the project)."""
    base = Path(project) if project else Path("project")
    suggested = str(base.with_name(base.stem + "-quality.html"))
    path, _ = QFileDialog.getSaveFileName(parent, "Export quality report", suggested,
                                          "Web page (*.html)")
    if path and Path(path).suffix.lower() not in (".html", ".htm"):
        path += ".html"
    return path or None


def ask_export_form(parent: QWidget) -> str | None:
    from desktop_app.views.export_form import ExportFormDialog

    dialog = ExportFormDialog(parent)
    return dialog.form() if dialog.exec() == QDialog.DialogCode.Accepted else None


def ask_preferences(parent: QWidget, current: Preferences, model: str | None
                    ) -> Preferences | None:
    """The settings dialog over `current`; `model` is the open project's model location."""
    dialog = SettingsDialog(current, model, parent)
    return dialog.preferences() if dialog.exec() == QDialog.DialogCode.Accepted else None
