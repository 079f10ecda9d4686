"""Plain-Python progress reporting and cooperative cancellation for long engine work.

The GUI adapter turns `Progress` callbacks into Qt signals and sets a `CancelToken` from a
button; the CLI feeds the same callbacks into tqdm. Nothing here knows about either.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from engine.errors import Cancelled


@dataclass(frozen=True)
class Progress:
    """A snapshot of a job: `done` of `total` units of `stage`, at `rate` units per second."""

    stage: str
    done: int
    total: int
    rate: float = 0.0
    message: str = ""
    # The time left where units differ in cost (texts of many windows): the job's own
    # estimate, which `eta_seconds` then gives instead of units left over the rate. Keyword
    # only, so that subclasses' positional fields (a training step's loss) stay where they
    # were.
    seconds_left: float | None = field(default=None, kw_only=True)

    @property
    def eta_seconds(self) -> float | None:
        if self.total <= self.done:
            return None
        if self.seconds_left is not None:
            return self.seconds_left
        if self.rate <= 0:
            return None
        return (self.total - self.done) / self.rate


ProgressCallback = Callable[[Progress], None]


def no_progress(_: Progress) -> None:
    """A callback that ignores progress, for headless callers that do not care."""


class CancelToken:
    """A flag another thread sets to ask a job to stop at its next checkpoint.

    Cooperative on purpose: jobs check it between batches, after committing, so stopping
    never leaves a half-written chunk behind.
    """

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Cancelled()


@dataclass
class RateMeter:
    """Units per second since the job started, for the `rate` field of `Progress`."""

    started: float = field(default_factory=time.perf_counter)

    def rate(self, done: int) -> float:
        elapsed = time.perf_counter() - self.started
        return done / elapsed if elapsed > 0 else 0.0
