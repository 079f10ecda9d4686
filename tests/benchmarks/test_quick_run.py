"""A quick run of the benchmark suite is a smoke run: its figures go to
benchmarks/results/quick/, never over a recorded result, and every process it starts knows it
is one (benchmarks/run.py, benchmarks/corpus.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import run
from benchmarks.corpus import QUICK_ENV
from benchmarks.registry import Benchmark

ROOT = Path(__file__).resolve().parents[2]
PROBE = Benchmark("probe", "A probe", runner=f"{__name__}:measure_probe")


def measure_probe(quick: bool) -> dict:
    """What a benchmark's `run(quick)` returns: here, what it was asked."""
    return {"asked_quick": quick}


@pytest.fixture
def folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    results = tmp_path / "results"
    monkeypatch.setattr(run, "RESULTS", results)
    monkeypatch.setattr(run, "QUICK_RESULTS", results / "quick")
    return results, results / "quick"


def test_a_quick_run_writes_apart_and_leaves_the_recorded_result(folders) -> None:
    results, quick = folders
    assert run.run_one(PROBE, False, "python -m benchmarks --only probe") == 0
    recorded = (results / "probe.json").read_text(encoding="utf-8")

    assert run.run_one(PROBE, True, "python -m benchmarks --quick") == 0

    assert (results / "probe.json").read_text(encoding="utf-8") == recorded
    smoke = json.loads((quick / "probe.json").read_text(encoding="utf-8"))
    assert smoke["mode"] == "quick" and smoke["result"] == {"asked_quick": True}
    assert json.loads(recorded)["result"] == {"asked_quick": False}


def test_the_suite_marks_a_quick_runs_children_and_renders_no_page(
        monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[dict] = []

    def child(args: list[str], check: bool, env: dict | None) -> subprocess.CompletedProcess:
        started.append({"args": args, "env": env})
        return subprocess.CompletedProcess(args, 0)

    rendered: list[list[str]] = []
    monkeypatch.setattr(run.subprocess, "run", child)
    monkeypatch.setattr("benchmarks.report.main", rendered.append)

    assert run.main(["--quick", "--only", "quality"]) == 0
    assert started[0]["env"][QUICK_ENV] == "1" and "--quick" in started[0]["args"]
    assert rendered == []           # a smoke run's figures are not the page's

    assert run.main(["--only", "quality"]) == 0
    assert started[1]["env"] is None or QUICK_ENV not in started[1]["env"]
    assert rendered == [[]]


@pytest.mark.parametrize("quick", [True, False])
def test_a_quick_runs_corpus_is_cached_apart(quick: bool) -> None:
    env = {k: v for k, v in os.environ.items() if k != QUICK_ENV}
    if quick:
        env[QUICK_ENV] = "1"
    out = subprocess.run(
        [sys.executable, "-c", "from pathlib import Path; from benchmarks import corpus; "
         "print(corpus.quick_run(), corpus.CACHE.relative_to(Path(corpus.__file__).parent))"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out == (["True", "results/tmp/quick"] if quick else ["False", "results/tmp"])


def test_a_commands_child_keeps_the_python_path_the_run_was_given(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A run kept to AVX2 puts its capped OpenVINO on PYTHONPATH; a `duplens` child the
    benchmark starts must still find it, after the repository."""
    from benchmarks.console import ROOT as REPO
    from benchmarks.console import python_path

    monkeypatch.setenv("PYTHONPATH", "/capped/copies")
    assert python_path().split(os.pathsep) == [str(REPO), "/capped/copies"]
    monkeypatch.delenv("PYTHONPATH")
    assert python_path() == str(REPO)
