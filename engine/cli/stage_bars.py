"""`StageBars`: tqdm bars for jobs that run in stages (fine-tuning, activation)."""

from __future__ import annotations

import sys


class StageBars:
    """tqdm bars for fine-tuning and activation, one stage after another.

    Unlike `TqdmProgress`, a stage's bar is closed when the next stage starts, so a run of
    five stages reads as five finished lines; training counts steps and shows the loss.
    """

    _UNITS = {"training": " steps", "loading model": " models", "saving": " models",
              "converting": " steps", "training second opinion": " steps",
              "measuring second opinion": " pairs", "labelling silver": " pairs"}

    def __init__(self) -> None:
        self._stage: str | None = None
        self._bar = None

    def __call__(self, p) -> None:
        from tqdm import tqdm

        if p.stage != self._stage:
            self.close()
            self._stage = p.stage
            self._bar = tqdm(total=p.total or None, desc=p.stage,
                             unit=self._UNITS.get(p.stage, " texts"), file=sys.stderr,
                             dynamic_ncols=True, mininterval=0.25)
        if p.total and self._bar.total != p.total:
            self._bar.total = p.total
        if p.message:
            self._bar.set_postfix_str(p.message, refresh=False)
        self._bar.update(p.done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        self._bar, self._stage = None, None
