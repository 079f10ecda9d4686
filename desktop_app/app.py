"""`run()`: start the window. The window is shown before the model starts loading.

Importing torch and loading the model takes seconds; doing it first would leave the user
looking at nothing. The bridge imports only the engine facade (numpy, SQLAlchemy, hnswlib),
the window appears, then `warm_up` loads the model in a pool thread while the status bar
says so.
"""

from __future__ import annotations

import gc
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication

from desktop_app.bridge import EngineBridge
from desktop_app.main_window import MainWindow
from desktop_app.safety import install_excepthook
from engine.logfile import setup_logging

if TYPE_CHECKING:
    from pyqtgraph.util.garbage_collector import GarbageCollector

log = logging.getLogger("duplens.gui")


def apply_identity(app: QApplication) -> None:
    """Name, version and icon: QSettings, the About box and every window use them."""
    from PySide6.QtGui import QIcon

    from desktop_app.resources import icon_path
    from engine import __version__

    app.setOrganizationName("Duplens")
    app.setApplicationName("Duplens")
    app.setApplicationVersion(__version__)
    app.setWindowIcon(QIcon(str(icon_path())))


class OpenFileEvents(QObject):
    """Opens the project macOS asks for: Finder sends a double-clicked .duplens file as an
    Apple Event (Qt's QFileOpenEvent), not as a command-line argument."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self._window = window

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.FileOpen and event.file():  # type: ignore[attr-defined]
            self._window.open_project(event.file())  # type: ignore[attr-defined]
            return True
        return super().eventFilter(watched, event)


@contextmanager
def garbage_collected_on_gui_thread(interval: float = 1.0) -> Iterator[GarbageCollector]:
    """While inside: Python's automatic cyclic collection is off and pyqtgraph's
    `GarbageCollector` collects on a GUI-thread timer instead. Leaving collects once more
    and puts Python's setting back as it was.

    Why: automatic collection runs in whichever thread happens to allocate, and the engine
    allocates most in its pool threads. A Qt object caught in a reference cycle (a closed
    dialog, a bridge) was then destroyed there, off the thread that owns it, which Qt does
    not allow. It deadlocked the window tests about one run in six under load: a pool
    thread's collection destroyed a hidden window's menu, holding a Qt mutex while waiting
    for the GIL, while the GUI thread held the GIL and waited for that mutex. Collected on
    the GUI thread, that cannot happen.
    """
    from pyqtgraph.util.garbage_collector import GarbageCollector

    automatic = gc.isenabled()
    collector = GarbageCollector(interval=interval)
    try:
        yield collector
    finally:
        collector.timer.stop()
        gc.collect()
        if automatic:
            gc.enable()


def run(project_path: str | None = None) -> int:
    """Show the window (opening `project_path` if given) and run the event loop."""
    setup_logging()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    apply_identity(app)
    with garbage_collected_on_gui_thread():
        bridge = EngineBridge()
        window = MainWindow(bridge)
        install_excepthook(window.show_error)
        app.installEventFilter(OpenFileEvents(window))
        window.show()
        # After the first paint: the model load then never delays the window appearing.
        QTimer.singleShot(0, bridge.warm_up)
        if project_path:
            window.open_project(project_path)
        try:
            return app.exec()
        finally:
            bridge.shutdown()
