"""The command line's progress bars: where the job says how long is left (an import of long
texts counts their windows), the bar shows that, not tqdm's texts-left over texts-per-second."""

from __future__ import annotations

from engine.progress import Progress
from engine.progress_bar import TqdmProgress


def test_the_jobs_time_left_replaces_tqdms_estimate(capsys):
    bars = TqdmProgress()
    bars(Progress("encoding", 0, 10))
    # 1 text of 10 done: tqdm alone would say 9 texts left at this text's rate; the job
    # knows the next nine are long and says 1,000 s.
    bars(Progress("encoding", 1, 10, rate=1.0, seconds_left=1000.0))
    bars.close()
    shown = capsys.readouterr().err
    assert "16:40 left" in shown
    assert "1/10 texts" in shown


def test_a_finished_stage_says_nothing_is_left(capsys):
    bars = TqdmProgress()
    bars(Progress("encoding", 3, 10, rate=1.0, seconds_left=70.0))
    bars(Progress("encoding", 10, 10, rate=1.0))
    bars.close()
    last = capsys.readouterr().err.replace("\r", "\n").strip().splitlines()[-1]
    assert "10/10 texts" in last and "left" not in last


def test_without_the_jobs_estimate_the_bar_is_tqdms(capsys):
    bars = TqdmProgress()
    bars(Progress("reading", 5, 10))
    bars.close()
    shown = capsys.readouterr().err
    assert "5/10" in shown and "rows" in shown and "left" not in shown


def test_bars_turned_off_by_tqdm_disable_take_the_jobs_estimate_quietly(monkeypatch, capsys):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    bars = TqdmProgress()
    bars(Progress("encoding", 1, 10, rate=1.0, seconds_left=1000.0))
    bars(Progress("encoding", 10, 10, rate=1.0))
    bars.close()
    assert "left" not in capsys.readouterr().err
