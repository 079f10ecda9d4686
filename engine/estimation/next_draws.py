"""Which pairs a sample draws next, and the chance each had of being the one drawn.

The allocation (`allocation.next_strata`) says which strata the next verdicts are worth most
in, given the verdicts so far; inside a stratum the pairs come in drawing order (permanent
random numbers, `drawing.next_listed`), skipping those the sample already holds. The chance
of each draw goes into the stored row, so the estimate never has to redo this arithmetic.
`engine.services.measuring` calls this under the sample's lock and stores what it returns.
"""

from __future__ import annotations

import numpy as np

from engine.estimation.allocation import next_strata, shares
from engine.estimation.drawing import next_listed, pair_keys
from engine.estimation.graph_population import GraphPopulation, cluster_labels, flagged_pairs
from engine.estimation.strata import prior_share


def design_flagged_share(population: GraphPopulation, threshold: float) -> np.ndarray:
    """Each stratum's share of pairs that the cut at the design's threshold flags (what the
    allocation weighs precision's doubt by)."""
    design_flags = population.flagged_sizes(
        flagged_pairs(population.graph, cluster_labels(population.graph, threshold)))
    return population.strata.per_pair(design_flags)


def next_draws(population: GraphPopulation, seed: int, flagged_share: np.ndarray,
               existing: list[dict], k: int) -> list[dict]:
    """Up to k new draws after `existing` (the sample's draws, judged or not: dicts with
    `text_a`, `text_b`, `stratum`, `verdict`), each a dict of `stratum`, `stratum_size`,
    `probability`, `text_a`, `text_b` (smaller first) and `similarity`, in drawing order.
    Empty when every stratum the allocation wants is used up."""
    strata = population.strata
    drawn_keys = {int(pair_keys(np.array([d["text_a"]]), np.array([d["text_b"]]))[0])
                  for d in existing}
    taken = np.bincount([d["stratum"] for d in existing], minlength=strata.count)
    judged = [d for d in existing if d["verdict"] is not None]
    done = np.bincount([d["stratum"] for d in judged], minlength=strata.count)
    found = np.bincount([d["stratum"] for d in judged if d["verdict"] == 1],
                        minlength=strata.count)
    share = shares(found, done, prior_share(strata), strata.middle(), strata.outside_count)
    wanted = next_strata(strata.sizes, taken, share, flagged_share, k, strata.caps(),
                         strata.below_floor())
    rows = []
    for h in sorted(set(wanted)):
        count = wanted.count(h)
        for key in _keys_in(population, h, seed, drawn_keys, count):
            before = int(taken[h])
            taken[h] += 1
            drawn_keys.add(key)
            # The chance that this pair was the one drawn: one of the stratum's
            # undrawn pairs; outside the graph one of the undrawn first-phase
            # pairs, themselves `pool` of the stratum's sizes[h].
            pool = float(strata.caps()[h])
            rows.append({"stratum": h, "key": key,
                         "stratum_size": int(round(strata.sizes[h])),
                         "probability": (1 / max(pool - before, 1))
                         * min(pool / max(float(strata.sizes[h]), 1.0), 1.0)})
    if not rows:
        return []
    keys = np.asarray([r.pop("key") for r in rows], dtype=np.int64)
    a, b = keys >> 32, keys & 0xFFFFFFFF
    sims = population.similarity_of(keys)
    for row, x, y, sim in zip(rows, a.tolist(), b.tolist(), sims.tolist(), strict=True):
        row.update(text_a=x, text_b=y, similarity=float(sim))
    return rows


def _keys_in(population: GraphPopulation, h: int, seed: int, drawn: set[int],
            count: int) -> list[int]:
    """`count` undrawn pairs of stratum h, in drawing order (permanent random numbers
    over its candidates, or over its first-phase pairs outside the graph)."""
    return next_listed(population.ordered(h, seed), drawn, count)
