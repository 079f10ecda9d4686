"""The sampling design run on a population whose every label is known.

What the tests and `benchmarks/estimate.py` measure coverage with: the same strata, the same
allocation and the same estimators as a project, with an oracle in place of the analyst.
A project draws through `engine.services.measuring` instead (permanent random numbers, the
store); here each stratum is shuffled once, which draws the same way (any prefix of a random
order is a simple random sample).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.estimation.allocation import next_strata, shares
from engine.estimation.estimators import END_SHIFT, Estimate, estimate
from engine.estimation.strata import PHASE_ONE, Strata, make_strata, prior_share


@dataclass(frozen=True)
class PairPopulation:
    """Every pair of a population: its similarity, whether it is a candidate (an edge of the
    graph; the others form the outside stratum), and whether it truly is a duplicate."""

    similarity: np.ndarray
    candidate: np.ndarray
    duplicate: np.ndarray

    def strata(self, threshold: float, rng: np.random.Generator | None = None,
               phase_one: int = PHASE_ONE) -> tuple[Strata, np.ndarray]:
        """The design's strata for `threshold`, and each pair's stratum. The outside
        strata are sized from a uniform first phase of `phase_one` outside pairs drawn with
        `rng` (all of them when there are no more)."""
        cand = np.asarray(self.candidate, dtype=bool)
        outside = np.flatnonzero(~cand)
        first = outside
        if len(outside) > phase_one:
            rng = rng or np.random.default_rng(0)
            first = rng.choice(outside, phase_one, replace=False)
        strata = make_strata(self.similarity[cand], self.similarity[first], len(outside),
                             threshold)
        which = np.empty(len(cand), dtype=np.int64)
        which[cand] = strata.of(self.similarity[cand])
        which[~cand] = strata.of_outside(self.similarity[~cand])
        return strata, which


@dataclass
class Sample:
    """Which pairs (positions in the population) were drawn, in order, and from which stratum."""

    strata: Strata
    stratum_of: np.ndarray      # (N,) each pair's stratum
    drawn: np.ndarray           # positions, in draw order
    stratum: np.ndarray         # their strata

    def estimate(self, population: PairPopulation, flagged: np.ndarray, *,
                 threshold: float = float("nan"), draws: int = 4000,
                 seed: int = 0, shift: float = END_SHIFT) -> Estimate:
        """The figures for pairs `flagged` (a boolean per pair of the population); `shift`
        as `estimators.estimate` takes it."""
        flagged = np.asarray(flagged, dtype=bool)
        flagged_sizes = np.bincount(self.stratum_of[flagged], minlength=self.strata.count)
        return estimate(self.strata.sizes, flagged_sizes, self.stratum,
                        population.duplicate[self.drawn], flagged[self.drawn],
                        threshold=threshold, draws=draws, seed=seed,
                        phase_one=self.strata.phase_one_uncertainty(),
                        floor=self.strata.floor_split(), shift=shift)


def run_design(population: PairPopulation, design_flagged: np.ndarray, threshold: float,
               budget: int, rng: np.random.Generator, *, batch: int = 1,
               stratification: tuple[Strata, np.ndarray] | None = None) -> Sample:
    """Draw `budget` pairs as a project would: the pilot, then the adaptive allocation, in
    batches of `batch` draws decided together (the command line's `--next N`). An outside
    stratum's draws are uniform over its pairs, as drawing from its first-phase pairs is."""
    strata, which = stratification or population.strata(threshold, rng)
    count = strata.count
    members = _shuffled_members(which, count, rng)
    flagged_share = np.divide(
        np.bincount(which[np.asarray(design_flagged, dtype=bool)], minlength=count),
        strata.sizes, out=np.zeros(count), where=strata.sizes > 0)
    prior = prior_share(strata)
    middle = strata.middle()
    caps = np.minimum(strata.caps(), [len(m) for m in members])
    taken = np.zeros(count, dtype=np.int64)
    found = np.zeros(count, dtype=np.int64)
    drawn: list[int] = []
    drawn_strata: list[int] = []
    budget = min(budget, int(caps.sum()))
    while len(drawn) < budget:
        share = shares(found, taken, prior, middle, strata.outside_count)
        for h in next_strata(strata.sizes, taken, share, flagged_share,
                             min(batch, budget - len(drawn)), caps, strata.below_floor()):
            pair = int(members[h][taken[h]])
            taken[h] += 1
            found[h] += int(population.duplicate[pair])
            drawn.append(pair)
            drawn_strata.append(h)
    return Sample(strata, which, np.asarray(drawn, dtype=np.int64),
                  np.asarray(drawn_strata, dtype=np.int64))


def _shuffled_members(which: np.ndarray, count: int, rng: np.random.Generator
                      ) -> list[np.ndarray]:
    order = rng.permutation(len(which))
    grouped = order[np.argsort(which[order], kind="stable")]
    starts = np.r_[0, np.cumsum(np.bincount(which, minlength=count))]
    return [grouped[starts[h]:starts[h + 1]] for h in range(count)]
