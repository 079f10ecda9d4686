"""The strata of the pair population: similarity bins over the candidate pairs, plus one
stratum for every other pair.

The population is every pair of distinct texts in the project, n(n-1)/2 of them. Almost all
of them are not candidates: the neighbour graph holds each text's nearest others, and the
cut only ever joins pairs it holds (or pairs in one cluster). Those candidate pairs are
split by similarity, because the chance that a pair is a duplicate rises steeply with it: a
stratum of near-identical pairs is nearly all duplicates, one at 0.6 nearly none, and
sampling each on its own (stratified sampling) gives far narrower intervals than sampling
all pairs alike. The threshold the sample is designed for is always a boundary, so flagged
and unflagged pairs fall in different strata there.

Stratum 0, `OUTSIDE`, holds every pair that is not a candidate. It is drawn from uniformly
(`engine.estimation.drawing`); its duplicates are the ones the index never returns, which
recall must count (a recall measured only on candidate pairs is overstated: Splink #2059).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

OUTSIDE = 0
# Candidate strata: one bin below 0.5 (unrelated pairs), then 0.05 wide up to 1; the design
# threshold is added as a boundary. Bins holding fewer pairs than MIN_STRATUM are merged
# into a neighbour on the same side of the threshold: a stratum needs answers of its own, and
# a tiny one is not worth them.
GRID = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
MIN_STRATUM = 20
_TOP = 1.0 + 1e-6     # similarities of exact copies can round to a hair above 1
_BOTTOM = -2.0        # below every cosine similarity


@dataclass(frozen=True)
class Strata:
    """Stratum h >= 1 holds the candidate pairs with similarity in [bounds[h-1], bounds[h]);
    stratum 0 every other pair. `sizes[h]` is how many pairs each holds."""

    bounds: np.ndarray     # (H + 1,) ascending; bounds[0] = -2 (below any cosine), bounds[-1]
                           # just above 1 (finite: a design is stored as JSON)
    sizes: np.ndarray      # (H + 1,) int64, sizes[0] the outside stratum
    threshold: float       # the threshold the strata were designed for

    @property
    def count(self) -> int:
        """Strata, the outside one included."""
        return len(self.sizes)

    @property
    def population(self) -> int:
        return int(self.sizes.sum())

    def of(self, similarities: np.ndarray) -> np.ndarray:
        """The candidate stratum (1..H) of candidate pairs with these similarities."""
        sims = np.asarray(similarities, dtype=np.float64)
        return np.clip(np.searchsorted(self.bounds, sims, side="right"), 1, self.count - 1)

    def label(self, h: int) -> str:
        """What stratum h holds, for people: "outside the graph", "0.80-0.85", "below 0.50"."""
        if h == OUTSIDE:
            return "outside the graph"
        low, high = self.bounds[h - 1], min(self.bounds[h], 1.0)
        return f"below {high:.2f}" if low < -1 else f"{low:.2f}-{high:.2f}"

    def middle(self) -> np.ndarray:
        """A similarity representative of each stratum (NaN for the outside one)."""
        low = np.maximum(self.bounds[:-1], 0.0)
        mids = (low + np.minimum(self.bounds[1:], 1.0)) / 2
        return np.r_[np.nan, mids]

    def as_json(self) -> dict:
        return {"bounds": [float(b) for b in self.bounds],
                "sizes": [int(s) for s in self.sizes], "threshold": float(self.threshold)}

    @classmethod
    def from_json(cls, data: dict) -> Strata:
        return cls(np.asarray(data["bounds"], dtype=np.float64),
                   np.asarray(data["sizes"], dtype=np.int64), float(data["threshold"]))


def make_strata(candidate_similarities: np.ndarray, outside_size: int,
                threshold: float) -> Strata:
    """Strata for candidate pairs with these similarities, `outside_size` other pairs, and
    a sample designed for `threshold`."""
    sims = np.asarray(candidate_similarities, dtype=np.float64)
    cuts = sorted({*(g for g in GRID if abs(g - threshold) > 0.01), round(float(threshold), 6)})
    bounds = [_BOTTOM, *cuts, _TOP]
    # Merge small bins, never across the threshold: the threshold's bound always stays.
    while len(bounds) > 2:
        counts = np.histogram(sims, bins=bounds)[0]
        small = [i for i, c in enumerate(counts) if c < MIN_STRATUM]
        removable = []
        for i in small:
            for j in (i + 1, i):        # drop the upper bound of bin i, else its lower
                if 0 < j < len(bounds) - 1 and bounds[j] != round(float(threshold), 6):
                    removable.append(j)
                    break
        if not removable:
            break
        del bounds[removable[0]]
    bounds_arr = np.asarray(bounds, dtype=np.float64)
    counts = np.histogram(sims, bins=bounds_arr)[0]
    sizes = np.r_[int(outside_size), counts].astype(np.int64)
    return Strata(bounds_arr, sizes, float(threshold))


def prior_share(strata: Strata) -> np.ndarray:
    """A guess at each stratum's share of duplicates, before any answer: only where the
    next draws go depends on it (`engine.estimation.allocation`), never an estimate.

    A logistic step at the design threshold (duplicates above it, not below), kept away from
    0 and 1 so no stratum looks settled; the outside stratum is guessed at one in a thousand.
    """
    mids = strata.middle()
    guess = 1 / (1 + np.exp(-(mids - strata.threshold) / 0.04))
    guess = np.clip(np.nan_to_num(guess, nan=0.001), 0.02, 0.98)
    guess[OUTSIDE] = 0.001
    return guess
