"""`duplens finetune --second-opinion N [--silver-band B]`: the flags reach the run, bad
values are exit 2 with one line, and the text output names the judge's AP and the silver
(or why there is none: a judge no better than the model labels none)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.errors import InputError
from engine.project import Project
from engine.services.versions import ModelVersions
from tests.engine.cli.test_cli import ROOT, run

DATA = ROOT / "tests" / "data"


@pytest.mark.parametrize(("bad", "message"), [
    (("--second-opinion", "-1"), "must be 0 or more"),
    (("--second-opinion", "two"), "invalid count value"),
    (("--silver-band", "0"), "must be above 0 and below 1"),
    (("--silver-band", "1"), "must be above 0 and below 1"),
    (("--silver-band", "-0.2"), "must be above 0 and below 1"),
])
def test_a_bad_value_is_exit_2_with_one_line(tmp_path, bad, message):
    proc = run("finetune", str(tmp_path / "none.duplens"), *bad, check_code=2)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "none.duplens").exists()


def test_the_flags_reach_the_run(tmp_path, monkeypatch):
    path = tmp_path / "empty.duplens"
    Project.open(path, create=True).close()
    seen = {}

    def finetune(self, objective=None, **kwargs):
        seen.update(kwargs)
        raise InputError("stopped by the test")

    monkeypatch.setattr(ModelVersions, "finetune", finetune)
    proc = run("finetune", str(path), "--second-opinion", "7", "--silver-band", "0.25",
               check_code=2)
    assert "stopped by the test" in proc.stderr
    assert seen["options"].second_opinion == 7 and seen["options"].silver_band == 0.25
    run("finetune", str(path), check_code=2)
    assert seen["options"].second_opinion == 0 and seen["options"].silver_band == 0.15


def make_project(path: Path, encoder) -> Path:
    with Project.open(path, create=True) as project:
        project.model.attach(encoder, is_default=True)
        project.rows.import_table(DATA / "questions.csv", ["question"], id_column="qid")
        project.vectors.encode()
    return path


@pytest.mark.slow
def test_finetune_with_a_second_opinion_prints_the_judges_ap_and_the_silver(tmp_path,
                                                                           encoder):
    project = make_project(tmp_path / "q.duplens", encoder)
    proc = run("finetune", str(project), "--pairs", str(DATA / "labelled_pairs.csv"),
               "--max-steps", "2", "--batch-size", "4", "--second-opinion", "12",
               "--silver-band", "0.3")
    record = json.loads((tmp_path / "q.duplens.models" / "v2" / "duplens_version.json")
                        .read_text(encoding="utf-8"))
    opinion = record["second_opinion"]
    assert record["options"]["second_opinion"] == 12 and record["options"]["silver_band"] == 0.3
    silver = opinion["silver"]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("second opinion:"))
    assert f"AP {opinion['judge']['average_precision']:.2f} on the held-out pairs" in line
    assert f"(the model before: {opinion['bi_encoder_average_precision']:.2f}, " in line
    versus = opinion["judge"]["versus_model"]
    assert f"{versus['change']:+.2f} points, 95% interval {versus['interval'][0]:+.2f} to " \
        f"{versus['interval'][1]:+.2f}" in line
    # Two steps may or may not make a judge better than the model: silver only if the
    # held-out pairs show it.
    if versus["conclusion"] == "better":
        assert 0 < silver["pairs"] <= 12 and silver["withheld"] is None
        assert f"{silver['pairs']} silver pairs trained on, {silver['duplicates']} of them" \
            in line
    else:
        assert silver["pairs"] == 0
        assert "do not show the judge better than the model" in silver["withheld"]
        assert "no silver pairs: the held-out pairs do not show the judge better" in line
    assert record["pairs"]["silver"] == silver["pairs"]
    assert "kept as version 3" in line and opinion["judge"]["kept"] is True
    assert (tmp_path / "q.duplens.models" / "v3" / "model.safetensors").is_file()
    assert "training second opinion" in proc.stderr and "labelling silver" in proc.stderr


def test_models_lists_copies_out_deletes_and_will_not_activate_a_judge(tmp_path):
    """`duplens models`: the judge a run kept is its version's second opinion (its AP beside
    the version's, in text and --json); it is copied out by its id, refused as the active
    model (exit 2, one line), and goes when its version is deleted."""
    from tests.engine.training.test_judge_versions import add_version

    path = tmp_path / "q.duplens"
    with Project.open(path, create=True) as project:
        add_version(project, judge_ap=91.25, version_ap=88.5)
    listed = json.loads(run("models", str(path), "--json").stdout)
    assert [v["id"] for v in listed] == [1]
    judge = listed[0]["second_opinion"]
    assert judge["id"] == 2 and judge["offered"] is True
    assert (judge["average_precision"], judge["version_average_precision"]) == (91.25, 88.5)

    text = run("models", str(path)).stdout.splitlines()
    line = next(x for x in text if "second opinion of v1" in x)
    assert line.split()[0] == "2" and "held-out AP 91.2 beside the version's 88.5" in line
    assert "(offered)" in line

    refused = run("models", str(path), "--activate", "2", check_code=2)
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "is the second opinion of version 1" in lines[0]
    assert "Traceback" not in refused.stderr

    run("models", str(path), "--copy-out", "2", str(tmp_path / "judge"))
    assert (tmp_path / "judge" / "model.safetensors").is_file()
    config = json.loads((tmp_path / "judge" / "config_sentence_transformers.json")
                        .read_text(encoding="utf-8"))
    assert config["model_type"] == "CrossEncoder"

    out = run("models", str(path), "--delete", "1", "--json")
    assert "deleted base v1" in out.stderr + out.stdout
    assert json.loads(out.stdout[out.stdout.index("["):]) == []
    assert list((tmp_path / "q.duplens.models").iterdir()) == []
