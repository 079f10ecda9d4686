"""A project's pairs as the estimate sees them: the neighbour graph's edges and the pairs one
cluster holds (the candidates, by similarity), every other pair of texts (the outside
stratum), and which pairs a cut at a threshold flags.

Pairs are of distinct texts, not rows: rows that share a normalised text are exact copies,
always duplicates of each other, always in one cluster, and need no answer; counting them as
pairs would fill the figures with pairs nobody has to judge. Rows come back only in "rows with
at least one duplicate" (`engine.services.measuring`).

A flagged pair is a pair of texts in one cluster of the cut (`engine.dedup.cut`): the
centre and each member, and two members of one cluster (both within the threshold of the
centre; a deduplicated export treats them as duplicates too), whether or not the graph holds
that pair. Pairs one cluster holds at the design threshold are candidates even when the graph
does not hold them, so every flagged pair at that threshold is in a candidate stratum.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from engine.dedup.cut import cut_clusters
from engine.dedup.graph import KnnGraph
from engine.estimation.drawing import in_priority_order, outside_keys, pair_keys
from engine.estimation.strata import OUTSIDE, Strata, make_strata

# vectors(text_ids) -> unit vectors, to score pairs the graph does not hold
VectorReader = Callable[[np.ndarray], np.ndarray]


def graph_signature(graph: KnnGraph, model_id: int) -> str:
    """What identifies the population a sample is drawn from: the model and the graph's
    texts and edges. Another import, a deletion or another model changes it."""
    digest = hashlib.sha256(f"model {model_id} k {graph.k}".encode())
    for part in (graph.ids, graph.indptr, graph.indices, graph.sims):
        digest.update(np.ascontiguousarray(part).tobytes())
    return digest.hexdigest()


def cluster_labels(graph: KnnGraph, threshold: float) -> np.ndarray:
    """For each graph position, the number of its cluster at `threshold` (-1: none)."""
    labels = np.full(len(graph.ids), -1, dtype=np.int64)
    for number, cluster in enumerate(cut_clusters(graph, threshold)):
        labels[cluster.members] = number
    return labels


def flagged_pairs(graph: KnnGraph, labels: np.ndarray) -> np.ndarray:
    """Keys (sorted) of every pair of texts in one cluster, from `cluster_labels`."""
    clustered = np.flatnonzero(labels >= 0)
    if not len(clustered):
        return np.zeros(0, dtype=np.int64)
    order = clustered[np.argsort(labels[clustered], kind="stable")]
    sizes = np.bincount(labels[order])
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    keys = []
    for size in np.unique(sizes[sizes >= 2]):
        firsts = starts[sizes == size]
        i, j = np.triu_indices(int(size), k=1)
        a = order[firsts[:, None] + i[None, :]].ravel()
        b = order[firsts[:, None] + j[None, :]].ravel()
        keys.append(pair_keys(graph.ids[a], graph.ids[b]))
    return np.unique(np.concatenate(keys)) if keys else np.zeros(0, dtype=np.int64)


@dataclass
class GraphPopulation:
    """Every pair of the graph's texts, split into candidates (sorted keys with their
    similarities) and the rest, with the strata of a design threshold."""

    graph: KnnGraph
    signature: str
    threshold: float
    keys: np.ndarray          # (c,) sorted candidate keys
    sims: np.ndarray          # (c,) their similarities
    strata: Strata
    stratum: np.ndarray       # (c,) each candidate's stratum (1..H)
    _orders: dict[tuple[int, int], np.ndarray] | None = None

    @property
    def texts(self) -> int:
        return len(self.graph.ids)

    @property
    def pairs(self) -> int:
        n = self.texts
        return n * (n - 1) // 2

    def stratum_of(self, keys: np.ndarray) -> np.ndarray:
        """The stratum of each pair (candidates by similarity, others `OUTSIDE`)."""
        keys = np.asarray(keys, dtype=np.int64)
        out = np.full(len(keys), OUTSIDE, dtype=np.int64)
        if len(self.keys) and len(keys):
            at = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
            hit = self.keys[at] == keys
            out[hit] = self.stratum[at[hit]]
        return out

    def similarity_of(self, keys: np.ndarray) -> np.ndarray:
        """Candidates' similarities (NaN for other pairs)."""
        keys = np.asarray(keys, dtype=np.int64)
        out = np.full(len(keys), np.nan)
        if len(self.keys) and len(keys):
            at = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
            hit = self.keys[at] == keys
            out[hit] = self.sims[at[hit]]
        return out

    def flagged_sizes(self, flagged_keys: np.ndarray) -> np.ndarray:
        """Flagged pairs per stratum."""
        return np.bincount(self.stratum_of(flagged_keys), minlength=self.strata.count)

    def ordered(self, h: int, seed: int) -> np.ndarray:
        """Stratum h's keys in their drawing order (permanent random numbers): its
        candidates, or for `OUTSIDE` every other pair (small projects only)."""
        if self._orders is None:
            self._orders = {}
        key = (h, seed)
        if key not in self._orders:
            keys = (outside_keys(self.graph.ids, self.keys) if h == OUTSIDE
                    else self.keys[self.stratum == h])
            self._orders[key] = in_priority_order(seed, keys)
        return self._orders[key]


def graph_population(graph: KnnGraph, model_id: int, threshold: float,
                     vectors: VectorReader, strata: Strata | None = None) -> GraphPopulation:
    """The candidates of `graph` for a sample designed at `threshold`: its edges, and the
    pairs one cluster holds at that threshold. `strata`: a design already stored (its
    bounds are kept; without, they are made for `threshold`)."""
    rows = graph.row_of_entries().astype(np.int64)
    cols = graph.indices.astype(np.int64)
    upper = rows < cols
    keys = pair_keys(graph.ids[rows[upper]], graph.ids[cols[upper]])
    sims = graph.sims[upper].astype(np.float64)
    keys, first = np.unique(keys, return_index=True)
    sims = sims[first]
    joined = flagged_pairs(graph, cluster_labels(graph, threshold))
    extra = joined[~np.isin(joined, keys)]
    if len(extra):
        a, b = extra >> 32, extra & 0xFFFFFFFF
        va, vb = vectors(a), vectors(b)
        extra_sims = np.einsum("ij,ij->i", va, vb).astype(np.float64)
        keys = np.r_[keys, extra]
        sims = np.r_[sims, extra_sims]
        order = np.argsort(keys)
        keys, sims = keys[order], sims[order]
    n = len(graph.ids)
    outside = n * (n - 1) // 2 - len(keys)
    if strata is None:
        strata = make_strata(sims, outside, threshold)
    which = strata.of(sims) if len(sims) else np.zeros(0, dtype=np.int64)
    sizes = np.r_[outside, np.bincount(which, minlength=strata.count)[1:]]
    if not np.array_equal(sizes, strata.sizes):
        strata = Strata(strata.bounds, sizes.astype(np.int64), strata.threshold)
    return GraphPopulation(graph, graph_signature(graph, model_id), threshold, keys, sims,
                           strata, which)
