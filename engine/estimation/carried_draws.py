"""The draws a new sample takes over from the samples before it, when the project changed
(an import, a deletion, a re-encode): every pair judged before whose two texts are still
live is drawn again, with its verdict, and never asked again.

Why this keeps the estimate honest. Inside a stratum the estimators assume a simple random
sample (`engine.estimation.estimators`), and a sample draws a stratum in the order of its
pairs' permanent random numbers (`engine.estimation.drawing`): any prefix of that order is
such a sample. The numbers belong to the pairs, not to the design, so the pairs judged
before are the first ones of their old stratum's order, and a new stratum made largely of
the same pairs (an import adds pairs of the new texts, with numbers of their own) holds them
near its own order's start. The new sample therefore takes, in each new stratum, the prefix
of its order up to the last pair judged before that lies in it: the judged pairs get their
verdicts back and the few pairs of the prefix nobody judged (mostly pairs of the new texts)
wait for one. The prefix's length is decided by where earlier samples stopped, never by a
verdict, so the draws stay a uniform sample of the stratum: a pair of the old stratum was in
it with chance k/N, a pair of a new text with the expected share of the k-th number,
k/(N+1).

A judged pair that moved far down another stratum's order (a candidate pushed out of the
neighbour graph lands among millions of outside pairs) would need every pair before it
judged first; the prefix is extended to a judged pair only while the pairs it adds without a
verdict stay within `NEW_PER_CARRIED` of those carried plus `NEW_ALLOWED`. The verdicts on
pairs left beyond it are not counted (a verdict outside the prefix would make the sample
non-uniform) and are still reused if a later draw reaches them. So are the verdicts on
pairs outside the graph of a project of more than `drawing.LISTED_OUTSIDE` texts: their
strata are drawn from a first phase drawn afresh for the new population, which seldom
holds the same pairs again.
"""

from __future__ import annotations

import numpy as np

from engine.estimation.graph_population import GraphPopulation

NEW_ALLOWED = 5          # pairs without a verdict a stratum's prefix may always add
NEW_PER_CARRIED = 0.5    # and this many more for each judged pair it carries


def carried_draws(population: GraphPopulation, seed: int, judged_keys: set[int]
                  ) -> list[dict]:
    """The first draws of a new sample: in each stratum, the prefix of its drawing order up
    to the last judged pair (`judged_keys`) it can carry. Dicts as `next_draws` returns
    (`stratum`, `stratum_size`, `probability`, `text_a`, `text_b`, `similarity`), in drawing
    order within each stratum; the caller fills in the verdicts."""
    strata = population.strata
    judged = np.fromiter(judged_keys, dtype=np.int64, count=len(judged_keys))
    caps = strata.caps()
    rows: list[dict] = []
    keys: list[int] = []
    for h in range(strata.count):
        order = population.ordered(h, seed)
        length = prefix_length(np.isin(order, judged))
        pool = float(caps[h])
        size = float(strata.sizes[h])
        for before in range(length):
            keys.append(int(order[before]))
            rows.append({"stratum": h, "stratum_size": int(round(size)),
                         "probability": (1 / max(pool - before, 1))
                         * min(pool / max(size, 1.0), 1.0)})
    if not rows:
        return []
    key_array = np.asarray(keys, dtype=np.int64)
    sims = population.similarity_of(key_array)
    for row, key, sim in zip(rows, keys, sims.tolist(), strict=True):
        row.update(text_a=key >> 32, text_b=key & 0xFFFFFFFF, similarity=float(sim))
    return rows


def prefix_length(judged: np.ndarray) -> int:
    """How many pairs of a stratum's drawing order to take, given which were judged: up to
    the last judged one whose prefix adds at most NEW_ALLOWED + NEW_PER_CARRIED per judged
    pair without a verdict (0 when none was judged)."""
    at = np.flatnonzero(judged)
    if not len(at):
        return 0
    carried = np.arange(1, len(at) + 1)
    unjudged = at + 1 - carried
    fits = np.flatnonzero(unjudged <= NEW_ALLOWED + NEW_PER_CARRIED * carried)
    return int(at[fits[-1]] + 1) if len(fits) else 0
