"""`PairQueue`: pairs to judge handed out one at a time, the state Ask me and Measure quality
share.

Pairs come from the engine a batch at a time (`Asking.pairs`, `Measuring.next_pairs`); the
queue hands them out one at a time and says when the next batch is due, before it runs dry,
so the analyst never waits between pairs. A pair shown in this session (judged or
skipped) is not shown again; a batch asks for as many more pairs as were shown, since the
engine returns pairs judged but not yet written, and skipped ones, and they are dropped
here. Undo takes back this session's verdicts, last first: the pair comes back on screen and
the one that was there goes back to the front of the queue.

Plain Python: the window's controllers drive it, run the engine calls as jobs, and emit the
signals; nothing here touches Qt or the project.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Generic, Protocol, TypeVar


class _Shown(Protocol):
    @property
    def public_id(self) -> str: ...


class ShownPair(Protocol):
    """What the queue needs of a pair: its two rows' public ids, for the undo's words."""

    @property
    def a(self) -> _Shown: ...

    @property
    def b(self) -> _Shown: ...


P = TypeVar("P", bound=ShownPair)


class PairQueue(Generic[P]):
    """Which pair is on screen, the pairs queued after it, and this session's verdicts."""

    def __init__(self, key: Callable[[P], Hashable], *, batch: int, refill_at: int) -> None:
        self._key = key              # what makes two pairs one (rows, or a draw's id)
        self.batch = batch           # pairs asked for beyond those shown already
        self.refill_at = refill_at   # the next batch is fetched when this few are queued
        self.current: P | None = None
        self.queue: list[P] = []
        self.given = 0               # verdicts written in this session, less those undone
        self.fetching = False        # a batch is on its way
        self._seen: set[Hashable] = set()           # shown (judged or skipped) this session
        self._verdicts: list[tuple[P, int]] = []    # verdicts to take back, newest last

    def reset(self) -> None:
        """A new project: forget the queue and the session's verdicts."""
        self.current, self.queue, self.given = None, [], 0
        self._seen.clear()
        self._verdicts.clear()

    # -- showing ---------------------------------------------------------------------------
    def advance(self) -> P | None:
        """Put the next pair not shown yet on screen and return it (None: the queue is
        empty, a batch is due)."""
        self.current = None
        while self.queue and self.current is None:
            pair = self.queue.pop(0)
            key = self._key(pair)
            if key not in self._seen:
                self._seen.add(key)
                self.current = pair
        return self.current

    def running_low(self) -> bool:
        """Few enough pairs are queued that the next batch should be fetched now."""
        return len(self.queue) <= self.refill_at

    def reorder(self) -> None:
        """The pairs are to come in another order (Ask me's second-opinion order turned on
        or off): the queued ones are dropped and the one on screen, not judged, no longer
        counts as shown, so the next batch, in the new order, may offer it again. A batch
        on its way is the old order's; the caller drops it and `start_fetch` asks again."""
        if self.current is not None:
            self._seen.discard(self._key(self.current))
        self.current, self.queue, self.fetching = None, [], False

    # -- fetching --------------------------------------------------------------------------
    def start_fetch(self) -> int | None:
        """How many pairs the next batch should ask for, now that one is on its way (None:
        one already is)."""
        if self.fetching:
            return None
        self.fetching = True
        return self.batch + len(self._seen)

    def fetched(self, pairs: Iterable[P]) -> None:
        """The batch came: queue the pairs neither shown nor queued already."""
        self.fetching = False
        skip = self._seen | {self._key(p) for p in self.queue}
        self.queue += [p for p in pairs if self._key(p) not in skip]

    def fetch_failed(self) -> None:
        """The batch did not come: the next `start_fetch` may try again."""
        self.fetching = False

    # -- verdicts --------------------------------------------------------------------------
    def judge(self, verdict: int | None) -> P | None:
        """Note the verdict on the pair on screen (None: skipped, nothing to take back) and
        return that pair (None when none is shown). `advance` shows the next."""
        pair = self.current
        if pair is not None and verdict is not None:
            self._verdicts.append((pair, verdict))
        return pair

    def verdict_written(self) -> int:
        """A verdict reached the project: how many this session has given now."""
        self.given += 1
        return self.given

    def undo(self) -> tuple[P, int] | None:
        """Take back the last verdict: its pair is on screen again and the one that was goes
        back to the front of the queue. Returns the pair and its verdict (None: nothing to
        take back)."""
        if not self._verdicts:
            return None
        pair, verdict = self._verdicts.pop()
        if self.current is not None:
            self.queue.insert(0, self.current)
            self._seen.discard(self._key(self.current))
        self.current = pair
        return pair, verdict

    def verdict_taken_back(self) -> int:
        """The project cleared an undone verdict: how many this session has given now."""
        self.given -= 1
        return self.given

    def undo_text(self) -> str | None:
        """The verdict an undo would take back, in words (None: there is none)."""
        if not self._verdicts:
            return None
        pair, verdict = self._verdicts[-1]
        words = "duplicate" if verdict == 1 else "not duplicate"
        return f"{pair.a.public_id} / {pair.b.public_id}: {words}"
