"""Every stored window scanned for the texts nearest a query (no model: made-up vectors)."""

from __future__ import annotations

import numpy as np
import pytest

from engine.documents import window_finder
from engine.documents.window_finder import WindowFinder, quantize


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _random_texts(rng, texts: int, dim: int = 64):
    """`texts` texts of 1-12 windows each: (vectors, owners), a text's windows together."""
    counts = rng.integers(1, 13, size=texts)
    owners = np.repeat(np.arange(100, 100 + texts), counts)
    return _unit(rng.standard_normal((len(owners), dim))), owners


def _exact(vectors, owners, queries, k):
    """Each text's best window cosine with any query, in float32: the ranking to match."""
    best = (vectors @ queries.T).max(axis=1)
    texts = np.unique(owners)
    per_text = np.array([best[owners == t].max() for t in texts])
    order = np.argsort(-per_text, kind="stable")[:k]
    return texts[order], per_text[order]


def test_a_text_is_found_by_its_best_window_not_its_mean():
    """The text holding the one window like the query comes first, ahead of a text whose
    every window is fairly close to it (its mean would be nearer)."""
    dim = 16
    query = np.zeros((1, dim), dtype=np.float32)
    query[0, 0] = 1
    holder = np.eye(dim, dtype=np.float32)[[1, 2, 0, 3, 4]]   # one window is the query
    fairly = _unit(np.tile(np.r_[[0.7], np.full(dim - 1, 0.19)], (5, 1)))  # each at 0.95
    vectors = np.vstack([holder, fairly])
    owners = np.array([7] * 5 + [9] * 5)
    assert float(np.linalg.norm(fairly.mean(axis=0)) ) > 0.99       # mean of 9 near the query
    found, best = WindowFinder(vectors.astype(np.float16), owners).nearest_texts(query, 2)
    assert found.tolist() == [7, 9]
    assert best[0] == pytest.approx(1.0, abs=2e-3)
    assert best[1] == pytest.approx(float(fairly[0] @ query[0]), abs=2e-3)


def test_the_ranking_is_the_exact_one_up_to_int8_rounding():
    rng = np.random.default_rng(3)
    vectors, owners = _random_texts(rng, 300)
    finder = WindowFinder(vectors.astype(np.float16), owners)
    assert len(finder) == len(vectors)
    for q in range(5):
        queries = vectors[[q * 40]] if q % 2 else _unit(rng.standard_normal((3, 64)))
        found, best = finder.nearest_texts(queries, 20)
        texts, exact = _exact(vectors, owners, queries, 20)
        assert np.abs(best - exact).max() < 4e-3      # float16, then int8, of 64 dimensions
        # Where two texts' best cosines are further apart than the rounding, the order holds.
        gaps = np.abs(np.diff(exact)) > 8e-3
        assert all(found[i] == texts[i] for i in range(len(found) - 1)
                   if gaps[i] and (i == 0 or gaps[i - 1]))
        assert set(found[:5]) <= set(texts[:8])


def test_a_long_query_is_near_a_text_through_any_of_its_windows():
    rng = np.random.default_rng(4)
    vectors, owners = _random_texts(rng, 50)
    finder = WindowFinder(vectors, owners)
    a, b = 10, len(vectors) - 3            # windows of two different texts
    found, _ = finder.nearest_texts(vectors[[a, b]], 2)
    assert set(found.tolist()) == {owners[a], owners[b]}


def test_chunks_give_the_same_answer(monkeypatch):
    """The same texts in the same order, and the same scores to float32 rounding: a BLAS
    may multiply a 7-row chunk with another kernel than a 2,048-row one (on an Intel Xeon
    the last bit of some scores differed), so the scores are not asked to match bit for
    bit."""
    rng = np.random.default_rng(5)
    vectors, owners = _random_texts(rng, 200)
    finder = WindowFinder(vectors, owners)
    queries = _unit(rng.standard_normal((2, 64)))
    whole = finder.nearest_texts(queries, 30)
    monkeypatch.setattr(window_finder, "CHUNK", 7)
    parts = finder.nearest_texts(queries, 30)
    assert np.array_equal(whole[0], parts[0])
    np.testing.assert_allclose(whole[1], parts[1], rtol=0, atol=1e-6)


def test_int8_rows_stay_within_half_a_step():
    """Each component is rounded to the nearest of 255 steps of its row's largest one: a
    cosine with any query moves by at most half a step times the query's L1 norm."""
    rng = np.random.default_rng(6)
    vectors = _unit(rng.standard_normal((2_000, 384)))
    rows, scales = quantize(vectors, rows_at_once=300)
    assert rows.dtype == np.int8 and (np.abs(rows).max(axis=1) == 127).all()
    restored = rows.astype(np.float32) * scales[:, None]
    assert (np.abs(restored - vectors).max(axis=1) <= scales / 2 * (1 + 1e-5)).all()
    queries = _unit(rng.standard_normal((50, 384)))
    bound = np.outer(scales / 2, np.abs(queries).sum(axis=1)) + 1e-6
    assert (np.abs(restored @ queries.T - vectors @ queries.T) <= bound).all()
    zero, scale = quantize(np.zeros((1, 8), dtype=np.float32))
    assert not zero.any() and scale[0] == 0


def test_load_reads_a_few_texts_at_a_time_and_skips_texts_without_windows(monkeypatch):
    rng = np.random.default_rng(7)
    vectors, owners = _random_texts(rng, 9, dim=8)
    stored = {int(t): (np.zeros((int((owners == t).sum()), 2), np.int32),
                       vectors[owners == t].astype(np.float16)) for t in np.unique(owners)}
    asked: list[list[int]] = []

    def read(text_ids):
        asked.append(list(text_ids))
        return {t: stored[t] for t in text_ids if t in stored}

    monkeypatch.setattr(window_finder, "READ_AT_ONCE", 4)
    finder = WindowFinder.load([*stored, 5_000], read, 8)    # 5,000 has no windows
    assert [len(a) for a in asked] == [4, 4, 2]
    assert len(finder) == len(vectors)
    query = vectors[[len(vectors) - 1]]
    assert finder.nearest_texts(query, 1)[0].tolist() == [owners[-1]]


def test_nothing_stored_finds_nothing():
    finder = WindowFinder.load([], lambda ids: {}, 8)
    found, best = finder.nearest_texts(np.ones((1, 8), np.float32), 5)
    assert len(finder) == 0 and found.size == 0 and best.size == 0
    with pytest.raises(ValueError):
        WindowFinder(np.zeros((2, 8), np.float16), np.zeros(3, np.int64))


def test_an_extended_finder_reads_only_the_added_texts_and_finds_what_a_whole_load_does():
    rng = np.random.default_rng(11)
    vectors, owners = _random_texts(rng, 40)
    stored = {int(t): (np.zeros((int((owners == t).sum()), 2), dtype=np.int64),
                       vectors[owners == t].astype(np.float16)) for t in np.unique(owners)}
    asked: list[int] = []

    def read(text_ids):
        asked.extend(int(t) for t in text_ids)
        return {t: stored[t] for t in text_ids if t in stored}

    ids = sorted(stored)
    before = WindowFinder.load(ids[:25], read, 64)
    asked.clear()
    after = before.extended(ids[25:], read, 64)
    assert asked == ids[25:]                                  # only the new texts were read
    assert len(before) == int(np.isin(owners, ids[:25]).sum())   # the old one is unchanged
    assert sorted(after.texts.tolist()) == ids
    whole = WindowFinder.load(ids, read, 64)
    for _ in range(4):
        queries = _unit(rng.standard_normal((2, 64)))
        found, best = after.nearest_texts(queries, 15)
        expected, expected_best = whole.nearest_texts(queries, 15)
        assert found.tolist() == expected.tolist()
        assert np.array_equal(best, expected_best)
    assert before.extended([], read, 64) is before


def test_queries_scanned_together_find_what_each_finds_alone(monkeypatch):
    rng = np.random.default_rng(5)
    vectors, owners = _random_texts(rng, 120)
    finder = WindowFinder(vectors.astype(np.float16), owners)
    sets = [_unit(rng.standard_normal((m, 64))) for m in (1, 3, 1, 5, 2, 1, 1)]
    sets.append(vectors[[7]])                     # a stored window itself
    alone = [finder.nearest_texts(s, 9) for s in sets]
    monkeypatch.setattr(window_finder, "QUERIES_AT_ONCE", 3)   # groups of 3, 3 and 2
    for (found, best), (ids, exact) in zip(finder.nearest_texts_each(sets, 9), alone,
                                           strict=True):
        assert found.tolist() == ids.tolist()
        # The same sums; the matrix product's kernel may add them in another order.
        assert np.allclose(best, exact, rtol=0, atol=1e-6)
    assert finder.nearest_texts_each([], 9) == []
