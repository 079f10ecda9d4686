"""`VersionsDialog`: every model the project has used, with rollback, copy out and delete.

A table of `ModelVersions.list()`: name, the version it was trained from, objective,
held-out average precision and best F1 before and after its training, date, how much of
the project it has encoded, and which one is active. **Make active** hands the version to
the main window (`activateRequested`), which re-encodes in the background with its status
bar (a version used before switches back at once); **Copy out…** copies its folder for plain
sentence-transformers; **Delete** removes a trained version that is not in use.

The dialog runs no engine call itself: `ModelController` reads the list and copies out or
deletes a version, and the dialog renders its signals. Their errors are said here, where the
user is looking, not in a dialog.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
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

from desktop_app.colors import ERROR_STYLE
from desktop_app.controllers.model_controller import ActivationResult, ModelController

COLUMNS = ["Version", "Trained from", "Objective", "Average precision", "Best F1", "Created",
           "Encoded", "Runs as", "Status"]


def metric_change(metrics: dict, key: str) -> str:
    """"76.27 → 77.67" for a trained version (held-out, before and after); "—" otherwise."""
    before, after = metrics.get("before") or {}, metrics.get("after") or {}
    if key not in before or key not in after:
        return "—"
    return f"{before[key]:.2f} → {after[key]:.2f}"


def copy_out_target(chosen: Path, name: str) -> Path:
    """An empty folder is used as it is; otherwise a new folder named after the version
    inside it (a copy needs a new or empty folder)."""
    if chosen.is_dir() and any(chosen.iterdir()):
        return chosen / (re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "model")
    return chosen


class VersionsDialog(QDialog):
    """Lists the project's model versions; `ModelController` runs the engine calls."""

    activateRequested = Signal(int, str)   # version id, name: the main window activates it
    copied_out = Signal(str)               # the folder a version was copied out to
    deleted = Signal(str)                  # the name of the version deleted

    def __init__(self, models: ModelController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.models = models
        self.setWindowTitle("Model versions")
        self.resize(1240, 420)
        self.versions: list[dict] = []
        self._activating: int | None = None
        intro = QLabel("Every model this project has used. Making one active encodes every "
                       "row with it, the first time only, and search keeps working "
                       "meanwhile; a version used before is back at once. Metrics are on "
                       "the held-out pairs of its training, before and after.", self)
        intro.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS), self)
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().hide()
        self.table.setAlternatingRowColors(True)
        header = self.table.horizontalHeader()
        # Every column as wide as its text (a version's name in full), the last one taking
        # what is left.
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.activate_button = QPushButton("Make active", self)
        self.copy_out_button = QPushButton("Copy out…", self)
        self.delete_button = QPushButton("Delete", self)
        self.status = QLabel("", self)
        self.status.setWordWrap(True)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        close.rejected.connect(self.reject)
        row = QHBoxLayout()
        row.addWidget(self.activate_button)
        row.addWidget(self.copy_out_button)
        row.addWidget(self.delete_button)
        row.addStretch(1)
        row.addWidget(close)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.status)
        layout.addLayout(row)

        self.table.itemSelectionChanged.connect(self._update_buttons)
        self.activate_button.clicked.connect(self.make_active)
        self.copy_out_button.clicked.connect(self.copy_out)
        self.delete_button.clicked.connect(self.delete)
        models.activated.connect(self._activated)
        models.activationFailed.connect(self._activation_failed)
        models.activationCancelled.connect(self._activation_cancelled)
        models.versionsListed.connect(self.show_versions)
        models.versionCopiedOut.connect(self._copied_out)
        models.versionDeleted.connect(self._deleted)
        models.versionsFailed.connect(self._error)
        self._update_buttons()
        self.refresh()

    # -- questions to the user (tests replace these) ---------------------------------------
    def ask_copy_out_folder(self, version: dict) -> str | None:
        folder = QFileDialog.getExistingDirectory(
            self, f"Copy {version['name']} out to a folder (a new folder is made inside one "
            f"that is not empty)")
        return folder or None

    def ask_delete(self, version: dict) -> bool:
        answer = QMessageBox.question(
            self, "Delete model version",
            f"Delete {version['name']} and its folder? It cannot be brought back, only "
            f"trained again.")
        return answer == QMessageBox.StandardButton.Yes

    # -- actions ---------------------------------------------------------------------------
    def refresh(self) -> None:
        self.models.list_versions()

    def selected(self) -> dict | None:
        rows = self.table.selectionModel().selectedRows()
        return self.versions[rows[0].row()] if rows else None

    def select_version(self, version_id: int) -> None:
        for row, version in enumerate(self.versions):
            if version["id"] == version_id:
                self.table.selectRow(row)
                return
        raise KeyError(version_id)

    def make_active(self) -> None:
        version = self.selected()
        if version is None or version["active"]:
            return
        self._activating = version["id"]
        self._say(f"Switching to {version['name']}; progress is in the window's status bar.")
        self._update_buttons()
        self.activateRequested.emit(version["id"], version["name"])

    def copy_out(self) -> None:
        version = self.selected()
        if version is None:
            return
        chosen = self.ask_copy_out_folder(version)
        if not chosen:
            return
        target = copy_out_target(Path(chosen), version["name"])
        self._say(f"Copying {version['name']} out to {target}…")
        self.models.copy_out_version(version["id"], target)

    def delete(self) -> None:
        version = self.selected()
        if version is None or not self.ask_delete(version):
            return
        self._say(f"Deleting {version['name']}…")
        self.models.delete_version(version["id"])

    # -- rendering -------------------------------------------------------------------------
    def show_versions(self, versions: list[dict]) -> None:
        keep = self.selected()
        names = {v["id"]: v["name"] for v in versions}
        self.versions = versions
        self.table.setRowCount(len(versions))
        for row, v in enumerate(versions):
            parent = names.get(v["parent_id"], "—") if v["parent_id"] is not None else "—"
            created = datetime.fromtimestamp(v["created_at"]).strftime("%Y-%m-%d %H:%M")
            status = "active" if v["active"] else "" if v["available"] else "folder missing"
            cells = [v["name"], parent, v["objective"] or "—",
                     metric_change(v["metrics"], "average_precision"),
                     metric_change(v["metrics"], "f1"), created,
                     f"{v['encoded']:,} of {v['texts']:,}", v["backend"], status]
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if v["folder"]:
                    item.setToolTip(v["folder"])
                if v["active"]:
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
                self.table.setItem(row, col, item)
        if keep is not None and keep["id"] in names:
            self.select_version(keep["id"])
        self._update_buttons()

    def _update_buttons(self) -> None:
        version = self.selected()
        idle = self._activating is None
        self.activate_button.setEnabled(bool(version and idle and not version["active"]
                                             and version["available"]))
        self.copy_out_button.setEnabled(bool(version and version["folder"]
                                           and version["available"]))
        # Only versions trained here can be deleted (the engine says why for the others).
        self.delete_button.setEnabled(bool(version and idle and not version["active"]
                                           and version["parent_id"] is not None))

    def _say(self, text: str, style: str = "") -> None:
        self.status.setText(text)
        self.status.setStyleSheet(style)

    # -- outcomes, on the GUI thread ----------------------------------------------------
    def _copied_out(self, folder: Path) -> None:
        self._say(f"Copied out to {folder}: a folder sentence-transformers loads.")
        self.copied_out.emit(str(folder))

    def _deleted(self, name: str) -> None:
        self._say(f"Deleted {name}.")
        self.deleted.emit(name)
        self.refresh()

    def _error(self, message: str, _details: str) -> None:
        self._say(message, ERROR_STYLE)

    def _activated(self, result: ActivationResult) -> None:
        if self._activating is None:
            return   # not asked from here
        self._activating = None
        self._say("Stopped; the model in use is unchanged (what was encoded is kept)."
                  if result["report"].cancelled else "Switched.")
        self.refresh()

    def _activation_failed(self, message: str, _details: str) -> None:
        if self._activating is not None:
            self._activating = None
            self._say(f"Could not switch: {message}", ERROR_STYLE)
            self.refresh()

    def _activation_cancelled(self) -> None:
        if self._activating is not None:
            self._activating = None
            self._say("Stopped; the model in use is unchanged.")
            self._update_buttons()
