"""The window similarity of many pairs at once: what the graph's rescoring of document edges
runs, the same number as `window_match.pair_similarity` pair by pair.

Why a batch: a dense graph of 10,000 documents holds hundreds of thousands of edges, and
scoring them one by one spent its time in NumPy's per-call overhead (a small matrix product,
two maxima and two sorts per pair: six and a half minutes there). Here the pairs are grouped
by their first text: one matrix product of its windows against all its partners' windows,
the best matches of each partner by `np.maximum.reduceat`, and the weighted quantiles of
every partner sorted in one go, so the Python loop runs once per text, not once per pair.

Pairs of two one-window texts (questions) keep `np.dot` of the two vectors, bit for bit the
float32 cosine they have always had. Elsewhere the products are the same sums in another
order, so a score may differ from the pair-by-pair one in the last bits of a float32
(tests/engine/documents/test_pair_batch.py holds them within 1e-5).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from engine.documents.window_match import COVERED_SHARE

# A text's windows as the batch reads them: (vectors (n, dim) float32, weights (n,) summing
# to 1, or None for equal weights).
Side = tuple[np.ndarray, np.ndarray | None]
_SLACK = 1e-9   # `window_match._cover`'s: a share reached up to rounding counts as reached


def pair_similarities(sides: Mapping[int, Side], pairs: Sequence[tuple[int, int]],
                      share: float | None = COVERED_SHARE) -> np.ndarray:
    """max(cover_ab, cover_ba) of each pair of keys of `sides` (float32), as
    `pair_similarity(a_vectors, b_vectors, a_weights, b_weights, share)` gives it."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    out = np.zeros(len(pairs), dtype=np.float32)
    sizes = {key: len(vectors) for key, (vectors, _) in sides.items()}
    grouped: dict[int, list[int]] = {}
    for n, (a, b) in enumerate(pairs.tolist()):
        na, nb = sizes[a], sizes[b]
        if na == 0 or nb == 0:
            continue                                  # an empty text matches nothing: 0.0
        if na == 1 and nb == 1:                       # two questions: the plain cosine
            out[n] = float(np.dot(sides[a][0][0], sides[b][0][0]))
            continue
        grouped.setdefault(a, []).append(n)
    for a, members in grouped.items():
        partners = pairs[members, 1].tolist()
        out[members] = _against_partners(sides[a], [sides[b] for b in partners], share)
    return out


def _weights(side: Side) -> np.ndarray:
    vectors, weights = side
    if weights is None:
        return np.full(len(vectors), 1.0 / len(vectors))
    return np.asarray(weights, dtype=np.float64)


def _against_partners(anchor: Side, partners: list[Side], share: float | None) -> np.ndarray:
    """The similarity of `anchor` with each of `partners` (each with at least one window)."""
    a = np.asarray(anchor[0], dtype=np.float32)
    lengths = np.array([len(p[0]) for p in partners], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    b = np.concatenate([np.asarray(p[0], dtype=np.float32) for p in partners])
    scores = a @ b.T                                   # (windows of a, windows of partners)
    best_a = np.maximum.reduceat(scores, starts, axis=1)   # a's best match in each partner
    best_b = scores.max(axis=0)                        # each partner window's best in a
    w_a = _weights(anchor)
    w_b = np.concatenate([_weights(p) for p in partners])
    if share is None:
        cover_a = w_a @ best_a
        cover_b = np.add.reduceat(w_b * best_b, starts)
    else:
        cover_a = _column_quantiles(best_a, w_a, share)
        cover_b = _segment_quantiles(best_b, w_b, starts, lengths, share)
    return np.maximum(cover_a, cover_b)


def _column_quantiles(best: np.ndarray, weights: np.ndarray, share: float) -> np.ndarray:
    """Per column of `best` (one column per partner), the value at which windows holding
    `share` of the weight are reached, best first (`window_match._cover`)."""
    if len(best) == 1:
        return best[0].astype(np.float64)
    order = np.argsort(-best, axis=0, kind="stable")
    reached = np.cumsum(weights[order], axis=0)
    at = np.minimum((reached < share - _SLACK).sum(axis=0), len(best) - 1)
    return np.take_along_axis(best, order, 0)[at, np.arange(best.shape[1])].astype(np.float64)


def _segment_quantiles(best: np.ndarray, weights: np.ndarray, starts: np.ndarray,
                       lengths: np.ndarray, share: float) -> np.ndarray:
    """The same quantile within each segment of `best` (one segment per partner)."""
    segment = np.repeat(np.arange(len(starts)), lengths)
    order = np.lexsort((-best, segment))               # by segment, then best first (stable)
    values, w = best[order], weights[order]
    total = np.cumsum(w)
    before = np.concatenate(([0.0], total))[starts]    # weight of the segments before
    reached = total - np.repeat(before, lengths)
    positions = np.where(reached >= share - _SLACK, np.arange(len(values)), len(values))
    first = np.minimum.reduceat(positions, starts)
    first = np.minimum(first, starts + lengths - 1)    # never reached: the segment's last
    return values[first].astype(np.float64)
