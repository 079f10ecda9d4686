"""Drawing pairs at random inside a stratum, so that every pair of it is equally likely.

Candidate strata are small enough to list (the neighbour graph's edges), so each pair gets a
permanent random number: a hash of the project's sampling seed and the two text ids,
uniform in [0, 1). A stratum's sample is its pairs with the smallest numbers, taken in that
order. Any k of them are a simple random sample (without replacement) of the stratum, however
k was chosen, and since the number belongs to the pair, not to the design, a new sample made
after an import (new strata, new sizes) starts with largely the same pairs, whose verdicts
are reused instead of asked again: the "permanent random numbers" of coordinated survey
samples (Ohlsson 1995).

The pairs the graph does not hold are too many to list in a large project: their first
phase (`engine.estimation.strata`) is drawn by rejection, a pair of texts uniformly at
random, refused when it is a candidate or already drawn, which is uniform over what is left;
the pairs to judge are then taken from it in permanent-number order too. Projects of up to
`LISTED_OUTSIDE` texts list every such pair instead.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

LISTED_OUTSIDE = 2_000   # texts up to which the outside stratum is listed (2M pairs at most)
_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def pair_keys(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One int64 key per unordered pair of text ids (smaller id in the high half)."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    low, high = np.minimum(a, b), np.maximum(a, b)
    if len(low) and (low.min() < 0 or high.max() >= 1 << 31):
        raise ValueError("text ids must lie in [0, 2**31)")
    return (low << 32) | high


def split_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keys = np.asarray(keys, dtype=np.int64)
    return keys >> 32, keys & 0xFFFFFFFF


def priorities(seed: int, keys: np.ndarray) -> np.ndarray:
    """The permanent random number of each pair: splitmix64 of key and seed, in [0, 1)."""
    with np.errstate(over="ignore"):
        z = np.asarray(keys, dtype=np.int64).view(np.uint64) ^ np.uint64(seed & 0xFFFFFFFFFFFF)
        z = (z + np.uint64(0x9E3779B97F4A7C15)) & _MASK64
        z = ((z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & _MASK64
        z = ((z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & _MASK64
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def in_priority_order(seed: int, keys: np.ndarray) -> np.ndarray:
    """`keys` sorted by their permanent random numbers: a stratum's drawing order."""
    keys = np.asarray(keys, dtype=np.int64)
    return keys[np.argsort(priorities(seed, keys), kind="stable")]


def next_listed(ordered_keys: np.ndarray, drawn: set[int], k: int) -> list[int]:
    """The first k pairs of a listed stratum (in priority order) not drawn yet."""
    out: list[int] = []
    for key in ordered_keys.tolist():
        if key not in drawn:
            out.append(key)
            if len(out) == k:
                break
    return out


def outside_keys(text_ids: np.ndarray, candidate_keys: np.ndarray) -> np.ndarray:
    """Every pair of `text_ids` that is not a candidate (small projects only)."""
    ids = np.sort(np.asarray(text_ids, dtype=np.int64))
    i, j = np.triu_indices(len(ids), k=1)
    keys = pair_keys(ids[i], ids[j])
    return keys[~np.isin(keys, candidate_keys)]


def draw_unlisted(text_ids: np.ndarray, candidate_keys: np.ndarray, drawn: Iterable[int],
                  k: int, rng: np.random.Generator, remaining: int) -> list[int]:
    """k pairs of texts drawn uniformly among pairs that are neither candidates (sorted
    `candidate_keys`) nor already drawn; `remaining` is how many such pairs exist."""
    ids = np.asarray(text_ids, dtype=np.int64)
    candidate_keys = np.asarray(candidate_keys, dtype=np.int64)
    taken = set(drawn)
    k = min(k, remaining)
    out: list[int] = []
    while len(out) < k:
        batch = max(64, 4 * (k - len(out)))
        i = rng.integers(0, len(ids), batch)
        j = rng.integers(0, len(ids), batch)
        ok = i != j
        keys = pair_keys(ids[i[ok]], ids[j[ok]])
        if len(candidate_keys):
            at = np.minimum(np.searchsorted(candidate_keys, keys), len(candidate_keys) - 1)
            keys = keys[candidate_keys[at] != keys]
        for key in keys.tolist():
            if key not in taken:
                taken.add(key)
                out.append(key)
                if len(out) == k:
                    break
    return out
