"""`FinetuneController`: the fine-tuning wizard's state on the GUI side, fed by the engine.

It holds what the run would learn from (the engine's `TrainingInput`), the run's state and
its loss curve so far, and the report; every computation goes to the bridge (review verdicts
and the labelled file on the review thread, training and deleting on the job pool). The
wizard's pages only render what it emits, so a page never decides whether training may
start: the engine's own check does (`TrainingInput.problem`).
"""

from __future__ import annotations

import logging
from enum import Enum
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from desktop_app.bridge import EngineBridge

if TYPE_CHECKING:  # the engine's training modules are imported off the GUI thread first
    from engine.training.collect import TrainingInput
    from engine.training.finetune import TrainingOptions
    from engine.training.session import FinetuneReport

log = logging.getLogger("duplens.gui")

INPUT_JOB = "training_input"
TRAIN_JOB = "finetune"
DELETE_JOB = "delete_model"
TRAINING_STAGE = "training"


class RunState(Enum):
    IDLE = "idle"              # not started (or gone back to change the options)
    TRAINING = "training"
    STOPPING = "stopping"      # cancel asked; waiting for the engine's next checkpoint
    TRAINED = "trained"        # a report is here; the version is saved, not active
    CANCELLED = "cancelled"    # nothing saved, the active model untouched
    FAILED = "failed"
    DISCARDING = "discarding"
    DISCARDED = "discarded"


class FinetuneController(QObject):
    """One wizard's fine-tuning run; connect before calling `load_input`/`start`."""

    inputLoading = Signal()
    inputReady = Signal(object)            # engine.training.collect.TrainingInput
    inputFailed = Signal(str)              # the labelled file could not be read
    stateChanged = Signal(object, str)     # RunState, message for the user ("" if none)
    progressed = Signal(str, int, int, float)  # stage, done, total, rate: this run's only
    lossChanged = Signal(list, list)       # steps, losses: the whole curve so far
    reportReady = Signal(object)           # engine.training.session.FinetuneReport

    def __init__(self, bridge: EngineBridge, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.input: TrainingInput | None = None
        self.extra_file: str | None = None
        self.state = RunState.IDLE
        self.report: FinetuneReport | None = None
        self.steps: list[int] = []
        self.losses: list[float] = []
        self._asked = 0           # input requests sent; only the newest answer counts
        self._answered = 0
        bridge.finished.connect(self._finished)
        bridge.failed.connect(self._failed)
        bridge.cancelled.connect(self._cancelled)
        bridge.progressed.connect(self._progress)
        bridge.trainingLoss.connect(self._loss)

    @property
    def busy(self) -> bool:
        """A job of this wizard is running: training, stopping it, or deleting the version."""
        return self.state in (RunState.TRAINING, RunState.STOPPING, RunState.DISCARDING)

    # -- what to learn from ----------------------------------------------------------------
    def load_input(self, extra_file: str | None = None) -> None:
        """Gather the review verdicts plus `extra_file` (None: review only)."""
        self.extra_file = extra_file
        self._asked += 1
        self.inputLoading.emit()
        self.bridge.training_input(extra_file)

    # -- training --------------------------------------------------------------------------
    def start(self, objective: str, options: TrainingOptions, held_out: float,
              seed: int) -> None:
        """Train on exactly the pairs the first page showed."""
        if self.busy or self.input is None or not self.input.can_train:
            return
        self.report = None
        self.steps, self.losses = [], []
        self.lossChanged.emit([], [])
        self._set_state(RunState.TRAINING)
        self.bridge.finetune(self.input.pairs, objective, options, held_out, seed)

    def cancel(self) -> None:
        """Ask the run to stop; `stateChanged(CANCELLED)` when it has."""
        if self.state is RunState.TRAINING:
            self._set_state(RunState.STOPPING)
            self.bridge.cancel()

    def reset(self) -> None:
        """Back to before training (the user went back to change something)."""
        if not self.busy:
            self._set_state(RunState.IDLE)

    def discard(self) -> None:
        """Delete the version this run saved (it was never active)."""
        if self.report is None or self.busy:
            return
        self._set_state(RunState.DISCARDING)
        self.bridge.delete_model(self.report.version_id)

    # -- bridge signals --------------------------------------------------------------------
    def _set_state(self, state: RunState, message: str = "") -> None:
        self.state = state
        self.stateChanged.emit(state, message)

    def _progress(self, stage: str, done: int, total: int, rate: float) -> None:
        if self.state in (RunState.TRAINING, RunState.STOPPING):
            self.progressed.emit(stage, done, total, rate)

    def _loss(self, points: list) -> None:
        if self.state not in (RunState.TRAINING, RunState.STOPPING):
            return
        for step, loss in points:
            self.steps.append(int(step))
            self.losses.append(float(loss))
        self.lossChanged.emit(self.steps, self.losses)

    def _finished(self, job: str, result: object) -> None:
        if job == INPUT_JOB:
            self._answered += 1
            if self._answered == self._asked:
                self.input = result  # type: ignore[assignment]
                self.inputReady.emit(result)
        elif job == TRAIN_JOB and self.busy:
            self.report = result  # type: ignore[assignment]
            self._set_state(RunState.TRAINED)
            self.reportReady.emit(result)
        elif job == DELETE_JOB and self.state is RunState.DISCARDING:
            self._set_state(RunState.DISCARDED, f"{result} was deleted.")

    def _failed(self, job: str, message: str, details: str) -> None:
        if job == INPUT_JOB:
            self._answered += 1
            if self._answered == self._asked:
                self.inputFailed.emit(message)
        elif job == TRAIN_JOB and self.busy:
            log.info("fine-tuning failed: %s", message)
            self._set_state(RunState.FAILED, _with_details(message, details))
        elif job == DELETE_JOB and self.state is RunState.DISCARDING:
            self._set_state(RunState.TRAINED, f"Could not delete the version: {message}")

    def _cancelled(self, job: str) -> None:
        if job == TRAIN_JOB and self.busy:
            self._set_state(RunState.CANCELLED,
                            "Training stopped. Nothing was saved and the model in use is "
                            "unchanged.")


def _with_details(message: str, details: str) -> str:
    """The engine's one-line message; for a bug, its last traceback line too (the log has
    the rest), so the wizard says more than "Unexpected error"."""
    if not details:
        return message
    last = details.strip().splitlines()[-1]
    return f"{message}: {last} (details are in the log file)"
