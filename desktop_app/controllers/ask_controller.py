"""`AskController`: the "Ask me" mode's queue of pairs the model is unsure of.

It fetches a batch of pairs (`project.asking.pairs`) on the review pool and hands them out
one at a time. An answer is written on the same pool, in order, while the next pair is
shown at once from the queue; the next batch is fetched before the queue runs dry, so the
analyst never waits between pairs. A skipped pair is not offered again in this session.
Undo takes back this session's answers, last first: the pair comes back on screen and its
verdict is cleared, unless another analyst has changed it since (then it stays theirs).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from desktop_app.bridge import EngineBridge
from desktop_app.job_runner import Job, Pool
from engine.services.asking import AskedPair

BATCH = 20
REFILL_AT = 5            # fetch the next batch when this few pairs are left


class AskController(QObject):
    """Pairs to ask about, one at a time; answers go to the engine off-thread."""

    pairChanged = Signal(object)     # the AskedPair on screen, or None when none is left
    answered = Signal(int)           # verdicts given in this session
    busy = Signal(str)
    undoChanged = Signal(bool, str)  # whether an answer can be taken back, and which

    def __init__(self, bridge: EngineBridge, parent: QObject | None = None, *,
                 threshold: Callable[[], float | None] = lambda: None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        # The threshold pairs are picked around: the review's (None: the project's).
        self._threshold = threshold
        self.current: AskedPair | None = None
        self.queue: list[AskedPair] = []
        self.given = 0
        self._seen: set[frozenset[int]] = set()   # shown (answered or skipped) this session
        self._given: list[tuple[AskedPair, int]] = []   # answers to take back, newest last
        self._fetching = False

    def start(self) -> None:
        """Show the first pair (fetching a batch when none is queued)."""
        if self.current is None:
            self._advance()

    def reset(self) -> None:
        """A new project: forget the queue."""
        self.current, self.queue, self.given = None, [], 0
        self._seen.clear()
        self._given.clear()
        self._emit_undo()

    def answer(self, label: int | None) -> None:
        """1 duplicate, 0 not, None skip; the next pair follows at once."""
        pair = self.current
        if pair is None:
            return
        if label is not None:
            a, b = pair.a.item_id, pair.b.item_id
            self.bridge.run(lambda job: job.project.asking.answer(a, b, label),
                            pool=Pool.REVIEW, on_done=lambda _: self._answered())
            self._given.append((pair, label))
            self._emit_undo()
        self._advance()

    def undo(self) -> None:
        """Take back the last answer: its pair is shown again (the one on screen goes back
        to the front of the queue) and its verdict is cleared on the review pool, after the
        answer's own write, only if it still is this answer."""
        if not self._given:
            return
        pair, label = self._given.pop()
        if self.current is not None:
            self.queue.insert(0, self.current)
            self._seen.discard(_key(self.current))
        self.current = pair
        a, b = pair.a.item_id, pair.b.item_id

        def done(cleared: bool) -> None:
            if cleared:
                self.given -= 1
                self.answered.emit(self.given)
            else:
                self.busy.emit("Another analyst has changed this verdict since; it stays "
                               "theirs.")

        self.bridge.run(lambda job: job.project.labels.replace_label(a, b, label, None),
                        pool=Pool.REVIEW, on_done=done)
        self.pairChanged.emit(pair)
        self._emit_undo()

    def _emit_undo(self) -> None:
        if not self._given:
            self.undoChanged.emit(False, "")
            return
        pair, label = self._given[-1]
        verdict = "duplicate" if label == 1 else "not duplicate"
        self.undoChanged.emit(True, f"{pair.a.public_id} / {pair.b.public_id}: {verdict}")

    def _answered(self) -> None:
        self.given += 1
        self.answered.emit(self.given)

    def _advance(self) -> None:
        self.current = None
        while self.queue and self.current is None:
            pair = self.queue.pop(0)
            key = _key(pair)
            if key not in self._seen:
                self._seen.add(key)
                self.current = pair
        if self.current is not None:
            self.pairChanged.emit(self.current)
        if len(self.queue) <= REFILL_AT:
            self._fetch(show_when_done=self.current is None)

    def _fetch(self, show_when_done: bool) -> None:
        if self._fetching or not self.bridge.has_project:
            return
        self._fetching = True
        if show_when_done:
            self.busy.emit("Finding pairs the model is unsure of…")
        # Ask for more than a batch: pairs answered but not yet written, and the skipped
        # ones, come back from the engine and are dropped here.
        wanted = BATCH + len(self._seen)
        threshold = self._threshold()

        def work(job: Job) -> list[AskedPair]:
            return job.project.asking.pairs(wanted, threshold=threshold)

        def done(pairs: list[AskedPair]) -> None:
            self._fetching = False
            self.busy.emit("")
            queued = {_key(p) for p in self.queue}
            self.queue += [p for p in pairs if _key(p) not in self._seen | queued]
            if self.current is None and self.queue:
                self._advance()
            elif self.current is None:
                self.pairChanged.emit(None)

        def failed(message: str, _details: str) -> None:
            self._fetching = False
            self.busy.emit(message)

        self.bridge.run(work, pool=Pool.REVIEW, on_done=done, on_failed=failed)


def _key(pair: AskedPair) -> frozenset[int]:
    """A pair's two rows, in either order."""
    return frozenset((pair.a.item_id, pair.b.item_id))
