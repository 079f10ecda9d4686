"""Average precision, best F1 and the precision-recall curve of "similarity ≥ t is a
duplicate": the one place Duplens computes them.

Every figure that rates a model on labelled pairs comes from here: `duplens eval pairs`, the
fine-tuning wizard's before and after (and the bootstrap interval on their change,
`engine.training.ap_change`), the review's precision-recall plot, the calibrated threshold
and the benchmarks. They were computed three ways before (sentence-transformers'
evaluator, scikit-learn plus the evaluator, scikit-learn's curve) and disagreed in the
threshold they named for the same pairs (a midpoint between two scores against the score
itself) and in which of several equally good thresholds they chose.

The definitions, those of scikit-learn and sentence-transformers:

- a threshold `t` calls a pair a duplicate when its score is at or above `t`; the curve has
  one point per distinct score;
- average precision is the sum over those points of (gain in recall) × precision, which is
  `sklearn.metrics.average_precision_score` to the last digit;
- best F1 is the highest F1 over the points; the threshold named is that point's score, the
  lowest similarity still called a duplicate. Among equal F1 the highest threshold wins (the
  fewest pairs called duplicates for the same F1).

Pure numpy: the command line and the window import this without scikit-learn, which costs
about a second to import on a laptop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ThresholdCurve:
    """Precision, recall and F1 of "similarity ≥ t means duplicate" for every useful t.

    Fractions (0-1); `thresholds` rise, as scikit-learn's `precision_recall_curve` gives them.
    """

    thresholds: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    f1: np.ndarray
    best_threshold: float | None    # the threshold of the best F1 (None: cannot tell)
    best_f1: float
    best_precision: float
    best_recall: float
    average_precision: float
    positives: int
    negatives: int

    @property
    def usable(self) -> bool:
        """Both kinds of label are needed before precision and recall mean anything."""
        return self.positives > 0 and self.negatives > 0

    @property
    def pairs(self) -> int:
        return self.positives + self.negatives

    @property
    def best_index(self) -> int:
        """The position of the best-F1 point in the arrays."""
        if self.best_threshold is None:
            raise ValueError("a curve with one kind of label has no best threshold")
        return int(np.flatnonzero(self.thresholds == self.best_threshold)[0])


def threshold_curve(scores: Sequence[float] | np.ndarray,
                    labels: Sequence[bool] | np.ndarray) -> ThresholdCurve:
    """The curve, its average precision and its best-F1 point, from scores and 0/1 labels.

    With only one kind of label the curve is empty and `usable` is False: there is nothing
    to rank.
    """
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels).astype(bool)
    if scores.shape != labels.shape or scores.ndim != 1:
        raise ValueError(f"{scores.shape} scores for {labels.shape} labels")
    positives = int(labels.sum())
    negatives = int(len(labels) - positives)
    if positives == 0 or negatives == 0:
        empty = np.zeros(0)
        return ThresholdCurve(empty, empty, empty, empty, None, 0.0, 0.0, 0.0, 0.0,
                              positives, negatives)
    order = np.argsort(-scores, kind="stable")
    ranked, hits = scores[order], labels[order]
    # The last position of each run of equal scores: a threshold takes a tie whole.
    ends = np.r_[np.flatnonzero(np.diff(ranked)), len(ranked) - 1]
    true_pos = np.cumsum(hits)[ends].astype(np.float64)
    called = (ends + 1).astype(np.float64)
    thresholds = ranked[ends]
    precision = true_pos / called
    recall = true_pos / positives
    f1 = 2 * true_pos / (called + positives)
    average_precision = float(np.sum(np.diff(recall, prepend=0.0) * precision))
    best = int(np.argmax(f1))   # the first maximum: the highest threshold among equals
    return ThresholdCurve(
        thresholds=thresholds[::-1].copy(), precision=precision[::-1].copy(),
        recall=recall[::-1].copy(), f1=f1[::-1].copy(),
        best_threshold=float(thresholds[best]), best_f1=float(f1[best]),
        best_precision=float(precision[best]), best_recall=float(recall[best]),
        average_precision=average_precision, positives=positives, negatives=negatives)


def sampled_points(curve: ThresholdCurve, at_most: int) -> np.ndarray:
    """Indices of at most `at_most` points spread evenly over the curve, ends included: a
    plot needs a few hundred points whatever the number of pairs."""
    n = len(curve.thresholds)
    if n == 0:
        return np.zeros(0, dtype=int)
    return np.unique(np.linspace(0, n - 1, min(n, at_most)).round().astype(int))
