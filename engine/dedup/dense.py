"""Completing dense neighbourhoods: every pair above the floor among texts that have more
near neighbours than the k a search returns.

A text whose k-th neighbour is still at the floor may have more duplicates than k: in a
group of 30 near-identical texts each finds 10 of the 29 others. Such a text and its
neighbours above the floor are linked; each connected group of links (a component) is
searched exactly, all its pairs at once as one matrix product of its normalised vectors.
A pair above the floor whose texts are both in the group is then found, whatever k was.
Components are small in practice (100k question embeddings with noisy copies, floor 0.75:
351 of them, the largest 1,264 texts, 4.2M similarities in all, under 2 s on 2 busy
cores), so the exact search costs far less than one more pass of the index.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from engine.progress import CancelToken, Progress, ProgressCallback, RateMeter, no_progress

# Texts whose vectors are read from the index at once (as float32, 1.5 kB each at 384
# dimensions: 48 MB), and rows of one matrix product (a block of 2048 x a component).
_VECTORS_AT_ONCE = 32_768

# Normalised float32 vectors of the given text ids, in that order.
VectorReader = Callable[[np.ndarray], np.ndarray]
_BLOCK = 2048
_SCORES_AT_ONCE = 32_000_000


def complete_dense(vectors: VectorReader, ids: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                   sims: np.ndarray, saturated: np.ndarray, floor: float, *,
                   progress: ProgressCallback = no_progress,
                   cancel: CancelToken | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs (a, b, similarity), a < b positions into `ids`, at `floor` or above within each
    component of the known links (rows -> cols at the floor or above) that touch a
    `saturated` text."""
    n = len(ids)
    link = (sims >= floor) & (saturated[rows] | saturated[cols])
    a, b = rows[link].astype(np.int64), cols[link].astype(np.int64)
    empty = (np.empty(0, np.int32), np.empty(0, np.int32), np.empty(0, np.float32))
    if not len(a):
        return empty
    # SciPy only here, where it is used: importing it costs every command and the window's
    # start a few tenths of a second.
    from scipy import sparse
    from scipy.sparse.csgraph import connected_components

    graph = sparse.coo_matrix((np.ones(len(a), dtype=np.int8), (a, b)), shape=(n, n))
    _, label = connected_components(graph.tocsr(), directed=False)
    nodes = np.unique(np.concatenate([a, b]))
    nodes = nodes[np.argsort(label[nodes], kind="stable")]   # by component, then position
    starts = np.flatnonzero(np.r_[True, np.diff(label[nodes]) != 0])
    bounds = np.r_[starts, len(nodes)]
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    meter = RateMeter()
    first = 0
    while first < len(starts):
        # Components whose vectors are read together: at least one, then as many as fit.
        last = first + 1
        while (last < len(starts)
               and bounds[last + 1] - bounds[first] <= _VECTORS_AT_ONCE):
            last += 1
        if cancel is not None:
            cancel.raise_if_cancelled()
        span = nodes[bounds[first]:bounds[last]]
        # Read in id order (the store reads a range of ids fastest), used in span order.
        by_id = np.argsort(span, kind="stable")
        got = vectors(ids[span[by_id]])
        block = np.empty_like(got)
        block[by_id] = got
        for c in range(first, last):
            lo, hi = bounds[c] - bounds[first], bounds[c + 1] - bounds[first]
            found.extend(_pairs_within(span[lo:hi], block[lo:hi], floor))
        first = last
        done = int(bounds[first])
        progress(Progress("dense neighbourhoods", done, len(nodes), meter.rate(done)))
    if not found:
        return empty
    return (np.concatenate([f[0] for f in found]), np.concatenate([f[1] for f in found]),
            np.concatenate([f[2] for f in found]))


def _pairs_within(nodes: np.ndarray, vectors: np.ndarray, floor: float):
    """Every pair (a < b) of one component at `floor` or above, a block of rows at a time."""
    # Fewer rows per block in a big component: a block's scores stay within _SCORES_AT_ONCE
    # (128 MB), whatever size a component reaches at a million texts.
    block = max(1, min(_BLOCK, _SCORES_AT_ONCE // max(len(nodes), 1)))
    for lo in range(0, len(nodes), block):
        scores = vectors[lo:lo + block] @ vectors[lo:].T
        i, j = np.nonzero(scores >= floor)
        keep = j > i   # the block's own diagonal and below are the other half
        i, j = i[keep], j[keep]
        yield (nodes[lo + i].astype(np.int32), nodes[lo + j].astype(np.int32),
               scores[i, j].astype(np.float32))
