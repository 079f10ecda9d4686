"""`PairQueue` without Qt: one pair at a time, a batch fetched before the queue runs dry,
a pair shown once per session, answers taken back last first."""

from __future__ import annotations

from dataclasses import dataclass

from engine.review.pair_queue import PairQueue


@dataclass(frozen=True)
class Row:
    public_id: str


@dataclass(frozen=True)
class Pair:
    id: int
    a: Row
    b: Row


def _pair(i: int) -> Pair:
    return Pair(i, Row(f"r{i}a"), Row(f"r{i}b"))


def _queue(batch: int = 4, refill_at: int = 1) -> PairQueue[Pair]:
    return PairQueue(lambda p: p.id, batch=batch, refill_at=refill_at)


def test_an_empty_queue_shows_nothing_and_wants_a_batch() -> None:
    q = _queue()
    assert q.advance() is None and q.current is None
    assert q.running_low()
    assert q.start_fetch() == 4
    assert q.start_fetch() is None          # one batch at a time
    q.fetch_failed()
    assert q.start_fetch() == 4             # a failed batch may be asked for again


def test_pairs_come_one_at_a_time_and_the_next_batch_before_the_queue_runs_dry() -> None:
    q = _queue(batch=4, refill_at=1)
    q.start_fetch()
    q.fetched([_pair(i) for i in range(4)])
    assert not q.fetching
    assert q.advance() == _pair(0) and q.current == _pair(0)
    assert not q.running_low()                          # three queued
    assert q.advance() == _pair(1)
    assert q.advance() == _pair(2)
    assert q.running_low()                              # one left: fetch now
    # Shown pairs come back from the engine (answers not written yet, skipped ones):
    # the batch asks for that many more, and the queue drops them.
    assert q.start_fetch() == 4 + 3
    q.fetched([_pair(i) for i in range(7)])
    assert [p.id for p in q.queue] == [3, 4, 5, 6]


def test_a_pair_is_shown_once_per_session() -> None:
    q = _queue()
    q.fetched([_pair(1), _pair(2)])
    q.advance()
    q.queue.insert(0, _pair(1))              # the same pair queued again somehow
    assert q.advance() == _pair(2)
    assert q.advance() is None


def test_a_skip_is_not_a_verdict() -> None:
    q = _queue()
    q.fetched([_pair(1), _pair(2)])
    q.advance()
    assert q.judge(None) == _pair(1)
    assert q.undo_text() is None and q.undo() is None
    assert q.advance() == _pair(2)


def test_no_pair_on_screen_takes_no_verdict() -> None:
    q = _queue()
    assert q.judge(1) is None
    assert q.undo() is None


def test_undo_takes_back_the_last_verdict_first_and_requeues_the_pair_on_screen() -> None:
    q = _queue()
    q.fetched([_pair(i) for i in range(1, 5)])
    q.advance()
    assert q.judge(1) == _pair(1)
    q.advance()
    assert q.judge(0) == _pair(2)
    q.advance()                                         # pair 3 on screen
    assert q.undo_text() == "r2a / r2b: not duplicate"
    assert q.verdict_written() == 1 and q.verdict_written() == 2 and q.given == 2

    assert q.undo() == (_pair(2), 0)
    assert q.current == _pair(2)
    assert [p.id for p in q.queue] == [3, 4]            # back at the front, unseen again
    assert q.verdict_taken_back() == 1
    assert q.undo_text() == "r1a / r1b: duplicate"
    assert q.undo() == (_pair(1), 1)
    assert q.current == _pair(1) and [p.id for p in q.queue] == [2, 3, 4]
    assert q.undo() is None

    q.judge(1)                                         # answered again: on to pair 2
    assert q.advance() == _pair(2)
    assert q.advance() == _pair(3)


def test_reset_forgets_the_session() -> None:
    q = _queue()
    q.fetched([_pair(1), _pair(2)])
    q.advance()
    q.judge(1)
    q.verdict_written()
    q.reset()
    assert q.current is None and q.queue == [] and q.given == 0
    assert q.undo_text() is None
    q.fetched([_pair(1)])                               # shown before the reset: shown again
    assert q.advance() == _pair(1)


def test_reorder_drops_the_queue_and_may_show_the_unjudged_pair_again() -> None:
    queue = _queue()
    queue.start_fetch()
    queue.fetched([_pair(1), _pair(2), _pair(3)])
    queue.advance()
    queue.judge(1)
    queue.advance()                      # pair 2 on screen, not judged
    queue.start_fetch()                  # a batch in the old order on its way
    queue.reorder()
    assert queue.current is None and queue.queue == [] and not queue.fetching
    assert queue.start_fetch() is not None
    queue.fetched([_pair(3), _pair(2), _pair(1)])   # the new order
    assert queue.advance() == _pair(3) and queue.advance() == _pair(2)
    assert queue.advance() is None       # pair 1 was judged: never again
    assert queue.undo_text() == "r1a / r1b: duplicate"
