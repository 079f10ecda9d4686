"""What the quality estimate describes, and how the export differs from it.

The figures are those of the model's own cut at the threshold: the pairs of texts it puts
in one cluster, before any verdict (`engine.estimation.judged_draws`). The export obeys every
verdict as well (`engine.review.verdict_joins`): a pair judged "not duplicate" is never in
one cluster, a pair judged "duplicate" always is unless a "not" forbids it. On the sample
questions, precision after 150 verdicts was 0.82 for the export against the cut's 0.77, so
a figure quoted without saying which it describes misleads both ways.

Estimating the export itself is not done here: which pairs it flags depends on the verdicts,
the very sample the figures come from, so post-stratifying on it would count the pairs the
analyst split off as evidence of precision. Instead the estimate says plainly that it is the
cut's, and counts the verdicts the export applies against it: those are known exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class CutScope:
    """The cut the figures describe and the verdicts the export applies on top of it.

    `verdicts`: verdicts on a pair of two distinct texts of the project (copies of one text
    are always duplicates); `split`: those "not duplicate" whose texts the cut puts in one
    cluster (apart in the export); `joined`: those "duplicate" the cut leaves apart
    (together in the export, unless a "not duplicate" verdict forbids it)."""

    threshold: float
    verdicts: int
    split: int
    joined: int

    @property
    def agrees(self) -> bool:
        return self.split == 0 and self.joined == 0

    def as_json(self) -> dict:
        return {"figures_of": "the model's cut", "threshold": round(self.threshold, 4),
                "verdicts": self.verdicts, "export_splits": self.split,
                "export_joins": self.joined}

    def words(self) -> str:
        """One sentence for the command line, the window and the report."""
        head = (f"These figures are the model's own cut at {self.threshold:.2f}, before any "
                f"verdict.")
        if self.verdicts == 0:
            return head + " No pair has a verdict yet, so the export's clusters are that cut."
        if self.agrees:
            return (head + f" The export obeys the project's {_count(self.verdicts, 'verdict')}"
                    f" as well; none of them disagrees with the cut.")
        parts = []
        if self.split:
            parts.append(f"{_count(self.split, 'pair')} you called not duplicates "
                         f"{'is' if self.split == 1 else 'are'} apart there though the cut "
                         f"holds {'it' if self.split == 1 else 'them'} together")
        if self.joined:
            parts.append(f"{_count(self.joined, 'pair')} you called duplicates "
                         f"{'is' if self.joined == 1 else 'are'} together though the cut "
                         f"leaves {'it' if self.joined == 1 else 'them'} apart")
        return (head + f" The export also obeys the project's "
                f"{_count(self.verdicts, 'verdict')}: " + "; ".join(parts)
                + " (rows clustered with them can move too).")


def cut_scope(threshold: float, verdicts: Sequence[tuple[int, int, int]],
              ids: np.ndarray, labels: np.ndarray) -> CutScope:
    """Count the verdicts (text a, text b, 0 or 1) against the cut whose cluster number per
    graph position is `labels` (-1: in no cluster; `graph_population.cluster_labels`) over
    the graph's sorted text `ids`. A text outside the graph is in no cluster."""
    pairs = [(a, b, v) for a, b, v in verdicts if a != b]
    if not pairs:
        return CutScope(threshold, 0, 0, 0)
    arr = np.asarray(pairs, dtype=np.int64)
    together = _same_cluster(arr[:, 0], arr[:, 1], ids, labels)
    duplicate = arr[:, 2] == 1
    return CutScope(threshold, len(pairs), int((together & ~duplicate).sum()),
                    int((~together & duplicate).sum()))


def _same_cluster(a: np.ndarray, b: np.ndarray, ids: np.ndarray, labels: np.ndarray
                  ) -> np.ndarray:
    def label(t: np.ndarray) -> np.ndarray:
        pos = np.clip(np.searchsorted(ids, t), 0, max(len(ids) - 1, 0))
        found = (len(ids) > 0) & (ids[pos] == t) if len(ids) else np.zeros(len(t), bool)
        return np.where(found, labels[pos] if len(ids) else -1, -1)

    la, lb = label(a), label(b)
    return (la >= 0) & (la == lb)


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"
