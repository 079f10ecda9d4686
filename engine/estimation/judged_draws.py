"""A sample's judged draws as the estimators read them: the figures at a threshold, each
duplicate pair's weight in "rows with at least one duplicate", and how many more verdicts
would halve the widest interval.

`engine.services.measuring` reads the draws from the store and hands them here as plain
dicts (`text_a`, `text_b`, `stratum`, `verdict`); nothing here touches the store.
"""

from __future__ import annotations

import numpy as np

from engine.estimation.allocation import shares, verdicts_to_halve, width_left_at_caps
from engine.estimation.estimators import Estimate, RowsInput, estimate, stratum_shares
from engine.estimation.graph_population import GraphPopulation, cluster_labels, flagged_pairs
from engine.estimation.strata import prior_share

FIGURE_INDEX = {"precision": 0, "recall": 1, "f1": 2}   # the estimators' order of figures


class JudgedDraws:
    """The judged draws of a sample as arrays, ready for the estimators."""

    def __init__(self, population: GraphPopulation, judged: list[dict]) -> None:
        self.a = np.asarray([d["text_a"] for d in judged], dtype=np.int64)
        self.b = np.asarray([d["text_b"] for d in judged], dtype=np.int64)
        self.stratum = np.asarray([d["stratum"] for d in judged], dtype=np.int64)
        self.dup = np.asarray([d["verdict"] == 1 for d in judged], dtype=bool)
        count = population.strata.count
        self.done = np.bincount(self.stratum, minlength=count)
        self.found = np.bincount(self.stratum[self.dup], minlength=count)
        ids = population.graph.ids
        self.pos_a = np.searchsorted(ids, self.a)
        self.pos_b = np.searchsorted(ids, self.b)

    def estimate_at(self, population: GraphPopulation, threshold: float, *,
                    rows: RowsInput | None = None, draws: int = 4000,
                    labels: np.ndarray | None = None) -> Estimate:
        """The figures for the cut at `threshold`: which judged pairs it flags, and how
        many pairs of each stratum it flags. `labels`: that cut's `cluster_labels`, when the
        caller has them already."""
        if labels is None:
            labels = cluster_labels(population.graph, threshold)
        flagged = (labels[self.pos_a] >= 0) & (labels[self.pos_a] == labels[self.pos_b])
        sizes = population.flagged_sizes(flagged_pairs(population.graph, labels))
        strata = population.strata
        return estimate(strata.sizes, sizes, self.stratum, self.dup, flagged,
                        threshold=threshold, rows=rows, draws=draws,
                        labels=[strata.label(h) for h in range(strata.count)],
                        phase_one=strata.phase_one_uncertainty(),
                        floor=strata.floor_split())

    def more_to_halve(self, population: GraphPopulation, result: Estimate,
                      figure: str) -> int | None:
        """About how many more verdicts, allocated as the next ones will be, would halve the
        interval of `figure` ("precision", "recall" or "f1") of `result` (None: very
        many)."""
        strata = population.strata
        flagged = np.asarray([s["flagged"] for s in result.strata], dtype=np.float64)
        share = shares(self.found, self.done, prior_share(strata), strata.middle(),
                       strata.outside_count)
        return verdicts_to_halve(strata.sizes, self.done, share, strata.per_pair(flagged),
                                 FIGURE_INDEX[figure], caps=strata.caps(),
                                 below=strata.below_floor())

    def width_left_at_caps(self, population: GraphPopulation, result: Estimate,
                           figure: str) -> float:
        """The share of `figure`'s interval width left were every pair the design can
        draw judged (`allocation.width_left_at_caps`)."""
        strata = population.strata
        flagged = np.asarray([s["flagged"] for s in result.strata], dtype=np.float64)
        share = shares(self.found, self.done, prior_share(strata), strata.middle(),
                       strata.outside_count)
        return width_left_at_caps(strata.sizes, self.done, share, strata.per_pair(flagged),
                                  FIGURE_INDEX[figure], strata.caps(), strata.below_floor())

    def row_weights(self, population: GraphPopulation, copied: set[int], *,
                    below: np.ndarray | None = None) -> np.ndarray:
        """For each judged draw: 0 unless a duplicate; then, for each of its texts held
        by a single row (not in `copied`), 1 / that text's estimated number of duplicate
        texts: this pair, its other judged duplicate pairs, and its unjudged pairs times
        their stratum's duplicate share (candidates by stratum, every other pair of the
        project at the outside stratum's). Summed over a text's duplicate pairs this counts
        it once (exactly so when every pair is judged).

        With `below` (the strata under the recall floor, `Strata.below_floor`), only
        duplicates in the other strata count, both the pair's own and the partners
        expected: the weights of "rows with a duplicate scoring at least the floor"."""
        share = stratum_shares(population.strata.sizes, self.stratum, self.dup)
        strata = population.strata
        counted = np.ones(strata.count, bool) if below is None else ~np.asarray(below, bool)
        share = share * counted
        g = strata.outside_count
        # A text's pairs outside the graph are spread over the outside strata as all are.
        outside_share = float(share[:g] @ (strata.sizes[:g] / max(strata.sizes[:g].sum(), 1)))
        n = population.texts
        low, high = population.keys >> 32, population.keys & 0xFFFFFFFF
        answered_pairs: dict[int, list[tuple[int, bool, int]]] = {}
        for i, (x, y) in enumerate(zip(self.a.tolist(), self.b.tolist(), strict=True)):
            for text, partner in ((x, y), (y, x)):
                answered_pairs.setdefault(text, []).append(
                    (partner, bool(self.dup[i]), int(self.stratum[i])))
        weights = np.zeros(len(self.a))
        for i in np.flatnonzero(self.dup & counted[self.stratum]):
            total = 0.0
            for text, other in ((int(self.a[i]), int(self.b[i])),
                                (int(self.b[i]), int(self.a[i]))):
                if text in copied:
                    continue
                mine = (low == text) | (high == text)
                per_stratum = np.bincount(population.stratum[mine],
                                          minlength=strata.count).astype(float)
                outside = (n - 1) - per_stratum.sum()
                known = 0
                for partner, is_dup, h in answered_pairs.get(text, []):
                    if strata.is_outside(h):       # judged: not an expected partner
                        outside -= 1
                    else:
                        per_stratum[h] -= 1
                    if partner != other:
                        known += is_dup and bool(counted[h])
                expected = (float(np.maximum(per_stratum[g:], 0) @ share[g:])
                            + max(outside, 0.0) * outside_share)
                total += 1 / (1 + known + expected)
            weights[i] = total
        return weights
