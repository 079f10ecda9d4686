"""The calibrated threshold: where the analyst's own labels put "duplicate".

The default cut (0.8) suits all-MiniLM-L6-v2 on paraphrase data, but every corpus and every
fine-tuned model draws the line elsewhere. Once the labelled pairs hold enough of both
kinds, the threshold of best F1 on them replaces the default in `duplicates`, `match`,
`ask` and the window's slider.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.pair_metrics import ThresholdCurve

DEFAULT_THRESHOLD = 0.8
# Enough labels: at least this many duplicates AND this many non-duplicates. Measured on
# Quora (benchmarks/ask_vs_random.py, 200 random draws per size, the default model): the
# best-F1 threshold of random verdicts, against the best threshold of 4,000 held-out pairs,
# costs on average 10.6 F1 points (90th percentile 31.7) when the fewer kind has 1-4 pairs,
# 4.9 (12.3) with 5-9, 3.0 (7.7) with 10-19, 1.5 (4.3) with 20-49 and 0.5 (0.9) from 100.
# Below ten of each one verdict moves the threshold by a large step and the slider would
# jump; from ten the typical loss is a few points and shrinks as labels come in.
ENOUGH_OF_EACH = 10


@dataclass(frozen=True)
class Calibration:
    """The best-F1 threshold on the labelled pairs, and what it rests on."""

    threshold: float
    precision: float
    recall: float
    f1: float
    positives: int
    negatives: int

    @property
    def labels(self) -> int:
        return self.positives + self.negatives

    @property
    def enough(self) -> bool:
        return min(self.positives, self.negatives) >= ENOUGH_OF_EACH


def calibrate(curve: ThresholdCurve) -> Calibration | None:
    """The curve's best-F1 point, or None while only one kind of label exists."""
    if not curve.usable or curve.best_threshold is None:
        return None
    return Calibration(curve.best_threshold, curve.best_precision, curve.best_recall,
                       curve.best_f1, curve.positives, curve.negatives)


def default_threshold(calibration: Calibration | None,
                      fallback: float = DEFAULT_THRESHOLD) -> float:
    """What the project's commands cut at when the user gives no threshold: the calibrated
    one once there are enough labels, else `fallback` (`match`: 0.8; the cluster cut keeps
    its own, stricter 0.85, since a cluster chains whatever passes)."""
    if calibration is not None and calibration.enough:
        return round(calibration.threshold, 4)
    return fallback
