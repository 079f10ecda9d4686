"""Two documents judged from their windows: a question stays its plain cosine, a document
inside another is a duplicate in the right direction, a decoy sharing one window is not."""

from __future__ import annotations

import numpy as np
import pytest

from engine.documents.window_match import (
    Passage,
    WindowMatch,
    match_windows,
    pair_similarity,
    window_weights,
)

DIM = 384
CUTOFF = 0.75


def unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def stride_spans(n: int, size: int = 1000, stride: int = 500, offset: int = 0) -> np.ndarray:
    """Windows of `size` characters every `stride`, as the encoder slides them."""
    starts = offset + stride * np.arange(n)
    return np.stack([starts, starts + size], axis=1)


def test_one_window_a_side_is_the_plain_cosine_bit_for_bit():
    rng = np.random.default_rng(0)
    for _ in range(50):
        a, b = unit_vectors(rng, 1), unit_vectors(rng, 1)
        b = (0.8 * a + 0.2 * b).astype(np.float32)
        b /= np.linalg.norm(b)
        m = match_windows(a, [[0, 40]], b, [[0, 55]], CUTOFF)
        assert m.similarity == float(a[0] @ b[0])
        assert m.cover_ab == m.cover_ba == float(a[0] @ b[0])
        assert pair_similarity(a, b) == float(a[0] @ b[0])
        assert pair_similarity(a, b, window_weights([[0, 40]]), window_weights([[0, 55]])) \
            == float(a[0] @ b[0])


def test_float16_vectors_are_upcast_and_scored_in_float32():
    rng = np.random.default_rng(1)
    a16, b16 = unit_vectors(rng, 1).astype(np.float16), unit_vectors(rng, 1).astype(np.float16)
    expected = float(a16.astype(np.float32)[0] @ b16.astype(np.float32)[0])
    assert match_windows(a16, [[0, 9]], b16, [[0, 9]], CUTOFF).similarity == expected
    assert pair_similarity(a16, b16) == expected
    a16, b16 = unit_vectors(rng, 4).astype(np.float16), unit_vectors(rng, 3).astype(np.float16)
    got = match_windows(a16, stride_spans(4), b16, stride_spans(3), CUTOFF)
    want = match_windows(a16.astype(np.float32), stride_spans(4), b16.astype(np.float32),
                         stride_spans(3), CUTOFF)
    assert got == want


def containment_pair():
    """A of 6 windows; B = 3 windows of a new, unrelated introduction + A's 6 windows."""
    rng = np.random.default_rng(0)
    a = unit_vectors(rng, 6)
    intro = unit_vectors(rng, 3)
    b = np.concatenate([intro, a])
    a_spans = stride_spans(6)
    b_spans = np.concatenate([stride_spans(3), stride_spans(6, offset=1500)])
    return a, a_spans, b, b_spans


def test_a_document_inside_another_is_covered_in_that_direction_only():
    a, a_spans, b, b_spans = containment_pair()
    m = match_windows(a, a_spans, b, b_spans, CUTOFF)
    assert m.cover_ab == pytest.approx(1.0, abs=1e-5)
    assert m.held_ab == 1.0
    # B's first 1,500 characters of 5,000 lie only in its introduction's windows, found
    # nowhere in A.
    assert m.held_ba == pytest.approx(3500 / 5000)
    assert m.cover_ba < 0.8
    assert m.similarity == m.cover_ab
    # Seen from B's side, the same pair: the directions swap, the similarity does not.
    r = match_windows(b, b_spans, a, a_spans, CUTOFF)
    assert (r.cover_ab, r.cover_ba, r.held_ab, r.held_ba) == (
        m.cover_ba, m.cover_ab, m.held_ba, m.held_ab)
    assert r.similarity == m.similarity


def test_a_decoy_sharing_only_the_first_window_of_six_scores_low():
    rng = np.random.default_rng(0)
    a = unit_vectors(rng, 6)
    decoy = np.concatenate([a[:1], unit_vectors(rng, 5)])
    spans = stride_spans(6)
    m = match_windows(a, spans, decoy, spans, CUTOFF)
    # The shared window holds 1,000 of 3,500 characters; the rest match nothing.
    assert m.similarity < 0.4
    assert m.held_ab == m.held_ba == pytest.approx(1000 / 3500)
    assert pair_similarity(a, decoy, window_weights(spans), window_weights(spans)) \
        == m.similarity
    # Whereas the best single window pair says "identical".
    assert (a @ decoy.T).max() == pytest.approx(1.0)


def test_cover_ab_of_a_b_is_cover_ba_of_b_a():
    rng = np.random.default_rng(2)
    for na, nb in [(1, 5), (4, 4), (7, 2)]:
        a, b = unit_vectors(rng, na), unit_vectors(rng, nb)
        b[0] = a[-1]
        sa, sb = stride_spans(na, 800, 300), stride_spans(nb, 1000, 700)
        ab, ba = match_windows(a, sa, b, sb, 0.5), match_windows(b, sb, a, sa, 0.5)
        assert ab.cover_ab == ba.cover_ba and ab.cover_ba == ba.cover_ab
        assert ab.similarity == ba.similarity


def test_pair_similarity_is_match_windows_similarity():
    rng = np.random.default_rng(3)
    a, b = unit_vectors(rng, 5), unit_vectors(rng, 8)
    b[2:5] = a[1:4]
    sa, sb = stride_spans(5, 900, 450), stride_spans(8)
    m = match_windows(a, sa, b, sb, CUTOFF)
    assert pair_similarity(a, b, window_weights(sa), window_weights(sb)) == m.similarity
    assert m.similarity == max(m.cover_ab, m.cover_ba)


def test_window_weights_count_overlaps_once():
    # 0-1000, 500-1500, 1000-1800: each overlap shared by its two windows, so 500 + 250,
    # 250 + 250 and 250 + 300 of the 1800 characters covered.
    w = window_weights([[0, 1000], [500, 1500], [1000, 1800]])
    assert w == pytest.approx([750 / 1800, 500 / 1800, 550 / 1800])
    assert w.sum() == pytest.approx(1.0)
    # Out of order, nested, and a gap: still each character once, shared by its windows.
    w = window_weights([[600, 900], [0, 700], [100, 200], [1000, 1100]])
    assert w == pytest.approx(np.array([250, 600, 50, 100]) / 1000)
    assert window_weights([[0, 42]]) == pytest.approx([1.0])
    assert window_weights([[0, 0], [0, 0]]) == pytest.approx([0.5, 0.5])
    assert len(window_weights(np.zeros((0, 2), dtype=int))) == 0


def test_consecutive_matching_windows_merge_into_one_passage_best_first():
    rng = np.random.default_rng(4)
    a = unit_vectors(rng, 8)
    b = unit_vectors(rng, 10)
    # A's windows 1-3 reappear in B as windows 5-7 exactly; A's window 6 as B's window 0,
    # a little changed.
    b[5:8] = a[1:4]
    near = 0.9 * a[6] + 0.3 * unit_vectors(rng, 1)[0]
    b[0] = near / np.linalg.norm(near)
    sa, sb = stride_spans(8), stride_spans(10, offset=100)
    m = match_windows(a, sa, b, sb, CUTOFF)
    assert isinstance(m, WindowMatch)
    assert len(m.passages) == 2
    first, second = m.passages
    assert first == Passage(a_start=500, a_end=2500, b_start=2600, b_end=4600,
                            similarity=pytest.approx(1.0, abs=1e-6))
    assert (second.a_start, second.a_end, second.b_start, second.b_end) == (3000, 4000, 100, 1100)
    assert CUTOFF <= second.similarity < first.similarity
    assert [p.similarity for p in m.passages] == sorted(
        (p.similarity for p in m.passages), reverse=True)


def test_windows_matching_out_of_order_stay_separate_passages():
    rng = np.random.default_rng(5)
    a = unit_vectors(rng, 3)
    b = a[::-1].copy()  # the same three parts in reverse order
    spans = stride_spans(3, 500, 500)  # no overlap
    m = match_windows(a, spans, b, spans, CUTOFF)
    assert m.similarity == pytest.approx(1.0, abs=1e-6)
    assert len(m.passages) == 3
    assert {(p.a_start, p.b_start) for p in m.passages} == {(0, 1000), (500, 500), (1000, 0)}


def test_no_windows_and_mismatched_spans():
    rng = np.random.default_rng(6)
    a = unit_vectors(rng, 2)
    empty = np.zeros((0, DIM), dtype=np.float32)
    m = match_windows(a, stride_spans(2), empty, np.zeros((0, 2), dtype=int), CUTOFF)
    assert m == WindowMatch(0.0, 0.0, 0.0, 0.0, 0.0, ())
    assert pair_similarity(empty, a) == 0.0
    with pytest.raises(ValueError):
        match_windows(a, stride_spans(3), a, stride_spans(2), CUTOFF)
