"""A project from someone else whose model lies outside its own folder: the window asks
before loading it, remembers a yes for that project, and loads nothing on a no."""

from __future__ import annotations

from dataclasses import replace

import pytest
from PySide6.QtWidgets import QApplication, QMessageBox

from desktop_app.bridge import EngineBridge
from desktop_app.main_window import MainWindow
from engine import model_trust
from engine.encoding.encoder import SentenceEncoder
from engine.project import Project
from tests.desktop_app.conftest import SIGNAL_TIMEOUT_MS
from tests.model_folders import model_copy


@pytest.fixture
def their_project(tmp_path, encoder, monkeypatch):
    """A project whose model is a folder beside it, approved by its sender's Duplens only:
    this user's config (another folder) has no consent for it."""
    monkeypatch.setenv("DUPLENS_CONFIG_DIR", str(tmp_path / "sender-config"))
    folder = model_copy(tmp_path / "shared-models" / "minilm")
    sender = SentenceEncoder(encoder.model, replace(encoder.spec, location=str(folder)), "cpu")
    path = tmp_path / "theirs.duplens"
    with Project.open(path, create=True) as project:
        project.model.attach(sender, is_default=False)
    monkeypatch.setenv("DUPLENS_CONFIG_DIR", str(tmp_path / "my-config"))
    return path, str(folder.resolve())


@pytest.fixture
def window_loading_models(qtbot, settings):
    """A window whose bridge loads each project's own model, as the app does."""
    bridge = EngineBridge()
    w = MainWindow(bridge, settings)
    qtbot.addWidget(w)
    w.show()
    yield w
    bridge.shutdown()


def _consent_box(qtbot) -> QMessageBox:
    def shown() -> QMessageBox | None:
        for widget in QApplication.topLevelWidgets():
            if isinstance(widget, QMessageBox) and widget.objectName() == "modelConsent" \
                    and widget.isVisible():
                return widget
        return None

    qtbot.waitUntil(lambda: shown() is not None, timeout=SIGNAL_TIMEOUT_MS)
    return shown()


def _open_and_ask(qtbot, window: MainWindow, path) -> QMessageBox:
    with qtbot.waitSignal(window.bridge.modelNeedsConsent, timeout=SIGNAL_TIMEOUT_MS):
        window.open_project(str(path))
        window.bridge.warm_up()
    return _consent_box(qtbot)


def test_no_loads_nothing_and_remembers_nothing(qtbot, window_loading_models, their_project):
    path, folder = their_project
    box = _open_and_ask(qtbot, window_loading_models, path)
    assert folder in box.text() and "trust" in box.text()
    box.button(QMessageBox.StandardButton.No).click()
    qtbot.waitUntil(lambda: not box.isVisible())
    assert not window_loading_models.bridge.model_ready
    assert folder not in model_trust.approved(path)


def test_yes_loads_the_model_and_is_remembered(qtbot, window_loading_models, their_project):
    path, folder = their_project
    box = _open_and_ask(qtbot, window_loading_models, path)
    with qtbot.waitSignal(window_loading_models.bridge.modelReady, timeout=SIGNAL_TIMEOUT_MS):
        box.button(QMessageBox.StandardButton.Yes).click()
    assert window_loading_models.bridge.model_ready
    assert folder in model_trust.approved(path)
