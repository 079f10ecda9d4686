"""Which long texts hold a passage near a query: every stored window scanned, not only the
windows of the texts whose mean vectors are near.

Why: the index holds one vector per text, the normalised mean of a long text's windows. A
paragraph from a document's middle is close to the window that holds it, but only fairly
close to that mean, which the document's other windows pull towards their own subjects.
Scoring the windows of the 50 texts nearest by mean vector missed the document entirely
for about a third of two-paragraph queries among 2,000 documents of random Python
documentation paragraphs (`benchmarks/document_search.py`). Here the query is compared with
every window, and the texts of the best windows become candidates beside the index's; the
search then scores every candidate from its windows as before.

How: the windows are held as one int8 matrix with a scale per window (each row divided by
its largest component, times 127), with the text each row belongs to, a text's windows in
consecutive rows: 396 bytes a window with the bundled model, about 4 MB per 1,000
documents of 1,000 words. A query is compared chunk by chunk (each chunk upcast to float32
for the product), each window keeps its best cosine with any of the query's vectors (a long
query has several), and each text its best window. No index to build or keep in step: the
matrix is read from the project once per index generation, on the first search that needs
it. Why int8 and not the stored float16: numpy upcasts float16 without vector units, which
made the scan of 109,000 windows take 64 ms against 5 ms (random unit vectors of 384
dimensions, one query, on a 2-core AMD EPYC; chunks of 2,048 rows, which stay in cache:
9 ms at 8,192, 20 ms at 32,768), and int8 halves the memory. Over the 21,807 windows of
2,000 documents of the benchmark and 200 of them as queries, a cosine moved by 2e-4
(standard deviation), at most 2.3e-3; it only chooses candidates, which are then scored from
their stored windows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

# Rows upcast to float32 at a time: 2,048 windows of 384 dimensions are 3 MB of float32.
CHUNK = 2_048
# Texts whose windows are read from the store at a time while the matrix is filled.
READ_AT_ONCE = 1_000
# Queries scanned together (`nearest_texts_each`), fewer where their best cosines per
# window would pass BEST_BYTES (64 at 109,000 windows, 8 at a million).
QUERIES_AT_ONCE = 64
BEST_BYTES = 32 * 2**20

# Reads some texts' windows: {text id: (spans, vectors (n, dim) float16)}.
WindowReader = Callable[[Sequence[int]], Mapping[int, tuple[np.ndarray, np.ndarray]]]


class WindowFinder:
    """Every window of a project's long texts, for finding the texts nearest a query."""

    def __init__(self, vectors: np.ndarray, owners: np.ndarray) -> None:
        """`vectors` (n, dim), unit length (float16 as stored, or float32); `owners` (n,)
        the text id of each row, a text's rows consecutive."""
        if len(vectors) != len(owners):
            raise ValueError("one owner per window")
        self._set(*quantize(vectors), np.asarray(owners, dtype=np.int64))

    def _set(self, vectors: np.ndarray, scales: np.ndarray, owners: np.ndarray) -> None:
        """Hold int8 rows, their scales and owners (a text's rows consecutive)."""
        self._vectors, self._scales, self._owners = vectors, scales, owners
        starts = np.flatnonzero(np.r_[True, self._owners[1:] != self._owners[:-1]]) \
            if len(self._owners) else np.zeros(0, dtype=np.int64)
        self._starts = starts            # first row of each run of one text's windows
        self._texts = self._owners[starts]

    @classmethod
    def load(cls, text_ids: Sequence[int], read: WindowReader, dim: int) -> WindowFinder:
        """The windows of `text_ids` (the texts read in several windows), read
        `READ_AT_ONCE` texts at a time."""
        parts: list[np.ndarray] = []
        owners: list[np.ndarray] = []
        ids = [int(t) for t in text_ids]
        for start in range(0, len(ids), READ_AT_ONCE):
            found = read(ids[start:start + READ_AT_ONCE])
            for text_id in ids[start:start + READ_AT_ONCE]:
                if text_id in found:
                    vectors = np.asarray(found[text_id][1], dtype=np.float16)
                    parts.append(vectors)
                    owners.append(np.full(len(vectors), text_id, dtype=np.int64))
        if not parts:
            return cls(np.zeros((0, dim), dtype=np.float16), np.zeros(0, dtype=np.int64))
        return cls(np.concatenate(parts), np.concatenate(owners))

    def extended(self, text_ids: Sequence[int], read: WindowReader, dim: int
                 ) -> WindowFinder:
        """A finder of these windows and those of `text_ids` (texts read in several windows
        since this one was loaded), reading only theirs: during an import every commit
        moves the index's generation, and reading every window again each time cost 0.53 s
        a search at 10,000 documents. This finder is left as it was."""
        added = WindowFinder.load(text_ids, read, dim)
        if not len(added):
            return self
        joined = WindowFinder.__new__(WindowFinder)
        joined._set(np.concatenate([self._vectors, added._vectors]),
                    np.concatenate([self._scales, added._scales]),
                    np.concatenate([self._owners, added._owners]))
        return joined

    @property
    def texts(self) -> np.ndarray:
        """The ids of the texts whose windows are held, in row order."""
        return self._texts

    def __len__(self) -> int:
        return len(self._vectors)

    @property
    def nbytes(self) -> int:
        return int(self._vectors.nbytes + self._scales.nbytes + self._owners.nbytes)

    def nearest_texts(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The `k` texts (ids, best first) holding the windows nearest any row of
        `queries` (m, dim), with each one's best window cosine."""
        return self.nearest_texts_each([queries], k)[0]

    def nearest_texts_each(self, queries: Sequence[np.ndarray], k: int
                           ) -> list[tuple[np.ndarray, np.ndarray]]:
        """`nearest_texts` for each of several queries (each (m, dim): a checked file's
        rows, a long row by its windows), in one pass over the matrix per group of
        queries: the pass is mostly the int8 rows' upcast, which one query alone paid in
        full (about 8 ms a row at 10,000 documents)."""
        sets = [np.asarray(q, dtype=np.float32).reshape(-1, self._vectors.shape[1])
                for q in queries]
        empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))
        if not len(self._vectors) or k < 1:
            return [empty for _ in sets]
        out: list[tuple[np.ndarray, np.ndarray]] = []
        at_once = max(1, min(QUERIES_AT_ONCE, BEST_BYTES // (4 * len(self._vectors))))
        for first in range(0, len(sets), at_once):
            part = sets[first:first + at_once]
            per_text = self._per_text([p for p in part if len(p)])
            column = iter(range(per_text.shape[1]))
            for p in part:
                out.append(self._top(per_text[:, next(column)], k) if len(p) else empty)
        return out

    def _per_text(self, sets: list[np.ndarray]) -> np.ndarray:
        """(texts, len(sets)): each text's best window cosine with any row of each set."""
        q = np.ascontiguousarray(np.concatenate(sets).T)
        groups = np.cumsum([0, *[len(s) for s in sets[:-1]]])
        best = np.empty((len(self._vectors), len(sets)), dtype=np.float32)
        for start in range(0, len(self._vectors), CHUNK):
            chunk = self._vectors[start:start + CHUNK].astype(np.float32)
            scores = (chunk @ q) * self._scales[start:start + CHUNK, None]
            best[start:start + len(chunk)] = np.maximum.reduceat(scores, groups, axis=1)
        return np.maximum.reduceat(best, self._starts, axis=0)

    def _top(self, per_text: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        k = min(k, len(per_text))
        top = np.argpartition(-per_text, k - 1)[:k]
        top = top[np.argsort(-per_text[top], kind="stable")]
        return self._texts[top], per_text[top]


def quantize(vectors: np.ndarray, rows_at_once: int = CHUNK) -> tuple[np.ndarray, np.ndarray]:
    """Rows as int8 and a float32 scale each: row ≈ int8 row × scale, the row's largest
    component mapped to ±127 (a row of zeros keeps scale 0). Done `rows_at_once` rows at a
    time, so no float32 copy of the whole matrix is made."""
    out = np.empty(vectors.shape, dtype=np.int8)
    scales = np.empty(len(vectors), dtype=np.float32)
    for start in range(0, len(vectors), rows_at_once):
        part = np.asarray(vectors[start:start + rows_at_once], dtype=np.float32)
        top = np.abs(part).max(axis=1) if part.size else np.zeros(len(part), np.float32)
        scale = top / 127
        safe = np.where(scale > 0, scale, 1)
        out[start:start + len(part)] = np.rint(part / safe[:, None]).astype(np.int8)
        scales[start:start + len(part)] = scale
    return out, scales
