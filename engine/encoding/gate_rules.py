"""The rules a fast backend's embeddings must keep against torch's before Duplens encodes
with them on its own: the losses allowed, and the search figure they are judged by.

One set of rules for both places that judge: the benchmark's quality gate, which chose the
default CPU backend for the bundled model (benchmarks/quality_gate.py), and the check of a
fine-tuned version's fast form on the project's own texts and pairs
(`engine.training.fast_form`). Losses only: a backend that scores higher than torch has
lost nothing.
"""

from __future__ import annotations

import numpy as np

STSB_LOSS = 0.3      # Spearman x100 on the STS benchmark, at most this much lower
PAIR_AP_LOSS = 0.5   # average precision x100 on labelled pairs, at most this much lower
MIN_RECALL = 0.98    # the product's search finds this share of torch's exact neighbours
K = 10               # ... among the ten nearest


def exact_top(corpus: np.ndarray, queries: np.ndarray, k: int = K) -> np.ndarray:
    """The indices of each query's k nearest corpus rows by cosine, best first."""
    sims = queries @ corpus.T
    top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(sims, top, 1), axis=1)
    return np.take_along_axis(top, order, 1)


def hnsw_top(corpus: np.ndarray, queries: np.ndarray, k: int = K) -> np.ndarray:
    """The product's search: an HNSW index with Duplens' default parameters."""
    from engine.index.hnsw import HnswIndex

    index = HnswIndex(corpus.shape[1], capacity=len(corpus))
    index.add(np.arange(len(corpus)), corpus)
    found, _ = index.query(queries, k)
    return found


def recall(found: np.ndarray, reference: np.ndarray) -> float:
    """Mean share of each reference row's ids that `found`'s row holds."""
    hits = sum(len(set(f.tolist()) & set(r.tolist())) for f, r in zip(found, reference,
                                                                        strict=True))
    return hits / reference.size
