"""Cutting duplicate clusters from the neighbour graph at a similarity threshold.

The same greedy rule as sentence-transformers' `community_detection`: the text with the
most neighbours above the threshold becomes a centre and takes those neighbours that are
still free, then the next, and so on. Every member is within the threshold of its centre,
so clusters never chain (A~B, B~C, A not ~ C).

Documents are kept whole as well: a text read in several windows (`KnnGraph.documents`)
joins a centre only when it is within the threshold of every document already taken into
that cluster, so every two documents of a cluster are duplicates at the threshold by
themselves, not only through their centre. A document's similarity is how much of one
the other covers, and documents on one subject written the same way (lists of questions,
reference pages of one kind) reach the threshold against a centre without sharing
anything with each other: on the validation half of `benchmarks/documents.py` the centre
rule alone put two reworded copies and their originals into one cluster of five, and the
export then calls all ten pairs duplicates. With the rule, pair F1 rose from 0.959 to
0.985 there, reworded documents from 0.872 to 1.0, no kind lost (`benchmarks.cut_choice`).
Questions keep the centre rule: the same rule for every text cost recall on the sample
questions' answer key (F1 0.569 to 0.499 at 0.75) and on Quora's validation pairs (0.732
to 0.700), since paraphrases of one question are often alike through the clearest of
them only.

A document left out by that rule stays free and may become a centre, or join one, later.
"""

from __future__ import annotations

from collections.abc import Callable
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
    if n == 0 or not len(graph.indices):
        return []
    counts = graph.counts_at(threshold)
    candidates = np.nonzero(counts >= max(min_size - 1, 1))[0]
    # Rows are sorted by similarity, so a row's neighbours above the threshold are the first
    # counts[i] of its entries: those are gathered into flat lists (CSR: text i's run is
    # start[i]:start[i+1]); the greedy walk below then touches plain Python ints only,
    # which at 100k texts is several times faster than NumPy calls on tiny arrays.
    above = np.flatnonzero(graph.sims >= threshold)
    targets = graph.indices[above].tolist()
    documents = graph.documents.tolist() if graph.documents is not None else None
    sims = graph.sims[above]
    start = np.concatenate(([0], np.cumsum(counts)))
    strength = np.bincount(np.repeat(np.arange(n), counts), weights=sims, minlength=n)
    order = candidates[np.lexsort((candidates, -strength[candidates], -counts[candidates]))]
    sims = sims.tolist()
    start = start.tolist()

    taken = bytearray(n)
    clusters: list[TextCluster] = []
    for centre in order.tolist():
        if taken[centre]:
            continue
        lo, hi = start[centre], start[centre + 1]
        free = [i for i in range(lo, hi) if not taken[targets[i]]]
        if len(free) + 1 < min_size:
            continue
        if documents is not None:
            row = rows_above(lambda t: targets[start[t]:start[t + 1]])
            joining = set(linked_documents([targets[i] for i in free], documents, row))
            free = [i for i in free if targets[i] in joining]
            if len(free) + 1 < min_size:
                continue
        members = [centre, *(targets[i] for i in free)]
        scores = [1.0, *(sims[i] for i in free)]
        for m in members:
            taken[m] = 1
        clusters.append(TextCluster(np.asarray(members, dtype=np.int64),
                                    np.asarray(scores, dtype=np.float32)))
    return rank_clusters(clusters)


def linked_documents(texts: list[int], documents: list[bool],
                     row: Callable[[int], set[int]]) -> list[int]:
    """The entries of `texts` (a centre's free neighbours above the threshold, most similar
    first) that join it: every question, and each document that is above the threshold
    with every document taken before it (its row or theirs holds the other: the graph is
    symmetric, and a pair's two entries carry one score). The centre itself is not checked:
    every entry is above the threshold with it. `row(t)`: t's neighbours above the
    threshold (`rows_above`). The re-cut (`engine.dedup.recut`) takes documents the same
    way."""
    kept: list[int] = []
    taken_documents: list[int] = []
    for t in texts:
        if documents[t]:
            if not all(other in row(t) or t in row(other) for other in taken_documents):
                continue
            taken_documents.append(t)
        kept.append(t)
    return kept


def rows_above(read: Callable[[int], list[int]]) -> Callable[[int], set[int]]:
    """`read` (a text's neighbours above the threshold) as sets, each read once."""
    rows: dict[int, set[int]] = {}

    def row(t: int) -> set[int]:
        if t not in rows:
            rows[t] = set(read(t))
        return rows[t]

    return row


def rank_clusters(clusters: list[TextCluster]) -> list[TextCluster]:
    """Clusters made in the order their centres were taken, biggest first, then tighter
    (higher mean similarity to the centre); ties keep the order they were made in."""
    means = [sum(scores) / len(scores) for scores in (c.scores.tolist() for c in clusters)]
    ranked = sorted(range(len(clusters)),
                    key=lambda i: (-len(clusters[i].members), -means[i]))
    return [clusters[i] for i in ranked]
