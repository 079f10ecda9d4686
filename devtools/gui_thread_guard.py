"""Every database statement run on the GUI thread, for the tests and benchmarks that promise none.

README promises that the window never reads the database on the GUI thread: on a team
project each read is a network round trip, and a slow server would freeze scrolling and
typing. Whether a read happens there is invisible in a test on a fast local file, so
`gui_thread_statements()` makes it visible: while it is entered (on the GUI thread), every
SQLAlchemy connection opened and every statement run by any engine in the process on that
thread is recorded, with the code that asked for it. A test drives the window inside it and
asserts the record is empty; a benchmark reports its length.

It listens to SQLAlchemy's engine events (`engine_connect`, `before_cursor_execute`) rather
than wrapping one project's store: a project opened later, a second store, or a read that
bypasses `Store.read()` is caught as well. Code run by the test itself on the GUI thread
(making a project, checking what it holds) belongs outside the `with` block.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OURS = tuple(str(ROOT / package) for package in ("desktop_app", "engine"))


@dataclass(frozen=True)
class GuiThreadStatement:
    """One connection or statement on the GUI thread, and the app's frames that asked."""

    statement: str      # the SQL, or "connect" for a connection opened there
    where: tuple[str, ...]

    def __str__(self) -> str:
        return f"{' '.join(self.statement.split())[:160]}\n    " + "\n    ".join(self.where)


@contextmanager
def gui_thread_statements() -> Iterator[list[GuiThreadStatement]]:
    """Record, in the list yielded, what reaches a database from the GUI thread meanwhile.

    Enter it on the GUI thread (Qt's main thread, which the app's window runs on)."""
    from PySide6.QtCore import QCoreApplication, QThread
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    app = QCoreApplication.instance()
    if app is None or QThread.currentThread() != app.thread():
        raise RuntimeError("gui_thread_statements() is entered on the GUI thread, once a "
                           "QApplication exists")
    gui = threading.get_ident()
    seen: list[GuiThreadStatement] = []

    def note(statement: str) -> None:
        if threading.get_ident() == gui:
            seen.append(GuiThreadStatement(statement, _our_frames()))

    def connected(_conn) -> None:
        note("connect")

    def executed(_conn, _cursor, statement, _parameters, _context, _executemany) -> None:
        note(statement)

    event.listen(Engine, "engine_connect", connected)
    event.listen(Engine, "before_cursor_execute", executed)
    try:
        yield seen
    finally:
        event.remove(Engine, "engine_connect", connected)
        event.remove(Engine, "before_cursor_execute", executed)


def _our_frames() -> tuple[str, ...]:
    """The app's own frames of the current stack, innermost last (the GUI code that read)."""
    return tuple(f"{Path(f.filename).relative_to(ROOT)}:{f.lineno} {f.name}"
                 for f in traceback.extract_stack()[:-3] if f.filename.startswith(OURS))


def describe(seen: list[GuiThreadStatement]) -> str:
    """Each place that read on the GUI thread once, with how often and its first statement."""
    by_place: dict[tuple[str, ...], list[GuiThreadStatement]] = {}
    for s in seen:
        by_place.setdefault(s.where, []).append(s)
    return "\n".join(f"{len(found)}x {found[0]}" for found in by_place.values())
