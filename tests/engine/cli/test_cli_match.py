"""`duplens match` as a user runs it (its real entry point, in this process unless the
process is what is tested), the real model, small files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import openpyxl
import pytest

from tests.engine.cli.test_cli import ROOT, run

NEW = ("ref,question,note\n"
       "n1,How do I learn Python quickly?,copy of q1 q41 q42\n"
       "n2,What is the capital of France?,new\n"
       "n3,how do I learn python quickly?,repeats n1\n"
       "n4,=HYPERLINK(\"x\"),formula\n")


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("match") / "questions.duplens"
    run("import", str(path), str(ROOT / "tests" / "data" / "questions.csv"), "--column",
        "question", "--id-column", "qid")
    return path


@pytest.fixture
def new_file(tmp_path) -> Path:
    path = tmp_path / "new.csv"
    path.write_text(NEW, encoding="utf-8")
    return path


def items(project: Path) -> int:
    return json.loads(run("info", str(project), "--json").stdout)["items"]


def test_json_one_entry_per_row_in_file_order_and_nothing_added(project, new_file):
    before = items(project)
    proc = run("match", str(project), str(new_file), "--column", "question", "--id-column",
               "ref", "-k", "3", "--json")
    rows = json.loads(proc.stdout)
    assert [(r["row"], r["id"]) for r in rows] == [(1, "n1"), (2, "n2"), (3, "n3"), (4, "n4")]
    assert set(rows[0]) == {"row", "id", "text", "matches"}
    first = rows[0]["matches"]
    assert len(first) == 3
    assert set(first[0]) == {"id", "text", "score", "overlap", "differing"}
    # the same words as its best match: overlap 1, no differing word
    assert (first[0]["overlap"], first[0]["differing"]) == (1.0, [])
    assert all(0 <= m["overlap"] < 1 for m in first[1:])
    assert [m["score"] for m in first] == sorted((m["score"] for m in first), reverse=True)
    # q1, q41 and q42 hold the same text: folded into one match, the first row (q1).
    assert first[0]["id"] == "q1" and first[0]["score"] == pytest.approx(1.0, abs=1e-4)
    assert not {"q41", "q42"} & {m["id"] for m in first}
    assert rows[1]["matches"][0]["id"] in {"q6", "q7"}      # the capitals of Australia
    assert items(project) == before


def test_without_json_every_row_shows_its_k_matches(project, new_file):
    proc = run("match", str(project), str(new_file), "--column", "question", "--id-column",
               "ref", "-k", "2")
    lines = proc.stdout.splitlines()
    assert len(lines) == 8     # 4 rows of the file, 2 matches each
    assert lines[0].startswith("[n1]  How do I learn Python quickly?  →  1.000  [q1]  ")
    assert lines[1].startswith("    →  ") and "[q" in lines[1]
    assert [line.startswith("[n") for line in lines] == [True, False] * 4


def test_id_is_the_row_number_without_an_id_column(project, new_file):
    rows = json.loads(run("match", str(project), str(new_file), "--column", "question",
                          "-k", "1", "--json").stdout)
    assert [r["id"] for r in rows] == ["1", "2", "3", "4"]
    assert all(len(r["matches"]) == 1 for r in rows)


@pytest.mark.parametrize("suffix", [".csv", ".xlsx"])
def test_out_has_the_file_columns_matches_and_verdicts(project, new_file, tmp_path, suffix):
    out = tmp_path / f"matches{suffix}"
    run("match", str(project), str(new_file), "--column", "question", "--id-column", "ref",
        "-k", "2", "--threshold", "0.9", "--out", str(out))
    if suffix == ".csv":
        import csv
        with out.open(encoding="utf-8-sig", newline="") as fh:
            table = list(csv.reader(fh))
    else:
        sheet = openpyxl.load_workbook(out).active
        table = [["" if v is None else str(v) for v in row]
                 for row in sheet.iter_rows(values_only=True)]
    assert table[0] == ["ref", "question", "note", "match_1_id", "match_1_text",
                        "match_1_score", "match_1_overlap", "match_2_id", "match_2_text",
                        "match_2_score", "match_2_overlap", "likely_duplicate",
                        "duplicate_in_file_of", "threshold"]
    body = {r[0]: dict(zip(table[0], r, strict=True)) for r in table[1:]}
    assert list(body) == ["n1", "n2", "n3", "n4"]
    assert body["n1"]["match_1_id"] == "q1" and body["n1"]["likely_duplicate"] == "True"
    assert body["n2"]["likely_duplicate"] == "False"
    assert body["n1"]["duplicate_in_file_of"] == "" and body["n3"]["duplicate_in_file_of"] == "n1"
    assert body["n2"]["duplicate_in_file_of"] == ""
    assert body["n4"]["question"] == "'=HYPERLINK(\"x\")"   # neutralised, not a formula


def test_add_imports_the_file_and_encodes_it(project, new_file, tmp_path):
    copy = tmp_path / "copy.duplens"
    shutil.copy(project, copy)
    before = json.loads(run("info", str(copy), "--json").stdout)
    proc = run("match", str(copy), str(new_file), "--column", "question", "--id-column", "ref",
               "--add")
    after = json.loads(run("info", str(copy), "--json").stdout)
    assert after["items"] == before["items"] + 4, proc.stderr
    assert after["encoded"] == after["texts"]             # the new texts are indexed too
    hits = json.loads(run("search", str(copy), "What is the capital of France?", "-k", "1",
                          "--json").stdout)
    assert hits[0]["id"] == "n2" and hits[0]["score"] == pytest.approx(1.0, abs=1e-4)


@pytest.mark.parametrize("args, message", [
    (["{p}", "{new}", "--column", "titel"], "titel"),
    (["{p}", "{missing}", "--column", "question"], "missing.csv"),
    (["{empty}", "{new}", "--column", "question"], "no encoded rows"),
    (["{p}", "{new}", "--column", "question", "-k", "0"], "at least 1"),
    (["{p}", "{new}", "--column", "question", "--out", "{bad_out}"], "cannot export"),
])
def test_bad_input_is_one_line_exit_2(project, new_file, tmp_path, args, message):
    empty = tmp_path / "empty.duplens"
    run("import", str(empty), str(new_file), "--column", "question", "--no-encode")
    values = {"p": str(project), "new": str(new_file), "missing": str(tmp_path / "missing.csv"),
              "empty": str(empty), "bad_out": str(tmp_path / "out.txt")}
    before = items(project)
    proc = run("match", *[a.format(**values) for a in args], check_code=2)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in proc.stderr, proc.stderr
    assert items(project) == before


def test_a_reader_that_goes_away_ends_it_quietly(project, tmp_path):
    """`duplens match … --json | head`: the JSON streams, so the reader can close the pipe
    long before the end; that is no bug to report (it was 'unexpected error', exit 1)."""
    import os
    import subprocess
    import sys

    many = tmp_path / "many.csv"
    many.write_text("question\n" + "".join(f"How do I learn language number {i} fast?\n"
                                            for i in range(1500)), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli", "match", str(project),
                             str(many), "--column", "question", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout.read(100).startswith(b"[")   # the first entry came
    proc.stdout.close()                              # and the reader left
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 141, err
    assert "unexpected error" not in err and "Traceback" not in err
