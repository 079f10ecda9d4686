"""`EngineBridge`: the one place where the window calls the engine.

Every engine call that can take more than a few milliseconds runs in a `QThreadPool`, and
its outcome comes back as a signal on the GUI thread, so widgets only ever react to signals.
Two pools, on purpose:

- jobs (open, model warm-up, import + encode) run one at a time, in the order asked, so an
  import never races the model load and a second open waits for the first;
- searches run on their own single-thread pool, so a keystroke's search never waits behind
  a ten-minute import;
- review work (re-cutting clusters, decisions, plots, export) runs on a third one-thread
  pool, in order, so moving the threshold never waits behind an import either;
- sorting and filtering the table of rows runs on a fourth, so a slow sort of a million
  rows delays neither the review nor the search.

Each search gets an increasing sequence number; a request already superseded when its turn
comes is skipped, and results older than the newest delivered are dropped, so the list never
flips back to an older query.

All public signals are emitted on the GUI thread (workers report through `WorkRelay`).
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtCore import QObject, QThreadPool, Signal, Slot

from desktop_app.workers import UNEXPECTED, Throttle, Worker, WorkRelay
from engine.browse import RowQuery
from engine.errors import ProjectError
from engine.jobs import CancelToken

if TYPE_CHECKING:
    # Imported where used, in pool threads: the facade pulls in pandas, SQLAlchemy and
    # hnswlib (about half a second), which must not delay the window appearing.
    from engine.encoding.encoder import SentenceEncoder
    from engine.project import Project

log = logging.getLogger("duplens.gui")

_SUPERSEDED = object()  # a search skipped because a newer one was asked before it started

# Jobs whose failures the view that asked for them shows (the fine-tuning wizard, the model
# versions dialog), next to what the user was doing, rather than as the window's dialog.
VIEW_REPORTED_JOBS = frozenset({"training_input", "finetune", "versions", "export_model",
                                "delete_model"})


@dataclass(frozen=True)
class RowSet:
    """The table's rows for one `RowQuery`: ids in order, the files' own columns, and how
    many rows the project has in all (to say "12 of 1,000,000")."""

    query: RowQuery
    order: np.ndarray
    columns: list[str]
    total: int


class _LossRelay(QObject):
    """Carries logged training losses from the job thread to the GUI thread (queued, as the
    `WorkRelay` does for the other reports)."""

    points = Signal(list)  # [(step, loss)]


@dataclass
class _Pending:
    """What to do on the GUI thread when the job under a token reports back."""

    job: str
    on_result: Callable[[Any], Any] | None = None
    announce: bool = True  # emit `finished`/`failed` for this job (searches use their own)


class EngineBridge(QObject):
    """Owns the open `Project` and runs its calls in the background; reports by signals."""

    projectOpened = Signal(dict)                 # project.info() plus "notices"
    progressed = Signal(str, int, int, float)    # stage, done, total (0: unknown), rate/s
    finished = Signal(str, object)               # job name, result
    failed = Signal(str, str, str)               # job name, message, details (traceback)
    cancelled = Signal(str)                      # job name; nothing of it was kept
    searchResults = Signal(int, str, list)       # sequence number, query, [SearchHit]
    modelLoading = Signal()
    modelReady = Signal(str)                     # device
    trainingLoss = Signal(list)                  # [(step, loss)] logged since the last report

    def __init__(self, parent: QObject | None = None, *,
                 encoder: SentenceEncoder | None = None) -> None:
        super().__init__(parent)
        self._jobs = QThreadPool(self)
        self._jobs.setMaxThreadCount(1)
        self._searches = QThreadPool(self)
        self._searches.setMaxThreadCount(1)
        self._review = QThreadPool(self)
        self._review.setMaxThreadCount(1)
        self._table = QThreadPool(self)
        self._table.setMaxThreadCount(1)
        self._relay = WorkRelay(self)
        self._relay.done.connect(self._on_done)
        self._relay.failed.connect(self._on_failed)
        self._relay.cancelled.connect(self._on_cancelled)
        self._relay.progress.connect(self._on_progress)
        self._relay.loading.connect(self._on_loading)
        self._loss_relay = _LossRelay(self)
        self._loss_relay.points.connect(self.trainingLoss)
        self._tokens = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._project_lock = threading.Lock()
        self._project: Project | None = None   # set and cleared in job threads, under lock
        self._encoder = encoder                 # a shared, already loaded model (tests)
        self._preloaded: SentenceEncoder | None = None   # default model, loaded before open
        self.device_preference = "auto"
        self.backend_preference = "torch"
        self.batch_size = 64
        self._cancel: CancelToken | None = None
        self._model_ready = False
        self._warm_wanted = False
        self._warming = False
        self._search_seq = 0
        self._latest_search = 0                 # read by the search thread: an int is atomic
        self._delivered_search = 0
        self._held_search: tuple[int, str, int] | None = None

    # -- state -----------------------------------------------------------------------------
    @property
    def model_ready(self) -> bool:
        return self._model_ready

    @property
    def has_project(self) -> bool:
        return self._current() is not None

    def current_project(self) -> Project:
        """The open project, for objects that only hand it to review-thread work."""
        return self._require_project()

    def _current(self) -> Project | None:
        with self._project_lock:
            return self._project

    def _require_project(self) -> Project:
        project = self._current()
        if project is None:
            raise ProjectError("no project is open")
        return project

    # -- jobs ------------------------------------------------------------------------------
    def open_project(self, path: str | os.PathLike[str], create: bool = False) -> None:
        """Open (or create) a project in the background; `projectOpened` when it is ready."""
        path = os.fspath(path)

        def work() -> dict:
            from engine.project import Project

            project = Project.open(path, create=create)
            try:
                project.device_preference = self.device_preference
                project.backend_preference = self.backend_preference
                project.batch_size = self.batch_size
                project.fast_queries = True   # attach_encoder prepares them (a job thread)
                if self._encoder is not None:
                    project.attach_encoder(self._encoder, is_default=True)
                elif self._preloaded is not None and project.uses_default_model():
                    project.attach_encoder(self._preloaded, is_default=True)
                info = _info(project)
            except BaseException:
                project.close()
                raise
            with self._project_lock:
                old, self._project = self._project, project
            if old is not None:
                self._searches.waitForDone()   # a search may still hold the old project
                self._review.waitForDone()
                old.close()
            return info

        self._submit(self._jobs, "open", work, self._opened)

    def _opened(self, info: dict) -> dict:
        self._model_ready = False   # each project has its own active model
        self.projectOpened.emit(info)
        shared = self._encoder
        if shared is None and self._preloaded is not None and info.get("default_model"):
            shared = self._preloaded
        if shared is not None:
            self._set_model_ready(shared.device)
        elif self._warm_wanted:
            self._start_warm_up()
        return info

    def warm_up(self) -> None:
        """Load the project's model in the background, so the first search is instant.

        Without an open project it loads the default model, which most projects use: a
        project opened later takes it over at once (others load their own model then).
        """
        self._warm_wanted = True
        self._start_warm_up()

    def _start_warm_up(self) -> None:
        if self._model_ready or self._warming:
            return
        self._warming = True

        def work() -> tuple[str, bool] | None:
            project = self._current()
            if project is None:
                if self._preloaded is not None or self._encoder is not None:
                    return None
                self._relay.loading.emit()
                from engine.encoding.loading import load_encoder

                preloaded = load_encoder(None, device=self.device_preference,
                                         batch_size=self.batch_size,
                                         backend=self.backend_preference)
                preloaded.prepare_fast_queries()
                self._preloaded = preloaded
                return preloaded.device, False
            self._relay.loading.emit()
            return project.encoder().device, True

        def warmed(result: tuple[str, bool] | None) -> str | None:
            self._warming = False
            if result is None:
                return None
            device, for_project = result
            if for_project:
                self._set_model_ready(device)
            else:
                self.modelReady.emit(device)
            return device

        self._submit(self._jobs, "warm_up", work, warmed, announce=False)

    def _set_model_ready(self, device: str) -> None:
        first = not self._model_ready
        self._model_ready = True
        if first:
            self.modelReady.emit(device)
        held, self._held_search = self._held_search, None
        if held is not None and held[0] == self._latest_search:
            self._submit_search(*held)

    def import_file(self, path: str | os.PathLike[str], text_columns: list[str],
                    id_column: str | None = None, sheet: str | None = None,
                    encoding: str | None = None, delimiter: str | None = None) -> None:
        """Import a spreadsheet into the open project, then encode and index its new rows.

        Reports `progressed` ("reading", then "encoding"), then `finished("import", {...})`
        with the import and encode reports and fresh info, or `cancelled("import")` if
        stopped while reading (nothing from the file is kept). Stopped while encoding, the
        rows stay and `finished` carries `cancelled: True` (encoding resumes next time).
        """
        path = os.fspath(path)
        columns = list(text_columns)

        def read(project: Project, throttle: Throttle, token: CancelToken) -> dict:
            return {"import": project.import_table(
                path, columns, id_column=id_column, sheet=sheet, encoding=encoding,
                delimiter=delimiter, progress=throttle, cancel=token)}

        self._run_encoding("import", read)

    def resume_encoding(self) -> None:
        """Encode what an earlier, stopped import left; reports like `import_file`'s encode.

        Finishes as `finished("encode", {...})` with the encode report and fresh info.
        """
        self._run_encoding("encode", None)

    def _new_progress(self) -> tuple[CancelToken, Throttle]:
        """A cancel token for the job about to start (what `cancel()` stops) and a throttle
        that turns its progress callbacks into `progressed` signals."""
        token = CancelToken()
        self._cancel = token
        return token, Throttle(
            lambda p: self._relay.progress.emit(p.stage, p.done, p.total, p.rate))

    def _run_encoding(self, job: str,
                      before: Callable[[Project, Throttle, CancelToken], dict] | None) -> None:
        """`before` (reading a file), then encode what is missing, on the job pool, with
        throttled progress and one cancel token; the result dict gets the encode report,
        `cancelled`, fresh info and the device."""
        token, throttle = self._new_progress()

        def work() -> dict:
            project = self._require_project()
            result: dict = {}
            try:
                if before is not None:
                    result.update(before(project, throttle, token))
                    throttle.flush()
                encoded = project.encode(progress=throttle, cancel=token)
            finally:
                throttle.flush()
            result.update({"encode": encoded, "cancelled": encoded.cancelled,
                           "info": _info(project), "device": project.encoder().device})
            return result

        def done(result: dict) -> dict:
            self._set_model_ready(result["device"])
            return result

        self._submit(self._jobs, job, work, done)

    def set_preferences(self, device: str, batch_size: int, backend: str = "torch") -> None:
        """Device, batch size and backend (`engine.encoding.backends`) for models loaded
        from now on (and the open project); `change_model` reloads the open one."""
        self.device_preference, self.batch_size = device, int(batch_size)
        self.backend_preference = backend
        preloaded = self._preloaded
        if preloaded is not None and preloaded.spec.backend != backend:
            self._preloaded = None  # loaded the other way; the next warm-up loads it anew
        project = self._current()
        if project is not None:
            project.device_preference, project.batch_size = device, int(batch_size)
            project.backend_preference = backend

    def change_model(self, model: str | None) -> None:
        """Load another model (folder or hub name; None: the bundled default) and make it
        the project's active one; `finished("model", info)`. Encode afterwards to index."""
        self._load_model(lambda project: project.use_model(
            model, device=self.device_preference, batch_size=self.batch_size))

    def change_backend(self) -> None:
        """Load the project's active model again with the backend now preferred (the
        active model stays: a fine-tuned version is not swapped for the default);
        `finished("model", info)`. A quantised backend asks for an encode afterwards."""
        self._load_model(lambda project: project.reload_model(self.backend_preference))

    def _load_model(self, load: Callable[[Project], SentenceEncoder]) -> None:
        def work() -> dict:
            project = self._require_project()
            self._relay.loading.emit()
            encoder = load(project)
            return {"info": _info(project), "device": encoder.device}

        def changed(result: dict) -> dict:
            self._model_ready = False
            self._set_model_ready(result["device"])
            return result

        self._submit(self._jobs, "model", work, changed)

    # -- fine-tuning and model versions ----------------------------------------------------
    def training_input(self, extra_file: str | None = None,
                       file_options: dict | None = None) -> None:
        """What fine-tuning would learn from: the review verdicts plus `extra_file`, as
        `finished("training_input", TrainingInput)` from the review thread, or `failed` with
        the labelled-file reader's message."""

        def work(project: Project) -> object:
            from engine.training.collect import training_input

            return training_input(project.labelled_pairs(), extra_file,
                                  **(file_options or {}))

        self.run_review("training_input", work)

    def finetune(self, pairs: list, objective: str, options: object, held_out: float,
                 seed: int) -> None:
        """Train the active model on `pairs` on the job pool (`Project.finetune`).

        Progress comes as `progressed` (stages `FINETUNE_STAGES`), every logged loss as
        `trainingLoss`, then `finished("finetune", FinetuneReport)`, `cancelled("finetune")`
        (nothing saved, the active model untouched; `cancel()` asks) or `failed`.
        """
        token = CancelToken()
        self._cancel = token
        losses: list[tuple[int, float]] = []

        def send_losses() -> None:
            if losses:
                batch = losses[:]
                losses.clear()
                self._loss_relay.points.emit(batch)

        def emit(p) -> None:
            send_losses()
            self._relay.progress.emit(p.stage, p.done, p.total, p.rate)

        throttle = Throttle(emit)

        def report(p) -> None:
            loss = getattr(p, "loss", None)  # a TrainingProgress of a logged step
            if loss is not None:
                losses.append((p.done, float(loss)))
            throttle(p)

        def work() -> object:
            project = self._require_project()
            try:
                return project.finetune(objective, pairs=pairs, options=options,
                                        held_out=held_out, seed=seed, progress=report,
                                        cancel=token)
            finally:
                throttle.flush()
                send_losses()

        self._submit(self._jobs, "finetune", work)

    def activate_model(self, version_id: int) -> None:
        """Encode and index with a model version, then switch search to it (search keeps
        the old model meanwhile); `finished("activate", {"report", "info", "device"})`, the
        report saying whether it was stopped (`cancel()`; what was encoded is kept)."""
        token, throttle = self._new_progress()

        def work() -> dict:
            project = self._require_project()
            try:
                report = project.activate_model(version_id, progress=throttle, cancel=token)
            finally:
                throttle.flush()
            return {"report": report, "info": _info(project),
                    "device": project.encoder().device}

        def done(result: dict) -> dict:
            if result["report"].activated:
                self._set_model_ready(result["device"])
            return result

        self._submit(self._jobs, "activate", work, done)

    def model_versions(self) -> None:
        """`finished("versions", [dict])`: `Project.model_versions()`, from the review thread."""
        self.run_review("versions", lambda project: project.model_versions())

    def export_model(self, version_id: int, folder: str) -> None:
        """Copy a version's folder to `folder`; `finished("export_model", Path)`."""
        self._submit(self._jobs, "export_model",
                     lambda: self._require_project().export_model(version_id, folder))

    def delete_model(self, version_id: int) -> None:
        """Delete an unused trained version; `finished("delete_model", name)`."""
        self._submit(self._jobs, "delete_model",
                     lambda: self._require_project().delete_model(version_id))

    # -- review ----------------------------------------------------------------------------
    def run_review(self, job: str, fn: Callable[[Project], object],
                   on_result: Callable[[Any], Any] | None = None) -> None:
        """Run `fn(project)` on the review thread; the outcome comes as `finished(job, …)`
        (after `on_result`, on the GUI thread) or `failed(job, …)`.

        Review calls run in the order asked, never in parallel with each other, so a
        decision and the re-cut after it cannot cross.
        """

        def work() -> object:
            return fn(self._require_project())

        self._submit(self._review, job, work, on_result)

    def cancel(self) -> None:
        """Ask the running import to stop at its next checkpoint (what is committed stays)."""
        if self._cancel is not None:
            self._cancel.cancel()

    def refresh_info(self) -> None:
        """Fresh `project.info()` in the background, as `finished("info", info)`."""
        self._submit(self._jobs, "info", lambda: _info(self._require_project()))

    # -- search ----------------------------------------------------------------------------
    def search(self, text: str, k: int = 10) -> int:
        """Ask for the `k` nearest entries to `text`; returns the request's sequence number.

        Results come as `searchResults(seq, text, hits)`. Before the model is loaded the
        newest request is held (and the model load started) rather than loading it twice.
        """
        self._search_seq += 1
        seq = self._latest_search = self._search_seq
        if text.strip() and self.has_project and not self._model_ready:
            self._held_search = (seq, text, k)
            self.warm_up()
        else:
            self._submit_search(seq, text, k)
        return seq

    def _submit_search(self, seq: int, text: str, k: int) -> None:
        def work() -> object:
            if seq < self._latest_search:
                return _SUPERSEDED
            project = self._current()
            return project.search(text, k) if project is not None else []

        def searched(hits: object) -> None:
            if hits is not _SUPERSEDED:
                self.deliver_search(seq, text, list(hits))  # type: ignore[call-overload]

        self._submit(self._searches, "search", work, searched, announce=False)

    def deliver_search(self, seq: int, text: str, hits: list) -> bool:
        """Emit results unless a newer request's results were already shown; True if sent."""
        if seq <= self._delivered_search:
            log.debug("dropped stale search %d (newest shown: %d)", seq,
                      self._delivered_search)
            return False
        self._delivered_search = seq
        self.searchResults.emit(seq, text, hits)
        return True

    # -- browsing (synchronous on purpose) -------------------------------------------------
    def count_items(self) -> int:
        """Live rows; a single indexed COUNT, cheap enough for the GUI thread."""
        project = self._current()
        return project.count_items() if project is not None else 0

    def items_by_ids(self, item_ids: Sequence[int]) -> list[dict]:
        """One page of rows for the table, by id; small pages keep this a few milliseconds."""
        project = self._current()
        return project.items_by_ids(item_ids) if project is not None else []

    def browse(self, query: RowQuery, on_result: Callable[[RowSet], Any]) -> None:
        """Which rows the table shows, in which order (`Project.row_order`), computed on the
        table's own thread: sorting a million rows takes seconds and must not wait behind
        an import or a re-cut. `on_result` gets a `RowSet` on the GUI thread."""

        def work() -> RowSet:
            project = self._require_project()
            order = project.row_order(query)
            total = project.count_items() if query.text_filter else len(order)
            return RowSet(query, order, project.item_columns(), total)

        self._submit(self._table, "rows", work, on_result, announce=False)

    # -- shutdown --------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Stop the running job, wait for the pools and close the project (window closing)."""
        self.cancel()
        self._latest_search = self._search_seq + 1   # queued searches skip their work
        self._searches.waitForDone()
        self._review.waitForDone()
        self._table.waitForDone()
        self._jobs.waitForDone()
        with self._project_lock:
            project, self._project = self._project, None
        if project is not None:
            project.close()

    # -- plumbing --------------------------------------------------------------------------
    def _submit(self, pool: QThreadPool, job: str, fn: Callable[[], object],
                on_result: Callable[[Any], Any] | None = None, *, announce: bool = True
                ) -> None:
        token = next(self._tokens)
        self._pending[token] = _Pending(job, on_result, announce)
        pool.start(Worker(token, fn, self._relay))

    @Slot(str, int, int, float)
    def _on_progress(self, stage: str, done: int, total: int, rate: float) -> None:
        self.progressed.emit(stage, done, total, rate)

    @Slot()
    def _on_loading(self) -> None:
        self.modelLoading.emit()

    @Slot(int, object)
    def _on_done(self, token: int, result: object) -> None:
        pending = self._pending.pop(token, None)
        if pending is None:
            return
        try:
            value = pending.on_result(result) if pending.on_result else result
        except Exception:  # noqa: BLE001 - a bug in a handler must not escape into Qt
            details = traceback.format_exc()
            log.error("unexpected error after %s\n%s", pending.job, details)
            self.failed.emit(pending.job, UNEXPECTED, details)
            return
        if pending.announce:
            self.finished.emit(pending.job, value)

    @Slot(int, str, str)
    def _on_failed(self, token: int, message: str, details: str) -> None:
        pending = self._pending.pop(token, None)
        if pending is None:
            return
        if pending.job == "warm_up":
            self._warming = False
        self.failed.emit(pending.job, message, details)

    @Slot(int)
    def _on_cancelled(self, token: int) -> None:
        pending = self._pending.pop(token, None)
        if pending is not None:
            self.cancelled.emit(pending.job)


def _info(project: Project) -> dict:
    """`project.info()` plus the notices the user should read (index rebuilt…)."""
    info = dict(project.info())
    info["default_model"] = project.uses_default_model()
    info["notices"] = list(project.notices)
    project.notices.clear()
    return info

