"""The `duplens` console script: the engine's command line, plus the window for `gui`.

Qt is imported only when the window is asked for, so every other command stays as light as
`python -m engine.cli`. Before Qt starts, what it would abort on is checked: the system
libraries its X11 plugin needs (`desktop_app.xcb_libraries`; a missing one is one line
naming the packages to install) and a display to open the window on
(`desktop_app.display_server`; none is one line saying which could not be reached). Either
is exit status 2, not Qt's abort (134).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from engine.cli import EXIT_INPUT
from engine.cli import main as cli_main


def _before_qt() -> str | None:
    """What would make Qt abort the process, in one line, or None. The libraries first:
    without libxcb no X display can be tried either."""
    from desktop_app import display_server, xcb_libraries

    return xcb_libraries.problem() or display_server.problem()


def _open_window(project: str | None) -> int:
    problem = _before_qt()
    if problem is not None:
        print(problem, file=sys.stderr)
        return EXIT_INPUT
    # The engine (SQLAlchemy, NumPy, hnswlib and the services the window's controllers use)
    # before PySide6: the window imports it before its first paint anyway, and PySide6 reads
    # the source of every module imported after it (looking for its __feature__ switches),
    # which made these modules about 40% slower to import (measured on 2 cores).
    import engine.project  # noqa: F401
    from desktop_app.app import run

    return run(project)


def _check_window(*args) -> None:
    problem = _before_qt()
    if problem is not None:
        from engine.install_check import SelfCheckFailed

        raise SelfCheckFailed(problem.removeprefix("duplens: "))
    from desktop_app.window_check import check_window

    check_window(*args)


def main(argv: Sequence[str] | None = None) -> int:
    return cli_main(argv, open_window=_open_window, check_window=_check_window)


if __name__ == "__main__":
    sys.exit(main())
