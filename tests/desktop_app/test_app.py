"""run(): the window comes up without torch, opens the project given, and exits cleanly."""

from __future__ import annotations

import functools
import gc
import subprocess
import sys
import threading
import weakref

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QApplication

import desktop_app.app as app_module
from desktop_app.bridge import EngineBridge
from desktop_app.controllers.import_controller import ImportController
from desktop_app.main_window import MainWindow
from engine.add_file import ImportChoices
from tests.desktop_app.conftest import QUESTIONS_ITEMS, SIGNAL_TIMEOUT_MS, open_in


def test_the_window_module_does_not_import_torch():
    """Importing torch takes seconds: it must wait for the model load, after show()."""
    code = ("import sys, desktop_app.app; "
            "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_run_opens_the_project_and_returns_the_exit_code(qtbot, encoder, questions_project,
                                                         settings, monkeypatch):
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)        # run() installs its own
    monkeypatch.setattr(app_module, "EngineBridge",
                        functools.partial(EngineBridge, encoder=encoder))
    monkeypatch.setattr(app_module, "MainWindow",                 # not the user's settings
                        functools.partial(MainWindow, settings=settings))
    seen: dict[str, object] = {}

    def poll() -> None:
        windows = [w for w in QApplication.topLevelWidgets()
                   if isinstance(w, MainWindow) and w.isVisible()]
        if windows and windows[0].items_model.rowCount() == QUESTIONS_ITEMS \
                and "items" in (windows[0]._info or {}):   # the counts come after the rows
            seen["status"] = windows[0].status_label.text()
            seen["window"] = windows[0]
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
        if "window" in seen:
            seen.pop("window").deleteLater()   # gone before the next test, on this thread
            qtbot.wait(10)
    assert "48 items" in str(seen["status"])
    assert not gc.isenabled()                  # run() put back the collection it found


def test_cyclic_garbage_is_collected_on_the_gui_thread_only(qtbot, bridge, questions_csv,
                                                            tmp_path):
    """Automatic collection runs in whichever thread allocates, the engine's pool threads
    included, and would destroy Qt objects there; the app's collector runs on the GUI thread
    only, and still frees cycles."""
    on_gui_thread: list[bool] = []

    def seen(phase: str, _info: dict) -> None:
        if phase == "start":
            on_gui_thread.append(threading.current_thread() is threading.main_thread())

    gc.enable()                                # as before run() sets the policy
    gc.callbacks.append(seen)
    try:
        with app_module.garbage_collected_on_gui_thread(interval=0.05):
            cycle = QObject()
            cycle.me = cycle                   # only a cyclic collection frees it
            freed = weakref.ref(cycle)
            del cycle
            open_in(qtbot, bridge, tmp_path / "gc.duplens", create=True)
            imports = ImportController(bridge)
            with qtbot.waitSignal(imports.finished, timeout=SIGNAL_TIMEOUT_MS):
                imports.start(ImportChoices(str(questions_csv), ["question"], "qid"))
            qtbot.waitUntil(lambda: freed() is None, timeout=10_000)   # by the timer
        assert gc.isenabled()                  # put back as it was
    finally:
        gc.callbacks.remove(seen)
        gc.disable()                           # the window tests' setting (conftest)
    assert on_gui_thread and all(on_gui_thread)
