"""How alike two documents are, judged from their window vectors.

A long text is encoded as overlapping token windows: one L2-normalised vector per window,
with the window's character span [start, end) in the text. A short text (a question) has
one window, the whole text. This module turns two such lists into one similarity, and into
the passages that match, with no I/O: the graph rescores its edges with `pair_similarity`,
the review shows `match_windows` for the pair on screen.

Why a quantile of best matches ("cover"): `cover_ab` asks, for every window of A, how well
the best window of B matches it, and takes the cosine that windows holding `COVERED_SHARE`
of A's characters reach (a weighted quantile). A document copied inside a longer one (B =
new introduction + A) then scores near 1 in that direction, since every part of A is found
in B; a decoy that shares its opening with A scores what the rest of A finds in it, which
is little. A single max over all window pairs would call the decoy a duplicate; a mean of
the best matches (`share` None) gives the unmatched part partial credit, and two documents
on one subject (every window of one close to some window of the other, at 0.6-0.7) then
reached the threshold together with a shared opening: a third of the decoys of
`benchmarks/documents.py` were flagged that way.

Why the max of the two directions: containment is one-sided. If B holds A and more, B's
extra windows have no match in A and `cover_ba` is low, while `cover_ab` is near 1. Taking
the larger says "one of the two is (nearly) inside the other", which is what a reviewer
deduplicating documents wants to see; `held_ab` / `held_ba` tell which one is inside.

With one window a side every weight is 1 and the similarity is the plain cosine of the two
vectors, bit for bit the float32 dot product that questions have always been scored with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Passage:
    """A stretch of A that matches a stretch of B: character spans [start, end) in each
    text, and the mean cosine of the window pairs it was merged from."""

    a_start: int
    a_end: int
    b_start: int
    b_end: int
    similarity: float


@dataclass(frozen=True)
class WindowMatch:
    """Two documents judged window by window.

    `similarity` is the one number the graph and the threshold use: max(cover_ab, cover_ba).
    `cover_ab` is how well B covers A (the character-weighted mean over A's windows of each
    one's best cosine with any window of B); `cover_ba` the other way round. `held_ab` is
    the share of A's characters that lie in windows whose best match in B reaches the
    cutoff (0..1): near 1 means A is found in B. `passages` are the matching stretches,
    best first.
    """

    similarity: float
    cover_ab: float
    cover_ba: float
    held_ab: float
    held_ba: float
    passages: tuple[Passage, ...]


def _as_float32(vectors) -> np.ndarray:
    """Vectors as a 2-D float32 array: float16 storage is upcast, because a float16 matrix
    product rounds every partial sum to 11 bits and would move the cosine a question has
    always had."""
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim == 2:
        return array
    if array.size == 0:
        return array.reshape(0, 0)
    raise ValueError(f"window vectors must be (n_windows, dim), got shape {array.shape}")


def _as_spans(spans) -> np.ndarray:
    return np.asarray(spans, dtype=np.int64).reshape(-1, 2)


def _shared_cover(spans: np.ndarray) -> np.ndarray:
    """Characters each window stands for: every character of the text is shared equally
    among the windows that cover it, so the sum is the length of the union of the spans,
    overlaps counted once, and no window counts for more than its own stretch."""
    if len(spans) == 0:
        return np.zeros(0, dtype=np.float64)
    starts, ends = spans[:, 0], spans[:, 1]
    cuts = np.unique(np.concatenate((starts, ends)))
    lo, hi = cuts[:-1], cuts[1:]
    covers = (starts[:, None] <= lo[None, :]) & (ends[:, None] >= hi[None, :])
    count = covers.sum(axis=0)
    share = np.where(count > 0, (hi - lo) / np.maximum(count, 1), 0.0)
    return covers.astype(np.float64) @ share


def window_weights(spans) -> np.ndarray:
    """Each window's share of its text, normalised to sum 1 (float64): the characters it
    covers, each shared equally with the other windows covering it.

    Why characters and not one vote per window: the last window of a text is often mostly
    overlap (it is slid back to end at the text's end), and counting it in full would let
    the text's ending weigh more than its middle. Why shared and not given to the first
    window covering them: with half-overlapping windows the first would weigh twice any
    other, and a decoy sharing only a document's opening would score higher than it
    should. Spans all of zero length (an empty text) give equal weights.
    """
    raw = _shared_cover(_as_spans(spans))
    total = raw.sum()
    if total > 0:
        return raw / total
    return np.full(len(raw), 1.0 / len(raw)) if len(raw) else raw


# How much of a document must be matched for a pair to score what it matched at: the
# similarity is the cosine at which this share of the text (by characters) finds a matching
# window on the other side. None: the weighted mean of every window's best match.
# Chosen on the validation half of `benchmarks/documents.py` (see its results).
COVERED_SHARE: float | None = 0.9


def _cover(best: np.ndarray, weights, share: float | None = COVERED_SHARE) -> float:
    """How well the other text covers this one: the best-match cosine that windows holding
    `share` of the text reach (a weighted quantile of the best matches), or with `share`
    None their weighted mean. With one window it is that window's cosine, unrounded."""
    if len(best) == 1:
        return float(best[0])
    w = weights if weights is not None else np.full(len(best), 1.0 / len(best))
    if share is None:
        return float(np.dot(w, best))
    order = np.argsort(-best, kind="stable")
    reached = np.cumsum(np.asarray(w, dtype=np.float64)[order])
    at = min(int(np.searchsorted(reached, share - 1e-9)), len(best) - 1)
    return float(best[order[at]])


def _best_matches(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All window cosines in one matrix product, and each side's best match on the other.

    One window a side uses np.dot of the two vectors instead: a 1x1 matrix product may go
    through a different BLAS kernel (sgemm against sdot) and differ in the last bit, and a
    question's similarity must stay the float32 dot product it was scored with before.
    """
    single = len(a) == 1 and len(b) == 1
    scores = np.dot(a[0], b[0]).reshape(1, 1) if single else a @ b.T
    return scores, scores.max(axis=1), scores.max(axis=0)


def pair_similarity(a_vectors, b_vectors, a_weights=None, b_weights=None,
                    share: float | None = COVERED_SHARE) -> float:
    """max(cover_ab, cover_ba) alone: the fast path for rescoring graph edges (about a
    million of them), one matrix product and two weighted means, no spans, no passages.

    Pass `window_weights(spans)` of each side to get exactly `match_windows(...).similarity`;
    None weighs every window equally (right when windows do not overlap and are of equal
    length). A side with no windows (an empty text) scores 0.0.
    """
    a = _as_float32(a_vectors)
    b = _as_float32(b_vectors)
    if len(a) == 1 and len(b) == 1:  # two questions, most edges: the cosine, nothing else
        return float(np.dot(a[0], b[0]))
    if len(a) == 0 or len(b) == 0:
        return 0.0
    _, best_a, best_b = _best_matches(a, b)
    return max(_cover(best_a, a_weights, share), _cover(best_b, b_weights, share))


def _held(best: np.ndarray, spans: np.ndarray, cutoff: float) -> float:
    """Share of the text's characters lying in windows whose best match reaches the
    cutoff: the union of those windows' spans over the union of all spans. (Not the sum of
    their weights: a character in the overlap of a held window and an unheld one is held,
    whichever windows cover it.)"""
    total = _shared_cover(spans).sum()
    held = best >= cutoff
    if total <= 0:
        return float(held.mean()) if len(held) else 0.0
    return float(_shared_cover(spans[held]).sum() / total)


def _passages(scores: np.ndarray, best_a: np.ndarray, a_spans: np.ndarray,
              b_spans: np.ndarray, cutoff: float) -> tuple[Passage, ...]:
    """Each A window at or above the cutoff paired with its best B window; runs where
    consecutive A windows match consecutive B windows become one passage (the union of
    their spans, the mean of their cosines), so a copied page shows as one passage and not
    as a dozen overlapping windows. Best first; equal ones in A's order."""
    rows = np.flatnonzero(best_a >= cutoff)
    if len(rows) == 0:
        return ()
    cols = scores[rows].argmax(axis=1)
    sims = best_a[rows]
    breaks = np.flatnonzero((np.diff(rows) != 1) | (np.diff(cols) != 1)) + 1
    found = []
    for run_rows, run_cols, run_sims in zip(np.split(rows, breaks), np.split(cols, breaks),
                                            np.split(sims, breaks), strict=True):
        a_part, b_part = a_spans[run_rows], b_spans[run_cols]
        found.append(Passage(a_start=int(a_part[:, 0].min()), a_end=int(a_part[:, 1].max()),
                             b_start=int(b_part[:, 0].min()), b_end=int(b_part[:, 1].max()),
                             similarity=float(run_sims.mean(dtype=np.float64))))
    found.sort(key=lambda p: (-p.similarity, p.a_start))
    return tuple(found)


def match_windows(a_vectors, a_spans, b_vectors, b_spans, cutoff: float) -> WindowMatch:
    """Judge documents A and B from their windows (vectors L2-normalised, float32 or
    float16, shape (n, dim); spans (n, 2) int [start, end) into the text). `cutoff` is the
    cosine at which a window counts as found on the other side (the project's threshold).

    See the module's docstring for why the similarity is the larger of two weighted means
    of best matches.
    """
    a, b = _as_float32(a_vectors), _as_float32(b_vectors)
    sa, sb = _as_spans(a_spans), _as_spans(b_spans)
    if len(sa) != len(a) or len(sb) != len(b):
        raise ValueError(f"{len(a)} and {len(b)} windows but {len(sa)} and {len(sb)} spans")
    if len(a) == 0 or len(b) == 0:
        return WindowMatch(0.0, 0.0, 0.0, 0.0, 0.0, ())
    scores, best_a, best_b = _best_matches(a, b)
    cover_ab = _cover(best_a, window_weights(sa))
    cover_ba = _cover(best_b, window_weights(sb))
    return WindowMatch(similarity=max(cover_ab, cover_ba), cover_ab=cover_ab,
                       cover_ba=cover_ba, held_ab=_held(best_a, sa, cutoff),
                       held_ba=_held(best_b, sb, cutoff),
                       passages=_passages(scores, best_a, sa, sb, cutoff))
