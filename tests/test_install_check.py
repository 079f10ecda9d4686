"""`duplens selfcheck`: the check the installers' CI runs on the frozen app, run here on the
source tree, so a broken check is caught before a release build trips over it."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.install_check import PAIRS, SAMPLE, SelfCheckFailed, main, run_engine_checks

ROOT = Path(__file__).resolve().parent.parent


def test_engine_steps_import_search_and_export(tmp_path, encoder):
    lines: list[str] = []
    report, used, project = run_engine_checks(tmp_path, lines.append, encoder=encoder)
    assert used is encoder and project.is_file()
    steps = [name for name, _ in report.timings]
    assert steps == ["import torch", "fast single queries",
                     f"import and encode {len(SAMPLE)} rows", "search",
                     "duplicate clusters", "export clusters"]
    assert "queries   onnxruntime" in lines
    assert report.facts["frozen"] == "no"
    exported = (tmp_path / "clusters.csv").read_text("utf-8-sig")
    for pair in PAIRS:
        assert all(row_id in exported for row_id in pair)


def test_queries_falling_back_to_torch_fail_the_check(tmp_path, encoder, monkeypatch):
    """A bundle missing onnxruntime still searches, at twice the time per keystroke: the
    check says so instead of passing."""
    from engine.encoding.encoder import SentenceEncoder

    monkeypatch.delenv("DUPLENS_FAST_QUERIES", raising=False)
    monkeypatch.setattr("engine.encoding.backends.missing_modules", lambda b: ["onnxruntime"])
    fresh = SentenceEncoder(encoder.model, encoder.spec, "cpu")
    lines: list[str] = []
    assert main(say=lines.append, encoder=fresh) == 1
    assert "queries   torch (onnxruntime is not installed)" in lines
    assert lines[-1] == "FAILED: single queries fell back to torch: onnxruntime is not installed"


def test_a_failed_step_makes_the_exit_status_1(encoder):
    lines: list[str] = []

    def window_that_fails(*_args) -> None:
        raise SelfCheckFailed("the window did not show")

    assert main(window_check=window_that_fails, say=lines.append, encoder=encoder) == 1
    assert lines[-1] == "FAILED: the window did not show"


def test_the_window_step_shows_opens_searches_and_closes(qapp, encoder):
    from desktop_app.window_check import check_window

    lines: list[str] = []
    assert gc.isenabled()
    assert main(window_check=check_window, say=lines.append, encoder=encoder) == 0
    assert gc.isenabled()        # collected on the GUI thread meanwhile, then put back
    text = "\n".join(lines)
    for step in ("show the window", "About box", "open the project in the window",
                 "search in the window", "close the window"):
        assert f"ok   {step}" in text
    assert lines[-1].startswith("selfcheck passed")


@pytest.mark.slow
def test_duplens_selfcheck_command_runs_every_step():
    """The console script as CI runs it: its own model load, the window offscreen."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-m", "desktop_app.launcher", "selfcheck"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok   load model on cpu" in proc.stdout
    assert "queries   onnxruntime" in proc.stdout
    assert "ok   close the window" in proc.stdout
    assert "selfcheck passed" in proc.stdout
