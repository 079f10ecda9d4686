"""`run()`: start the window. The window is shown before the model starts loading.

Importing torch and loading the model takes seconds; doing it first would leave the user
looking at nothing. The bridge imports only the engine facade (numpy, SQLAlchemy, hnswlib),
the window appears, then `warm_up` loads the model in a pool thread while the status bar
says so.
"""

from __future__ import annotations

import logging
import sys

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from desktop_app.bridge import EngineBridge
from desktop_app.main_window import MainWindow
from desktop_app.safety import install_excepthook
from engine.logfile import setup_logging

log = logging.getLogger("duplens.gui")


def run(project_path: str | None = None) -> int:
    """Show the window (opening `project_path` if given) and run the event loop."""
    setup_logging()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    app.setOrganizationName("Duplens")
    app.setApplicationName("Duplens")
    bridge = EngineBridge()
    window = MainWindow(bridge)
    install_excepthook(window.show_error)
    window.show()
    # After the first paint: the model load then never delays the window appearing.
    QTimer.singleShot(0, bridge.warm_up)
    if project_path:
        window.open_project(project_path)
    try:
        return app.exec()
    finally:
        bridge.shutdown()
