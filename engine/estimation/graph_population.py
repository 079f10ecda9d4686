"""A project's pairs as the estimate sees them: the neighbour graph's edges and the pairs one
cluster holds (the candidates, by similarity), every other pair of texts (the outside
stratum), and which pairs a cut at a threshold flags.

Pairs are of distinct texts, not rows: rows that share a normalised text are exact copies,
always duplicates of each other, always in one cluster, and need no verdict; counting them as
pairs would fill the figures with pairs nobody has to judge. Rows come back only in "rows with
at least one duplicate" (`engine.estimation.judged_draws`).

A flagged pair is a pair of texts in one cluster of the cut (`engine.dedup.cut`): the
centre and each member, and two members of one cluster (both within the threshold of the
centre, two documents of each other too; a deduplicated export treats them as duplicates
too), whether or not the graph holds that pair. Pairs one cluster holds at the design
threshold are candidates even when the graph does not hold them, so every flagged pair at
that threshold is in a candidate stratum.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from engine.dedup.cut import cut_clusters
from engine.dedup.graph import KnnGraph
from engine.estimation.drawing import (
    LISTED_OUTSIDE,
    draw_unlisted,
    in_priority_order,
    outside_keys,
    pair_keys,
)
from engine.estimation.strata import PHASE_ONE, Strata, make_strata

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
    """Every pair of the graph's texts: the candidates (sorted keys with their
    similarities), the first phase of the other pairs (keys and similarities: all of them in
    a small project, a uniform sample of `PHASE_ONE` in a large one), and the strata of a
    design threshold."""

    graph: KnnGraph
    signature: str
    threshold: float
    keys: np.ndarray          # (c,) sorted candidate keys
    sims: np.ndarray          # (c,) their similarities
    first_keys: np.ndarray    # (m,) sorted first-phase keys of pairs outside the graph
    first_sims: np.ndarray    # (m,) their similarities
    strata: Strata
    stratum: np.ndarray       # (c,) each candidate's stratum
    vectors: VectorReader
    seed: int = 0
    _orders: dict[tuple[int, int], np.ndarray] | None = None

    @property
    def texts(self) -> int:
        return len(self.graph.ids)

    @property
    def pairs(self) -> int:
        n = self.texts
        return n * (n - 1) // 2

    def stratum_of(self, keys: np.ndarray) -> np.ndarray:
        """The stratum of each pair: candidates by their similarity, the others by theirs
        among the outside strata."""
        keys = np.asarray(keys, dtype=np.int64)
        hit, at = _lookup(self.keys, keys)
        out = np.empty(len(keys), dtype=np.int64)
        out[hit] = self.stratum[at[hit]]
        if (~hit).any():
            out[~hit] = self.strata.of_outside(self.similarity_of(keys[~hit]))
        return out

    def similarity_of(self, keys: np.ndarray) -> np.ndarray:
        """Each pair's similarity: looked up for candidates and first-phase pairs, computed
        from the vectors for the others."""
        keys = np.asarray(keys, dtype=np.int64)
        out = np.full(len(keys), np.nan)
        for known, sims in ((self.keys, self.sims), (self.first_keys, self.first_sims)):
            hit, at = _lookup(known, keys)
            out[hit] = sims[at[hit]]
        missing = np.isnan(out)
        if missing.any():
            out[missing] = pair_similarities(self.vectors, keys[missing])
        return out

    def flagged_sizes(self, flagged_keys: np.ndarray) -> np.ndarray:
        """Flagged pairs per stratum."""
        return np.bincount(self.stratum_of(flagged_keys), minlength=self.strata.count)

    def ordered(self, h: int, seed: int) -> np.ndarray:
        """Stratum h's keys in their drawing order (permanent random numbers): its
        candidates, or for an outside stratum its first-phase pairs."""
        if self._orders is None:
            self._orders = {}
        key = (h, seed)
        if key not in self._orders:
            if self.strata.is_outside(h):
                keys = self.first_keys[self.strata.of_outside(self.first_sims) == h]
            else:
                keys = self.keys[self.stratum == h]
            self._orders[key] = in_priority_order(seed, keys)
        return self._orders[key]


def graph_population(graph: KnnGraph, model_id: int, threshold: float,
                     vectors: VectorReader, seed: int, strata: Strata | None = None,
                     phase_one: int = PHASE_ONE) -> GraphPopulation:
    """The candidates of `graph` for a sample designed at `threshold`: its edges, and the
    pairs one cluster holds at that threshold; and the first phase of the other pairs,
    drawn with `seed` (the same pairs in every process). `strata`: a design already stored
    (its bounds are kept; without, they are made for `threshold`)."""
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
        keys = np.r_[keys, extra]
        sims = np.r_[sims, pair_similarities(vectors, extra)]
        order = np.argsort(keys)
        keys, sims = keys[order], sims[order]
    n = len(graph.ids)
    outside = n * (n - 1) // 2 - len(keys)
    if n <= LISTED_OUTSIDE:
        first_keys = outside_keys(graph.ids, keys)
        first_sims = _all_pair_similarities(vectors, graph.ids, first_keys)
    else:
        rng = np.random.default_rng(seed)
        first_keys = np.sort(np.asarray(
            draw_unlisted(graph.ids, keys, [], min(phase_one, outside), rng, outside),
            dtype=np.int64))
        first_sims = pair_similarities(vectors, first_keys)
    if strata is None:
        strata = make_strata(sims, first_sims, outside, threshold)
    else:
        strata = _sized(strata, sims, first_sims, outside)
    which = strata.of(sims) if len(sims) else np.zeros(0, dtype=np.int64)
    return GraphPopulation(graph, graph_signature(graph, model_id), threshold, keys, sims,
                           first_keys, first_sims, strata, which, vectors, seed)


def pair_similarities(vectors: VectorReader, keys: np.ndarray, batch: int = 20_000
                      ) -> np.ndarray:
    """Cosine similarities of pairs of texts (keys), a batch of vectors at a time."""
    keys = np.asarray(keys, dtype=np.int64)
    out = np.empty(len(keys), dtype=np.float64)
    for start in range(0, len(keys), batch):
        part = keys[start:start + batch]
        a, b = part >> 32, part & 0xFFFFFFFF
        out[start:start + batch] = np.einsum("ij,ij->i", vectors(a), vectors(b))
    return out


def _all_pair_similarities(vectors: VectorReader, ids: np.ndarray, keys: np.ndarray
                           ) -> np.ndarray:
    """Similarities of many pairs of a few texts: one matrix of every pair's."""
    ids = np.asarray(ids, dtype=np.int64)
    v = np.asarray(vectors(ids), dtype=np.float32)
    matrix = v @ v.T
    a = np.searchsorted(ids, keys >> 32)
    b = np.searchsorted(ids, keys & 0xFFFFFFFF)
    return matrix[a, b].astype(np.float64)


def _sized(strata: Strata, sims: np.ndarray, first_sims: np.ndarray, outside: int) -> Strata:
    """A stored design's bounds over this population's counts (the same, for the same
    graph and seed; recounted so that a design never claims sizes it does not have)."""
    counts = np.bincount(strata.of(sims), minlength=strata.count)[strata.outside_count:]
    phase = np.bincount(strata.of_outside(first_sims),
                        minlength=strata.outside_count).astype(np.int64)
    outside_sizes = outside * phase / max(int(phase.sum()), 1)
    return Strata(strata.bounds, strata.outside_bounds,
                  np.r_[outside_sizes, counts].astype(np.float64), strata.threshold,
                  int(outside), phase)


def _lookup(sorted_keys: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(found, position) of each key in `sorted_keys`."""
    if not len(sorted_keys) or not len(keys):
        return np.zeros(len(keys), dtype=bool), np.zeros(len(keys), dtype=np.int64)
    at = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return sorted_keys[at] == keys, at
