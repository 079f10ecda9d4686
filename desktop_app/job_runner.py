"""The job runner: engine work off the GUI thread, its outcome back on it, written once.

A job is a plain function `fn(job)` run in one of the runner's thread pools. `job` (a `Job`)
gives it the open project, a throttled progress callback and a cancel token to hand the
engine, `partial(value)` for results that come before the end (training losses), and a way
to say the model is loading or ready. What it returns, raises, reports or sends reaches the
caller's callbacks on the GUI thread, as with Orange's `ConcurrentMixin` (`on_done`,
`on_exception`, `on_partial_result`):

- a `QRunnable` is not a `QObject` and cannot own signals, so workers report through one
  `_Relay` created on the GUI thread: Qt queues its emissions there;
- workers never raise: an exception escaping a pool thread is printed and lost, and the
  window would wait forever. A `DuplensError` (the user's mistake or the machine's limit)
  comes back as its one-line message, anything else as "Unexpected error" with the
  traceback, `Cancelled` as a cancellation;
- progress is throttled (one report per stage per 0.1 s, the last never lost) and partial
  results are batched the same way: a GPU encodes hundreds of batches a second and training
  logs every step, and queuing each as a Qt event would flood the GUI thread;
- `latest=key`: a newer job with the same key makes the older ones stale. A stale job that
  has not started is skipped, and nothing of one is delivered, so a quick series of sorts,
  re-cuts or previews ends on the newest and never flips back;
- a callback bound to a Qt object deleted meanwhile (a closed dialog) is not called;
- a job without `on_failed` reports through `failed`, which the window shows as its error
  dialog; a view that shows its own errors (next to what the user was doing) passes one.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
import traceback
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import shiboken6
from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal, Slot

from engine.errors import Cancelled, DuplensError, ProjectError, user_error
from engine.progress import CancelToken, Progress

if TYPE_CHECKING:
    from engine.project import Project

log = logging.getLogger("duplens.gui")

T = TypeVar("T")
UNEXPECTED = "Unexpected error"
REPORT_INTERVAL_S = 0.1   # at most ten progress reports (and partial batches) a second


class Pool(Enum):
    """The runner's thread pools, one thread each, on purpose:

    - `CHANGES`, the one pool whose work changes the open project or its model: opening a
      project, loading a model, import + encode, fine-tuning, activating, copying out or
      deleting a model version, one at a time in the order asked, so an import never races
      the model load and a second open waits for the first;
    - `SEARCH`: the keystroke search, so it never waits behind a ten-minute import. Each
      search gets an increasing number; a request already superseded when its turn comes
      is skipped, and results older than the newest shown are dropped, so the list never
      flips back to an older query;
    - `REVIEW`: re-cutting clusters, verdicts, plots, export, what fine-tuning would learn
      from, the list of model versions, the counts of a project just opened, in order, so
      a verdict and the re-cut after it cannot cross and moving the threshold never waits
      behind an import;
    - `TABLE`: sorting and filtering the table of rows, the import dialog's preview and the
      list of imports, so a slow sort of a million rows delays neither the review nor the
      search;
    - `PAGES`: the table's pages of rows as it scrolls (`table_models.row_pages`), a few
      milliseconds each on a file, a round trip each on a server, so they never wait behind
      reading a million ids in order, and the rows on screen show while the rest are read.
    """

    CHANGES = "changes"
    SEARCH = "search"
    REVIEW = "review"
    TABLE = "table"
    PAGES = "pages"


class Throttle:
    """Forwards at most one progress report per `interval` seconds per stage.

    The last report of a stage is never lost: it goes out when the stage changes or on
    `flush()`, so a bar always ends at the true count.
    """

    def __init__(self, emit: Callable[[Progress], None], interval: float = REPORT_INTERVAL_S,
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


class _Relay(QObject):
    """Signals the pool threads emit; created on the GUI thread, so received there."""

    done = Signal(int, object)           # job number, result
    failed = Signal(int, str, str)       # job number, message, details
    cancelled = Signal(int)
    skipped = Signal(int)                # stale before it started: nothing to deliver
    progress = Signal(int, object)       # job number, Progress
    partial = Signal(int, list)          # job number, values sent since the last batch
    loading = Signal()                   # a model load really starts
    loaded = Signal(str, bool)           # device, reloaded (another model than before)


class Job:
    """What a job function gets, in its pool thread: the project and ways to report."""

    def __init__(self, number: int, token: CancelToken, relay: _Relay,
                 project: Callable[[], Project | None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.number = number
        self.token = token                    # hand it to the engine: `cancel=job.token`
        self.progress = Throttle(lambda p: relay.progress.emit(number, p), clock=clock)
        self._relay = relay
        self._project = project
        self._clock = clock
        self._partials: list[Any] = []
        self._partial_sent = -math.inf

    @property
    def project(self) -> Project:
        """The open project (as it is when asked); `ProjectError` when none is open."""
        project = self._project()
        if project is None:
            raise ProjectError("no project is open")
        return project

    @property
    def cancelled(self) -> bool:
        return self.token.cancelled

    def partial(self, value: Any) -> None:
        """A result before the end (a logged loss); they reach `on_partial` in batches."""
        self._partials.append(value)
        now = self._clock()
        if now - self._partial_sent >= REPORT_INTERVAL_S:
            self._send_partials(now)

    def model_loading(self) -> None:
        """The model load really starts (the status bar says so)."""
        self._relay.loading.emit()

    def model_ready(self, device: str, *, reloaded: bool = False) -> None:
        """The project's model is loaded on `device`; `reloaded`: it is another model (or
        backend) than the one loaded before. Searches held for the model go out then."""
        self._relay.loaded.emit(device, reloaded)

    def flush(self) -> None:
        """Send what the throttles still hold (the runner calls it when `fn` returns)."""
        self.progress.flush()
        if self._partials:
            self._send_partials(self._clock())

    def _send_partials(self, now: float) -> None:
        batch, self._partials = self._partials, []
        self._partial_sent = now
        self._relay.partial.emit(self.number, batch)


@dataclass(eq=False)
class JobHandle:
    """The caller's hold on one submitted job."""

    number: int
    _token: CancelToken = field(repr=False)

    def cancel(self) -> None:
        """Ask this job, and only it, to stop at its next checkpoint; one not started yet
        never starts. Its outcome still comes: `on_cancelled`, or the result the engine
        returns for a stopped run (an import keeps what it encoded)."""
        self._token.cancel()

    @property
    def cancel_requested(self) -> bool:
        return self._token.cancelled


@dataclass
class _Pending(Generic[T]):
    """What to call on the GUI thread when job `handle.number` reports."""

    handle: JobHandle
    pool: Pool
    latest: Hashable | None
    on_done: Callable[[T], object] | None
    on_failed: Callable[[str, str], object] | None
    on_cancelled: Callable[[], object] | None
    on_progress: Callable[[Progress], object] | None
    on_partial: Callable[[list[Any]], object] | None


class _Worker(QRunnable):
    """Runs one job in a pool thread and reports its outcome exactly once."""

    def __init__(self, job: Job, fn: Callable[[Job], object], relay: _Relay,
                 stale: Callable[[], bool]) -> None:
        super().__init__()
        self.setAutoDelete(True)
        self._job, self._fn, self._relay, self._stale = job, fn, relay, stale

    def run(self) -> None:
        try:
            if self._stale():
                self._relay.skipped.emit(self._job.number)
                return
            report = self._call()
            self._job.flush()   # the last progress and partial results go out before the end
            report()
        except RuntimeError:  # the relay was deleted while we ran (window closed): drop it
            log.debug("outcome of job %s dropped: the window is gone", self._job.number)

    def _call(self) -> Callable[[], None]:
        number, relay = self._job.number, self._relay
        try:
            self._job.token.raise_if_cancelled()
            result = self._fn(self._job)
        except Cancelled:
            return lambda: relay.cancelled.emit(number)
        except DuplensError as exc:
            log.info("input error: %s", exc)
            message = str(exc)
            return lambda: relay.failed.emit(number, message, "")
        except Exception as exc:  # noqa: BLE001 - a bug: report it, never kill the thread
            details = traceback.format_exc()
            mapped = user_error(exc)
            if mapped is not None:  # a full disk or a busy project: its one line
                log.info("input error: %s\n%s", mapped, details)
                line = str(mapped)
                return lambda: relay.failed.emit(number, line, "")
            log.error("unexpected error in a background job\n%s", details)
            return lambda: relay.failed.emit(number, UNEXPECTED, details)
        return lambda: relay.done.emit(number, result)


class JobRunner(QObject):
    """Runs job functions on its pools; delivers their outcome to callbacks on the GUI
    thread. Create it on the GUI thread."""

    failed = Signal(str, str)      # message, details: a job without on_failed, or a callback bug
    modelLoading = Signal()
    modelLoaded = Signal(str, bool)  # device, reloaded: from `Job.model_ready`

    def __init__(self, project: Callable[[], Project | None],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._project_source = project
        self._pools: dict[Pool, QThreadPool] = {}
        for pool in Pool:
            self._pools[pool] = QThreadPool(self)
            self._pools[pool].setMaxThreadCount(1)
        self._relay = _Relay(self)
        self._relay.done.connect(self._on_done)
        self._relay.failed.connect(self._on_failed)
        self._relay.cancelled.connect(self._on_cancelled)
        self._relay.skipped.connect(self._finish)
        self._relay.progress.connect(self._on_progress)
        self._relay.partial.connect(self._on_partial)
        self._relay.loading.connect(self.modelLoading)
        self._relay.loaded.connect(self.modelLoaded)
        self._numbers = itertools.count(1)
        self._pending: dict[int, _Pending[Any]] = {}
        self._latest: dict[Hashable, int] = {}   # key -> number of the newest job with it

    def run(self, fn: Callable[[Job], T], *, pool: Pool,
            on_done: Callable[[T], object] | None = None,
            on_failed: Callable[[str, str], object] | None = None,
            on_cancelled: Callable[[], object] | None = None,
            on_progress: Callable[[Progress], object] | None = None,
            on_partial: Callable[[list[Any]], object] | None = None,
            latest: Hashable | None = None) -> JobHandle:
        """Run `fn(job)` on `pool` after the jobs already queued there.

        Callbacks run on the GUI thread: `on_done(result)`; `on_failed(message, details)`
        (details: the traceback of a bug, "" for an engine error; without it, `failed`
        is emitted); `on_cancelled()` when it stopped by raising `Cancelled`;
        `on_progress(Progress)`, throttled; `on_partial(values)`, every value the job sent
        since the last batch, in order. With `latest`, a newer job with the same key makes
        this one stale: skipped if not started, and nothing of it delivered.
        """
        number = next(self._numbers)
        token = CancelToken()
        handle = JobHandle(number, token)
        self._pending[number] = _Pending(handle, pool, latest, on_done, on_failed,
                                         on_cancelled, on_progress, on_partial)
        if latest is not None:
            self._latest[latest] = number
        job = Job(number, token, self._relay, self._project_source)
        stale = lambda: self._is_stale(number, latest)  # noqa: E731 - read in the pool thread
        self._pools[pool].start(_Worker(job, fn, self._relay, stale))
        return handle

    def cancel_pool(self, pool: Pool) -> None:
        """Ask every job queued or running on `pool` to stop (closing the window)."""
        for pending in list(self._pending.values()):
            if pending.pool is pool:
                pending.handle.cancel()

    def wait(self, *pools: Pool) -> None:
        """Block until `pools` (all of them if none given) have run what was queued."""
        for pool in pools or tuple(Pool):
            self._pools[pool].waitForDone()

    # -- delivery, on the GUI thread -------------------------------------------------------
    def _is_stale(self, number: int, latest: Hashable | None) -> bool:
        return latest is not None and self._latest.get(latest) != number

    def _live(self, number: int) -> _Pending[Any] | None:
        """The pending job `number`, or None if it already ended or is stale."""
        pending = self._pending.get(number)
        if pending is None or self._is_stale(number, pending.latest):
            return None
        return pending

    @Slot(int)
    def _finish(self, number: int) -> _Pending[Any] | None:
        """Forget job `number`; return it unless it was stale (then nothing is delivered)."""
        pending = self._live(number)
        gone = self._pending.pop(number, None)
        if pending is None:
            if gone is not None:
                log.debug("dropped the outcome of stale job %d", number)
            return None
        if pending.latest is not None:
            del self._latest[pending.latest]   # it was the newest: keep the dict small
        return pending

    @Slot(int, object)
    def _on_done(self, number: int, result: object) -> None:
        pending = self._finish(number)
        if pending is not None:
            self._call(pending.on_done, result)

    @Slot(int, str, str)
    def _on_failed(self, number: int, message: str, details: str) -> None:
        pending = self._finish(number)
        if pending is None:
            return
        if pending.on_failed is None:
            self.failed.emit(message, details)
        else:
            self._call(pending.on_failed, message, details)

    @Slot(int)
    def _on_cancelled(self, number: int) -> None:
        pending = self._finish(number)
        if pending is not None:
            self._call(pending.on_cancelled)

    @Slot(int, object)
    def _on_progress(self, number: int, progress: Progress) -> None:
        pending = self._live(number)
        if pending is not None:
            self._call(pending.on_progress, progress)

    @Slot(int, list)
    def _on_partial(self, number: int, values: list) -> None:
        pending = self._live(number)
        if pending is not None:
            self._call(pending.on_partial, values)

    def _call(self, callback: Callable[..., object] | None, *args: object) -> None:
        if callback is None or not _receiver_alive(callback):
            return
        try:
            callback(*args)
        except Exception:  # noqa: BLE001 - a bug in a callback must not escape into Qt
            details = traceback.format_exc()
            log.error("unexpected error in a job's callback\n%s", details)
            self.failed.emit(UNEXPECTED, details)


def _receiver_alive(callback: Callable[..., object]) -> bool:
    """False for a method of a Qt object whose C++ side is gone (a dialog closed while its
    job ran): Qt drops signals to such receivers, and so does the runner."""
    owner = getattr(callback, "__self__", None)
    return not isinstance(owner, QObject) or shiboken6.isValid(owner)
