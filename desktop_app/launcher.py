"""The `duplens` console script: the engine's command line, plus the window for `gui`.

Qt is imported only when the window is asked for, so every other command stays as light as
`python -m engine.cli`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from engine.cli import main as cli_main


def _open_window(project: str | None) -> int:
    from desktop_app.app import run

    return run(project)


def _check_window(*args) -> None:
    from desktop_app.window_check import check_window

    check_window(*args)


def main(argv: Sequence[str] | None = None) -> int:
    return cli_main(argv, open_window=_open_window, check_window=_check_window)


if __name__ == "__main__":
    sys.exit(main())
