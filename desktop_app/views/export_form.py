"""The small choice before an export: every row, only rows in a cluster, or deduplicated."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QButtonGroup,
    QDialog,
    QDialogButtonBox,
    QLabel,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from engine.services.exports import ALL, DEDUPLICATED, ONLY_CLUSTERS

CHOICES = (
    (ALL, "Every row, with its cluster (the whole spreadsheet)"),
    (ONLY_CLUSTERS, "Only rows in a cluster"),
    (DEDUPLICATED, "Deduplicated: one row per cluster, and every row in none"),
)


class ExportFormDialog(QDialog):
    """Three radio buttons; `form()` is the chosen one, every row by default."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Export")
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("What to write:", self))
        self.group = QButtonGroup(self)
        self.buttons: dict[str, QRadioButton] = {}
        for form, text in CHOICES:
            button = QRadioButton(text, self)
            self.group.addButton(button)
            self.buttons[form] = button
            layout.addWidget(button)
        self.buttons[ALL].setChecked(True)
        box = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                               | QDialogButtonBox.StandardButton.Cancel, self)
        box.accepted.connect(self.accept)
        box.rejected.connect(self.reject)
        layout.addWidget(box)

    def form(self) -> str:
        return next(f for f, b in self.buttons.items() if b.isChecked())
