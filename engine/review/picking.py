"""Which pairs to ask the analyst about: where the model is least sure, spread out.

A verdict teaches most where the model's similarity sits at the threshold (it could go
either way); a verdict far above or below it confirms what the model already says. But the
pairs nearest the threshold crowd together: one popular question sits in many of them, and
one topic's paraphrases make twenty pairs that teach one thing. So the pick is greedy over
the most uncertain candidates, with a cap on how often one text may appear and a penalty on
a pair that is close (as a pair) to one already chosen.
"""

from __future__ import annotations

import numpy as np

# Candidates looked at per pair wanted: the spread-out pick needs room to skip, and the
# penalty is a matrix-vector product per pick over them (cheap at 20 per pair).
SHORTLIST_PER_PAIR = 20
# Pairs whose pair vectors (the normalised sum of both texts' vectors) are at least this
# similar count as asking the same thing twice; beyond it, each 0.01 of similarity costs as
# much as 0.01 of distance from the threshold.
SIMILAR_PAIRS = 0.8
REDUNDANCY_WEIGHT = 1.0
# How Ask me picks (benchmarks/ask_vs_random.py measures each way against random pairs on
# validation, and this one on test).
ASK_STRATEGY = "uncertain"


def per_text_cap(n: int) -> int:
    """How many of n asked pairs one text may appear in: 2 of 20, never fewer than one."""
    return max(1, round(n / 10))


def pair_vectors(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One unit vector per pair, from its two unit text vectors: what the pair is about."""
    summed = np.asarray(a, dtype=np.float32) + np.asarray(b, dtype=np.float32)
    norms = np.linalg.norm(summed, axis=1, keepdims=True)
    return summed / np.maximum(norms, 1e-12)


def pick_uncertain(scores: np.ndarray, text_a: np.ndarray, text_b: np.ndarray,
                   threshold: float, n: int, *, vectors: np.ndarray | None = None,
                   cap: int | None = None) -> list[int]:
    """Positions of up to n candidate pairs to ask about, most useful first.

    `scores` are the model's similarities, `text_a`/`text_b` the texts' keys (any ints),
    `vectors` the optional pair vectors (`pair_vectors`) that the redundancy penalty uses.
    No text appears in more than `cap` (default `per_text_cap(n)`) of the chosen pairs.
    """
    scores = np.asarray(scores, dtype=np.float64)
    return pick_spread(np.abs(scores - threshold), text_a, text_b, n, vectors=vectors, cap=cap)


def pick_spread(cost: np.ndarray, text_a: np.ndarray, text_b: np.ndarray, n: int, *,
                vectors: np.ndarray | None = None, cap: int | None = None) -> list[int]:
    """Positions of up to n candidate pairs, lowest `cost` first, spread out: what
    `pick_uncertain` does with any measure of how little a verdict would teach (its cost
    is the distance from the threshold; `cost` is on the same scale, a pair close to one
    already chosen paying the redundancy penalty on top)."""
    distance = np.asarray(cost, dtype=np.float64)
    if n <= 0 or len(distance) == 0:
        return []
    cap = cap or per_text_cap(n)
    short = np.argsort(distance, kind="stable")[: n * SHORTLIST_PER_PAIR]
    dist = distance[short]
    a = np.asarray(text_a)[short]
    b = np.asarray(text_b)[short]
    pv = None if vectors is None else np.asarray(vectors, dtype=np.float32)[short]
    nearest_chosen = np.full(len(short), -1.0, dtype=np.float32)
    open_ = np.ones(len(short), dtype=bool)
    uses: dict[int, int] = {}
    chosen: list[int] = []
    while len(chosen) < n and open_.any():
        cost_now = dist + REDUNDANCY_WEIGHT * np.maximum(nearest_chosen - SIMILAR_PAIRS, 0.0)
        cost_now[~open_] = np.inf
        k = int(np.argmin(cost_now))
        chosen.append(int(short[k]))
        open_[k] = False
        for text in {int(a[k]), int(b[k])}:
            uses[text] = uses.get(text, 0) + 1
            if uses[text] >= cap:
                open_ &= (a != text) & (b != text)
        if pv is not None:
            np.maximum(nearest_chosen, pv @ pv[k], out=nearest_chosen)
    return chosen
