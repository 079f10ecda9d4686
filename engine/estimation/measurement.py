"""`Measurement`: the quality estimate at one threshold and what it rests on, with the
sentences the command line and the window say about it (what halving the widest interval
takes, where most of the doubt about recall lies). Kept apart from the service that makes it
(`engine.services.measuring`) because the window and the report read it too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.estimation.cut_scope import CutScope
from engine.estimation.estimators import Estimate
from engine.estimation.judged_draws import FIGURE_INDEX

STOP_HALF_WIDTH = 0.03         # every ratio within ±3 points: enough verdicts


@dataclass(frozen=True)
class Measurement:
    """The estimate at one threshold and what it rests on."""

    estimate: Estimate | None      # None before the first verdict
    threshold: float
    verdicts: int
    pending: int                   # drawn, no verdict yet
    analysts: dict[str, int]       # verdicts by analyst ("earlier verdicts": reused)
    widest: str | None             # the ratio with the widest interval
    more_to_halve: int | None      # verdicts expected to halve it (None: very many)
    model: str
    started: float | None          # when the sample was drawn
    changed: bool = False          # the project changed since: a new sample is due
    curve: list[Estimate] = field(default_factory=list)
    scope: CutScope | None = None  # the cut the figures describe; the export's verdicts
    # With more_to_halve None: the widest interval's width left were every pair the design
    # can draw judged (above 1/2, verdicts alone cannot halve it).
    width_left: float | None = None

    @property
    def enough(self) -> bool:
        """Every ratio's interval is within ±3 points: more verdicts add little."""
        e = self.estimate
        return e is not None and e.ready and all(
            np.isfinite(e.quoted(n).half_width) and e.quoted(n).half_width <= STOP_HALF_WIDTH
            for n in FIGURE_INDEX)

    def halving_words(self) -> str:
        """What halving the widest interval takes, in words: a number of verdicts, or why
        no number of them would do it."""
        if self.more_to_halve is not None:
            return (f"the widest interval ({self.widest}) would take about "
                    f"{self.more_to_halve:,} more verdicts to halve")
        if self.width_left is not None and self.width_left > 0.5:
            return (f"the widest interval ({self.widest}) cannot be halved by verdicts alone: "
                    f"with every pair the sample can draw judged, about "
                    f"{self.width_left:.0%} of its width would be left, because outside "
                    f"the neighbour graph only a first sample of the pairs is scored and "
                    f"can be drawn")
        return (f"the widest interval ({self.widest}) would take more than a million more "
                f"verdicts to halve")

    def why_wide(self) -> str | None:
        """Where most of the doubt about recall lies, in words (None when there is little)."""
        e = self.estimate
        if e is None or self.enough:
            return None
        s = e.uncertain_stratum()
        if not s or s["missed_could_be"] < 1:
            return None
        label = s["stratum"]
        if label.startswith("outside the graph"):
            span = label.partition(", ")[2]
            where = "pairs the index never returned" + (f" (similarity {span})" if span else "")
        else:
            where = f"pairs of similarity {label}"
        return (f"Most of the doubt about recall is in the {s['pairs']:,} {where}: "
                f"{s['duplicates_found']} duplicate{'' if s['duplicates_found'] == 1 else 's'} "
                f"among the {s['answered']} drawn there so "
                f"far still allows up to {s['missed_could_be']:,} missed duplicates there.")

    def as_json(self) -> dict:
        return {"threshold": round(self.threshold, 4), "answers": self.verdicts,
                "pending": self.pending, "answerers": self.analysts, "model": self.model,
                "sample_started": self.started, "project_changed": self.changed,
                "widest": self.widest, "more_answers_to_halve_widest": self.more_to_halve,
                "widest_width_left_at_most_answers": self.width_left,
                "enough": self.enough,
                "estimate": self.estimate.as_json() if self.estimate else None,
                "curve": [c.as_json() for c in self.curve],
                "describes": self.scope.as_json() if self.scope else None}
