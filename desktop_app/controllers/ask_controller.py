"""`AskController`: the "Ask me" mode's queue of pairs the model is unsure of.

It fetches a batch of pairs (`project.asking.pairs`) on the review pool and hands them out
one at a time. A verdict is written on the same pool, in order, while the next pair is
shown at once from the queue; the next batch is fetched before the queue runs dry, so the
analyst never waits between pairs. A skipped pair is not offered again in this session.
Undo takes back this session's verdicts, last first: the pair comes back on screen and its
verdict is cleared, unless another analyst has changed it since (then it stays theirs).
The queue's state is `engine.review.pair_queue.PairQueue`'s; this controller runs its
engine calls as jobs and emits the signals.

Once the active model's second opinion is offered (`SecondOpinionController`), the pair on
screen comes with its suggestion (`opinionReady`), and the queue can be ordered by where the
model and the judge disagree (`set_by_disagreement`; `Asking.pairs(by_disagreement=True)`):
turning that on or off drops the queued pairs and fetches a batch in the new order.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from desktop_app.bridge import EngineBridge
from desktop_app.controllers.second_opinion_controller import SecondOpinionController
from desktop_app.job_runner import Job, Pool
from engine.review.pair_queue import PairQueue
from engine.services.asking import AskedPair

BATCH = 20
REFILL_AT = 5            # fetch the next batch when this few pairs are left
FINDING = "Finding pairs the model is unsure of…"   # what the mode says while it waits for pairs


class AskController(QObject):
    """Pairs to ask about, one at a time; verdicts go to the engine off-thread."""

    pairChanged = Signal(object)     # the AskedPair on screen, or None when none is left
    judged = Signal(int)             # verdicts given in this session
    busy = Signal(str)
    waiting = Signal(str)            # no pair on screen until the batch on its way comes
    undoChanged = Signal(bool, str)  # whether a verdict can be taken back, and which
    opinionReady = Signal(object, float)   # an AskedPair, the second opinion's probability
    opinionFailed = Signal(object, str)    # an AskedPair, why it has no second opinion

    def __init__(self, bridge: EngineBridge, parent: QObject | None = None, *,
                 threshold: Callable[[], float | None] = lambda: None,
                 opinion: SecondOpinionController | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        # The threshold pairs are picked around: the review's (None: the project's).
        self._threshold = threshold
        self.pair_queue: PairQueue[AskedPair] = PairQueue(_key, batch=BATCH,
                                                          refill_at=REFILL_AT)
        self.opinion = opinion or SecondOpinionController(bridge, self)
        self.by_disagreement = False   # the queue's order: where the judge disagrees first
        self.opinion.offeredChanged.connect(self._offered_changed)

    @property
    def current(self) -> AskedPair | None:
        """The pair on screen."""
        return self.pair_queue.current

    def start(self) -> None:
        """Show the first pair (fetching a batch when none is queued)."""
        if self.current is None:
            self._advance()

    def reset(self) -> None:
        """A new project: forget the queue."""
        self.pair_queue.reset()
        self.by_disagreement = False
        self._emit_undo()

    def set_by_disagreement(self, on: bool) -> None:
        """Order the queue by where the model and its second opinion disagree (or, off, by
        the model's doubt alone): the queued pairs go, a batch in that order comes."""
        on = bool(on) and self.opinion.offered is not None
        if on == self.by_disagreement:
            return
        self.by_disagreement = on
        if self.current is None and not self.pair_queue.fetching:
            return   # not started: the first batch will be in this order
        self.pair_queue.reorder()
        self._advance()

    def _offered_changed(self, judge: dict | None) -> None:
        if judge is None:
            self.set_by_disagreement(False)
        elif self.current is not None:
            self._ask_opinion(self.current)

    def _show(self, pair: AskedPair) -> None:
        """`pair` on screen, its second opinion asked for (when one is offered)."""
        self.pairChanged.emit(pair)
        self._ask_opinion(pair)

    def _ask_opinion(self, pair: AskedPair) -> None:
        if pair.opinion is not None:
            self.opinion.remember(pair.a.text, pair.b.text, pair.opinion)
        self.opinion.ask("ask", pair.a.text, pair.b.text,
                         lambda p: self.opinionReady.emit(pair, p),
                         lambda message: self.opinionFailed.emit(pair, message))

    def judge(self, verdict: int | None) -> None:
        """1 duplicate, 0 not, None skip; the next pair follows at once."""
        pair = self.pair_queue.judge(verdict)
        if pair is None:
            return
        if verdict is not None:
            a, b = pair.a.item_id, pair.b.item_id
            self.bridge.run(lambda job: job.project.asking.judge(a, b, verdict),
                            pool=Pool.REVIEW, on_done=lambda _: self._verdict_written())
            self._emit_undo()
        self._advance()

    def undo(self) -> None:
        """Take back the last verdict: its pair is shown again (the one on screen goes back
        to the front of the queue) and its verdict is cleared on the review pool, after the
        verdict's own write, only if it still is this verdict."""
        taken = self.pair_queue.undo()
        if taken is None:
            return
        pair, verdict = taken
        a, b = pair.a.item_id, pair.b.item_id

        def done(cleared: bool) -> None:
            if cleared:
                self.judged.emit(self.pair_queue.verdict_taken_back())
            else:
                self.busy.emit("Another analyst has changed this verdict since; it stays "
                               "theirs.")

        self.bridge.run(lambda job: job.project.verdicts.replace_verdict(a, b, verdict, None),
                        pool=Pool.REVIEW, on_done=done)
        self._show(pair)
        self._emit_undo()

    def _emit_undo(self) -> None:
        text = self.pair_queue.undo_text()
        self.undoChanged.emit(text is not None, text or "")

    def _verdict_written(self) -> None:
        self.judged.emit(self.pair_queue.verdict_written())

    def _advance(self) -> None:
        """The next queued pair on screen, the next batch fetched when few are left; with
        none queued, `waiting` until the batch comes (the pair judged last is not left on
        screen with keys that do nothing)."""
        shown = self.pair_queue.advance()
        if shown is not None:
            self._show(shown)
        if self.pair_queue.running_low():
            self._fetch()
        if shown is None and self.pair_queue.fetching:
            self.waiting.emit(FINDING)

    def _fetch(self) -> None:
        if not self.bridge.has_project:
            return
        # More than a batch: pairs judged but not yet written, and the skipped ones,
        # come back from the engine and are dropped by the queue.
        wanted = self.pair_queue.start_fetch()
        if wanted is None:       # a batch is on its way already
            return
        threshold = self._threshold()
        by_disagreement = self.by_disagreement

        def work(job: Job) -> list[AskedPair]:
            return job.project.asking.pairs(wanted, threshold=threshold,
                                            by_disagreement=by_disagreement)

        def done(pairs: list[AskedPair]) -> None:
            self.pair_queue.fetched(pairs)
            self.busy.emit("")
            if self.current is None and self.pair_queue.queue:
                self._advance()
            elif self.current is None:
                self.pairChanged.emit(None)

        def failed(message: str, _details: str) -> None:
            self.pair_queue.fetch_failed()
            self.busy.emit(message)

        # A batch in an order given up since (`set_by_disagreement`) is never delivered.
        self.bridge.run(work, pool=Pool.REVIEW, on_done=done, on_failed=failed,
                        latest="ask batch")


def _key(pair: AskedPair) -> frozenset[int]:
    """A pair's two rows, in either order."""
    return frozenset((pair.a.item_id, pair.b.item_id))
