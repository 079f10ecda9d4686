"""A `ProgressCallback` that draws tqdm bars on stderr, one per stage, for the CLI."""

from __future__ import annotations

import sys

from tqdm import tqdm

from engine.progress import Progress


class TqdmProgress:
    """Feed engine `Progress` snapshots into tqdm: rate and ETA come from tqdm itself."""

    def __init__(self, enabled: bool = True) -> None:
        self._enabled = enabled
        self._bars: dict[str, tqdm] = {}

    def __call__(self, p: Progress) -> None:
        if not self._enabled:
            return
        bar = self._bars.get(p.stage)
        if bar is None:
            unit = " rows" if p.stage == "reading" else " texts"
            bar = tqdm(total=p.total or None, desc=p.stage, unit=unit, file=sys.stderr,
                       dynamic_ncols=True, mininterval=0.25)
            self._bars[p.stage] = bar
        if p.total and bar.total != p.total:
            bar.total = p.total
        bar.update(p.done - bar.n)

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()
        self._bars.clear()


def close_open_bars() -> None:
    """Close every tqdm bar still open in this process, so what is printed next starts a line.

    A command that fails mid-stage leaves its bar drawn without a newline (tqdm ends the line
    only on close), and the one-line error would land after the bar's text. tqdm keeps its
    live bars in `tqdm._instances`; closing them draws each bar's last state and ends its line.
    """
    for bar in list(getattr(tqdm, "_instances", ())):
        bar.close()
