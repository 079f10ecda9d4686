"""`MeasureController`: the "Measure quality" mode: drawn pairs one at a time, and the
estimate after every verdict.

Pairs come from `project.measuring.next_pairs` (drawn at random by the sampling design,
never chosen by the model's doubt), a batch at a time on the review pool, and are handed out
one at a time; the next batch is fetched before the queue runs dry. A verdict is written on
the same pool, in order, then the estimate is computed again (`measure`, the newest request
only), so the figures above the pair move with every verdict. A skipped pair stays drawn and
comes back in a later session: a sample whose hard pairs were skipped for good would be
biased. Undo takes this session's verdicts back, last first. The queue's state is
`engine.review.pair_queue.PairQueue`'s; this controller runs its engine calls as jobs and
emits the signals.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from desktop_app.bridge import EngineBridge
from desktop_app.job_runner import Job, Pool
from engine.review.pair_queue import PairQueue
from engine.services.measuring import DrawnPair, Measurement, VerdictGiven

BATCH = 10
REFILL_AT = 3
DRAWING = "Drawing pairs at random…"   # what the mode says while it waits for pairs


class MeasureController(QObject):
    """Drawn pairs to judge, the estimate, and the quality report."""

    pairChanged = Signal(object)          # the DrawnPair on screen, or None
    measured = Signal(object)             # Measurement at the review's threshold
    calibratedEstimate = Signal(object)   # Measurement at the calibrated threshold, or None
    judged = Signal(int)                  # verdicts given in this session
    busy = Signal(str)
    waiting = Signal(str)            # no pair on screen until the batch on its way comes
    undoChanged = Signal(bool, str)
    reportWritten = Signal(str)           # the report's path

    def __init__(self, bridge: EngineBridge, threshold: Callable[[], float],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self._threshold = threshold
        # A draw is one pair however its rows are shown: draw ids key the queue.
        self.pair_queue: PairQueue[DrawnPair] = PairQueue(lambda p: p.draw_id, batch=BATCH,
                                                          refill_at=REFILL_AT)
        self.measurement: Measurement | None = None
        # What each verdict changed, by draw id: written and read only by the review pool's
        # one thread (an undo job runs after its verdict's job), never by the GUI thread.
        self._verdicts: dict[int, VerdictGiven] = {}

    @property
    def current(self) -> DrawnPair | None:
        """The pair on screen."""
        return self.pair_queue.current

    def start(self) -> None:
        if self.current is None:
            self._advance()
        self.refresh()

    def reset(self) -> None:
        self.pair_queue.reset()
        self.measurement = None
        self._emit_undo()

    # -- verdicts --------------------------------------------------------------------------
    def judge(self, verdict: int | None) -> None:
        """1 duplicate, 0 not, None skip (the pair stays drawn); the next pair follows."""
        pair = self.pair_queue.judge(verdict)
        if pair is None:
            return
        if verdict is not None:
            draw_id = pair.draw_id
            verdicts = self._verdicts

            def work(job: Job) -> None:
                verdicts[draw_id] = job.project.measuring.judge(draw_id, verdict)

            self.bridge.run(work, pool=Pool.REVIEW, on_done=lambda _: self._verdict_written())
            self._emit_undo()
        self._advance()

    def undo(self) -> None:
        """Take back the last verdict: the pair is shown again, and its draw waits for a
        verdict, unless another analyst has changed it since."""
        taken = self.pair_queue.undo()
        if taken is None:
            return
        pair, _verdict = taken
        draw_id = pair.draw_id
        verdicts = self._verdicts

        def work(job: Job) -> bool:
            done = verdicts.pop(draw_id, None)
            return done is not None and job.project.measuring.take_back(done)

        def done(taken_back: bool) -> None:
            if taken_back:
                self.judged.emit(self.pair_queue.verdict_taken_back())
                self.refresh()
            else:
                self.busy.emit("Another analyst has judged this pair since; their "
                               "verdict stays.")

        self.bridge.run(work, pool=Pool.REVIEW, on_done=done)
        self.pairChanged.emit(pair)
        self._emit_undo()

    def _verdict_written(self) -> None:
        self.judged.emit(self.pair_queue.verdict_written())
        self.refresh()

    def _emit_undo(self) -> None:
        text = self.pair_queue.undo_text()
        self.undoChanged.emit(text is not None, text or "")

    # -- the estimate ----------------------------------------------------------------------
    def refresh(self) -> None:
        """The estimate at the review's threshold, again (the newest request wins)."""
        if not self.bridge.has_project:
            return
        threshold = self._threshold()

        def done(m: Measurement) -> None:
            self.measurement = m
            self.measured.emit(m)

        self.bridge.run(lambda job: job.project.measuring.measure(threshold), pool=Pool.REVIEW,
                        on_done=done, latest="measure quality")

    def estimate_at(self, threshold: float | None) -> None:
        """The estimate at the calibrated threshold, if a sample exists (none is made)."""
        if threshold is None or not 0.0 < threshold <= 1.0 or not self.bridge.has_project:
            self.calibratedEstimate.emit(None)     # (few verdicts can calibrate below 0)
            return

        def work(job: Job) -> Measurement | None:
            m = job.project.measuring.measure(threshold, create=False)
            return m if m.estimate is not None else None

        self.bridge.run(work, pool=Pool.REVIEW, on_done=self.calibratedEstimate.emit,
                        latest="measure calibrated")

    def export_report(self, path: str) -> None:
        """Write the quality report (with the curve over thresholds) to `path`."""
        threshold = self._threshold()

        def work(job: Job) -> str:
            from engine.quality_report import write_report

            m = job.project.measuring.measure(threshold, curve=True, progress=job.progress,
                                              cancel=job.token)
            return str(write_report(path, m, job.project.store.name))

        self.bridge.run(work, pool=Pool.REVIEW, on_done=self.reportWritten.emit)

    # -- the queue -------------------------------------------------------------------------
    def _advance(self) -> None:
        """The next queued pair on screen, the next batch fetched when few are left; with
        none queued, `waiting` until the batch comes (the pair judged last is not left on
        screen with keys that do nothing)."""
        shown = self.pair_queue.advance()
        if shown is not None:
            self.pairChanged.emit(shown)
        if self.pair_queue.running_low():
            self._fetch()
        if shown is None and self.pair_queue.fetching:
            self.waiting.emit(DRAWING)

    def _fetch(self) -> None:
        if not self.bridge.has_project:
            return
        wanted = self.pair_queue.start_fetch()
        if wanted is None:       # a batch is on its way already
            return
        threshold = self._threshold()

        def work(job: Job) -> list[DrawnPair]:
            return job.project.measuring.next_pairs(wanted, threshold=threshold,
                                                    progress=job.progress, cancel=job.token)

        def done(pairs: list[DrawnPair]) -> None:
            self.pair_queue.fetched(pairs)
            self.busy.emit("")
            if self.current is None and self.pair_queue.queue:
                self._advance()
            elif self.current is None:
                self.pairChanged.emit(None)

        def failed(message: str, _details: str) -> None:
            self.pair_queue.fetch_failed()
            self.busy.emit(message)

        self.bridge.run(work, pool=Pool.REVIEW, on_done=done, on_failed=failed)
