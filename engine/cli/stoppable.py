"""A command's progress bar, and what it says when the user stops it: written once.

Every long step of a command draws a bar on stderr and may be stopped by Ctrl-C (the engine
raises `Cancelled` at its next checkpoint). Each command used to spell out the same block:
make the bar, catch `Cancelled`, close the bar, say what was kept, return exit 130. Here it
is one `with`:

    with stoppable_bar("stopped; nothing was written") as bar:
        result = project.clusters.cut(threshold, progress=bar, cancel=cancel)

A stop becomes `Stopped`, which the dispatcher (`engine.cli.dispatch`) says and turns into
exit status 130, after every `with` around it has closed (the project among them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from engine.errors import Cancelled
from engine.progress import Progress


class Stopped(Exception):
    """The user stopped a command; `str(self)` is the one line that says what was kept."""


class Bars(Protocol):
    """What draws a command's progress: fed `Progress`, closed at the end."""

    def __call__(self, p: Progress) -> None: ...

    def close(self) -> None: ...


@contextmanager
def stoppable_bar(stopped: str = "stopped", *, bars: Callable[[], Bars] | None = None
                  ) -> Iterator[Bars]:
    """A progress callback drawing tqdm bars (`TqdmProgress`, one per stage; `bars` makes
    another kind, e.g. `StageBars`), closed when the block ends; a stop inside the block
    becomes `Stopped(stopped)`."""
    if bars is None:
        from engine.progress_bar import TqdmProgress

        bars = TqdmProgress
    bar = bars()
    try:
        yield bar
    except Cancelled:
        raise Stopped(stopped) from None
    finally:
        bar.close()
