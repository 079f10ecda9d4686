"""The page shown before a project is open: create, open, or pick a recent project."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop_app.colors import NOTE_STYLE

PATH_ROLE = Qt.ItemDataRole.UserRole + 1


class StartPage(QWidget):
    """Two big actions and the recent list; it only emits what the user asked for."""

    newRequested = Signal()
    openRequested = Signal()
    sampleRequested = Signal()
    recentChosen = Signal(str)
    fileDropped = Signal(str)   # a spreadsheet dropped on the page

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        title = QLabel("Duplens", self)
        font = title.font()
        font.setPointSizeF(font.pointSizeF() * 2.2)
        font.setBold(True)
        title.setFont(font)
        subtitle = QLabel("Find duplicate questions in your spreadsheets, on this machine.",
                          self)
        subtitle.setWordWrap(True)
        self.new_button = QPushButton("New project from spreadsheet…", self)
        self.open_button = QPushButton("Open project…", self)
        self.sample_button = QPushButton("Try it with sample questions", self)
        for button in (self.new_button, self.open_button, self.sample_button):
            button.setMinimumHeight(36)
        hint = QLabel("…or drop a spreadsheet (CSV, TSV, Excel, Parquet) anywhere on this "
                      "window.", self)
        hint.setStyleSheet(NOTE_STYLE)
        self.new_button.setDefault(True)
        self.recent_label = QLabel("Recent projects", self)
        self.recent = QListWidget(self)
        self.recent.setSpacing(3)
        self.recent.setMaximumHeight(280)

        buttons = QHBoxLayout()
        buttons.addWidget(self.new_button)
        buttons.addWidget(self.open_button)
        buttons.addWidget(self.sample_button)
        buttons.addStretch(1)
        column = QVBoxLayout()
        column.addWidget(title)
        column.addWidget(subtitle)
        column.addSpacing(12)
        column.addLayout(buttons)
        column.addWidget(hint)
        column.addSpacing(16)
        column.addWidget(self.recent_label)
        column.addWidget(self.recent)
        column.addStretch(1)
        outer = QHBoxLayout(self)
        outer.addStretch(1)
        outer.addLayout(column, 4)
        outer.addStretch(1)
        outer.setContentsMargins(24, 32, 24, 24)

        self.new_button.clicked.connect(self.newRequested)
        self.open_button.clicked.connect(self.openRequested)
        self.sample_button.clicked.connect(self.sampleRequested)
        self.recent.itemActivated.connect(self._chosen)
        self.recent.itemDoubleClicked.connect(self._chosen)

    def set_recent(self, paths: list[str]) -> None:
        self.recent.clear()
        for path in paths:
            item = QListWidgetItem(f"{Path(path).name}    —    {Path(path).parent}")
            item.setData(PATH_ROLE, path)
            item.setToolTip(path)
            self.recent.addItem(item)
        self.recent_label.setVisible(bool(paths))
        self.recent.setVisible(bool(paths))

    def _chosen(self, item: QListWidgetItem) -> None:
        self.recentChosen.emit(str(item.data(PATH_ROLE)))
