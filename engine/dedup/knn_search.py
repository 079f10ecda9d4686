"""Every text's k nearest others by one batched search of the index: the neighbour graph's
first pass (`engine.dedup.graph`)."""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from engine.index.hnsw import HnswIndex
from engine.progress import CancelToken, Progress, ProgressCallback, RateMeter, no_progress

_QUERY_BATCH = 4096
# The graph searches every text once, so its cost is n searches: it searches with the
# narrowest beam hnswlib allows for k=10 (k + 1) and on every core. Pairs above a duplicate
# threshold are each other's closest neighbours, which a narrow beam still finds, and the
# dense step (engine.dedup.dense) searches exactly where a text has more than k: on 100k
# question embeddings with noisy copies, k=10, the completed graph held 0.9998 of the
# pairs above 0.8 with ef=11, 0.9999 with ef=16, after 39 s and 56 s of search (2 busy
# cores, load 11; a beam of 32, the earlier setting, took 1.5 times as long as 16).
GRAPH_EF = 11


def search_neighbours(index: HnswIndex, ids: np.ndarray, k: int,
                      vectors: Callable[[np.ndarray], np.ndarray], *, ef: int = GRAPH_EF,
                      threads: int | None = None, progress: ProgressCallback = no_progress,
                      cancel: CancelToken | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(positions, similarities), each (n, k): for every text of `ids` (sorted), its k
    nearest others among `ids`, highest first; -1 and 0 where it has fewer. `vectors(ids)`
    gives the query vectors.

    `threads` (default: every core) search a batch side by side; the index is locked per
    batch, so a live search waits at most one batch."""
    threads = threads or os.cpu_count() or 1
    n = len(ids)
    nbr = np.full((n, k), -1, dtype=np.int32)
    sim = np.zeros((n, k), dtype=np.float32)
    meter = RateMeter()
    for start in range(0, n, _QUERY_BATCH):
        if cancel is not None:
            cancel.raise_if_cancelled()
        batch_ids = ids[start:start + _QUERY_BATCH]
        labels, sims = index.query(vectors(batch_ids), k + 1, ef=max(ef, k + 1),
                                   threads=threads)
        if labels.shape[1]:
            pos = np.clip(np.searchsorted(ids, labels), 0, max(n - 1, 0))
            valid = (ids[pos] == labels) & (labels != batch_ids[:, None])
            # Results come sorted by similarity: a stable sort moves the valid ones first.
            order = np.argsort(~valid, axis=1, kind="stable")[:, :k]
            width = order.shape[1]
            ok = np.take_along_axis(valid, order, 1)
            rows = slice(start, start + len(batch_ids))
            nbr[rows, :width] = np.where(ok, np.take_along_axis(pos, order, 1), -1)
            sim[rows, :width] = np.where(ok, np.take_along_axis(sims, order, 1), 0.0)
        done = min(start + _QUERY_BATCH, n)
        progress(Progress("neighbours", done, n, meter.rate(done)))
    return nbr, sim
