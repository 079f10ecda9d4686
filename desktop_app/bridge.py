"""`EngineBridge`: the open project, its model, the keystroke search, and the job runner.

The bridge does not mirror the engine. Controllers and views run their own engine calls with
`bridge.run(fn, pool=..., on_done=...)` (`desktop_app.job_runner`: the threading is written once
there). The bridge keeps only what they all share: the open project's lifecycle, the model
warm-up and readiness (with the search held until then), the preferences new models are
loaded with, and the keystroke search. Nothing here reads the project on the calling (GUI)
thread: on a team project every read is a network round trip.

It runs jobs on five thread pools of one thread each (`job_runner.Pool` says which work
goes where, and why). All public signals are emitted on the GUI thread.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from desktop_app.job_runner import Job, JobHandle, JobRunner, Pool
from engine.errors import ProjectError

if TYPE_CHECKING:
    # Imported where used, in pool threads: the facade pulls in pandas, SQLAlchemy and
    # hnswlib (about half a second), which must not delay the window appearing.
    from engine.encoding.encoder import SentenceEncoder
    from engine.keystroke_search import SearchHit
    from engine.project import Project

log = logging.getLogger("duplens.gui")


class EngineBridge(JobRunner):
    """Owns the open `Project` and runs jobs on it in the background (`run`)."""

    projectOpened = Signal(dict)                 # project_info(counts=False) of the one open
    projectUpgrading = Signal(str, int)          # name, schema: an old project's steps begin
    searchResults = Signal(int, str, list)       # sequence number, query, [SearchHit]
    modelReady = Signal(str)                     # device
    modelFailed = Signal(str, str)               # message, details: the warm-up failed
    modelNeedsConsent = Signal(str, str)         # message, location: see `approve_model`

    def __init__(self, parent: QObject | None = None, *,
                 encoder: SentenceEncoder | None = None) -> None:
        super().__init__(self._current, parent)
        self.modelLoaded.connect(self._model_loaded)
        self._project_lock = threading.Lock()
        self._project: Project | None = None   # set and cleared in job threads, under lock
        self._encoder = encoder                 # a shared, already loaded model (tests)
        self._preloaded: SentenceEncoder | None = None   # default model, loaded before open
        self.device_preference = "auto"
        self.backend_preference = "auto"         # engine.encoding.backends: AUTO or a name
        self.batch_size = 64
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
        """The open project, for objects that only hand it to pool-thread work."""
        project = self._current()
        if project is None:
            raise ProjectError("no project is open")
        return project

    def _current(self) -> Project | None:
        with self._project_lock:
            return self._project

    # -- the project's lifecycle -----------------------------------------------------------
    def open_project(self, path: str | os.PathLike[str], create: bool = False, *,
                     on_failed: Callable[[str, str], object] | None = None) -> JobHandle:
        """Open (or create) a project in the background; `projectOpened` when it is ready.
        The project open before is closed once the searches and review work on it end."""
        return self.run(lambda _job: self._open(path, create), pool=Pool.CHANGES,
                        on_done=self._opened, on_failed=on_failed)

    def _open(self, path: str | os.PathLike[str], create: bool) -> dict:
        from engine.encoding.cpu_features import has_bf16_units
        from engine.project import Project

        has_bf16_units()   # cached off the GUI thread for Settings (0.2 s on Windows, macOS)

        project = Project.open(path, create=create, on_upgrade=self.projectUpgrading.emit)
        try:
            # fast queries are prepared where the model is attached (this job thread)
            project.model.configure(device=self.device_preference,
                                    backend=self.backend_preference,
                                    batch_size=self.batch_size, fast_queries=True)
            if self._encoder is not None:
                project.model.attach(self._encoder, is_default=True)
            elif self._preloaded is not None and project.model.accepts(self._preloaded):
                project.model.attach(self._preloaded, is_default=True)
            info = project_info(project, counts=False)   # the counts come later: seconds
        except BaseException:
            project.close()
            raise
        with self._project_lock:
            old, self._project = self._project, project
        if old is not None:
            self.wait(Pool.SEARCH, Pool.REVIEW, Pool.TABLE, Pool.PAGES)   # may hold the old one
            old.close()
        return info

    def _opened(self, info: dict) -> None:
        self._model_ready = False   # each project has its own active model
        self.projectOpened.emit(info)
        shared = self._encoder
        project = self._current()
        if (shared is None and self._preloaded is not None and project is not None
                and project.model.loaded() is self._preloaded):   # in memory: no read
            shared = self._preloaded
        if shared is not None:
            self._set_model_ready(shared.device)
        elif self._warm_wanted:
            self._start_warm_up()

    def shutdown(self) -> None:
        """Stop the running job, wait for the pools and close the project (window closing)."""
        self.cancel_pool(Pool.CHANGES)
        self._latest_search = self._search_seq + 1   # queued searches skip their work
        self.wait()
        with self._project_lock:
            project, self._project = self._project, None
        if project is not None:
            project.close()

    # -- the model -------------------------------------------------------------------------
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
        self.run(self._warm, pool=Pool.CHANGES, on_done=self._warmed,
                 on_failed=self._warm_failed)

    def _warm(self, job: Job) -> str | Exception | None:
        """The open project's model (reported through `job`), or with none open the default
        model, kept for the project opened next (its device is returned). A model the
        project names outside its own folder and the user has not approved is returned as
        the refusal, for the window to ask."""
        from engine.errors import UntrustedModelLocation

        project = self._current()
        if project is not None:
            job.model_loading()
            try:
                job.model_ready(project.model.encoder().device)
            except UntrustedModelLocation as refused:
                return refused    # asked on the GUI thread (`_warmed`), never loaded unasked
            return None
        if self._preloaded is not None or self._encoder is not None:
            return None
        job.model_loading()
        from engine.encoding.loading import load_encoder

        preloaded = load_encoder(None, device=self.device_preference,
                                 batch_size=self.batch_size, backend=self._new_backend())
        preloaded.prepare_fast_queries()
        self._preloaded = preloaded
        return preloaded.device

    def _warmed(self, outcome: str | Exception | None) -> None:
        self._warming = False
        if isinstance(outcome, Exception):   # UntrustedModelLocation
            self.modelNeedsConsent.emit(str(outcome), outcome.location)
        elif outcome is not None:
            self.modelReady.emit(outcome)

    def approve_model(self, location: str) -> None:
        """The user agreed to load `location` for the open project: remember it (in their
        config, never in the project file its sender controls) and load the model."""
        from engine.model_trust import approve

        approve(self.current_project().path, location)
        self._start_warm_up()

    def _warm_failed(self, message: str, details: str) -> None:
        self._warming = False
        self.modelFailed.emit(message, details)

    def _model_loaded(self, device: str, reloaded: bool) -> None:
        if reloaded:
            self._model_ready = False   # another model: say it is ready again
        self._set_model_ready(device)

    def _set_model_ready(self, device: str) -> None:
        first = not self._model_ready
        self._model_ready = True
        if first:
            # The loaded model's objects (half a million: torch, transformers, the tokenizer)
            # live as long as the window. Left in the collector's view, every full collection
            # walks them all, about 300 ms holding the GIL: the window froze that long as an
            # import started encoding (benchmarks/window_latency.py). Frozen, a full
            # collection takes milliseconds. One full collection first, here on the GUI
            # thread (see `app.garbage_collected_on_gui_thread`), so that no garbage of the
            # moment (a closed dialog in a cycle) is frozen with them and never freed: the
            # one pause of the kind, while the model becomes ready.
            gc.collect()
            gc.freeze()
            self.modelReady.emit(device)
        held, self._held_search = self._held_search, None
        if held is not None and held[0] == self._latest_search:
            self._submit_search(*held)

    def _new_backend(self) -> str:
        """The backend the default model loaded before any project opens is loaded with:
        the engine's rule for a new project's model (`backend_choice.for_new_model`)."""
        from engine.encoding.backend_choice import for_new_model

        return for_new_model(None, self.backend_preference, self.device_preference)

    def set_preferences(self, device: str, batch_size: int, backend: str = "auto") -> None:
        """Device, batch size and backend (`engine.encoding.backends`) for models loaded
        from now on (and the open project); `ModelController` reloads the open one."""
        self.device_preference, self.batch_size = device, int(batch_size)
        self.backend_preference = backend
        preloaded = self._preloaded
        if preloaded is not None and preloaded.spec.backend != self._new_backend():
            self._preloaded = None  # loaded the other way; the next warm-up loads it anew
        project = self._current()
        if project is not None:
            project.model.configure(device=device, batch_size=int(batch_size), backend=backend)

    # -- search ----------------------------------------------------------------------------
    def search(self, text: str, k: int = 10) -> int:
        """Ask for the `k` nearest rows to `text`; returns the request's sequence number.

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
        def work(_job: Job) -> list[SearchHit] | None:
            if seq < self._latest_search:
                return None   # superseded before its turn: skipped
            project = self._current()
            return project.search(text, k) if project is not None else []

        def searched(hits: list[SearchHit] | None) -> None:
            if hits is not None:
                self.deliver_search(seq, text, hits)

        self.run(work, pool=Pool.SEARCH, on_done=searched)

    def deliver_search(self, seq: int, text: str, hits: list) -> bool:
        """Emit results unless a newer request's results were already shown; True if sent."""
        if seq <= self._delivered_search:
            log.debug("dropped stale search %d (newest shown: %d)", seq,
                      self._delivered_search)
            return False
        self._delivered_search = seq
        self.searchResults.emit(seq, text, hits)
        return True


def project_info(project: Project, *, counts: bool = True) -> dict:
    """`project.info()` plus whether it uses the default model and the notices the user
    should read (index rebuilt…), which are cleared once read. Without `counts`, no row
    or vector is counted (`CountsController` does that once the project shows)."""
    from engine.services.summary import describe

    info = dict(project.info() if counts else describe(project.store, project.model.row()))
    info["default_model"] = project.model.is_default()
    info["notices"] = list(project.notices)
    project.notices.clear()
    return info
