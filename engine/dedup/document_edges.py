"""The neighbour graph's similarity for documents: what two texts share, window by window.

The graph is found with each text's one vector (for a long text, the mean of its windows),
which is the right candidate search but the wrong score for documents: a copy with a new
introduction is diluted by it, and two documents on one topic can be close on average
without sharing a passage. So every edge with a long text at one end (a text read in
several windows) is scored again from the windows (`engine.documents.window_match`): the
share of one document that the other covers, in whichever direction covers more. That is
the one similarity the threshold, the cut, the export and the estimates see. An edge
between two texts read in one window keeps its cosine, which is what the windows give
anyway: a question's similarity stays what it was.

MinHash (`engine.documents.minhash`) is the second signal. Where both texts have a
signature, the similarity is the larger of what the windows share and the estimated share
of 5-word runs the two texts have in common (Jaccard), put on the similarity scale
(`minhash.on_similarity_scale`: Jaccard 0.5 reads as 0.75): a near-exact copy (a few words
changed, paragraphs reordered) is a duplicate whatever the vectors make of it, while a
reworded copy, sharing few runs, is found by its windows. The project's one threshold reads
both: at 0.75, texts sharing half their 5-word runs. LSH candidates (pairs above Jaccard
0.5) join the graph as edges, so copies are scored even where their vectors did not find
each other.

Bounded memory: a dense graph of documents pairs each text with hundreds of others (3,000
of the scale benchmark's documents make 1.06 million pairs), and reading every long text's
windows and holding every pair at once made the peak grow with the project (4.1 GB for
`duplens duplicates` at 10,000 documents). So each pair is one sorted int64 key, the pairs
are scored in chunks of whole first texts (`Bounds.pairs_at_once`; a first text's
partners stay in one batch, as before, so every score is the same to the bit), their
windows are read `Bounds.read_at_once` texts at a time into a cache of at most
`Bounds.cache_windows` windows (`engine.documents.window_cache`), and the graph's rows are
rescored and sorted again `Bounds.entries_at_once` entries at a time, never rebuilt whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from engine.dedup.graph import KnnGraph, descending_keys
from engine.documents.pair_batch import Side, pair_similarities
from engine.documents.window_cache import WindowCache
from engine.documents.window_match import window_weights

# {text id: (spans (n, 2), vectors (n, dim))} of the given texts read in several windows.
WindowReader = Callable[[Sequence[int]], dict[int, tuple[np.ndarray, np.ndarray]]]
# Stored vectors by text id, in that order (the graph's own reader).
VectorReader = Callable[[np.ndarray], np.ndarray]
# {text id: MinHash signature} of the given texts that have one.
SignatureReader = Callable[[Sequence[int]], dict[int, np.ndarray]]


@dataclass(frozen=True)
class Bounds:
    """How much of the work is held at once (see the module's docstring). The defaults keep
    the windows of 10,000 documents of about 1,000 words (109,177 windows) in the cache,
    so the scale benchmark reads each text once; past that the cache holds the same."""

    pairs_at_once: int = 16_384       # pairs scored per chunk (a first text's all at once)
    read_at_once: int = 256           # texts per call of the window reader
    cache_windows: int = 131_072      # windows kept between chunks (192 MiB at 384 dims)
    entries_at_once: int = 1 << 19    # graph entries read and sorted per step


def rescored(graph: KnnGraph, windowed: np.ndarray, windows: WindowReader,
             vectors: VectorReader, candidates: Sequence[tuple[int, int]] = (),
             signatures: SignatureReader | None = None, bounds: Bounds = Bounds()
             ) -> KnnGraph:
    """`graph` with every edge touching a text of `windowed` (ids read in several windows)
    scored from the windows, and the `candidates` pairs (text ids) added where both are in
    the graph, its `documents` marked (`KnnGraph.documents`: the cut keeps them whole).
    The same graph object when there is nothing to score or mark.

    Idempotent: an edge's score is computed from the windows, never from the score it had,
    so a graph updated after an import can be rescored whole again. `bounds` says how much
    is held at once; any bounds give the same graph, to the bit."""
    ids = graph.ids
    is_long = np.isin(ids, np.asarray(windowed, dtype=np.int64))
    indptr, indices, sims, added = _with_candidates(graph, candidates)
    if not is_long.any() and not added.any():
        return graph.with_documents(None)
    steps = list(_row_steps(indptr, bounds.entries_at_once))
    keys = _pair_keys(indptr, indices, is_long, added, steps)
    scores = _key_scores(keys, ids, is_long, windows, vectors, signatures, bounds)
    new_indices, new_sims = np.empty_like(indices), np.empty_like(sims)
    n = len(ids)
    for s, e in steps:
        a, b = int(indptr[s]), int(indptr[e])
        rows, cols = _entries(indptr, indices, s, e)
        step_sims = sims[a:b].copy()
        touched = is_long[rows] | is_long[cols] | added[a:b]
        step_sims[touched] = scores[np.searchsorted(keys, _keys(rows[touched], cols[touched],
                                                                n))]
        order = _row_order(rows - s, cols, step_sims, n)
        new_indices[a:b], new_sims[a:b] = cols[order], step_sims[order]
    return KnnGraph(ids, indptr, new_indices, new_sims, graph.k, graph.floor,
                    is_long if is_long.any() else None)


def _key_scores(keys: np.ndarray, ids: np.ndarray, is_long: np.ndarray,
                windows: WindowReader, vectors: VectorReader,
                signatures: SignatureReader | None, bounds: Bounds) -> np.ndarray:
    """The similarity of each pair of `keys`, chunk by chunk of whole first texts, with the
    windows each chunk needs from a bounded cache; the Jaccard of their 5-word runs where it
    is more."""
    n = len(ids)
    cache = WindowCache(_side_loader(ids, is_long, windows, vectors),
                        max_windows=bounds.cache_windows, read_at_once=bounds.read_at_once)
    scores = np.empty(len(keys), dtype=np.float32)
    for start, stop, first in _anchor_chunks(keys, n, bounds.pairs_at_once):
        lo, hi = np.divmod(keys[start:stop], n)
        cache.forget_below(first)
        sides = cache.sides(np.unique(np.concatenate((lo, hi))).tolist())
        part = pair_similarities(sides, np.stack((lo, hi), axis=1))
        if signatures is not None:
            part = np.maximum(part, _jaccards(ids, lo, hi, signatures))
        scores[start:stop] = part
    return scores


def _with_candidates(graph: KnnGraph, candidates: Sequence[tuple[int, int]]
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The graph's arrays (indptr, indices, sims) with each candidate pair's two directed
    edges inserted at the end of their rows where the graph lacks them (similarity NaN
    until scored), and which entries were inserted. An edge the graph has keeps its place:
    a candidate scores only what is new, as `KnnGraph.from_rows` keeps an edge's first."""
    at = _candidate_positions(graph.ids, candidates)
    n = len(graph.ids)
    none = np.zeros(len(graph.indices), dtype=bool)
    if not len(at):
        return graph.indptr, graph.indices, graph.sims, none
    wanted = np.unique(np.concatenate((at[:, 0] * n + at[:, 1], at[:, 1] * n + at[:, 0])))
    rows, cols = np.divmod(wanted, n)
    new = np.ones(len(wanted), dtype=bool)
    firsts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])     # rows come sorted
    for first, last in zip(firsts.tolist(), [*firsts[1:].tolist(), len(rows)], strict=True):
        row = int(rows[first])
        held = graph.indices[graph.indptr[row]:graph.indptr[row + 1]]
        new[first:last] = ~np.isin(cols[first:last], held)
    rows, cols = rows[new], cols[new]
    if not len(rows):
        return graph.indptr, graph.indices, graph.sims, none
    places = graph.indptr[rows + 1]
    indptr = graph.indptr.copy()
    indptr[1:] += np.cumsum(np.bincount(rows, minlength=n))
    return (indptr, np.insert(graph.indices, places, cols.astype(graph.indices.dtype)),
            np.insert(graph.sims, places, np.float32(np.nan)),
            np.insert(none, places, True))


def _candidate_positions(ids: np.ndarray, candidates: Sequence[tuple[int, int]]
                         ) -> np.ndarray:
    """(m, 2) positions of the candidate pairs whose two texts are both in the graph."""
    if not len(candidates):
        return np.zeros((0, 2), dtype=np.int64)
    pairs = np.asarray(candidates, dtype=np.int64).reshape(-1, 2)
    at = np.clip(np.searchsorted(ids, pairs), 0, max(len(ids) - 1, 0))
    present = (ids[at] == pairs).all(axis=1) & (pairs[:, 0] != pairs[:, 1])
    return at[present]


def _row_steps(indptr: np.ndarray, entries: int) -> Iterator[tuple[int, int]]:
    """Runs of whole rows [s, e) holding about `entries` entries each (a longer row alone)."""
    n = len(indptr) - 1
    s = 0
    while s < n:
        e = int(np.searchsorted(indptr, indptr[s] + entries, side="right")) - 1
        e = min(max(e, s + 1), n)
        yield s, e
        s = e


def _entries(indptr: np.ndarray, indices: np.ndarray, s: int, e: int
             ) -> tuple[np.ndarray, np.ndarray]:
    """Row and column (int64 positions) of every entry of rows [s, e)."""
    rows = np.repeat(np.arange(s, e, dtype=np.int64), np.diff(indptr[s:e + 1]))
    return rows, indices[indptr[s]:indptr[e]].astype(np.int64)


def _keys(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """The key of each unordered pair of positions: lower * n + higher."""
    return np.minimum(a, b) * n + np.maximum(a, b)


def _pair_keys(indptr: np.ndarray, indices: np.ndarray, is_long: np.ndarray,
               added: np.ndarray, steps: list[tuple[int, int]]) -> np.ndarray:
    """Sorted keys of the distinct pairs to score: every edge touching a long text, and
    every inserted candidate. Taken from each edge's row when its row is the lower text, so
    the steps' keys come in order; an edge whose mirror is missing is added afterwards."""
    n = len(indptr) - 1
    upper: list[np.ndarray] = []
    for s, e in steps:
        rows, cols = _entries(indptr, indices, s, e)
        touched = is_long[rows] | is_long[cols] | added[indptr[s]:indptr[e]]
        up = touched & (cols > rows)
        upper.append(np.unique(rows[up] * n + cols[up]))
    keys = np.concatenate(upper) if upper else np.zeros(0, dtype=np.int64)
    orphans: list[np.ndarray] = []
    for s, e in steps:
        rows, cols = _entries(indptr, indices, s, e)
        touched = is_long[rows] | is_long[cols] | added[indptr[s]:indptr[e]]
        down = touched & (cols < rows)
        mirrored = cols[down] * n + rows[down]
        at = np.minimum(np.searchsorted(keys, mirrored), max(len(keys) - 1, 0))
        held = keys[at] == mirrored if len(keys) else np.zeros(len(mirrored), dtype=bool)
        orphans.append(mirrored[~held])
    missing = np.concatenate(orphans) if orphans else np.zeros(0, dtype=np.int64)
    return np.union1d(keys, missing) if len(missing) else keys


def _anchor_chunks(keys: np.ndarray, n: int, pairs_at_once: int
                   ) -> Iterator[tuple[int, int, int]]:
    """Runs [start, stop) of `keys` of whole first texts, about `pairs_at_once` pairs each
    (a text with more alone), with the run's first text's position."""
    starts = np.searchsorted(keys, np.arange(n + 1, dtype=np.int64) * n).tolist()
    anchor = 0
    for text in range(1, n):
        if starts[text + 1] - starts[anchor] > pairs_at_once and starts[text] > starts[anchor]:
            yield starts[anchor], starts[text], anchor
            anchor = text
    if starts[n] > starts[anchor]:
        yield starts[anchor], starts[n], anchor


def _side_loader(ids: np.ndarray, is_long: np.ndarray, windows: WindowReader,
                 vectors: VectorReader) -> Callable[[Sequence[int]], dict[int, Side]]:
    """Reads positions' sides: a long text's windows (float32, weighted by the characters
    each stands for), a text read in one window as its own single window (its vector)."""
    def load(positions: Sequence[int]) -> dict[int, Side]:
        at = np.asarray(positions, dtype=np.int64)
        long_at, short_at = at[is_long[at]], at[~is_long[at]]
        out: dict[int, Side] = {}
        read = windows([int(t) for t in ids[long_at]])
        for position, text_id in zip(long_at.tolist(), ids[long_at].tolist(), strict=True):
            if text_id in read:
                spans, vecs = read[text_id]
                out[position] = (np.asarray(vecs, dtype=np.float32), window_weights(spans))
        if len(short_at):
            for position, vec in zip(short_at.tolist(), vectors(ids[short_at]), strict=True):
                out[position] = (vec.reshape(1, -1).astype(np.float32), None)
        return out

    return load


def _row_order(local_rows: np.ndarray, cols: np.ndarray, sims: np.ndarray, n: int
               ) -> np.ndarray:
    """The order that sorts each row by similarity, highest first, equal ones by column:
    `KnnGraph.from_rows`'s two stable sorts, on a step's rows."""
    order = np.argsort(local_rows * n + cols, kind="stable")
    return order[np.argsort((local_rows[order] << 32) | descending_keys(sims[order]),
                            kind="stable")]


def _jaccards(ids: np.ndarray, lo: np.ndarray, hi: np.ndarray,
              signatures: SignatureReader) -> np.ndarray:
    """Each pair's estimated Jaccard of 5-word runs on the similarity scale; 0 where a text
    has no signature."""
    from engine.documents.minhash import with_jaccard

    read = signatures([int(t) for t in ids[np.unique(np.concatenate((lo, hi)))]])
    return np.array([with_jaccard(0.0, read.get(a), read.get(b))
                     for a, b in zip(ids[lo].tolist(), ids[hi].tolist(), strict=True)],
                    dtype=np.float32)
