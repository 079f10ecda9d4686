"""The window's message boxes: an error with its details, and whether to load a model from
elsewhere. Both are window-modal and opened, never `exec()`-ed: the window keeps running
(and tests can read and close them)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget


def error_box(parent: QWidget, message: str, details: str = "") -> QMessageBox:
    """A warning box saying `message`; a bug's traceback (`details`) under "Show Details…"."""
    box = QMessageBox(QMessageBox.Icon.Warning, "Duplens", message,
                      QMessageBox.StandardButton.Ok, parent)
    if details:
        box.setDetailedText(details)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.open()
    return box


def model_consent_box(parent: QWidget, message: str,
                      answered: Callable[[bool], object]) -> QMessageBox:
    """Ask whether to load the model a project names outside its own folder: loading it runs
    its tokenizer and weights, so the user decides (`engine.model_trust`). No is the default;
    `answered(True)` for Yes, `answered(False)` otherwise."""
    box = QMessageBox(QMessageBox.Icon.Question, "Load this model?",
                      f"{message}.\n\nLoad it only if you trust whoever sent this "
                      f"project. Your answer is remembered for this project.",
                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, parent)
    box.setDefaultButton(QMessageBox.StandardButton.No)
    box.setObjectName("modelConsent")
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.finished.connect(lambda _result: answered(
        box.standardButton(box.clickedButton()) == QMessageBox.StandardButton.Yes))
    box.open()
    return box
