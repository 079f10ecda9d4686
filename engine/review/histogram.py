"""The histogram behind the review's first plot: each text's similarity to its nearest
neighbour. (The precision-recall plot's numbers come from `engine.pair_metrics`.)"""

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
