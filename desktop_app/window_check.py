"""The window's part of `duplens selfcheck`: show it, open the checked project, search, close.

A frozen build can pass every engine step and still fail to show a window (a missing Qt
platform plugin, image format or style), so the check drives the real `MainWindow` the way
a user would: type a question and wait for the list of similar rows. It runs on whatever
Qt platform is set: `offscreen` on a headless machine, the native one on a desktop runner.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from engine.install_check import EXPECTED_TOP, QUERY, SAMPLE, SelfCheckFailed, SelfCheckReport

TIMEOUT_S = 60.0


def check_window(project_path: Path, encoder: object, report: SelfCheckReport,
                 say: Callable[[str], None]) -> None:
    """Raise `SelfCheckFailed` if the window does not show, open, search or close, or if
    the icon, the sample questions or the About box are missing from the bundle."""
    from PySide6.QtWidgets import QApplication

    from desktop_app.app import garbage_collected_on_gui_thread

    app = QApplication.instance() or QApplication(sys.argv[:1])
    with garbage_collected_on_gui_thread():   # as run() does: see its docstring
        _check_window(app, project_path, encoder, report, say)


def _check_window(app, project_path: Path, encoder: object, report: SelfCheckReport,
                  say: Callable[[str], None]) -> None:
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from desktop_app.app import apply_identity
    from desktop_app.bridge import EngineBridge
    from desktop_app.main_window import MainWindow
    from desktop_app.resources import sample_questions_path

    with report.step("show the window", say):
        apply_identity(app)
        # Settings in the temporary folder: the check must not touch the user's recent list.
        settings = QSettings(str(project_path.with_suffix(".ini")), QSettings.Format.IniFormat)
        bridge = EngineBridge(encoder=encoder)
        window = MainWindow(bridge, settings)
        window.show()
        _wait_until(lambda: window.isVisible() and window.windowHandle() is not None,
                    "the window to show")
    say(f"qt        platform {QApplication.platformName()}")
    try:
        if app.windowIcon().isNull():
            raise SelfCheckFailed("the application icon did not load")
        if not sample_questions_path().is_file():
            raise SelfCheckFailed(f"no sample questions at {sample_questions_path()}")
        with report.step("About box", say):
            window.about_action.trigger()
            _wait_until(lambda: window.about_dialog.isVisible(), "the About box")
            window.about_dialog.reject()
        with report.step("open the project in the window", say):
            window.open_project(str(project_path))
            _wait_until(lambda: window.items_model.rowCount() == len(SAMPLE),
                        f"the table to list {len(SAMPLE)} rows")
        with report.step("search in the window", say):
            window.search_panel.query.setText(QUERY)
            _wait_until(lambda: window.search_panel.results.count() > 0, "search results")
        shown = window.search_panel.texts()
        top = sorted(label.split(" ·")[0] for label in shown[:2])
        if " ".join(top) != EXPECTED_TOP:
            raise SelfCheckFailed(f"the window listed {shown[:3]}, expected {EXPECTED_TOP}")
    finally:
        with report.step("close the window", say):
            window.close()
            bridge.shutdown()
            app.processEvents()


def _wait_until(condition: Callable[[], bool], what: str) -> None:
    """Run the event loop until `condition()` holds; fail after `TIMEOUT_S`."""
    from PySide6.QtCore import QEventLoop
    from PySide6.QtWidgets import QApplication

    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            raise SelfCheckFailed(f"timed out after {TIMEOUT_S:.0f} s waiting for {what}")
        QApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
        time.sleep(0.005)
