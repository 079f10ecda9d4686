"""The 100,000-document import in sittings: a sitting stops its command with one Ctrl-C,
adds up only on the first sitting's ground, counts the windows the project stored, and a
sitting that finishes the import checks its windows and times `duplens duplicates`."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks import document_scale_resumed as dsr
from benchmarks.child_peak import run_python
from benchmarks.documents import stored_pieces

# Stops on its first Ctrl-C as the command line does (`engine.cli.dispatch`): says so, and
# exits 130.
_STOPPABLE = ("import signal, sys, time\n"
              "def stop(*_):\n"
              "    print('stopping', flush=True)\n"
              "    sys.exit(130)\n"
              "signal.signal(signal.SIGINT, stop)\n"
              "print('ready', flush=True)\n"
              "time.sleep(120)\n")


def test_a_child_past_its_time_gets_one_ctrl_c_and_stops_as_it_chooses() -> None:
    done = run_python(["-c", _STOPPABLE], stop_after=2.0)
    assert done.interrupted and done.returncode == 130
    assert done.stdout.split() == ["ready", "stopping"]
    assert 2.0 <= done.seconds < 60
    assert done.peak_rss_mib > 0


def test_a_child_done_in_time_is_not_interrupted() -> None:
    done = run_python(["-c", "print('done')"], stop_after=60.0)
    assert not done.interrupted and done.returncode == 0 and done.stdout.strip() == "done"


def _ground() -> dict:
    return {"cpu": {"model_name": "AMD EPYC", "family": "25", "model": "17", "stepping": "1",
                    "cores": 2, "flags": ["avx2", "avx512_bf16"], "caps": {}},
            "engine_tree": "a" * 40, "engine_changed": [],
            "versions": {"torch": "2.13.0", "openvino": "2025.1"}}


def test_the_same_ground_has_no_differences_and_each_change_is_named() -> None:
    first = _ground()
    assert dsr.differences(first, copy.deepcopy(first)) == []
    now = copy.deepcopy(first)
    now["cpu"]["model"] = "97"
    now["cpu"]["caps"] = {"ONEDNN_MAX_CPU_ISA": "AVX2"}
    now["engine_tree"] = "b" * 40
    now["versions"]["torch"] = "2.14.0"
    said = dsr.differences(first, now)
    assert len(said) == 4
    assert any("model '97', not '17'" in s for s in said)
    assert any("caps" in s for s in said)
    assert any("engine files bbbbbbbbbbbb" in s for s in said)
    assert any("torch 2.14.0, not 2.13.0" in s for s in said)


def test_this_machine_is_on_its_own_ground() -> None:
    assert dsr.differences(dsr.ground(), dsr.ground()) == []


def test_a_sitting_on_other_ground_refuses_in_one_line_and_changes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    state = {"ground": dsr.ground(), "sittings": [], "finished": False, "slices_taken": 0}
    state["ground"]["cpu"]["model"] = "not this one"
    dsr.save_state(tmp_path, state)
    before = (tmp_path / dsr.STATE).read_bytes()
    with pytest.raises(SystemExit) as stopped:
        dsr.sitting(tmp_path, dsr.load_state(tmp_path), 10, None)
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not on the first sitting's ground" in err
    assert (tmp_path / dsr.STATE).read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [dsr.STATE]


@pytest.mark.parametrize("budget", ["0", "-5", "soon"])
def test_a_budget_that_is_not_seconds_is_refused(
        budget: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv(dsr.BUDGET_ENV, budget)
    with pytest.raises(SystemExit) as stopped:
        dsr.budget_seconds()
    assert stopped.value.code == 2 and dsr.BUDGET_ENV in capsys.readouterr().err


def test_no_budget_runs_to_the_end(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(dsr.BUDGET_ENV, raising=False)
    assert dsr.budget_seconds() is None
    monkeypatch.setenv(dsr.BUDGET_ENV, "4800")
    assert dsr.budget_seconds() == 4800.0


def _paragraphs() -> list[str]:
    """Paragraphs of random words: documents of several windows, none alike."""
    rng = np.random.default_rng(5)
    vocabulary = ["river", "stone", "apple", "engine", "quiet", "north", "table", "signal",
                  "garden", "copper", "window", "letter", "basket", "silver", "market",
                  "winter", "orange", "planet", "candle", "harbour", "meadow", "pencil"]
    return [" ".join(rng.choice(vocabulary, size=int(n))) + "."
            for n in rng.integers(40, 120, size=60)]


def test_the_windows_counted_so_far_are_those_the_project_stored(
        new_project, encoder, tmp_path: Path) -> None:
    table, _ = dsr.dsc._write_table(tmp_path / "documents.csv", _paragraphs(), 3)
    project = new_project()
    project.rows.import_table(table, ["text"], id_column="id")
    project.vectors.encode()
    path = project.path
    project.close()
    stored, texts, windowed = stored_pieces(str(path))
    assert texts == windowed == 3
    assert dsr.stored_so_far(path) == {"texts": 3, "windows": len(stored)}
    assert len(stored) == len(dsr.windows_of(encoder, table)) > 3


@pytest.mark.slow
def test_a_sitting_without_a_budget_finishes_the_import_and_checks_its_windows(
        encoder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dsr, "_ENCODER", encoder)  # the real model, loaded once
    state = dsr.set_up(tmp_path, _paragraphs(), 4, 12)
    assert state["windows"] == len(dsr.windows_of(encoder, tmp_path / dsr.TABLE))
    assert len(json.loads((tmp_path / dsr.SAMPLE_FILE).read_text())) == 12

    state = dsr.sitting(tmp_path, state, 5, None)

    assert state["finished"] and state["same_windows_as_stored"]
    assert state["texts"] == state["windowed_texts"] == 4
    (only,) = state["sittings"]
    assert only["command"] == "import" and only["exit"] == 0 and not only["interrupted"]
    assert only["encoded_after"] == {"texts": 4, "windows": state["windows"]}
    assert only["baseline_before"]["windows"] == only["baseline_after"]["windows"] == 5
    assert state["duplicates"]["seconds"] > 0 and state["project_bytes"] > 0
    assert dsr.load_state(tmp_path) == state
    shown = dsr.present(state)
    assert shown["headline"][0]["met"] is not None
    assert "under way" not in shown["headline"][0]["figure"]


def _sitting(seconds: float, windows: int, base: tuple[float, float]) -> dict:
    return {"started": "2026-12-02T08:00:00+0000", "command": "encode", "budget_s": 100.0,
            "seconds": seconds, "peak_rss_mib": 900, "exit": 130, "interrupted": True,
            "said": None, "encoded_after": {"texts": windows // 10, "windows": windows},
            "baseline_before": {"windows": 100, "seconds": base[0],
                                "windows_per_second": 100 / base[0]},
            "baseline_after": {"windows": 100, "seconds": base[1],
                               "windows_per_second": 100 / base[1]}}


def test_the_sittings_add_up_and_an_unfinished_import_claims_no_goal() -> None:
    state = {"documents": 1000, "windows": 10_000, "finished": False, "batch_size": 16,
             "seed": 0, "words_per_document": [800, 1200], "words": {"total": 10**6},
             "ground": _ground(), "engine": {"commit": "abc"},
             "sittings": [_sitting(100, 3000, (5, 5)), _sitting(150, 6000, (5, 5))]}
    t = dsr.totals(state)
    assert t["seconds"] == 250 and t["windows"] == 6000
    assert t["windows_per_second"] == pytest.approx(24.0)
    assert t["baseline_windows_per_second"] == pytest.approx(20.0)
    assert t["ratio"] == pytest.approx(1.2)
    shown = dsr.present(state)
    assert shown["headline"][0]["met"] is None and "under way" in shown["headline"][0]["figure"]
    assert [row[8] for row in shown["tables"][0]["rows"]] == ["30.0", "20.0"]
    assert any("Not finished" in n for n in shown["notes"])

