"""The project threshold: where the analyst's own verdicts put "duplicate", else one default.

There is one threshold per project, used by everything that calls a pair a duplicate: the
clusters (`duplicates`, the review's slider), the pairs `ask` and Ask me offer, the likely
duplicates of `match` and of checking a file, and the window's "This may already exist".
Until the verdicts say otherwise it is `DEFAULT_THRESHOLD`. Once there are enough verdicts
of both kinds, the threshold of best F1 on them replaces it everywhere at once.

Why one and not two: a cluster could once have wanted a stricter cut, but a cluster is cut
around a centre with every member within the threshold of it (`engine.dedup.cut`), so a
member is exactly a pair at or above the threshold, as a match or an asked pair is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:   # the command line reads the constants here without numpy
    from engine.pair_metrics import ThresholdCurve

# all-MiniLM-L6-v2 on paraphrase data: on Quora's held-out pairs its best-F1 threshold is
# 0.73 and the thresholds calibrated on a few hundred verdicts fall between 0.76 and 0.86
# (docs/benchmarks.md, ask_vs_random); 0.8 sits among them, a little on the strict side.
DEFAULT_THRESHOLD = 0.8
# Enough verdicts: at least this many duplicates AND this many non-duplicates. Measured on
# Quora (benchmarks/ask_vs_random.py, 200 random draws per size, the default model): the
# best-F1 threshold of random verdicts, against the best threshold of 4,000 held-out pairs,
# costs on average 10.6 F1 points (90th percentile 31.7) when the fewer kind has 1-4 pairs,
# 4.9 (12.3) with 5-9, 3.0 (7.7) with 10-19, 1.5 (4.3) with 20-49 and 0.5 (0.9) from 100.
# Below ten of each one verdict moves the threshold by a large step and the slider would
# jump; from ten the typical loss is a few points and shrinks as verdicts come in.
ENOUGH_OF_EACH = 10


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


def default_threshold(calibration: Calibration | None) -> float:
    """The project threshold: what every command and the window cut at when the user gives
    no threshold. The calibrated one once there are enough verdicts, else the default."""
    if calibration is not None and calibration.enough:
        return round(calibration.threshold, 4)
    return DEFAULT_THRESHOLD


def threshold_reason(calibration: Calibration | None) -> str:
    """Why the project threshold is what it is, in words the user reads beside it."""
    if calibration is not None and calibration.enough:
        return (f"calibrated on {calibration.verdicts:,} verdicts (precision "
                f"{calibration.precision:.0%}, recall {calibration.recall:.0%})")
    return (f"the default, until {ENOUGH_OF_EACH} verdicts of each kind calibrate it")


def format_threshold(value: float) -> str:
    """0.8 as "0.80", a calibrated 0.7276 as "0.728": two decimals, three where it has them."""
    text = f"{value:.3f}"
    return text[:-1] if text.endswith("0") else text


def describe_threshold(calibration: Calibration | None) -> str:
    """"threshold 0.80 (the default, until …)": the project threshold and its reason."""
    return (f"threshold {format_threshold(default_threshold(calibration))} "
            f"({threshold_reason(calibration)})")
