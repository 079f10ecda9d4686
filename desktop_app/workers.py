"""Running one engine call off the GUI thread and reporting back through queued signals.

A `QRunnable` is not a `QObject` and cannot own signals, so every worker reports through a
`WorkRelay` created on the GUI thread: Qt then queues its emissions to the GUI thread, and
the bridge's slots (the only receivers) always run there. Workers never raise: an escaped
exception in a pool thread would be printed and lost, leaving the window waiting forever.
"""

from __future__ import annotations

import logging
import math
import time
import traceback
from collections.abc import Callable

from PySide6.QtCore import QObject, QRunnable, Signal

from engine.errors import Cancelled, DuplensError
from engine.jobs import Progress

log = logging.getLogger("duplens.gui")

UNEXPECTED = "Unexpected error"


class WorkRelay(QObject):
    """Signals a worker thread emits; connected to the bridge, so delivered on its thread."""

    done = Signal(int, object)           # token, result
    failed = Signal(int, str, str)       # token, message, details
    cancelled = Signal(int)              # token
    progress = Signal(str, int, int, float)  # stage, done, total, rate
    loading = Signal()                       # the model load really starts


class Worker(QRunnable):
    """Calls `fn()` in a pool thread and reports its outcome under `token`, exactly once."""

    def __init__(self, token: int, fn: Callable[[], object], relay: WorkRelay) -> None:
        super().__init__()
        self.setAutoDelete(True)
        self._token = token
        self._fn = fn
        self._relay = relay

    def run(self) -> None:
        try:
            try:
                result = self._fn()
            except Cancelled:
                self._relay.cancelled.emit(self._token)
            except DuplensError as exc:
                log.info("input error: %s", exc)
                self._relay.failed.emit(self._token, str(exc), "")
            except Exception:  # noqa: BLE001 - a bug: report it, never kill the thread
                details = traceback.format_exc()
                log.error("unexpected error in a background job\n%s", details)
                self._relay.failed.emit(self._token, UNEXPECTED, details)
            else:
                self._relay.done.emit(self._token, result)
        except RuntimeError:  # the relay was deleted while we ran (window closed): drop it
            log.debug("result of job %s dropped: the window is gone", self._token)


class Throttle:
    """Forwards at most one progress report per `interval` seconds per stage.

    Encoding reports every batch (hundreds per second on a GPU); queuing each as a Qt event
    would flood the GUI thread. The last report of a stage is never lost: it goes out when
    the stage changes or on `flush()`, so the bar always ends at the true count.
    """

    def __init__(self, emit: Callable[[Progress], None], interval: float = 0.1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._emit = emit
        self._interval = interval
        self._clock = clock
        self._last_time = -math.inf
        self._stage: str | None = None
        self._pending: Progress | None = None

    def __call__(self, progress: Progress) -> None:
        now = self._clock()
        if progress.stage != self._stage:
            self.flush()
            self._send(progress, now)
        elif self._due(progress, now):
            self._send(progress, now)
        else:
            self._pending = progress

    def _due(self, progress: Progress, now: float) -> bool:
        final = progress.total > 0 and progress.done >= progress.total
        return final or now - self._last_time >= self._interval

    def flush(self) -> None:
        """Send the report held back by the throttle, if any."""
        if self._pending is not None:
            self._send(self._pending, self._clock())

    def _send(self, progress: Progress, now: float) -> None:
        self._pending = None
        self._stage = progress.stage
        self._last_time = now
        self._emit(progress)
