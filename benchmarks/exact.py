"""Exact (brute-force) cosine search: the ground truth that recall is measured against.

Vectors are L2-normalised, so cosine similarity is a dot product; NumPy matrix products in
chunks keep memory bounded (a chunk of scores is at most about 400 MB).
"""

from __future__ import annotations

import numpy as np

_SCORES_PER_CHUNK = 100_000_000


def top_k(queries: np.ndarray, base: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(positions, similarities) of each query's k most similar rows of `base`, best first."""
    queries = np.atleast_2d(queries)
    best_idx = np.empty((len(queries), 0), dtype=np.int64)
    best_sim = np.empty((len(queries), 0), dtype=np.float32)
    step = max(1, _SCORES_PER_CHUNK // max(len(queries), 1))
    for start in range(0, len(base), step):
        scores = queries @ base[start:start + step].T
        kk = min(k, scores.shape[1])
        part = np.argpartition(-scores, kk - 1, axis=1)[:, :kk]
        idx = np.concatenate([best_idx, part + start], axis=1)
        sim = np.concatenate([best_sim, np.take_along_axis(scores, part, 1)], axis=1)
        keep = np.argsort(-sim, axis=1, kind="stable")[:, :k]
        best_idx = np.take_along_axis(idx, keep, 1)
        best_sim = np.take_along_axis(sim, keep, 1)
    return best_idx, best_sim


def pairs_above(vectors: np.ndarray, threshold: float) -> np.ndarray:
    """Every pair (i < j) with cosine >= threshold, encoded as i * n + j (sorted int64)."""
    n = len(vectors)
    step = max(1, _SCORES_PER_CHUNK // max(n, 1))
    found = []
    for start in range(0, n, step):
        scores = vectors[start:start + step] @ vectors[start:].T
        rows, cols = np.nonzero(scores >= threshold)
        i = rows + start
        j = cols + start
        keep = j > i
        found.append(i[keep].astype(np.int64) * n + j[keep])
    return np.unique(np.concatenate(found)) if found else np.empty(0, dtype=np.int64)


def pair_codes(i: np.ndarray, j: np.ndarray, n: int) -> np.ndarray:
    """Unordered pairs as sorted unique codes min * n + max, the form `pairs_above` uses."""
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    keep = i != j
    lo = np.minimum(i, j)[keep]
    hi = np.maximum(i, j)[keep]
    return np.unique(lo * n + hi)
