"""`duplens estimate` and `duplens label --from` as analysts run them: the loop of drawn
pairs and answers files, a bad file refused whole, and two analysts of a team project adding
to one sample (real processes, the real model)."""

from __future__ import annotations

import csv
import getpass
import json
import sqlite3
from pathlib import Path

import pytest

from tests.engine.cli.test_cli import ROOT, run

DATA = ROOT / "tests" / "data" / "questions.csv"
GROUPS = [{"q1", "q2", "q3", "q41", "q42"}, {"q4", "q5"}, {"q6", "q7"}, {"q8", "q9"},
          {"q10", "q11"}, {"q12", "q13"}, {"q14", "q15"}, {"q16", "q17"}, {"q18", "q19"},
          {"q20", "q21"}, {"q22", "q23"}, {"q24", "q25"}, {"q26", "q27"}, {"q28", "q29"},
          {"q30", "q31"}, {"q47", "q48"}]
GROUP_OF = {q: i for i, group in enumerate(GROUPS) for q in group}


# A project draws with a seed of its own, made at its first sample (`quality_samples.project_seed`);
# here it is fixed, so the 20-answer interval below is the same on every run. A 95% interval misses
# now and then by design (seed 2026's two pilot draws below 0.80 hit the one duplicate among those
# 257 pairs, and its interval for the duplicates, 22 to 461, missed the true 18); how often
# intervals hold the truth is what benchmarks/estimate.py measures, over 500 repetitions. This test
# is the loop's plumbing, on a seed whose interval holds.
SAMPLING_SEED = "7"


@pytest.fixture
def project(tmp_path) -> Path:
    path = tmp_path / "questions.duplens"
    run("import", str(path), str(DATA), "--column", "question", "--id-column", "qid")
    con = sqlite3.connect(path)
    with con:
        con.execute("INSERT INTO meta (key, value) VALUES ('quality_seed', ?)",
                    (SAMPLING_SEED,))
    con.close()
    return path


def _next(location: str, n: int) -> list[dict]:
    return json.loads(run("estimate", location, "--next", str(n), "--json").stdout)


def _verdicts_file(path: Path, pairs: list[dict]) -> Path:
    """A verdicts file from the oracle's verdicts (the Quora-style groups above)."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["a_id", "b_id", "verdict"])
        for p in pairs:
            a, b = GROUP_OF.get(p["a"]["id"]), GROUP_OF.get(p["b"]["id"])
            writer.writerow([p["a"]["id"], p["b"]["id"],
                             "dup" if a is not None and a == b else "not"])
    return path


def _stored(path: Path) -> tuple[int, int]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    labels = con.execute("SELECT count(*) FROM pair_labels").fetchone()[0]
    answered = con.execute("SELECT count(*) FROM quality_draws WHERE verdict IS NOT NULL"
                           ).fetchone()[0]
    con.close()
    return labels, answered


@pytest.mark.slow
def test_the_loop_of_drawn_pairs_and_verdict_files(project, tmp_path):
    questions = {r["qid"]: r["question"] for r in csv.DictReader(DATA.open(encoding="utf-8"))}
    pairs = _next(str(project), 12)
    assert len(pairs) == 12
    assert len({frozenset((p["a"]["id"], p["b"]["id"])) for p in pairs}) == 12
    for p in pairs:
        assert set(p) == {"a", "b", "score", "stratum"}
        assert p["a"]["text"] == questions[p["a"]["id"]].strip() or p["a"]["id"] == "q42"
        assert p["b"]["text"] == questions[p["b"]["id"]].strip() or p["b"]["id"] == "q42"
    assert any(p["stratum"].startswith("outside the graph") for p in pairs)  # the pilot
    assert _next(str(project), 12) == pairs        # unanswered: the same pairs again
    proc = run("label", str(project), "--from", str(_verdicts_file(tmp_path / "a.csv", pairs)))
    assert "12 verdicts stored (12 of them on drawn pairs)" in proc.stderr
    second = _next(str(project), 8)
    assert not {frozenset((p["a"]["id"], p["b"]["id"])) for p in second} & \
        {frozenset((p["a"]["id"], p["b"]["id"])) for p in pairs}
    run("label", str(project), "--from", str(_verdicts_file(tmp_path / "b.csv", second)))
    report = json.loads(run("estimate", str(project), "--json").stdout)
    assert report["answers"] == 20 and report["pending"] == 0
    assert report["answerers"] == {getpass.getuser(): 20}
    e = report["estimate"]
    for name in ("precision", "recall", "f1"):
        assert 0 <= e[name]["low"] <= e[name]["value"] <= e[name]["high"] <= 1
    assert e["duplicates"]["low"] <= 18 <= e["duplicates"]["high"]
    # Beside the old keys: recall and duplicates down to the floor, and what lies below.
    floor = e["recall_down_to"]["floor"]
    assert floor == e["below_floor"]["floor"] == e["duplicates_down_to"]["floor"] == 0.5
    r = e["recall_down_to"]
    assert 0 <= r["low"] <= r["value"] <= r["high"] <= 1
    assert e["duplicates_down_to"]["high"] <= e["duplicates"]["high"]
    below = e["below_floor"]
    assert below["pairs"] > 0 and 0 < below["answered"] < 20
    assert below["at_most"] >= below["estimate"] >= below["duplicates_found"]
    text = run("estimate", str(project), "--threshold", "0.8").stdout
    assert "threshold 0.800" in text and "precision" in text and "from 20 verdicts" in text
    assert "recall (similarity >= 0.50)" in text and "recall (whole file)" in text
    assert (f"Pairs scoring below 0.50, which no threshold setting can flag: "
            f"{below['pairs']:,}. {below['answered']:,} of them") in text


@pytest.mark.slow
def test_answers_given_before_an_import_still_count_and_are_not_asked_again(project,
                                                                           tmp_path):
    """Issue 42 §3: after `duplens import` adds rows, the 20 answers given still count in
    the estimate (its keys the same), and `--next` offers none of their pairs again."""
    first = _next(str(project), 20)
    run("label", str(project), "--from", str(_verdicts_file(tmp_path / "a.csv", first)))
    before = json.loads(run("estimate", str(project), "--json").stdout)
    assert before["answers"] == 20
    more = tmp_path / "more.csv"
    more.write_text("qid,question\nm1,How can I learn Python fast?\n"
                    "m2,What is the capital city of Australia?\nm3,How do glaciers move?\n",
                    encoding="utf-8")
    run("import", str(project), str(more), "--column", "question", "--id-column", "qid")
    after = json.loads(run("estimate", str(project), "--json").stdout)
    assert set(after) == set(before) and set(after["estimate"]) == set(before["estimate"])
    assert after["answers"] == after["estimate"]["answers"] == 20
    assert after["answerers"] == {"earlier verdicts": 20}
    judged = {frozenset((p["a"]["id"], p["b"]["id"])) for p in first}
    second = _next(str(project), 10)
    assert second and not {frozenset((p["a"]["id"], p["b"]["id"])) for p in second} & judged
    run("label", str(project), "--from", str(_verdicts_file(tmp_path / "b.csv", second)))
    report = json.loads(run("estimate", str(project), "--json").stdout)
    assert report["answers"] == 20 + len(second)


def test_the_pairs_to_judge_are_listed_with_their_texts_whole(capsys):
    """Before, each text was cut at 60 characters with "…", so a judge needed --json: the
    words that tell two questions apart are often at the end."""
    import argparse

    from engine.cli.estimate import _print_pairs
    from engine.services.asking import AskedRow
    from engine.services.measuring import DrawnPair

    long_a = ("How long does it take to learn Python well enough to automate the weekly "
              "spreadsheet reports at work, starting from nothing?")
    long_b = "How long does it take to learn Python?\nAnd to automate reports in winter?"
    pair = DrawnPair(1, AskedRow(1, "q1", long_a), AskedRow(2, "q2", long_b), 0.8123, "s")
    args = argparse.Namespace(json=False, out=None, project="p.duplens")
    _print_pairs(args, [pair])
    out = capsys.readouterr().out
    assert "…" not in out
    assert out.splitlines()[0] == "1. similarity 0.812"
    assert " ".join(out.split()) == f"1. similarity 0.812 [q1] {long_a} [q2] " + " ".join(
        long_b.split())
    assert all(len(line) <= 100 for line in out.splitlines())


@pytest.mark.slow
def test_the_next_pairs_written_to_a_file_come_back_filled_in(project, tmp_path):
    """`estimate --next N --out FILE`: a file to fill in (its verdict column empty) and give
    to `label --from` as it is: the similarity and texts beside the ids are ignored there, a
    pair left without a verdict is skipped, and the file is never written over."""
    out = tmp_path / "pairs.csv"
    proc = run("estimate", str(project), "--next", "3", "--out", str(out))
    assert proc.stdout == ""
    assert f"3 pairs drawn at random written to {out}" in proc.stderr
    pairs = _next(str(project), 3)                # the same pairs: none has a verdict yet
    with out.open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["a_id", "b_id", "verdict", "similarity", "a_text", "b_text"]
    assert [(r["a_id"], r["b_id"], r["verdict"], r["a_text"], r["b_text"]) for r in rows] == [
        (p["a"]["id"], p["b"]["id"], "", p["a"]["text"], p["b"]["text"]) for p in pairs]
    assert [float(r["similarity"]) for r in rows] == [round(p["score"], 3) for p in pairs]

    rows[0]["verdict"], rows[1]["verdict"] = "dup", "not"      # the third one later
    with out.open("w", encoding="utf-8-sig", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    proc = run("label", str(project), "--from", str(out))
    assert "2 verdicts stored (2 of them on drawn pairs; 1 without a verdict skipped)" \
        in proc.stderr
    assert _stored(project) == (2, 2)
    assert [p["a"]["id"] for p in _next(str(project), 1)] == [rows[2]["a_id"]]

    proc = run("estimate", str(project), "--next", "3", "--out", str(out), check_code=2)
    assert proc.stderr.splitlines()[-1] == (f"duplens: {out} already exists (it may hold "
                                            "verdicts not given back yet); give another file "
                                            "name, or remove it first")
    assert len(list(csv.DictReader(out.open(encoding="utf-8-sig")))) == 3   # as it was
    proc = run("estimate", str(project), "--out", str(tmp_path / "x.csv"), check_code=2)
    assert "--out writes the pairs of --next N" in proc.stderr


@pytest.mark.slow
def test_a_bad_verdicts_file_is_refused_whole_with_its_line_numbers(project, tmp_path):
    pairs = _next(str(project), 3)
    bad = tmp_path / "bad.csv"
    bad.write_text("a_id,b_id,verdict\n"
                   f"{pairs[0]['a']['id']},{pairs[0]['b']['id']},dup\n"
                   f"{pairs[1]['a']['id']},nosuchrow,not\n"
                   f"{pairs[2]['a']['id']},{pairs[2]['b']['id']},maybe\n", encoding="utf-8")
    proc = run("label", str(project), "--from", str(bad), check_code=2)
    assert "nothing stored" in proc.stderr
    assert "line 3: no row has the id 'nosuchrow'" in proc.stderr
    assert "line 4: verdict 'maybe'" in proc.stderr and "line 2" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert _stored(project) == (0, 0)
    headless = tmp_path / "headless.csv"
    headless.write_text("first,second\nq1,q2\n", encoding="utf-8")
    proc = run("label", str(project), "--from", str(headless), check_code=2)
    assert "a_id,b_id,verdict" in proc.stderr
    run("label", str(project), "--from", str(tmp_path / "missing.csv"), check_code=2)
    assert _stored(project) == (0, 0)


@pytest.mark.slow
def test_two_analysts_of_a_team_project_add_to_one_sample(postgres_server, tmp_path):
    from devtools.postgres_server import ANALYST_PASSWORD

    name = postgres_server.create_database()
    postgres_server.sql("DO $$ BEGIN CREATE ROLE second_analyst LOGIN PASSWORD 'pw2'; "
                        "EXCEPTION WHEN duplicate_object THEN NULL; END $$")
    postgres_server.sql("GRANT analyst TO second_analyst")
    first = postgres_server.url(name, password=ANALYST_PASSWORD)
    second = postgres_server.url(name, user="second_analyst", password="pw2")
    try:
        run("import", first, str(DATA), "--column", "question", "--id-column", "qid")
        mine, theirs = _next(first, 6), _next(second, 6)
        keys = [{frozenset((p["a"]["id"], p["b"]["id"])) for p in x} for x in (mine, theirs)]
        assert not keys[0] & keys[1]          # each analyst gets pairs of their own
        run("label", second, "--from", str(_verdicts_file(tmp_path / "theirs.csv", theirs)))
        run("label", first, "--from", str(_verdicts_file(tmp_path / "mine.csv", mine)))
        for location in (first, second):
            report = json.loads(run("estimate", location, "--json").stdout)
            assert report["answers"] == 12
            assert report["answerers"] == {"analyst": 6, "second_analyst": 6}
        rows = postgres_server.sql("SELECT count(*), count(DISTINCT sample_id) FROM "
                                   "quality_draws", database=name)
        assert rows == [(12, 1)]
    finally:
        postgres_server.drop_database(name)
