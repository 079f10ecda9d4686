"""The k-nearest-neighbour graph that duplicate clusters are cut from.

Built once from the index (one batched search of every text against all others) and kept,
so moving the threshold only re-cuts the graph: no new search.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass

import numpy as np

from engine.index.hnsw import HnswIndex
from engine.jobs import CancelToken, Progress, ProgressCallback, RateMeter, no_progress

_QUERY_BATCH = 4096
# The graph searches every text once, so its cost is n searches: it searches with a smaller
# beam than a live query (params.ef) and on every core. Pairs above a duplicate threshold
# are each other's closest neighbours, which a small beam still finds: on 100k question
# embeddings, k=10, ef=32 found the same pairs above 0.8 as ef=128 (recall 0.8566 vs 0.8567,
# the rest is beyond the 10 nearest) in 7.2 s instead of 17.5 s, both on 2 threads.
GRAPH_EF = 32


@dataclass(frozen=True)
class KnnGraph:
    """For node i (text id `ids[i]`): neighbours `nbr[i]` (row positions, -1 = none), `sim[i]`.

    Neighbours exclude the node itself and are sorted by similarity, highest first.
    """

    ids: np.ndarray   # (n,) int64 text ids
    nbr: np.ndarray   # (n, k) int32 positions into ids
    sim: np.ndarray   # (n, k) float32 cosine similarity

    @property
    def k(self) -> int:
        return int(self.nbr.shape[1])

    def to_bytes(self) -> bytes:
        buf = io.BytesIO()
        np.savez(buf, ids=self.ids, nbr=self.nbr, sim=self.sim)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> KnnGraph:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return cls(z["ids"], z["nbr"], z["sim"])

    def nearest_similarities(self) -> np.ndarray:
        """Each node's similarity to its nearest other node (NaN if none): the histogram."""
        if self.k == 0:
            return np.full(len(self.ids), np.nan, dtype=np.float32)
        return np.where(self.nbr[:, 0] >= 0, self.sim[:, 0], np.nan).astype(np.float32)


def build_knn_graph(index: HnswIndex, k: int, ids: np.ndarray | None = None, *,
                    progress: ProgressCallback = no_progress,
                    cancel: CancelToken | None = None, ef: int = GRAPH_EF,
                    threads: int | None = None) -> KnnGraph:
    """Search every text in `ids` (default: all indexed) for its k nearest others among them.

    `threads` (default: every core) search a batch side by side; the index is locked per
    batch, so a live search waits at most one batch."""
    threads = threads or os.cpu_count() or 1
    ids = np.sort(np.asarray(index.ids() if ids is None else ids, dtype=np.int64))
    n = len(ids)
    nbr = np.full((n, k), -1, dtype=np.int32)
    sim = np.zeros((n, k), dtype=np.float32)
    meter = RateMeter()
    for start in range(0, n, _QUERY_BATCH):
        if cancel is not None:
            cancel.raise_if_cancelled()
        batch_ids = ids[start:start + _QUERY_BATCH]
        labels, sims = index.query(index.vectors(batch_ids), k + 1, ef=max(ef, k + 1),
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
    return KnnGraph(ids, nbr, sim)


def texts_near(graph: KnnGraph, threshold: float) -> list[int]:
    """Ids of the texts with a neighbour at `threshold` or above, and of those neighbours:
    every text a cut at that threshold could put in a cluster."""
    above = (graph.nbr >= 0) & (graph.sim >= threshold)
    rows = np.nonzero(above.any(axis=1))[0]
    positions = np.union1d(rows, graph.nbr[above])
    return graph.ids[positions].tolist()
