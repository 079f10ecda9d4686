"""A `ProgressCallback` that draws tqdm bars on stderr, one per stage, for the CLI."""

from __future__ import annotations

import sys

from tqdm import tqdm

from engine.progress import Progress

# A stage whose units differ in cost (texts of one window or of fifty) shows the job's own
# time left in place of tqdm's, which divides the texts left by the texts' rate.
_JOBS_TIME_LEFT = "{l_bar}{bar}| {n_fmt}/{total_fmt}{unit} [{elapsed}, {rate_fmt}{postfix}]"


class TqdmProgress:
    """Feed engine `Progress` snapshots into tqdm: the rate from tqdm, the time left from
    the job where it gives one (`Progress.seconds_left`: an import of long texts plans its
    windows, so a 1,000-word document counts as the ten windows it costs), else tqdm's."""

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
        if not bar.disable:      # (TQDM_DISABLE: a disabled bar has no format to set)
            self._time_left(bar, p)
        bar.update(p.done - bar.n)

    @staticmethod
    def _time_left(bar: tqdm, p: Progress) -> None:
        if p.seconds_left is not None and p.done < p.total:
            bar.bar_format = _JOBS_TIME_LEFT
            bar.set_postfix_str(f"{tqdm.format_interval(round(p.seconds_left))} left",
                                refresh=False)
        elif bar.bar_format == _JOBS_TIME_LEFT:
            bar.set_postfix_str("", refresh=False)        # finished: nothing is left

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
