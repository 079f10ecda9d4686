"""Cutting duplicate clusters from the neighbour graph at a similarity threshold.

The same greedy rule as sentence-transformers' `community_detection`: the text with the
most neighbours above the threshold becomes a centre and takes those neighbours that are
still free, then the next, and so on. Every member is within the threshold of its centre,
so clusters never chain (A~B, B~C, A not ~ C).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.dedup.graph import KnnGraph


@dataclass(frozen=True)
class TextCluster:
    """Graph positions of a cluster's texts, the centre first, with similarity to the centre."""

    members: np.ndarray   # int positions into KnnGraph.ids
    scores: np.ndarray    # float32 cosine similarity to members[0] (1.0 for the centre)

    @property
    def centre(self) -> int:
        return int(self.members[0])


def cut_clusters(graph: KnnGraph, threshold: float, min_size: int = 2) -> list[TextCluster]:
    """Clusters of at least `min_size` texts, biggest first (ties: tighter first)."""
    n = len(graph.ids)
    if n == 0 or graph.k == 0:
        return []
    above = (graph.nbr >= 0) & (graph.sim >= threshold)
    counts = above.sum(axis=1)
    candidates = np.nonzero(counts >= max(min_size - 1, 1))[0]
    strength = np.where(above, graph.sim, 0.0).sum(axis=1)
    order = candidates[np.lexsort((candidates, -strength[candidates], -counts[candidates]))]

    taken = np.zeros(n, dtype=bool)
    clusters: list[TextCluster] = []
    means: list[float] = []   # for the final order; ndarray.mean is slow on tiny arrays
    for centre in order.tolist():
        if taken[centre]:
            continue
        mask = above[centre]
        nbrs = graph.nbr[centre][mask]
        sims = graph.sim[centre][mask]
        free = ~taken[nbrs]
        if free.sum() + 1 < min_size:
            continue
        members = np.concatenate(([centre], nbrs[free])).astype(np.int64)
        scores = np.concatenate(([1.0], sims[free])).astype(np.float32)
        taken[members] = True
        clusters.append(TextCluster(members, scores))
        means.append(float(scores.sum()) / len(scores))
    ranked = sorted(range(len(clusters)),
                    key=lambda i: (-len(clusters[i].members), -means[i]))
    return [clusters[i] for i in ranked]
