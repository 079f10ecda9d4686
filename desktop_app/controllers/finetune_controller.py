"""`FinetuneController`: the fine-tuning wizard's state on the GUI side, fed by the engine.

It holds what the run would learn from (the engine's `TrainingInput`), the run's state and
its loss curves so far (the model's, and the second opinion's when the run trains one), and
the report, and it runs the engine calls itself: what to learn from on the review pool (the
verdicts are review data; only the newest request counts), training on the changes pool
(after any import; every logged loss comes back as a partial result), and deleting a
discarded version there too. The wizard's pages only render what it emits, so a page never
decides whether training may start: the engine's own check does (`TrainingInput.problem`).

With a second opinion the engine's run has compared the judge with the model in use on the
held-out pairs (`SecondOpinion.change`: the same paired interval as the model's own change,
and the one its silver guard obeys), so the results page says "better" of the judge only
when the pairs show it (`judge_change`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from desktop_app.bridge import EngineBridge
from desktop_app.job_runner import Job, JobHandle, Pool

if TYPE_CHECKING:  # the engine's training modules are imported off the GUI thread first
    from engine.progress import Progress
    from engine.training.ap_change import APChange
    from engine.training.collect import TrainingInput
    from engine.training.pairs import LabelledPair, PairSummary
    from engine.training.session import FinetuneReport
    from engine.training.trainer import TrainingOptions

log = logging.getLogger("duplens.gui")

TRAINING_STAGE = "training"
JUDGE_STAGE = "training second opinion"  # `engine.training.second_opinion.STAGE_JUDGE`
# Silver pairs the wizard offers to let the judge label: enough to add to a few hundred
# answers several times over, few enough that labelling them takes seconds on a CPU.
SECOND_OPINION_PAIRS = 2_000
# A judge learns from the training side only, so it needs some of each verdict there; ten of
# each is the bar under which the project's calibration calls a best-F1 threshold a few
# pairs' accident (`engine.review.calibration.ENOUGH_OF_EACH`). Below it the wizard leaves
# the second opinion off by default (it may still be turned on).
JUDGE_ENOUGH_OF_EACH = 10


class RunState(Enum):
    IDLE = "idle"              # not started (or gone back to change the options)
    TRAINING = "training"
    STOPPING = "stopping"      # cancel asked; waiting for the engine's next checkpoint
    TRAINED = "trained"        # a report is here; the version is saved, not active
    CANCELLED = "cancelled"    # nothing saved, the active model untouched
    FAILED = "failed"
    DISCARDING = "discarding"
    DISCARDED = "discarded"


@dataclass(frozen=True)
class TrainingRequest:
    """How to train, as the objective page's fields say when the user presses Train."""

    objective: str
    options: TrainingOptions
    held_out: float          # share of the pairs measured, never trained on
    seed: int


def second_opinion_advised(summary: PairSummary, held_out: float) -> bool:
    """Whether to offer the second opinion on by default: the training side (what is not
    held out) holds about `JUDGE_ENOUGH_OF_EACH` pairs of each verdict."""
    kept = 1.0 - held_out
    return min(summary.positives, summary.negatives) * kept >= JUDGE_ENOUGH_OF_EACH


def collect_input(extra_file: str | None, job: Job) -> TrainingInput:
    """The job: the review verdicts, the verdicts on checked files' rows not added yet, plus
    `extra_file`'s pairs, with the engine's counts."""
    from engine.training.collect import training_input

    return training_input(job.project.verdicts.pairs(), extra_file,
                          checked_rows=job.project.matching.pending_pairs())


def train(pairs: list[LabelledPair], request: TrainingRequest, job: Job
          ) -> tuple[FinetuneReport, APChange | None]:
    """The job: train the active model on `pairs`; each logged loss is a partial result
    `(stage, step, loss)` (the judge's and the model's are two curves), every step's
    progress goes to the throttle. Returns the report and, with a second opinion, the
    judge's AP against the model in use's on the held-out pairs with its interval."""

    def report(progress: Progress) -> None:
        loss = getattr(progress, "loss", None)  # a TrainingProgress of a logged step
        if loss is not None:
            job.partial((progress.stage, progress.done, float(loss)))
        job.progress(progress)

    made = job.project.versions.finetune(request.objective, pairs=pairs, options=request.options,
                                         held_out=request.held_out, seed=request.seed,
                                         progress=report, cancel=job.token)
    return made, judge_change(made)


def judge_change(report: FinetuneReport) -> APChange | None:
    """The judge's held-out AP against the model in use's, with the paired interval the
    run's silver guard judged by (None without a judge)."""
    opinion = report.second_opinion
    return opinion.change if opinion is not None else None


class FinetuneController(QObject):
    """One wizard's fine-tuning run; connect before calling `load_input`/`start`."""

    inputLoading = Signal()
    inputReady = Signal(object)            # engine.training.collect.TrainingInput
    inputFailed = Signal(str)              # the labelled file could not be read
    stateChanged = Signal(object, str)     # RunState, message for the user ("" if none)
    progressed = Signal(object)            # engine.progress.Progress of this run, whole
    lossChanged = Signal(list, list)       # steps, losses: the model's whole curve so far
    judgeLossChanged = Signal(list, list)  # the same of the second opinion (judge)
    reportReady = Signal(object)           # engine.training.session.FinetuneReport
    discarded = Signal(str)                # the name of the version deleted by Discard

    def __init__(self, bridge: EngineBridge, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.input: TrainingInput | None = None
        self.extra_file: str | None = None
        self.state = RunState.IDLE
        self.report: FinetuneReport | None = None
        self.steps: list[int] = []
        self.losses: list[float] = []
        self.judge_steps: list[int] = []
        self.judge_losses: list[float] = []
        self.judge_change: APChange | None = None  # with a second opinion, once trained
        self._run: JobHandle | None = None
        self._input_key = f"training input {id(self)}"

    @property
    def busy(self) -> bool:
        """A job of this wizard is running: training, stopping it, or deleting the version."""
        return self.state in (RunState.TRAINING, RunState.STOPPING, RunState.DISCARDING)

    # -- what to learn from ----------------------------------------------------------------
    def load_input(self, extra_file: str | None = None) -> None:
        """Gather the review verdicts plus `extra_file` (None: review only)."""
        self.extra_file = extra_file
        self.inputLoading.emit()
        self.bridge.run(lambda job: collect_input(extra_file, job), pool=Pool.REVIEW,
                        on_done=self._input_ready, on_failed=self._input_failed,
                        latest=self._input_key)

    def _input_ready(self, data: TrainingInput) -> None:
        self.input = data
        self.inputReady.emit(data)

    def _input_failed(self, message: str, _details: str) -> None:
        self.inputFailed.emit(message)

    # -- training --------------------------------------------------------------------------
    def start(self, request: TrainingRequest) -> None:
        """Train on exactly the pairs the first page showed."""
        if self.busy or self.input is None or not self.input.can_train:
            return
        self.report = None
        self.judge_change = None
        self.steps, self.losses = [], []
        self.judge_steps, self.judge_losses = [], []
        self.lossChanged.emit([], [])
        self.judgeLossChanged.emit([], [])
        self._set_state(RunState.TRAINING)
        pairs = self.input.pairs
        self._run = self.bridge.run(
            lambda job: train(pairs, request, job), pool=Pool.CHANGES, on_done=self._trained,
            on_failed=self._train_failed, on_cancelled=self._train_cancelled,
            on_progress=self.progressed.emit, on_partial=self._losses)

    def cancel(self) -> None:
        """Ask the run to stop; `stateChanged(CANCELLED)` when it has."""
        if self.state is RunState.TRAINING and self._run is not None:
            self._set_state(RunState.STOPPING)
            self._run.cancel()

    def reset(self) -> None:
        """Back to before training (the user went back to change something)."""
        if not self.busy:
            self._set_state(RunState.IDLE)

    def discard(self) -> None:
        """Delete the version this run saved (it was never active)."""
        if self.report is None or self.busy:
            return
        self._set_state(RunState.DISCARDING)
        version_id = self.report.version_id
        self.bridge.run(lambda job: job.project.versions.delete(version_id), pool=Pool.CHANGES,
                        on_done=self._deleted, on_failed=self._delete_failed)

    # -- outcomes, on the GUI thread -------------------------------------------------------
    def _set_state(self, state: RunState, message: str = "") -> None:
        self.state = state
        self.stateChanged.emit(state, message)

    def _losses(self, points: list[tuple[str, int, float]]) -> None:
        stages = set()
        for stage, step, loss in points:
            judge = stage == JUDGE_STAGE
            steps, losses = ((self.judge_steps, self.judge_losses) if judge
                             else (self.steps, self.losses))
            steps.append(step)
            losses.append(loss)
            stages.add(judge)
        if True in stages:
            self.judgeLossChanged.emit(self.judge_steps, self.judge_losses)
        if False in stages:
            self.lossChanged.emit(self.steps, self.losses)

    def _trained(self, made: tuple[FinetuneReport, APChange | None]) -> None:
        report, self.judge_change = made
        self.report = report
        self._set_state(RunState.TRAINED)
        self.reportReady.emit(report)

    def _train_failed(self, message: str, details: str) -> None:
        log.info("fine-tuning failed: %s", message)
        self._set_state(RunState.FAILED, _with_details(message, details))

    def _train_cancelled(self) -> None:
        self._set_state(RunState.CANCELLED, "Training stopped. Nothing was saved and the "
                                            "model in use is unchanged.")

    def _deleted(self, name: str) -> None:
        self._set_state(RunState.DISCARDED, f"{name} was deleted.")
        self.discarded.emit(name)

    def _delete_failed(self, message: str, _details: str) -> None:
        self._set_state(RunState.TRAINED, f"Could not delete the version: {message}")


def _with_details(message: str, details: str) -> str:
    """The engine's one-line message; for a bug, its last traceback line too (the log has
    the rest), so the wizard says more than "Unexpected error"."""
    if not details:
        return message
    last = details.strip().splitlines()[-1]
    return f"{message}: {last} (details are in the log file)"
