"""Scoring many document pairs at once gives what `pair_similarity` gives pair by pair:
exactly for two one-window texts, within float32 rounding elsewhere, for every share."""

from __future__ import annotations

import numpy as np
import pytest

from engine.documents.pair_batch import pair_similarities
from engine.documents.window_match import pair_similarity, window_weights


def _unit(rng, n: int, dim: int = 32) -> np.ndarray:
    v = rng.normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture
def sides():
    """Texts of 0 to 9 windows, some with overlapping spans' weights, some with equal
    weights, a few near-copies of others (so quantiles fall on close values and ties)."""
    rng = np.random.default_rng(7)
    found = {}
    for key in range(40):
        n = [0, 1, 1, 2, 3, 5, 9][key % 7]
        vectors = _unit(rng, n)
        if key >= 20 and len(found[key - 20][0]) == n:     # a near-copy of an earlier text
            vectors = found[key - 20][0] + 0.05 * _unit(rng, n)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        spans = np.array([[i * 100, i * 100 + 160] for i in range(n)], dtype=np.int64)
        weights = window_weights(spans) if key % 2 and n > 1 else None
        found[key] = (vectors.astype(np.float32), weights)
    return found


@pytest.mark.parametrize("share", [0.9, 0.5, 1.0, None])
def test_the_batch_gives_the_pair_by_pair_similarity(sides, share):
    rng = np.random.default_rng(1)
    pairs = [tuple(int(x) for x in rng.choice(40, 2, replace=False)) for _ in range(400)]
    batch = pair_similarities(sides, pairs, share=share)
    for (a, b), got in zip(pairs, batch, strict=True):
        (va, wa), (vb, wb) = sides[a], sides[b]
        want = pair_similarity(va, vb, wa, wb, share=share)
        if len(va) == 1 and len(vb) == 1:
            assert got == np.float32(want)              # a question's cosine, bit for bit
        else:
            assert got == pytest.approx(want, abs=1e-5), (a, b)


def test_an_empty_text_scores_zero_and_order_of_pairs_is_kept(sides):
    empty = next(k for k, (v, _) in sides.items() if len(v) == 0)
    long_a, long_b = [k for k, (v, _) in sides.items() if len(v) == 9][:2]
    got = pair_similarities(sides, [(empty, long_a), (long_a, long_b), (long_b, long_a)])
    assert got[0] == 0.0
    assert got[1] == pytest.approx(got[2], abs=1e-6)   # the similarity is symmetric
