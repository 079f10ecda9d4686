"""Whether a fine-tuned model ranks the held-out pairs better than its parent, or whether
the held-out pairs are too few to tell.

Why: a run measured on 38 held-out pairs once reported "The new model ranks the held-out
pairs better: average precision 90.60 → 91.77". On so few pairs a change of a point can be
chance alone; the claim was not backed by the data. So the change in average
precision (AP, of "similarity ≥ t is a duplicate", from `engine.pair_metrics` as every AP
in Duplens) comes with a paired bootstrap interval, and a model is called better (or
worse) only when that interval excludes 0.

The bootstrap: the held-out pairs are drawn with replacement `resamples` times; each draw
scores the parent's and the new model's similarities of the *same* pairs (paired: what
varies between draws is which pairs are measured, not the models), and AP(new) − AP(parent)
is kept. Draws that hold only one kind of label have no AP and are skipped. The 95%
interval is the 2.5th to 97.5th percentile of the kept differences. The generator is
seeded, so the same pairs give the same interval every time.

When the interval holds 0 the answer is "not enough labelled pairs to tell", with about
how many more pairs to label: an interval's half-width shrinks about as 1/√n, so about
n = N·(half-width / |change|)² held-out pairs would make it narrower than the change seen
on N; the held-out share of the split turns held-out pairs into pairs to label.

The held-out pairs are resampled one by one, although pairs that share a question are not
independent; with many such pairs the interval is somewhat too narrow. It is an honest
floor on the uncertainty, not a bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.pair_metrics import threshold_curve

RESAMPLES = 2000
LEVEL = 0.95
MIN_MORE_PAIRS = 10  # the fewest more pairs advised: fewer would not change the answer
BETTER, WORSE, NO_CHANGE, UNDECIDED = "better", "worse", "no change", "not enough pairs"


@dataclass(frozen=True)
class APChange:
    """AP before and after on the same held-out pairs, the change, its interval, and what
    they let one say (`conclusion`). AP and the change are in percent (points)."""

    before: float  # the parent's AP on the held-out pairs, percent
    after: float  # the new model's, percent
    low: float  # the interval of after − before, points
    high: float
    level: float  # of the interval: 0.95
    pairs: int  # held-out pairs
    resamples: int  # draws asked for
    used: int  # draws with both kinds of label (the others are skipped)
    seed: int
    conclusion: str  # BETTER, WORSE, NO_CHANGE or UNDECIDED
    # UNDECIDED only: about how many more held-out pairs, and pairs to label, would let
    # the interval tell (None otherwise).
    more_held_out: int | None = None
    more_pairs: int | None = None

    @property
    def change(self) -> float:
        return self.after - self.before

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    @property
    def shown(self) -> bool:
        """True when the held-out pairs show the new model better or worse."""
        return self.conclusion in (BETTER, WORSE)

    def as_dict(self) -> dict:
        return {"before": round(self.before, 4), "after": round(self.after, 4),
                "change": round(self.change, 4),
                "interval": [round(self.low, 4), round(self.high, 4)],
                "level": self.level, "pairs": self.pairs, "resamples": self.resamples,
                "resamples_used": self.used, "seed": self.seed,
                "conclusion": self.conclusion, "more_held_out": self.more_held_out,
                "more_pairs": self.more_pairs, "claim": claim(self)}


def ap_change(before_scores: Sequence[float] | np.ndarray,
              after_scores: Sequence[float] | np.ndarray,
              labels: Sequence[bool] | np.ndarray, *, resamples: int = RESAMPLES,
              level: float = LEVEL, seed: int = 0, held_out_share: float = 1.0) -> APChange:
    """The change in AP from `before_scores` to `after_scores` (the two models'
    similarities of the same pairs, whose labels are `labels`) and its paired bootstrap
    interval; see the module doc.

    `held_out_share`: the share of labelled pairs that end up held out (the split's), to
    turn the held-out pairs needed into pairs to label. Raises ValueError when the pairs
    do not hold both kinds of label or the arrays differ in length.
    """
    before = np.asarray(before_scores, dtype=np.float64)
    after = np.asarray(after_scores, dtype=np.float64)
    truth = np.asarray(labels).astype(bool)
    if not before.shape == after.shape == truth.shape or truth.ndim != 1:
        raise ValueError(f"{before.shape} before and {after.shape} after scores for "
                         f"{truth.shape} labels")
    base, new = threshold_curve(before, truth), threshold_curve(after, truth)
    if not base.usable:
        raise ValueError("the change in AP needs pairs of both kinds of label")
    rng = np.random.default_rng(seed)
    n = len(truth)
    diffs = []
    for _ in range(resamples):
        draw = rng.integers(0, n, n)
        picked = truth[draw]
        if picked.all() or not picked.any():
            continue  # one kind of label: no AP to compare
        diffs.append(threshold_curve(after[draw], picked).average_precision
                     - threshold_curve(before[draw], picked).average_precision)
    tail = 100 * (1 - level) / 2
    low, high = ((100 * np.percentile(diffs, [tail, 100 - tail])).tolist() if diffs
                 else (-math.inf, math.inf))
    before_ap, after_ap = 100 * base.average_precision, 100 * new.average_precision
    change = after_ap - before_ap
    if low > 0:
        conclusion = BETTER
    elif high < 0:
        conclusion = WORSE
    elif abs(change) < 1e-9:
        conclusion = NO_CHANGE
    else:
        conclusion = UNDECIDED
    more_held_out = more_pairs = None
    if conclusion == UNDECIDED:
        more_held_out, more_pairs = more_needed(n, (high - low) / 2, change, held_out_share)
    return APChange(before_ap, after_ap, low, high, level, n, resamples, len(diffs), seed,
                    conclusion, more_held_out, more_pairs)


def more_needed(pairs: int, half_width: float, change: float,
                held_out_share: float = 1.0) -> tuple[int, int]:
    """About how many more held-out pairs, and labelled pairs, would make an interval of
    `half_width` on `pairs` pairs narrower than `change`: the half-width shrinks about as
    1/√n, so n ≈ pairs·(half_width / change)². Rounded up to a round figure, at least
    `MIN_MORE_PAIRS` labelled pairs. `change` must not be 0 (then no number of pairs is
    enough, and there is nothing to show)."""
    if change == 0:
        raise ValueError("no number of pairs shows a change of 0")
    if not math.isfinite(half_width):
        half_width = abs(change) * 2  # no usable draw: at least four times the pairs
    needed = pairs * (half_width / abs(change)) ** 2
    more_held_out = max(0, math.ceil(needed - pairs))
    share = held_out_share if 0 < held_out_share <= 1 else 1.0
    more_pairs = max(MIN_MORE_PAIRS, _round_up(math.ceil(more_held_out / share)))
    return more_held_out, more_pairs


def _round_up(value: int) -> int:
    """Up to a figure a person would say: 17 → 20, 130 → 150, 1,234 → 1,300."""
    if value <= 100:
        step = 10
    elif value <= 1000:
        step = 50
    else:
        step = 10 ** (len(str(value)) - 2)
    return -(-value // step) * step


def claim(change: APChange) -> str:
    """What the held-out pairs let one say of the new model, one clause for a summary."""
    if change.conclusion == BETTER:
        return "The new model ranks the held-out pairs better"
    if change.conclusion == WORSE:
        return "The new model ranks the held-out pairs worse"
    if change.conclusion == NO_CHANGE:
        return (f"No difference: both models rank the {change.pairs:,} held-out pairs "
                f"equally well")
    return (f"Not enough labelled pairs to tell whether the new model ranks better or worse "
            f"({change.pairs:,} held out); label about {change.more_pairs:,} more")


def evidence(change: APChange) -> str:
    """The figures behind `claim`: AP before and after, the change and its interval."""
    return (f"average precision {change.before:.2f} → {change.after:.2f} "
            f"({interval_text(change)})")


def interval_text(change: APChange) -> str:
    """"+0.17 points, 95% interval +0.09 to +0.25": the change and its interval, as every
    AP change in Duplens is said (a new model's, a judge's against a model)."""
    interval = (f"{change.level:.0%} interval {change.low:+.2f} to {change.high:+.2f}"
                if change.used else "too few pairs for an interval")
    return f"{change.change:+.2f} points, {interval}"
