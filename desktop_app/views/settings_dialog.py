"""`SettingsDialog`: device, batch size and model, kept in QSettings between runs.

The device list shows what this machine really has (the engine probes CUDA and MPS); "auto"
takes the fastest of those.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

DEVICES = (("auto", "Automatic (fastest found)"), ("cpu", "CPU"), ("cuda", "NVIDIA GPU (CUDA)"),
           ("mps", "Apple GPU (MPS)"))


@dataclass(frozen=True)
class Preferences:
    device: str = "auto"
    batch_size: int = 64
    model: str = ""            # "" = the bundled default model

    @classmethod
    def load(cls, settings: QSettings) -> Preferences:
        device = str(settings.value("engine/device", "auto"))
        try:
            batch = int(settings.value("engine/batch_size", 64))
        except (TypeError, ValueError):
            batch = 64
        return cls(device if device in dict(DEVICES) else "auto", min(max(batch, 1), 1024),
                   str(settings.value("engine/model", "")))

    def save(self, settings: QSettings) -> None:
        settings.setValue("engine/device", self.device)
        settings.setValue("engine/batch_size", self.batch_size)
        settings.setValue("engine/model", self.model)


def found_devices() -> list[str]:
    """Devices torch can use here; imported lazily (torch takes seconds to import)."""
    from engine.encoding.models import available_devices

    return available_devices()


class SettingsDialog(QDialog):
    def __init__(self, current: Preferences, project_model: str | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings")
        found = found_devices()
        self.device = QComboBox(self)
        for key, label in DEVICES:
            available = key == "auto" or key in found
            self.device.addItem(label if available else f"{label} — not found", key)
        self.device.setCurrentIndex(max(0, [k for k, _ in DEVICES].index(current.device)))
        self.batch = QSpinBox(self)
        self.batch.setRange(1, 1024)
        self.batch.setValue(current.batch_size)
        self.model = QLineEdit(current.model, self)
        self.model.setPlaceholderText("Bundled all-MiniLM-L6-v2")
        browse = QPushButton("Folder…", self)
        browse.clicked.connect(self._browse)
        model_row = QHBoxLayout()
        model_row.addWidget(self.model, 1)
        model_row.addWidget(browse)
        found_label = QLabel("Found on this machine: " + ", ".join(found), self)
        form = QFormLayout(self)
        form.addRow("Device", self.device)
        form.addRow("", found_label)
        form.addRow("Batch size", self.batch)
        form.addRow("Model", model_row)
        note = QLabel("A sentence-transformers folder, or a hub name (downloaded once, only "
                      "when you ask for it). Empty: the bundled model."
                      + (f"\nThis project uses: {project_model}" if project_model else ""),
                      self)
        note.setWordWrap(True)
        form.addRow("", note)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel, self)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "A sentence-transformers model folder")
        if folder:
            self.model.setText(folder)

    def preferences(self) -> Preferences:
        return Preferences(str(self.device.currentData()), self.batch.value(),
                           self.model.text().strip())
