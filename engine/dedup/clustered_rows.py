"""The rows behind clustered texts, kept between re-cuts of the neighbour graph.

Moving the threshold slider cuts the kept graph again in a fraction of a second; reading
the rows of every clustered text back from the store took longer than the cut itself at
100k rows (SQL IN batches and row objects). The rows of a text change only when rows are
imported or deleted, so they are kept until then: `rows_changed(texts, count)` forgets
those texts' rows (and notes them, `take_touched`, so that an incremental re-cut knows
whose clusters to build again), and the rows change count (`engine.store.change_counters`,
bumped by every import and deletion) is the key that catches another process's changes.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from sqlalchemy import Connection

from engine.dedup.row_clusters import Member, member
from engine.store import items as item_store

# Members kept per row read, at most, before the member cache starts afresh: each new centre
# a re-cut picks gives its members new similarities, so without a bound the cache would
# grow with every threshold the slider visits.
MEMBERS_PER_ROW = 4
MEMBERS_FLOOR = 10_000


class RowsByText:
    """Live rows per text id (oldest first, as `items_for_texts`), fetched once each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[int, list[dict]] = {}
        self._copies: set[int] | None = None
        self._dirty: set[int] = set()            # texts whose copy count may have changed
        self._change_count: int | None = None
        # Texts whose rows changed since `take_touched`; None: unknown (another process
        # changed rows, or everything was forgotten).
        self._touched: set[int] | None = None
        # Members by (row, similarity to its centre): most clusters keep their centre when
        # the threshold moves, so a re-cut makes few new ones (Member is frozen: shareable).
        self._members: dict[tuple[int, float], Member] = {}

    def clear(self) -> None:
        """Read everything afresh next time."""
        with self._lock:
            self._forget_all(None)

    def _forget_all(self, count: int | None) -> None:
        self._rows, self._copies, self._change_count, self._members = {}, None, count, {}
        self._dirty, self._touched = set(), None

    def rows_changed(self, text_ids: set[int], count: int) -> None:
        """This process imported or deleted rows of these texts, making the rows change
        count `count`: their rows are read again; the rest is kept if nothing else changed."""
        with self._lock:
            if self._change_count is None or count != self._change_count + 1:
                self._forget_all(count)
                return
            for t in text_ids:
                self._rows.pop(t, None)
            self._dirty.update(text_ids)
            if self._touched is not None:
                self._touched.update(text_ids)
            self._change_count = count

    def check(self, count: int) -> None:
        """Forget what was read under another rows change count (another process's rows)."""
        with self._lock:
            if count != self._change_count:
                self._forget_all(count)

    def take_touched(self) -> set[int] | None:
        """Texts whose rows changed since the last call (None: not known, take all), and
        start noting afresh."""
        with self._lock:
            touched, self._touched = self._touched, set()
            return touched

    def member(self, item: dict, score: float) -> Member:
        """`duplicates.member`, made once per row and similarity (a bounded cache)."""
        key = (item["id"], score)
        made = self._members.get(key)
        if made is None:
            if len(self._members) >= max(MEMBERS_FLOOR, MEMBERS_PER_ROW * len(self._rows)):
                self._members = {}
            made = self._members[key] = member(item, score)
        return made

    @property
    def member_count(self) -> int:
        """Members cached now (the bound is what matters: see `MEMBERS_PER_ROW`)."""
        return len(self._members)

    def texts_with_copies(self, conn: Connection) -> list[int]:
        """Texts shared by several live rows (exact duplicates), ascending."""
        with self._lock:
            copies, dirty = self._copies, self._dirty
            self._dirty = set()
        if copies is None:
            copies = set(item_store.texts_with_copies(conn))
        elif dirty:
            counts = item_store.live_row_counts(conn, sorted(dirty))
            copies = (copies - dirty) | {t for t, n in counts.items() if n > 1}
        with self._lock:
            self._copies = copies
        return sorted(copies)

    def rows(self, conn: Connection, text_ids: Sequence[int],
             also: Sequence[int] = ()) -> dict[int, list[dict]]:
        """{text id: its live rows} for `text_ids`; only texts not read before hit the store,
        in one read with those of `also` (kept for a later call, not returned). Each row
        carries its `public_id`, worked out once."""
        with self._lock:
            missing = list({t for t in (*text_ids, *also) if t not in self._rows})
        if missing:
            fetched = item_store.items_for_texts(conn, missing)
            for found in fetched.values():
                for row in found:
                    row["public_id"] = item_store.public_id(row)
            with self._lock:
                for t in missing:
                    self._rows[t] = fetched.get(t, [])
        with self._lock:
            return {t: self._rows[t] for t in text_ids if self._rows.get(t)}
