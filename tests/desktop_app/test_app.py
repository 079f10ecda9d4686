"""run(): the window comes up without torch, opens the project given, and exits cleanly."""

from __future__ import annotations

import functools
import subprocess
import sys

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

import desktop_app.app as app_module
from desktop_app.bridge import EngineBridge
from desktop_app.main_window import MainWindow
from tests.desktop_app.conftest import QUESTIONS_ITEMS


def test_the_window_module_does_not_import_torch():
    """Importing torch takes seconds: it must wait for the model load, after show()."""
    code = ("import sys, desktop_app.app; "
            "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_run_opens_the_project_and_returns_the_exit_code(qtbot, encoder, questions_project,
                                                         monkeypatch):
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)        # run() installs its own
    monkeypatch.setattr(app_module, "EngineBridge",
                        functools.partial(EngineBridge, encoder=encoder))
    seen: dict[str, object] = {}

    def poll() -> None:
        windows = [w for w in QApplication.topLevelWidgets()
                   if isinstance(w, MainWindow) and w.isVisible()]
        if windows and windows[0].items_model.rowCount() == QUESTIONS_ITEMS:
            seen["status"] = windows[0].status_label.text()
            windows[0].hide()      # not close(): its queued quit event would end later loops
            QApplication.exit(0)

    timer = QTimer()
    timer.timeout.connect(poll)
    timer.start(50)
    guard = QTimer()
    guard.setSingleShot(True)
    guard.timeout.connect(lambda: QApplication.exit(3))          # never hang the suite
    guard.start(30_000)
    try:
        assert app_module.run(str(questions_project)) == 0
    finally:
        timer.stop()
        guard.stop()
    assert "48 items" in str(seen["status"])
