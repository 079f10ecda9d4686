"""`SinceFilter`: the review's "since import N" choice — every cluster, or only those an
import changed (new rows joined them, they are new, another merged into them, or another
row leads them)."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QWidget

ALL = "All clusters"


class SinceFilter(QWidget):
    """A row with one choice; `sinceChosen(batch or None)` when the user picks."""

    sinceChosen = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.combo = QComboBox(self)
        self.combo.setToolTip("Only the clusters that changed since an import: new rows "
                              "joined them, they are new, another cluster merged into "
                              "them, or another row leads them")
        self.combo.addItem(ALL, None)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("Show:", self))
        layout.addWidget(self.combo)
        layout.addStretch(1)
        self._quiet = False
        self.combo.currentIndexChanged.connect(self._chosen)

    def set_imports(self, batches: list[dict]) -> None:
        """The imports still in the project, newest first; the choice is kept if it still
        is one."""
        current = self.combo.currentData()
        self._quiet = True
        try:
            self.combo.clear()
            self.combo.addItem(ALL, None)
            for b in sorted((b for b in batches if b["removed_at"] is None),
                            key=lambda b: -b["batch"]):
                self.combo.addItem(f"Changed since import {b['batch']} ({b['file_name']})",
                                   b["batch"])
            self._select(current)
        finally:
            self._quiet = False
        if self.combo.currentData() != current:
            self.sinceChosen.emit(self.combo.currentData())

    def show_since(self, batch: int | None) -> None:
        """Show the controller's choice without choosing again."""
        self._quiet = True
        try:
            self._select(batch)
        finally:
            self._quiet = False

    def choose(self, batch: int | None) -> None:
        """Pick `batch` as the user would (None: every cluster)."""
        self._select(batch)

    def _select(self, batch: int | None) -> None:
        found = self.combo.findData(batch)
        self.combo.setCurrentIndex(found if found >= 0 else 0)

    def _chosen(self, _index: int) -> None:
        if not self._quiet:
            self.sinceChosen.emit(self.combo.currentData())
