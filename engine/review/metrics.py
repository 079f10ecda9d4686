"""The numbers behind the review plots: neighbour-similarity histogram and the
precision / recall / F1 of every threshold against the analyst's labelled pairs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Histogram:
    counts: np.ndarray   # (bins,)
    edges: np.ndarray    # (bins + 1,)
    total: int           # values counted (texts with a neighbour)


def similarity_histogram(similarities: np.ndarray, bins: int = 60) -> Histogram:
    """Histogram of nearest-neighbour similarities over [min, 1], NaN (no neighbour) left out.

    The range starts at the smallest value seen (rounded down to 0.05), so a project of
    close paraphrases is not squeezed into the right edge of a 0–1 axis.
    """
    values = np.asarray(similarities, dtype=np.float64)
    values = values[np.isfinite(values)]
    low = float(np.floor(values.min() * 20) / 20) if len(values) else 0.0
    low = min(max(low, -1.0), 0.95)
    counts, edges = np.histogram(np.clip(values, low, 1.0), bins=bins, range=(low, 1.0))
    return Histogram(counts, edges, int(len(values)))


@dataclass(frozen=True)
class ThresholdCurve:
    """Precision and recall of "similarity ≥ t means duplicate", for every useful t."""

    thresholds: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    f1: np.ndarray
    best_threshold: float | None    # the threshold of the best F1 (None: cannot tell)
    best_f1: float
    average_precision: float
    positives: int
    negatives: int

    @property
    def usable(self) -> bool:
        """Both kinds of label are needed before precision and recall mean anything."""
        return self.positives > 0 and self.negatives > 0


def threshold_curve(scores: np.ndarray, labels: np.ndarray) -> ThresholdCurve:
    """Precision, recall and F1 at each threshold, from cosine scores and 0/1 labels."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    positives = int(labels.sum())
    negatives = int(len(labels) - positives)
    empty = np.zeros(0)
    if positives == 0 or negatives == 0:
        return ThresholdCurve(empty, empty, empty, empty, None, 0.0, 0.0, positives, negatives)
    # Imported here: sklearn takes about a second, and the window imports this module.
    from sklearn.metrics import average_precision_score, precision_recall_curve

    precision, recall, thresholds = precision_recall_curve(labels, scores)
    # sklearn appends a final (precision 1, recall 0) point that has no threshold.
    precision, recall = precision[:-1], recall[:-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0)
    best = int(np.argmax(f1))
    return ThresholdCurve(thresholds, precision, recall, f1, float(thresholds[best]),
                          float(f1[best]), float(average_precision_score(labels, scores)),
                          positives, negatives)
