"""A 2-D map of the embeddings for the review screen: PCA of a sample of the texts.

PCA rather than t-SNE/UMAP: it is deterministic, takes well under a second for tens of
thousands of 384-d vectors on a laptop CPU, and needs no extra dependency. The map is an
overview (where the clusters sit), not a measurement, so a sample is enough.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAP_SAMPLE = 20_000


@dataclass(frozen=True)
class EmbeddingMap:
    xy: np.ndarray          # (n, 2) float32
    text_ids: np.ndarray    # (n,) int64
    texts: list[str]
    cluster: np.ndarray     # (n,) int64: cluster id at the threshold, 0 for none


def sample_ids(text_ids: np.ndarray, limit: int = MAP_SAMPLE, seed: int = 0) -> np.ndarray:
    """All ids when few, else an even random sample (the same one every time)."""
    ids = np.sort(np.asarray(text_ids, dtype=np.int64))
    if len(ids) <= limit:
        return ids
    return np.sort(np.random.default_rng(seed).choice(ids, size=limit, replace=False))


def project_2d(vectors: np.ndarray) -> np.ndarray:
    """Principal-component coordinates; fewer than 3 vectors are laid out on a line."""
    vectors = np.asarray(vectors, dtype=np.float32)
    n = len(vectors)
    if n == 0:
        return np.zeros((0, 2), dtype=np.float32)
    if n < 3:
        return np.column_stack([np.arange(n), np.zeros(n)]).astype(np.float32)
    from sklearn.decomposition import PCA  # here: sklearn takes a second to import

    return PCA(n_components=2, random_state=0).fit_transform(vectors).astype(np.float32)
