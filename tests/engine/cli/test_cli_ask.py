"""`duplens ask` and `duplens label` as a user runs them: real processes, the real model."""

from __future__ import annotations

import csv
import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from engine.review.calibration import DEFAULT_THRESHOLD, format_threshold
from tests.engine.cli.test_cli import ROOT, run

DATA = ROOT / "tests" / "data" / "questions.csv"

# Paraphrase pairs of tests/data/questions.csv, and pairs of unrelated questions.
DUPLICATES = [("q1", "q2"), ("q1", "q3"), ("q4", "q5"), ("q6", "q7"), ("q8", "q9"),
              ("q10", "q11"), ("q12", "q13"), ("q14", "q15"), ("q16", "q17"), ("q18", "q19"),
              ("q22", "q23")]
NOT_DUPLICATES = [("q1", "q50"), ("q4", "q40"), ("q6", "q34"), ("q8", "q45"),
                  ("q10", "q27"), ("q12", "q48"), ("q14", "q31"), ("q16", "q25"),
                  ("q18", "q20"), ("q22", "q29"), ("q24", "q36")]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("ask") / "questions.duplens"
    run("import", str(path), str(DATA), "--column", "question", "--id-column", "qid")
    return path


def _questions() -> dict[str, str]:
    with DATA.open(encoding="utf-8", newline="") as fh:
        return {r["qid"]: r["question"] for r in csv.DictReader(fh)}


def _ask(project: Path, n: int = 20) -> list[dict]:
    return json.loads(run("ask", str(project), "-n", str(n), "--json").stdout)


def _verdicts(project: Path) -> dict[frozenset, tuple[int, str]]:
    con = sqlite3.connect(f"file:{project}?mode=ro", uri=True)
    rows = con.execute("SELECT a.ext_id, b.ext_id, l.label, l.origin FROM pair_labels l "
                       "JOIN items a ON a.id = l.item_a JOIN items b ON b.id = l.item_b"
                       ).fetchall()
    con.close()
    return {frozenset((a, b)): (label, origin) for a, b, label, origin in rows}


def test_ask_json_shape_public_ids_and_spread(project):
    questions = _questions()
    pairs = _ask(project)
    assert len(pairs) == 20
    for p in pairs:
        assert set(p) == {"a", "b", "score"}
        assert set(p["a"]) == set(p["b"]) == {"id", "text"}
        assert p["a"]["id"] != p["b"]["id"]
        assert questions[p["a"]["id"]] == p["a"]["text"]    # the ids of the user's file
        assert questions[p["b"]["id"]] == p["b"]["text"]
        assert -1.0 <= p["score"] <= 1.0
    assert len({frozenset((p["a"]["id"], p["b"]["id"])) for p in pairs}) == 20
    uses = Counter(x for p in pairs for x in (p["a"]["id"], p["b"]["id"]))
    assert max(uses.values()) <= 2
    # No verdicts yet: the pairs sit around the model's default threshold, nearest first.
    default = project_default(project)
    distance = [abs(p["score"] - default) for p in pairs]
    assert min(distance) == distance[0] and distance[0] < 0.05


def test_label_stores_clears_and_judged_pairs_are_never_asked_again(project):
    first = _ask(project, 5)
    (a1, b1), (a2, b2) = [(p["a"]["id"], p["b"]["id"]) for p in first[:2]]
    proc = run("label", str(project), a1, b1, "dup")
    assert f"[{a1}] and [{b1}]: verdict dup stored" in proc.stderr
    run("label", str(project), b2, a2, "not")          # either order names the pair
    assert _verdicts(project) == {frozenset((a1, b1)): (1, "asked"),
                                  frozenset((a2, b2)): (0, "asked")}
    again = {frozenset((p["a"]["id"], p["b"]["id"])) for p in _ask(project, 40)}
    assert frozenset((a1, b1)) not in again and frozenset((a2, b2)) not in again
    assert len(again) == 40

    run("label", str(project), a2, b2, "clear")
    assert _verdicts(project) == {frozenset((a1, b1)): (1, "asked")}
    # A pair the model never offered is the analyst's own verdict, not an asked one.
    never = next((x, y) for x in _questions() for y in _questions()
                 if x < y and frozenset((x, y)) not in again | {frozenset((a1, b1))})
    run("label", str(project), *never, "not")
    assert _verdicts(project)[frozenset(never)] == (0, "review")


@pytest.mark.parametrize(("ids", "message"), [
    (("q1", "nope"), "no row has the id 'nope'"),
    (("q1", "q1"), "a pair needs two different rows"),
])
def test_label_bad_ids_are_one_line_exit_2(project, ids, message):
    before = _verdicts(project)
    proc = run("label", str(project), *ids, "dup", check_code=2)
    assert proc.stderr.strip() == f"duplens: {message}"
    assert _verdicts(project) == before


def test_duplicates_cut_at_the_calibrated_threshold_once_there_are_enough_verdicts(tmp_path):
    from engine.project import Project

    path = tmp_path / "labelled.duplens"
    run("import", str(path), str(DATA), "--column", "question", "--id-column", "qid")
    plain = run("duplicates", str(path), "--json")
    assert "(the model's default" in plain.stderr and "(calibrated on" not in plain.stderr
    with Project.open(path) as project:
        for pairs, label in ((DUPLICATES, 1), (NOT_DUPLICATES, 0)):
            for a, b in pairs:
                project.verdicts.set_verdict(project.rows.by_public_id(a)["item_id"],
                                             project.rows.by_public_id(b)["item_id"], label)
        calibrated = project.threshold.current().value
        model_default = project.threshold.model_default().value
        expected = [c.as_json() for c in project.clusters.cut(calibrated)]
    assert calibrated != model_default
    proc = run("duplicates", str(path), "--json")
    verdicts = len(DUPLICATES) + len(NOT_DUPLICATES)
    assert (f"threshold {format_threshold(calibrated)} (calibrated on {verdicts} verdicts"
            in proc.stderr)
    clusters = json.loads(proc.stdout)
    assert clusters == json.loads(json.dumps(expected)) and clusters
    assert json.loads(plain.stdout) != clusters     # the model's default cuts differently


def test_one_project_threshold_for_duplicates_ask_and_match_said_where_used(project):
    """Before, `duplicates` cut at 0.85 while `ask` and `match` used 0.8, and nothing said
    which: now the one project threshold (the model's default here: no verdicts) is used
    and named, and one set by hand (`duplens threshold`) is used by every command."""
    from engine.project import Project

    default = project_default(project)
    assert default != DEFAULT_THRESHOLD      # the bundled model's own, chosen on data
    with Project.open(project) as opened:
        expected = [c.as_json() for c in opened.clusters.cut(default)]
    proc = run("duplicates", str(project), "--json")
    assert json.loads(proc.stdout) == json.loads(json.dumps(expected))
    shown = format_threshold(default)
    assert f"threshold {shown} (the model's default, best F1 on" in proc.stderr
    asked = run("ask", str(project), "-n", "2")
    assert f"near the threshold {shown} (the model's default" in asked.stderr
    for command in ("duplicates", "match", "estimate"):
        helped = " ".join(run(command, "--help").stdout.split())
        assert "set by hand with 'duplens threshold'" in helped and "0.85" not in helped

    said = run("threshold", str(project), "0.7")
    assert "project threshold 0.70 (set by hand)" in said.stderr
    assert f"the model's default: {default:.2f}" in said.stderr
    proc = run("duplicates", str(project), "--json")
    assert "threshold 0.70 (set by hand)" in proc.stderr
    with Project.open(project) as opened:
        assert json.loads(proc.stdout) == json.loads(json.dumps(
            [c.as_json() for c in opened.clusters.cut(0.7)]))
    assert "near the threshold 0.70 (set by hand)" in run("ask", str(project)).stderr
    refused = run("threshold", str(project), "1.5", check_code=2)
    assert refused.returncode == 2 and "between 0 and 1" in refused.stderr
    cleared = json.loads(run("threshold", str(project), "--clear", "--json").stdout)
    assert cleared["source"] == "model default" and cleared["value"] == default
    # the model's default is shown with the model, and what it was chosen on
    listed = run("models", str(project))
    assert f"default threshold {shown} (best F1 on" in listed.stdout
    versions = json.loads(run("models", str(project), "--json").stdout)
    assert versions[0]["threshold"]["value"] == default and versions[0]["threshold"]["recorded"]


def project_default(path) -> float:
    """The project's threshold as the engine reads it (the model's default here)."""
    from engine.project import Project

    with Project.open(path) as opened:
        return opened.threshold.current().value


def test_search_says_why_each_hit_matches(project):
    proc = run("search", str(project), "Which city is the capital of Austria?", "-k", "2",
               "--json")
    top = json.loads(proc.stdout)[0]
    assert top["id"] == "q7"                      # "Which city is the capital of Australia?"
    assert top["overlap"] == 0.75                 # 6 of the 8 distinct words shared
    assert top["differing"] == ["austria", "australia"]


@pytest.mark.slow
def test_ask_by_disagreement_puts_the_judges_disagreements_first(tmp_path):
    """`duplens ask --by-disagreement`: with an offered judge the pairs come with the judge's
    chance of a duplicate (exactly what the judge says of those texts), those it and the
    model disagree on first; without one, exit 2 and one line (a judge kept but not offered
is the window's test's, tests/desktop_app/test_second_opinion_review.py)."""
    from engine.project import Project
    from engine.review.disagreement import disagrees
    from tests.judges import keep_judge, make_judge_folder

    path = tmp_path / "questions.duplens"
    run("import", str(path), str(DATA), "--column", "question", "--id-column", "qid")
    refused = run("ask", str(path), "--by-disagreement", check_code=2)
    lines = refused.stderr.strip().splitlines()    # said before any graph is built
    assert len(lines) == 1 and "no second opinion that read its held-out" in lines[0]
    assert "Traceback" not in refused.stderr

    keep_judge(path, make_judge_folder(tmp_path / "judge"), offered=True)
    pairs = json.loads(run("ask", str(path), "-n", "8", "--by-disagreement",
                           "--json").stdout)
    assert len(pairs) == 8 and all(0.0 <= p["second_opinion"] <= 1.0 for p in pairs)
    with Project.open(path) as project:
        said = project.versions.second_opinion_scores(
            [(p["a"]["text"], p["b"]["text"]) for p in pairs])
        threshold = project.threshold.current().value
    assert [p["second_opinion"] for p in pairs] == pytest.approx(said, abs=1e-4)
    split = [disagrees(p["score"], threshold, p["second_opinion"]) for p in pairs]
    assert split == sorted(split, reverse=True)   # every disagreement before any agreement
    text = run("ask", str(path), "-n", "3", "--by-disagreement")
    assert "where the model and its second opinion disagree first" in text.stderr
    assert all(" judge " in line for line in text.stdout.splitlines())
