"""`RowPages`: the table's rows, read a page at a time by a worker, never on the GUI thread.

The table keeps only the ids of its rows, in order; the rows themselves are read by id, a
200-row page at a time, as the view paints them. On a team project each read is a network
round trip (50 ms and more on a slow link), so a read in `data()` would freeze scrolling and
typing while the server answers. Here a page that is not in memory yet is asked for and
`LOADING` returned at once (the table draws a placeholder); the pages asked for during one
pass of the event loop (one paint) go to the bridge's pages pool as one job, those on screen
first, then a screenful above and below (read ahead, so a scroll finds them); each page is
sent back as soon as it is read and announced (`pagesRead`), so the table repaints its rows.

A fast scroll paints many pages it then leaves. The worker reads a page only if it is still
wanted when its turn comes, that is, if the newest paint asked for it or it lies on or next
to the rows on screen (`visible`), and its ids are still the table's; a page it skips is asked
for again if it is wanted again by then. Pages already read are never thrown away for being
late: what a round trip brought is kept (an LRU of `CACHED_PAGES`). This is finer than the
job runner's `latest=` key, which drops a whole job's outcome, pages still on screen included.

A new order keeps the pages whose ids it still has at the same place (a reload after an
import, a re-cut that leaves the order alone): the table does not flash its placeholders.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QObject, QTimer, Signal

from desktop_app.job_runner import Job, JobRunner, Pool

PAGE_SIZE = 200
CACHED_PAGES = 20
LOADING = object()   # `RowPages.get`'s answer for a row whose page is still being read


@dataclass(frozen=True)
class Page:
    """One page: its number, its ids (to tell whether a new order still has it) and rows
    (None for a row deleted since the order was read)."""

    number: int
    ids: np.ndarray
    rows: list[dict | None]


@dataclass(frozen=True)
class PageRequest:
    """The pages one job reads, those on screen first: page number -> the ids it holds."""

    pages: dict[int, np.ndarray]
    token: int


@dataclass(frozen=True)
class PagesDone:
    """A job's end: which pages of request `token` it read and which it skipped because
    they were no longer wanted."""

    token: int
    read: list[int]
    skipped: list[int]


def read_pages(request: PageRequest, wanted: Callable[[int, np.ndarray], bool],
               job: Job) -> PagesDone:
    """The job: each page of `request` still `wanted` when its turn comes, one query each,
    sent as it is read (`job.partial`: the first at once, the page on screen)."""
    read, skipped = [], []
    for number, ids in request.pages.items():
        if not wanted(number, ids):
            skipped.append(number)
            continue
        found = {r["item_id"]: r for r in job.project.rows.by_ids(ids.tolist())}
        job.partial(Page(number, ids, [found.get(int(i)) for i in ids]))
        read.append(number)
    return PagesDone(request.token, read, skipped)


class RowPages(QObject):
    """The rows of an order of ids, by position, read off the GUI thread (see above)."""

    pagesRead = Signal(list)   # [(first row, last row)] of the pages that just arrived

    def __init__(self, runner: JobRunner, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._runner = runner
        self._order = np.zeros(0, dtype=np.int64)   # replaced, never changed in place
        self._pages: OrderedDict[int, Page] = OrderedDict()
        self._asked: set[int] = set()               # missing pages asked for since the flush
        self._requested: dict[int, int] = {}        # page -> token of the job reading it
        self._wanted: frozenset[int] = frozenset()  # read by the pool thread: swapped whole
        self._tokens = 0
        self.visible: Callable[[], tuple[int, int]] | None = None   # first, last row shown
        self._flush_timer = QTimer(self)
        self._flush_timer.setSingleShot(True)
        self._flush_timer.setInterval(0)            # once the paint that asked has ended
        self._flush_timer.timeout.connect(self._flush)

    # -- what is shown ---------------------------------------------------------------------
    def reset(self, order: np.ndarray) -> None:
        """Rows of a new order: the pages it shares with the old one at the same place stay."""
        self._order = order
        kept = [(n, page) for n, page in self._pages.items() if self._same_ids(n, page.ids)]
        self._pages = OrderedDict(kept)
        self._requested.clear()   # a page on its way is still taken if its ids are the same

    def extend(self, order: np.ndarray, old_length: int) -> None:
        """More rows after those shown: the last page, read short, is read again."""
        self._order = order
        last = old_length // PAGE_SIZE
        self._pages.pop(last, None)
        self._requested.pop(last, None)

    def _same_ids(self, number: int, ids: np.ndarray) -> bool:
        """Whether page `number` of the order holds exactly `ids` (read by the pool too)."""
        start = number * PAGE_SIZE
        return np.array_equal(self._order[start:start + PAGE_SIZE], ids)

    # -- lookups ---------------------------------------------------------------------------
    def get(self, row: int) -> dict | None | object:
        """The row at `row` (a dict), None for a row deleted since the order was read, or
        `LOADING` while its page is read (it is asked for: `pagesRead` says when it came)."""
        number = row // PAGE_SIZE
        page = self._pages.get(number)
        if page is None:
            self._asked.add(number)
            if not self._flush_timer.isActive():
                self._flush_timer.start()
            return LOADING
        self._pages.move_to_end(number)
        return page.rows[row % PAGE_SIZE]

    def loaded(self, first: int, last: int) -> bool:
        """Whether rows `first`..`last` are all in memory (nothing is asked for)."""
        return all(n in self._pages for n in range(first // PAGE_SIZE, last // PAGE_SIZE + 1))

    def prefetch(self) -> None:
        """The view scrolled: read the pages on and next to the screen not in memory yet."""
        self._flush_timer.start()

    # -- reading ---------------------------------------------------------------------------
    def _screen(self) -> tuple[set[int], set[int]]:
        """The pages of the rows on screen, and those of a screenful above and below."""
        if self.visible is None or not len(self._order):
            return set(), set()
        first, last = self.visible()
        last = min(last, first + PAGE_SIZE)   # a screen is never more than a page
        span = max(last - first, 0) + 1
        near_first = max(first - span, 0)
        near_last = min(last + span, len(self._order) - 1)
        return (set(range(first // PAGE_SIZE, last // PAGE_SIZE + 1)),
                set(range(near_first // PAGE_SIZE, near_last // PAGE_SIZE + 1)))

    def _flush(self) -> None:
        shown, near = self._screen()
        first = self._asked | shown
        wanted = {n for n in first | near
                  if n not in self._pages and n * PAGE_SIZE < len(self._order)}
        self._asked.clear()
        self._wanted = frozenset(wanted)
        # those on screen (or asked for) first, then the ones a scroll reaches next
        new = sorted(wanted - self._requested.keys(), key=lambda n: (n not in first, n))
        if not new:
            return
        self._tokens += 1
        token = self._tokens
        order = self._order
        request = PageRequest({n: order[n * PAGE_SIZE:(n + 1) * PAGE_SIZE].copy()
                               for n in new}, token)
        for n in new:
            self._requested[n] = token
        self._runner.run(lambda job: read_pages(request, self._still_wanted, job),
                         pool=Pool.PAGES, on_partial=self._arrived, on_done=self._done)

    def _still_wanted(self, number: int, ids: np.ndarray) -> bool:
        """Asked in the pool thread: `_wanted` and `_order` are replaced whole, never changed
        in place, so it sees the old object or the new one."""
        return number in self._wanted and self._same_ids(number, ids)

    def _arrived(self, pages: list[Page]) -> None:
        """Pages read: kept if the order still has them where they were read from."""
        shown: list[tuple[int, int]] = []
        for page in pages:
            if not self._same_ids(page.number, page.ids):
                continue   # the order changed on the way: `_done` asks again if wanted
            self._pages[page.number] = page
            self._pages.move_to_end(page.number)
            start = page.number * PAGE_SIZE
            shown.append((start, start + len(page.rows) - 1))
        while len(self._pages) > CACHED_PAGES:
            self._pages.popitem(last=False)
        if shown:
            self.pagesRead.emit(shown)

    def _done(self, done: PagesDone) -> None:
        """A job ended: its pages are no longer on their way; those still wanted and not
        in memory (skipped, or read for an order since replaced) are asked for again."""
        for number in (*done.read, *done.skipped):
            if self._requested.get(number) == done.token:
                del self._requested[number]
        missing = [n for n in self._wanted
                   if n not in self._pages and n not in self._requested]
        if missing:
            self._asked.update(missing)
            if not self._flush_timer.isActive():
                self._flush_timer.start()
