"""Texts' windows read a few at a time and kept in a bounded cache, for scoring many document
pairs in chunks (`engine.dedup.document_edges`).

Why: rescoring a graph of documents needs, for each pair, both texts' windows. Reading every
long text's windows at once held them all (float16 as read, float32 as scored) beside the
pairs, and the project's size set the peak. Here a chunk of pairs asks for the texts it
needs; those not held are read `read_at_once` at a time, and at most `max_windows` windows
are kept for later chunks.

Which to keep: chunks run over the pairs' first texts (anchors) in ascending order, and a
pair's second text comes after its first, so a text below the current anchor is never asked
for again (`forget_below`). Among the rest the cache keeps the lowest keys and lets the
highest go: the soonest to be an anchor, and, where every text pairs with most others (the
dense graph of `benchmarks/document_scale.py`), a steady set that keeps hitting while the
rest are read in passing. A least-recently-used cache would cycle through them and miss
every one. A text read while the cache is full of lower keys is handed out, not kept.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence

from engine.documents.pair_batch import Side

# Reads the sides of the given keys (ascending, none held): {key: (vectors, weights)}.
SideLoader = Callable[[Sequence[int]], Mapping[int, Side]]


class WindowCache:
    """Sides (`pair_batch.Side`) by integer key, read through `load` at most `read_at_once`
    keys per call, at most `max_windows` windows kept between calls of `sides`."""

    def __init__(self, load: SideLoader, *, max_windows: int, read_at_once: int) -> None:
        if read_at_once < 1 or max_windows < 0:
            raise ValueError("read_at_once must be positive and max_windows not negative")
        self._load = load
        self._max_windows = max_windows
        self._read_at_once = read_at_once
        self._held: dict[int, Side] = {}
        self._keys: list[int] = []          # held keys, ascending
        self.held_windows = 0               # windows kept now
        self.reads = 0                      # keys read through `load` so far (misses)

    def sides(self, keys: Sequence[int]) -> dict[int, Side]:
        """The side of each key (distinct), from the cache or read now."""
        found = {k: self._held[k] for k in keys if k in self._held}
        missing = sorted(int(k) for k in keys if k not in found)
        for start in range(0, len(missing), self._read_at_once):
            part = missing[start:start + self._read_at_once]
            read = self._load(part)
            self.reads += len(part)
            for key in part:
                side = read[key]
                found[key] = side
                self._keep(key, side)
        return found

    def forget_below(self, key: int) -> None:
        """Drop every key under `key`: no later chunk asks for one."""
        cut = bisect.bisect_left(self._keys, key)
        for gone in self._keys[:cut]:
            self.held_windows -= len(self._held.pop(gone)[0])
        del self._keys[:cut]

    def _keep(self, key: int, side: Side) -> None:
        """Hold `side` if it fits, letting higher keys go to make room; else leave it."""
        size = len(side[0])
        while self.held_windows + size > self._max_windows and self._keys \
                and self._keys[-1] > key:
            self.held_windows -= len(self._held.pop(self._keys.pop())[0])
        if self.held_windows + size > self._max_windows:
            return
        bisect.insort(self._keys, key)
        self._held[key] = side
        self.held_windows += size
