"""`AskController`: the "Ask me" mode's queue of pairs the model is unsure of.

It fetches a batch of pairs (`project.asking.pairs`) on the review pool and hands them out
one at a time. An answer is written on the same pool, in order, while the next pair is
shown at once from the queue; the next batch is fetched before the queue runs dry, so the
analyst never waits between pairs. A skipped pair is not offered again in this session.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from desktop_app.bridge import EngineBridge
from desktop_app.jobs import Job, Pool
from engine.services.asking import AskedPair

BATCH = 20
REFILL_AT = 5            # fetch the next batch when this few pairs are left


class AskController(QObject):
    """Pairs to ask about, one at a time; answers go to the engine off-thread."""

    pairChanged = Signal(object)     # the AskedPair on screen, or None when none is left
    answered = Signal(int)           # verdicts given in this session
    busy = Signal(str)

    def __init__(self, bridge: EngineBridge, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.current: AskedPair | None = None
        self.queue: list[AskedPair] = []
        self.given = 0
        self._seen: set[frozenset[int]] = set()   # shown (answered or skipped) this session
        self._fetching = False

    def start(self) -> None:
        """Show the first pair (fetching a batch when none is queued)."""
        if self.current is None:
            self._advance()

    def reset(self) -> None:
        """A new project: forget the queue."""
        self.current, self.queue, self.given = None, [], 0
        self._seen.clear()

    def answer(self, label: int | None) -> None:
        """1 duplicate, 0 not, None skip; the next pair follows at once."""
        pair = self.current
        if pair is None:
            return
        if label is not None:
            a, b = pair.a.item_id, pair.b.item_id
            self.bridge.run(lambda job: job.project.asking.answer(a, b, label),
                            pool=Pool.REVIEW, on_done=lambda _: self._answered())
        self._advance()

    def _answered(self) -> None:
        self.given += 1
        self.answered.emit(self.given)

    def _advance(self) -> None:
        self.current = None
        while self.queue and self.current is None:
            pair = self.queue.pop(0)
            key = frozenset((pair.a.item_id, pair.b.item_id))
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

        def work(job: Job) -> list[AskedPair]:
            return job.project.asking.pairs(wanted)

        def done(pairs: list[AskedPair]) -> None:
            self._fetching = False
            self.busy.emit("")
            queued = {frozenset((p.a.item_id, p.b.item_id)) for p in self.queue}
            self.queue += [p for p in pairs if frozenset((p.a.item_id, p.b.item_id))
                           not in self._seen | queued]
            if self.current is None and self.queue:
                self._advance()
            elif self.current is None:
                self.pairChanged.emit(None)

        def failed(message: str, _details: str) -> None:
            self._fetching = False
            self.busy.emit(message)

        self.bridge.run(work, pool=Pool.REVIEW, on_done=done, on_failed=failed)
