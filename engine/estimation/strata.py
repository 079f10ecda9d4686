"""The strata of the pair population: similarity bins over the candidate pairs, and similarity
bins over every other pair, sized from a first, unjudged uniform sample of them.

The population is every pair of distinct texts in the project, n(n-1)/2 of them. Almost all
of them are not candidates: the neighbour graph holds each text's nearest others, and the
cut only ever joins pairs it holds (or pairs in one cluster). Those candidate pairs are
split by similarity, because the chance that a pair is a duplicate rises steeply with it: a
stratum of near-identical pairs is nearly all duplicates, one at 0.6 nearly none, and
sampling each on its own (stratified sampling) gives far narrower intervals than sampling
all pairs alike. The threshold the sample is designed for is always a boundary, so flagged
and unflagged pairs fall in different strata there.

The pairs outside the graph are what the index never returns; their duplicates are what
recall must count (a recall measured on candidate pairs only is overstated: Splink #2059).
They are drawn uniformly: a first sample of `PHASE_ONE` of them (or all, in a small project)
is drawn and scored, which costs no verdict, and tells how many outside pairs lie in each
similarity bin; the pairs to judge are then drawn from that sample, bin by bin (two-phase
sampling for stratification, Neyman 1938). That matters: on Quora (benchmarks/estimate.py)
0.2% of the outside pairs, those above 0.5, hold 97% of its missed duplicates, which one
uniform stratum would find about once in 300 verdicts. A bin's size is then an estimate,
N0 * m_g / M, whose own uncertainty the intervals carry (`engine.estimation.estimators`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Candidate strata: one bin below 0.5 (unrelated pairs), then 0.05 wide up to 1; the design
# threshold is added as a boundary. Outside strata: 0.1 wide from 0.3 (the graph holds
# every pair above 0.75). Bins holding fewer pairs than MIN_STRATUM (candidates) or
# phase-one pairs (outside) are merged into a neighbour on the same side of the threshold:
# a stratum needs verdicts of its own, and a tiny one is not worth them.
GRID = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
OUTSIDE_GRID = (0.3, 0.4, 0.5, 0.6, 0.7)
MIN_STRATUM = 20
# Recall is quoted "down to" this similarity, with the pairs below it reported apart (what
# they could hide). It is the lowest threshold Duplens lets an analyst set (the window's
# slider, `duplens threshold`): a duplicate scored below it is one that no setting would
# flag, so recall down to it is what the choice of threshold trades, and what a few hundred
# verdicts can pin down. The pairs below it are millions in a file of a few thousand texts,
# each a duplicate with a chance of a few in a million: no few hundred verdicts bound what
# they hide to anything an analyst could quote (measured: "missed could be 338,708" from 41
# verdicts in a 3,393-text file with 1,147 duplicate pairs), so they get a fixed, small share
# of the verdicts (`allocation.BELOW_FLOOR_SHARE`) and their own line. A boundary of every
# design (both grids); a design for a threshold below it takes the threshold instead.
RECALL_FLOOR = 0.5
PHASE_ONE = 100_000   # outside pairs scored (not judged) to size the outside strata
_TOP = 1.0 + 1e-6     # similarities of exact copies can round to a hair above 1
_BOTTOM = -2.0        # below every cosine similarity


@dataclass(frozen=True)
class Strata:
    """Strata 0..G-1 hold the pairs outside the graph with similarity in
    [outside_bounds[g], outside_bounds[g+1]); strata G.. the candidate pairs in
    [bounds[h-G], bounds[h-G+1]). `sizes` counts each (outside ones estimated from
    `phase_one`, the first-phase pairs in each, of `outside_total`)."""

    bounds: np.ndarray          # candidate bins, ascending; -2 and just above 1 at the ends
    outside_bounds: np.ndarray  # outside bins, likewise
    sizes: np.ndarray           # (G + H,) float64
    threshold: float            # the threshold the strata were designed for
    outside_total: int          # N0: pairs outside the graph
    phase_one: np.ndarray       # (G,) int64 first-phase pairs in each outside stratum

    @property
    def count(self) -> int:
        return len(self.sizes)

    @property
    def outside_count(self) -> int:
        return len(self.outside_bounds) - 1

    @property
    def phase_one_complete(self) -> bool:
        """Every outside pair was in the first phase: the outside sizes are exact."""
        return int(self.phase_one.sum()) >= self.outside_total

    @property
    def population(self) -> float:
        return float(self.sizes.sum())

    def phase_one_uncertainty(self) -> tuple[np.ndarray, int] | None:
        """What the estimators need to carry the outside sizes' own uncertainty: the
        first-phase counts and N0 (None when the first phase was every outside pair)."""
        return None if self.phase_one_complete else (self.phase_one, self.outside_total)

    def is_outside(self, h: int) -> bool:
        return h < self.outside_count

    def of(self, similarities: np.ndarray) -> np.ndarray:
        """The stratum of candidate pairs with these similarities."""
        return self.outside_count + _bin(self.bounds, similarities)

    def of_outside(self, similarities: np.ndarray) -> np.ndarray:
        """The stratum of pairs outside the graph with these similarities."""
        return _bin(self.outside_bounds, similarities)

    @property
    def floor(self) -> float | None:
        """The similarity recall is quoted down to: `RECALL_FLOOR`, or the threshold when
        lower; None when no stratum lies wholly below it. New designs always have it as a
        boundary on both sides of the graph; in one stored before floors, a small bin may
        straddle it, and counts as above it."""
        return min(RECALL_FLOOR, self.threshold) if self.below_floor().any() else None

    def floor_split(self) -> tuple[float, np.ndarray] | None:
        """(floor, below_floor()) for the estimators, None when nothing lies below."""
        floor = self.floor
        return None if floor is None else (floor, self.below_floor())

    def below_floor(self) -> np.ndarray:
        """(count,) bool: the strata whose every pair scores below the floor (see
        `RECALL_FLOOR`), where no threshold an analyst can set reaches."""
        wanted = min(RECALL_FLOOR, self.threshold) + 1e-9
        return np.r_[self.outside_bounds[1:] <= wanted, self.bounds[1:] <= wanted]

    def caps(self) -> np.ndarray:
        """The most draws each stratum can give: its pairs, or its first-phase pairs."""
        caps = self.sizes.copy()
        caps[:self.outside_count] = self.phase_one
        return caps

    def per_pair(self, counts: np.ndarray) -> np.ndarray:
        """Counts per stratum as a share of the stratum's pairs (0 for an empty one)."""
        return np.divide(counts, self.sizes, out=np.zeros(self.count), where=self.sizes > 0)

    def label(self, h: int) -> str:
        """What stratum h holds, for people: "outside the graph, below 0.30", "0.80-0.85"."""
        if self.is_outside(h):
            g = h
            span = _span(self.outside_bounds[g], min(self.outside_bounds[g + 1], 1.0))
            return "outside the graph" + (f", {span}" if self.outside_count > 1 else "")
        i = h - self.outside_count
        return _span(self.bounds[i], min(self.bounds[i + 1], 1.0))

    def middle(self) -> np.ndarray:
        """A similarity representative of each stratum."""
        def mids(bounds: np.ndarray) -> np.ndarray:
            low = np.maximum(bounds[:-1], np.minimum(bounds[1:] - 0.2, 0.3))
            return (low + np.minimum(bounds[1:], 1.0)) / 2
        return np.r_[mids(self.outside_bounds), mids(self.bounds)]

    def as_json(self) -> dict:
        return {"bounds": [float(b) for b in self.bounds],
                "outside_bounds": [float(b) for b in self.outside_bounds],
                "sizes": [float(s) for s in self.sizes], "threshold": float(self.threshold),
                "outside_total": int(self.outside_total),
                "phase_one": [int(m) for m in self.phase_one]}

    @classmethod
    def from_json(cls, data: dict) -> Strata:
        return cls(np.asarray(data["bounds"], dtype=np.float64),
                   np.asarray(data["outside_bounds"], dtype=np.float64),
                   np.asarray(data["sizes"], dtype=np.float64), float(data["threshold"]),
                   int(data["outside_total"]), np.asarray(data["phase_one"], dtype=np.int64))


def make_strata(candidate_similarities: np.ndarray, phase_one_similarities: np.ndarray,
                outside_total: int, threshold: float) -> Strata:
    """Strata for candidate pairs with these similarities, `outside_total` other pairs of
    which a uniform first phase scored `phase_one_similarities`, designed for `threshold`."""
    sims = np.asarray(candidate_similarities, dtype=np.float64)
    first = np.asarray(phase_one_similarities, dtype=np.float64)
    t = round(float(threshold), 6)
    floor = round(min(RECALL_FLOOR, t), 6)
    cuts = sorted({*(g for g in GRID if abs(g - threshold) > 0.01), t, floor})
    bounds = _merged([_BOTTOM, *cuts, _TOP], sims, keep={t, floor})
    outside_cuts = sorted({*(g for g in OUTSIDE_GRID if g < floor - 0.01 or g > floor), floor})
    outside_bounds = _merged([_BOTTOM, *outside_cuts, _TOP], first, keep={floor})
    counts = np.histogram(sims, bins=bounds)[0]
    phase_one = np.histogram(first, bins=outside_bounds)[0].astype(np.int64)
    total = max(int(phase_one.sum()), 1)
    outside = outside_total * phase_one / total
    return Strata(bounds, outside_bounds, np.r_[outside, counts].astype(np.float64),
                  float(threshold), int(outside_total), phase_one)


def prior_share(strata: Strata) -> np.ndarray:
    """A guess at each stratum's share of duplicates, before any verdict: only where the
    next draws go depends on it (`engine.estimation.allocation`), never an estimate.

    A logistic step at the design threshold (duplicates above it, not below), kept away from
    0 and 1 so no candidate stratum looks settled. Pairs outside the graph are guessed a
    tenth as likely, and far below the threshold nearly never: a stratum of millions of
    unrelated pairs guessed at even 0.2% would take most of the verdicts (measured: 142 of
    200 on a project of 3,000 Quora questions, for an upper bound on its missed
    duplicates that stayed useless), while its point estimate hardly moves.
    """
    mids = strata.middle()
    step = 1 / (1 + np.exp(-(mids - strata.threshold) / 0.04))
    guess = np.clip(step, 0.02, 0.98)
    g = strata.outside_count
    guess[:g] = np.clip(step[:g], 1e-6, 0.98) * 0.1
    return guess


def _merged(bounds: list[float], values: np.ndarray, keep: set[float]) -> np.ndarray:
    """`bounds` less the inner ones that leave a bin with fewer than MIN_STRATUM values
    (never one in `keep`)."""
    bounds = list(bounds)
    while len(bounds) > 2:
        counts = np.histogram(values, bins=bounds)[0]
        removable = None
        for i in (i for i, c in enumerate(counts) if c < MIN_STRATUM):
            for j in (i + 1, i):        # drop the upper bound of bin i, else its lower
                if 0 < j < len(bounds) - 1 and bounds[j] not in keep:
                    removable = j
                    break
            if removable is not None:
                break
        if removable is None:
            break
        del bounds[removable]
    return np.asarray(bounds, dtype=np.float64)


def _bin(bounds: np.ndarray, similarities: np.ndarray) -> np.ndarray:
    sims = np.asarray(similarities, dtype=np.float64)
    return np.clip(np.searchsorted(bounds, sims, side="right") - 1, 0, len(bounds) - 2)


def _span(low: float, high: float) -> str:
    return f"below {high:.2f}" if low < -1 else f"{low:.2f}-{high:.2f}"
