"""`SettingsDialog`: device, batch size, model and backend, kept in QSettings between runs.

The device list shows what this machine really has (the engine probes CUDA and MPS); "auto"
takes the fastest of those. The backend list starts with "Automatic" (the default): a new
project gets the fastest backend that passed the quality gate here
(`backend_choice.default_backend`: OpenVINO bf16 on a CPU with bf16 units, else PyTorch), a
project with embeddings keeps the backend they were made with. Then the fast CPU backends
whose packages are installed (`engine.encoding.backends`), the others greyed out with what
to install.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QSettings
from PySide6.QtGui import QStandardItemModel
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
    backend: str = "auto"      # engine.encoding.backends: AUTO or a name in BACKENDS
    encode_on: str = "local"   # engine.encoding.executors.executor_for: local, ray, ray=ADDR

    @classmethod
    def load(cls, settings: QSettings) -> Preferences:
        device = str(settings.value("engine/device", "auto"))
        try:
            batch = int(settings.value("engine/batch_size", 64))
        except (TypeError, ValueError):
            batch = 64
        from engine.encoding.backends import AUTO, BACKENDS

        backend = str(settings.value("engine/backend", AUTO))
        encode_on = str(settings.value("engine/encode_on", "local"))
        return cls(device if device in dict(DEVICES) else "auto", min(max(batch, 1), 1024),
                   str(settings.value("engine/model", "")),
                   backend if backend in BACKENDS else AUTO,
                   encode_on if encode_on == "local" or encode_on.startswith("ray") else "local")

    def save(self, settings: QSettings) -> None:
        settings.setValue("engine/device", self.device)
        settings.setValue("engine/batch_size", self.batch_size)
        settings.setValue("engine/model", self.model)
        settings.setValue("engine/backend", self.backend)
        settings.setValue("engine/encode_on", self.encode_on)


def found_devices() -> list[str]:
    """Devices torch can use here; imported lazily (torch takes seconds to import)."""
    from engine.encoding.model_spec import available_devices

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
        self.backend = backend_combo(current.backend, self)
        form = QFormLayout(self)
        form.addRow("Device", self.device)
        form.addRow("", found_label)
        form.addRow("Batch size", self.batch)
        form.addRow("Model", model_row)
        form.addRow("Backend", self.backend)
        self.encode_on, self.ray_address = encode_on_widgets(current.encode_on, self)
        encode_row = QHBoxLayout()
        encode_row.addWidget(self.encode_on)
        encode_row.addWidget(self.ray_address, 1)
        form.addRow("Encode on", encode_row)
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
        encode_on = "local"
        if self.encode_on.currentData() == "ray":
            address = self.ray_address.text().strip()
            encode_on = f"ray={address}" if address else "ray"
        return Preferences(str(self.device.currentData()), self.batch.value(),
                           self.model.text().strip(), str(self.backend.currentData()),
                           encode_on)


def encode_on_widgets(current: str, parent: QWidget) -> tuple[QComboBox, QLineEdit]:
    """"This computer" or "A Ray cluster" and its address; the cluster greyed out, saying
    what to install, when Ray is not installed (the desktop installers leave it out)."""
    from engine.encoding.executors import ray_available

    combo = QComboBox(parent)
    combo.addItem("This computer", "local")
    usable = ray_available()
    combo.addItem("A Ray cluster" + ("" if usable else " — needs duplens[ray]"), "ray")
    model = combo.model()
    if not usable and isinstance(model, QStandardItemModel):
        model.item(1).setEnabled(False)
    address = QLineEdit(current.partition("=")[2], parent)
    address.setPlaceholderText("ray://head:10001 (empty: a Ray on this computer)")
    combo.setCurrentIndex(1 if usable and current.startswith("ray") else 0)
    address.setEnabled(combo.currentIndex() == 1)
    combo.currentIndexChanged.connect(lambda i: address.setEnabled(i == 1))
    combo.setToolTip("Where imports encode their rows. A Ray cluster spreads the batches "
                     "over its workers; the rows and the index stay with the project.")
    return combo, address


def backend_combo(current: str, parent: QWidget) -> QComboBox:
    """"Automatic" (naming what it picks on the CPU), then every backend; those whose
    packages are missing are greyed out and say what to install. The int8 ones give
    different embeddings: a project is encoded again."""
    from engine.encoding.backend_choice import default_backend
    from engine.encoding.backends import AUTO, BACKENDS, available_backends, missing_modules

    combo = QComboBox(parent)
    usable = set(available_backends())
    model = combo.model()
    combo.addItem(f"Automatic (on the CPU: {BACKENDS[default_backend('cpu')].label})", AUTO)
    usable.add(AUTO)
    for name, backend in BACKENDS.items():
        label = backend.label if backend.exact else f"{backend.label} (encodes again)"
        if name not in usable:
            label += (f" — needs duplens[{backend.extra}]" if missing_modules(backend)
                      else " — needs a CPU with bf16 units")
        combo.addItem(label, name)
        if name not in usable and isinstance(model, QStandardItemModel):
            model.item(combo.count() - 1).setEnabled(False)
    index = combo.findData(current if current in usable else AUTO)
    combo.setCurrentIndex(max(0, index))
    combo.setToolTip("Automatic: a new project gets the fastest backend that keeps quality "
                     "here; a project keeps the backend its embeddings were made with. ONNX "
                     "Runtime and OpenVINO run on the CPU. Their int8 forms and OpenVINO "
                     "bf16 are faster but give slightly different similarities, so choosing "
                     "one encodes a project again (its earlier embeddings are kept).")
    return combo
