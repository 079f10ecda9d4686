"""`duplens finetune` and `duplens models` as a user runs them: real processes, real model."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.cli import OBJECTIVE_NAMES
from engine.project import Project
from engine.training import OBJECTIVES
from tests.engine.cli.test_cli import ROOT, run
from tests.engine.training.test_project_versions import served_name

pytestmark = pytest.mark.slow
DATA = ROOT / "tests" / "data"
QUICK = ("--max-steps", "2", "--batch-size", "4")


def make_project(path: Path, encoder, labels: list[tuple[str, str, int]] = ()) -> Path:
    """Import and encode in-process with the session's model (quicker than the CLI)."""
    with Project.open(path, create=True) as project:
        project.model.attach(encoder, is_default=True)
        project.rows.import_table(DATA / "questions.csv", ["question"], id_column="qid")
        project.vectors.encode()
        item = {r["id"]: r["item_id"] for r in project.rows.page(0, 100)}
        for a, b, label in labels:
            project.verdicts.set_verdict(item[a], item[b], label)
    return path


def model_rows(path: Path) -> list[tuple]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute("SELECT id, parent_id, objective FROM models ORDER BY id").fetchall()
    finally:
        con.close()


def test_objective_choices_are_the_engines():
    assert list(OBJECTIVE_NAMES) == list(OBJECTIVES)


def test_finetune_then_list_activate_export_and_search_after_moving(tmp_path, encoder):
    project = make_project(tmp_path / "q.duplens", encoder)
    proc = run("finetune", str(project), "--pairs", str(DATA / "labelled_pairs.csv"), *QUICK,
               "--json")
    report = json.loads(proc.stdout)
    assert report["version"]["id"] == 2 and report["version"]["location"] == "q.duplens.models/v2"
    assert report["objective"] == "contrastive" and report["parent_id"] == 1
    assert report["pairs"]["total"] == 40 and report["training"]["steps"] == 2
    for side in ("before", "after"):
        assert {"average_precision", "f1", "threshold"} <= set(report[side])
    change = report["ap_change"]   # the change in AP, its interval and what it shows
    assert change["pairs"] == report["pairs"]["held_out"]
    assert change["before"] == pytest.approx(report["before"]["average_precision"], abs=1e-3)
    assert change["after"] == pytest.approx(report["after"]["average_precision"], abs=1e-3)
    low, high = change["interval"]
    assert low <= change["change"] <= high and change["resamples"] == 2000
    assert change["conclusion"] == ("better" if low > 0 else "worse" if high < 0 else
                                    "no change" if change["change"] == 0 else
                                    "not enough pairs")
    assert (change["more_pairs"] is None) == (change["conclusion"] != "not enough pairs")
    assert report["activation"] is None
    assert "training" in proc.stderr  # the progress bar
    rows = model_rows(project)   # and the version's fast form, where this CPU has one
    assert rows[:2] == [(1, None, None), (2, 1, "contrastive")]
    assert rows[2:] == ([] if report["fast_form"] is None else [(3, None, None)])

    text = run("models", str(project)).stdout.splitlines()
    assert text[1].startswith("*   1") and text[2].startswith("    2")
    assert "contrastive" in text[2] and "0/46" in text[2]

    # Moved with its .models folder, the project still finds version 2.
    moved = tmp_path / "moved"
    moved.mkdir()
    shutil.move(project, moved / "q.duplens")
    shutil.move(tmp_path / "q.duplens.models", moved / "q.duplens.models")
    out = tmp_path / "exported"
    proc = run("models", str(moved / "q.duplens"), "--activate", "2", "--copy-out", "2", str(out),
               "--json")
    versions = {v["id"]: v for v in json.loads(proc.stdout)}
    assert versions[2]["active"] and not versions[1]["active"]
    assert versions[2]["encoded"] == 46 and versions[2]["indexed"]
    assert "version 2: active" in proc.stderr and "copied out to" in proc.stderr
    assert {"modules.json", "model.safetensors", "duplens_version.json"} <= {
        p.name for p in out.iterdir()}

    hits = json.loads(run("search", str(moved / "q.duplens"), "capital of australia", "-k",
                          "2", "--json").stdout)
    assert {h["id"] for h in hits} == {"q6", "q7"}
    info = json.loads(run("info", str(moved / "q.duplens"), "--json").stdout)
    assert info["model"] == served_name("all-MiniLM-L6-v2 v2") and info["index_items"] == 46


def test_the_summary_claims_only_what_the_held_out_pairs_show(tmp_path, encoder):
    """20 held-out pairs, a third of them labelled wrong, after 3 steps: AP moves a little,
    and the printed summary names the change and its interval and asks for more pairs
    rather than calling the new model better or worse."""
    project = make_project(tmp_path / "q.duplens", encoder)
    header, *rows = (DATA / "labelled_pairs.csv").read_text(encoding="utf-8").splitlines()
    noisy = tmp_path / "noisy.csv"
    noisy.write_text("\n".join([header, *(
        row if i % 3 else f"{row[:-1]}{1 - int(row[-1])}" for i, row in enumerate(rows))])
        + "\n", encoding="utf-8")
    lines = run("finetune", str(project), "--pairs", str(noisy), "--max-steps", "3",
                "--batch-size", "4", "--learning-rate", "1e-4").stdout.splitlines()
    record = json.loads((tmp_path / "q.duplens.models" / "v2" / "duplens_version.json")
                        .read_text(encoding="utf-8"))
    change = record["metrics"]["ap_change"]
    low, high = change["interval"]
    assert change["pairs"] == 20 and change["change"] != 0 and low <= 0 <= high
    assert change["conclusion"] == "not enough pairs" and change["more_pairs"] >= 10
    summary = next(line for line in lines if "average precision" in line)
    assert summary == (f"Not enough labelled pairs to tell whether the new model ranks better "
                       f"or worse (20 held out); label about {change['more_pairs']:,} more: "
                       f"average precision {change['before']:.2f} → {change['after']:.2f} "
                       f"({change['change']:+.2f} points, 95% interval {low:+.2f} to "
                       f"{high:+.2f})")
    assert "ranks the held-out pairs better" not in "\n".join(lines)


def test_too_few_pairs_is_exit_2_with_the_advice(tmp_path, encoder):
    project = make_project(tmp_path / "few.duplens", encoder,
                           [("q1", "q2", 1), ("q6", "q7", 1), ("q1", "q6", 0)])
    before = model_rows(project)
    proc = run("finetune", str(project), *QUICK, check_code=2)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Only 3 labelled pairs" in lines[0], proc.stderr
    assert model_rows(project) == before
    assert not (tmp_path / "few.duplens.models").exists()
    proc = run("models", str(project), "--activate", "7", check_code=2)
    assert "no model version 7" in proc.stderr


def test_ctrl_c_during_finetune_saves_nothing(tmp_path, encoder):
    project = make_project(tmp_path / "stop.duplens", encoder)
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "finetune", str(project), "--pairs",
         str(DATA / "labelled_pairs.csv"), "--max-steps", "500", "--batch-size", "4"],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    models = tmp_path / "stop.duplens.models"
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None and not (
            models.is_dir() and any(models.iterdir())):  # training has begun
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "nothing was saved" in err and "Traceback" not in err
    assert model_rows(project) == [(1, None, None)]
    assert not models.exists()


def test_training_options_reach_the_version_and_bad_ones_are_exit_2(tmp_path, encoder):
    for bad, message in ((("--margin", "3"), "margin must be in (0, 2]"),
                         (("--validation", "1"), "must be at least 0 and below 1"),
                         (("--hard-negatives", "-1"), "must be 0 or more")):
        proc = run("finetune", str(tmp_path / "none.duplens"), *bad, check_code=2)
        assert message in proc.stderr and "Traceback" not in proc.stderr
    project = make_project(tmp_path / "options.duplens", encoder)
    proc = run("finetune", str(project), "--pairs", str(DATA / "labelled_pairs.csv"), *QUICK,
               "--loss", "contrastive", "--learning-rate", "5e-5", "--warmup", "0",
               "--margin", "0.4", "--hard-negatives", "1", "--json")
    report = json.loads(proc.stdout)
    assert {k: report["options"][k] for k in ("learning_rate", "warmup_ratio", "margin",
                                              "hard_negatives", "max_steps", "batch_size")} == {
        "learning_rate": 5e-5, "warmup_ratio": 0.0, "margin": 0.4, "hard_negatives": 1,
        "max_steps": 2, "batch_size": 4}
    assert any("mined pairs were added" in note for note in report["notes"])
    assert "mining negatives" in proc.stderr  # its own progress bar
