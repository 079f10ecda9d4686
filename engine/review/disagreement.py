"""Where the model and its second opinion disagree: Ask me's other order.

Ask me's usual order asks where the model's similarity sits nearest the threshold. Once a
version's judge (a cross-encoder, `engine.training.judge_versions`) is offered, there is a
second measure of doubt: a pair the model puts on one side of the threshold and the judge,
which reads both texts together, on the other. The analyst's verdict settles which of the two
is wrong there, which teaches the next fine-tuning more than one more pair both agree on.

The judge scores pairs slowly (a transformer pass per pair, against one dot product for the
model), so only a shortlist is scored: the pairs nearest the threshold, where disagreement is
likeliest and a verdict also teaches the model most. Plain NumPy, no project.
"""

from __future__ import annotations

import numpy as np

# Pairs the judge scores per pair asked for, and at most: 20 pairs' worth of shortlist took
# about a second on a laptop CPU for short questions, and a batch is fetched while the
# analyst still has pairs to judge.
SCORED_PER_PAIR = 20
MOST_SCORED = 2_000
# A judge's probability at or above this calls the pair a duplicate: it was trained with a
# binary cross-entropy on verdicts, so 0.5 is where it is as sure of one side as the other.
JUDGE_CUT = 0.5
# Added to the cost of a pair the two agree on: more than the redundancy penalty
# `pick_spread` adds (at most 0.2), so no agreement is asked before a disagreement left.
AGREEMENT_COST = 1.0


def shortlist(scores: np.ndarray, threshold: float, n: int) -> np.ndarray:
    """Positions of the candidate pairs the judge should score for n pairs asked for: the
    `SCORED_PER_PAIR * n` (at most `MOST_SCORED`) nearest the threshold, nearest first."""
    wanted = min(max(n, 1) * SCORED_PER_PAIR, MOST_SCORED)
    distance = np.abs(np.asarray(scores, dtype=np.float64) - threshold)
    return np.argsort(distance, kind="stable")[:wanted]


def disagreement_cost(scores: np.ndarray, threshold: float, opinions: np.ndarray
                      ) -> np.ndarray:
    """How little a verdict on each pair would settle, lowest first (for `pick_spread`).

    The model's side is 1 (duplicate) at or above `threshold`, else 0; the cost is one less
    the distance from that side to the judge's probability, plus `AGREEMENT_COST` where the
    judge is on the model's side (`disagrees`). So every disagreement comes first, the
    surer the judge of the other side the earlier; then the pairs the judge is least sure
    of; the pairs both are sure of last: the queue never runs dry while unjudged pairs are
    left, it only stops putting disagreements first.
    """
    scores = np.asarray(scores, dtype=np.float64)
    opinions = np.asarray(opinions, dtype=np.float64)
    side = (scores >= threshold).astype(np.float64)
    agree = (opinions >= JUDGE_CUT) == (scores >= threshold)
    return 1.0 - np.abs(opinions - side) + AGREEMENT_COST * agree


def disagrees(score: float, threshold: float, opinion: float) -> bool:
    """Whether the model (similarity `score` against `threshold`) and the judge (probability
    `opinion`) put a pair on different sides."""
    return (score >= threshold) != (opinion >= JUDGE_CUT)
