"""The project threshold: the one similarity at or above which a pair is a duplicate.

There is one threshold per project, used by everything that calls a pair a duplicate: the
clusters (`duplicates`, the review's slider), the pairs `ask` and Ask me offer, the likely
duplicates of `match` and of checking a file, the quality estimate, the exports and the
window's "This may already exist". What it is, first match wins:

1. **set by hand**: the analyst chose one for this project (the window's slider,
   `duplens threshold`), until they hand it back;
2. **calibrated**: once there are `ENOUGH_OF_EACH` verdicts of both kinds, the threshold
   of best F1 on them;
3. **the model's default**: recorded with the model (`engine.encoding.model_threshold`:
   chosen on Quora's validation pairs for the bundled model, on its held-out pairs for a
   fine-tuned version), or `DEFAULT_THRESHOLD` for a model with none recorded.

Why one and not two: a cluster could once have wanted a stricter cut, but a cluster is cut
around a centre with every member within the threshold of it (`engine.dedup.cut`), so a
member is exactly a pair at or above the threshold, as a match or an asked pair is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.encoding.model_threshold import FALLBACK, UNRECORDED, ModelThreshold

if TYPE_CHECKING:   # the command line reads the constants here without numpy
    from engine.pair_metrics import ThresholdCurve

# What the window shows before a project's threshold is read, and a model with no recorded
# threshold gets (`engine.encoding.model_threshold.FALLBACK`).
DEFAULT_THRESHOLD = FALLBACK
# Where a project's threshold comes from (`ProjectThreshold.source`).
BY_HAND, CALIBRATED, MODEL_DEFAULT = "set by hand", "calibrated", "model default"
# Enough verdicts: at least this many duplicates AND this many non-duplicates. Measured on
# Quora (benchmarks/ask_vs_random.py, 200 random draws per size, the default model): the
# best-F1 threshold of random verdicts, against the best threshold of 4,000 held-out pairs,
# costs on average 10.6 F1 points (90th percentile 31.7) when the fewer kind has 1-4 pairs,
# 4.9 (12.3) with 5-9, 3.0 (7.7) with 10-19, 1.5 (4.3) with 20-49 and 0.5 (0.9) from 100.
# Below ten of each one verdict moves the threshold by a large step and the slider would
# jump; from ten the typical loss is a few points and shrinks as verdicts come in.
ENOUGH_OF_EACH = 10
# How the command line's --threshold options say what they default to.
THRESHOLD_HELP = ("the project threshold: set by hand with 'duplens threshold', else "
                  f"calibrated on its verdicts once there are {ENOUGH_OF_EACH} of each kind, "
                  "else the model's default (see 'duplens models')")


@dataclass(frozen=True)
class Calibration:
    """The best-F1 threshold on the judged pairs, and what it rests on."""

    threshold: float
    precision: float
    recall: float
    f1: float
    positives: int
    negatives: int

    @property
    def verdicts(self) -> int:
        return self.positives + self.negatives

    @property
    def enough(self) -> bool:
        return min(self.positives, self.negatives) >= ENOUGH_OF_EACH


def calibrate(curve: ThresholdCurve) -> Calibration | None:
    """The curve's best-F1 point, or None while only one kind of verdict exists."""
    if not curve.usable or curve.best_threshold is None:
        return None
    return Calibration(curve.best_threshold, curve.best_precision, curve.best_recall,
                       curve.best_f1, curve.positives, curve.negatives)


@dataclass(frozen=True)
class ProjectThreshold:
    """The project threshold, where it comes from and why, in words shown beside it."""

    value: float
    source: str         # BY_HAND, CALIBRATED or MODEL_DEFAULT
    reason: str         # "calibrated on 40 verdicts (among them precision 91%, recall 84%)"
    verdicts: int = 0   # what a calibrated one rests on

    def short(self) -> str:
        """"model default", "calibrated from 40 verdicts", "set by hand": the status bar's
        words for where it comes from."""
        if self.source == CALIBRATED:
            return f"calibrated from {self.verdicts:,} verdicts"
        return self.source

    def describe(self) -> str:
        """"threshold 0.75 (the model's default, best F1 on …)": what a report prints."""
        return f"threshold {format_threshold(self.value)} ({self.reason})"

    def as_dict(self) -> dict:
        return {"value": self.value, "source": self.source, "reason": self.reason}


def project_threshold(calibration: Calibration | None, model: ModelThreshold = UNRECORDED,
                      by_hand: float | None = None) -> ProjectThreshold:
    """The project threshold: set by hand, else calibrated once there are enough verdicts,
    else the model's default (module docstring)."""
    if by_hand is not None:
        return ProjectThreshold(round(float(by_hand), 4), BY_HAND, "set by hand")
    if calibration is not None and calibration.enough:
        return ProjectThreshold(
            round(calibration.threshold, 4), CALIBRATED,
            # "Among them": the verdicts are no random sample of the file, so these are not
            # the file's precision and recall that Measure quality estimates beside it.
            f"calibrated on {calibration.verdicts:,} verdicts (among them precision "
            f"{calibration.precision:.0%}, recall {calibration.recall:.0%})",
            calibration.verdicts)
    reason = (f"the model's default, {model.chosen_on}" if model.recorded else
              f"the default: {model.chosen_on}")
    return ProjectThreshold(model.value, MODEL_DEFAULT, reason)


def default_threshold(calibration: Calibration | None, model: ModelThreshold = UNRECORDED,
                      by_hand: float | None = None) -> float:
    """The project threshold's value (`project_threshold`)."""
    return project_threshold(calibration, model, by_hand).value


def format_threshold(value: float) -> str:
    """0.8 as "0.80", a calibrated 0.7276 as "0.728": two decimals, three where it has them."""
    text = f"{value:.3f}"
    return text[:-1] if text.endswith("0") else text


