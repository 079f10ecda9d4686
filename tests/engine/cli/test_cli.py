"""The `duplens` command as a user runs it: its real entry point, the real model, small
files; in this process (`run`) unless what is tested is the process itself (`run_process`:
signals, a killed process, the real exit status)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def run(*args: str, check_code: int | None = 0) -> subprocess.CompletedProcess:
    """`duplens ARGS` through `engine.cli.main` in this process: its stdout, stderr and exit
    status as a process would give them (argparse's exits included).

    A fresh process imports the engine, torch and the rest again: seconds each on a small
    machine, which made the CLI tests most of a 40-minute suite. What a process adds (the
    interpreter's exit, signals, pipes) is tested with `run_process`."""
    from engine.cli import main

    out, err = io.StringIO(), io.StringIO()
    interrupt = signal.getsignal(signal.SIGINT)   # `main` installs its own Ctrl-C handler
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                _warnings_on(err):
            try:
                code = main(list(args))
            except SystemExit as exc:   # argparse: a usage error (2), --help, --version (0)
                code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
                if isinstance(exc.code, str):
                    err.write(exc.code + "\n")
    finally:
        signal.signal(signal.SIGINT, interrupt)
    proc = subprocess.CompletedProcess(["duplens", *args], code, out.getvalue(),
                                       err.getvalue())
    if check_code is not None:
        assert proc.returncode == check_code, proc.stderr
    return proc


@contextlib.contextmanager
def _warnings_on(err: io.StringIO) -> Iterator[None]:
    """Python warnings go to the captured stderr, as they would in a process (pytest would
    otherwise collect them), so that "one line on stderr" still means one line."""
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = lambda message, category, filename, lineno, file=None, \
            line=None: err.write(warnings.formatwarning(message, category, filename, lineno,
                                                        line))
        yield


def run_process(*args: str, check_code: int | None = 0) -> subprocess.CompletedProcess:
    """`python -m engine.cli ARGS` in a process of its own."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "engine.cli", *args], capture_output=True,
                          text=True, env=env, timeout=300)
    if check_code is not None:
        assert proc.returncode == check_code, proc.stderr
    return proc


def wait_for_embeddings(path: Path, at_least: int, seconds: float = 240) -> int:
    """Poll the project (read-only) until `at_least` embeddings are committed or time is up."""
    deadline = time.time() + seconds
    done = 0
    while time.time() < deadline and done < at_least:
        time.sleep(0.2)
        try:
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
            done = con.execute("SELECT count(*) FROM embeddings").fetchone()[0]
            con.close()
        except sqlite3.OperationalError:
            continue
    return done


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("cli")
    path = folder / "questions.duplens"
    data = ROOT / "tests" / "data" / "questions.csv"
    proc = run("import", str(path), str(data), "--column", "question", "--id-column", "qid")
    assert "48 rows imported" in proc.stdout   # the summary on stdout, the bars on stderr
    return path


def test_search_json_contract(project):
    proc = run("search", str(project), "what is australia's capital city", "-k", "3", "--json")
    hits = json.loads(proc.stdout)
    assert {"id", "row", "text", "score"} <= set(hits[0])
    assert hits[0]["id"] in {"q6", "q7"} and hits[0]["row"] in {6, 7}
    assert hits[0]["score"] >= hits[1]["score"]


def test_info_json_contract(project):
    proc = run("info", str(project), "--json")
    info = json.loads(proc.stdout)
    assert info["items"] == 48 and info["encoded"] == 46 and info["index_items"] == 46
    # a new project's backend: the quality gate's CPU default where it is installed
    from engine.encoding.backend_choice import default_backend

    chosen = default_backend("cpu")
    assert info["model"] == "all-MiniLM-L6-v2" + ("" if chosen == "torch" else f" ({chosen})")
    assert info["device"] == "cpu"


def test_info_does_not_import_torch(project):
    code = ("import sys; from engine.cli import main; main(['info', sys.argv[1]]); "
            "print('torch' in sys.modules, 'sentence_transformers' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code, str(project)], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert proc.stdout.strip().endswith("False False")


def test_duplicates_json_and_export(project, tmp_path):
    out = tmp_path / "clusters.csv"
    proc = run("duplicates", str(project), "--threshold", "0.75", "--json", "--out", str(out))
    clusters = json.loads(proc.stdout)
    first = clusters[0]
    assert {"cluster_id", "canonical_id", "members"} <= set(first)
    assert {"id", "text", "score"} <= set(first["members"][0])
    assert first["members"][0]["id"] == first["canonical_id"]
    ids = {m["id"] for c in clusters for m in c["members"]}
    assert {"q1", "q41", "q42", "q6", "q7"} <= ids
    header = out.read_text(encoding="utf-8-sig").splitlines()[0]
    assert header == ("qid,question,topic,cluster_id,canonical_id,duplicate_of,similarity,"
                      "is_canonical,decision,first_seen,threshold")
    assert all(c["cluster_id"].startswith("C") and len(c["cluster_id"]) == 7 for c in clusters)


@pytest.mark.parametrize("args, message", [
    (["import", "{p}", "{missing}", "--column", "question"], "missing.csv"),
    (["import", "{p}", "{data}", "--column", "titel"], 'columns are'),
    (["search", "{nothere}", "x"], "no such project"),
    (["info", "{data}"], "is not a Duplens project"),
    (["eval", "sts", "{data}"], "score"),
    (["import", "{p}", "{data}", "--column", "question", "--model", "/no/such/model"],
     "no such model folder"),
    (["search"], "duplens search"),
])
def test_bad_input_is_one_line_exit_2(project, tmp_path, args, message):
    values = {"p": str(project), "missing": str(tmp_path / "missing.csv"),
              "data": str(ROOT / "tests" / "data" / "questions.csv"),
              "nothere": str(tmp_path / "nothere.duplens")}
    before = project.read_bytes()
    proc = run(*[a.format(**values) for a in args], check_code=2)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert project.read_bytes() == before


def test_eval_commands(tmp_path):
    sts = tmp_path / "sts.tsv"
    sts.write_text(
        "score\tsentence1\tsentence2\n"
        "5.0\tA man is playing a guitar.\tA man plays the guitar.\n"
        "4.2\tA woman is slicing an onion.\tA woman cuts an onion.\n"
        "2.5\tA dog runs in the park.\tA cat sleeps in the park.\n"
        "0.4\tThe stock market fell today.\tA child is riding a bike.\n"
        "1.0\tA plane is taking off.\tA man is cooking \"pasta\" at home.\n")
    proc = run("eval", "sts", str(sts), "--json")
    result = json.loads(proc.stdout)
    assert result["pairs"] == 5 and result["spearman"] >= 80
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(
        "question1,question2,is_duplicate\n"
        "How do I learn Python?,What is the best way to learn Python?,1\n"
        "Why is the sky blue?,What makes the sky blue?,1\n"
        "How do I bake bread?,Who painted the Mona Lisa?,0\n"
        "What is the capital of France?,How tall is Mount Everest?,0\n")
    proc = run("eval", "pairs", str(pairs))
    assert proc.stdout.startswith("average precision: 100.00")


@pytest.mark.slow
def test_sigkill_during_encoding_then_resume_encodes_everything_once(tmp_path):
    path = tmp_path / "killed.duplens"
    src = tmp_path / "many.csv"
    src.write_text("text\n" + "\n".join(
        f"Question {i}: how would you describe topic {i % 97} to a {i % 13}-year-old?"
        for i in range(3000)))
    run("import", str(path), str(src), "--column", "text", "--no-encode")
    # Small committed chunks, so the kill lands between commits and mid-chunk alike.
    script = ("import sys; from engine.project import Project\n"
              "Project.open(sys.argv[1]).vectors.encode(chunk_texts=100)\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(path)],
                            env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    done = wait_for_embeddings(path, 300)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 300 <= done < 3000, "encoding finished before it could be killed"
    run("encode", str(path))
    con = sqlite3.connect(path)
    assert con.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 3000
    assert con.execute("SELECT count(DISTINCT text_id) FROM embeddings").fetchone()[0] == 3000
    con.close()
    info = json.loads(run("info", str(path), "--json").stdout)
    assert info["encoded"] == 3000 and info["index_items"] == 3000


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_keeps_what_was_encoded(tmp_path):
    path = tmp_path / "interrupted.duplens"
    src = tmp_path / "many.csv"
    src.write_text("text\n" + "\n".join(
        f"Interrupted question {i}: what happens to item {i % 89} on day {i % 31}?"
        for i in range(20000)))
    run("import", str(path), str(src), "--column", "text", "--no-encode")
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli", "encode", str(path)],
                            env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_embeddings(path, 1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "stopped:" in err and "duplens encode" in err and "Traceback" not in err
    info = json.loads(run("info", str(path), "--json").stdout)
    assert 0 < info["encoded"] < 20000
    assert info["index_items"] == info["encoded"]


# -- what a new analyst tripped over (#29) ---------------------------------------------------
def test_a_failed_import_leaves_no_project_file(tmp_path):
    data = ROOT / "tests" / "data" / "questions.csv"
    path = tmp_path / "x.duplens"
    proc = run("import", str(path), str(data), "--column", "Question", check_code=2)
    assert proc.stderr.strip().splitlines() == [
        'duplens: questions.csv: no column "Question"; columns are: qid, question, topic']
    assert not path.exists()
    # A failure found while reading, after the import started, removes the new file too.
    long = tmp_path / "long.csv"
    long.write_text("id,text\n1,ok\n2," + "x" * 16_000_001 + "\n", encoding="utf-8")
    proc = run("import", str(path), str(long), "--column", "text", "--no-encode",
               check_code=2)
    assert "a row longer than 16,000,000 characters" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.csv"]


def test_an_import_whose_text_column_is_blank_creates_nothing(tmp_path, project):
    """Before, it exited 0 with "0 rows imported, 2 empty skipped" and an empty project:
    now one line naming the column, exit 2, no new project file, an existing one unchanged."""
    blank = tmp_path / "blank.csv"
    blank.write_text("question,topic\n,a\n ,b\n", encoding="utf-8")
    path = tmp_path / "new.duplens"
    proc = run("import", str(path), str(blank), "--column", "question", check_code=2)
    assert proc.stdout == ""                    # the reading bar before it, on stderr
    assert proc.stderr.splitlines()[-1] == ('duplens: blank.csv: column "question" has no '
                                            "text (its 2 rows are all blank); choose the "
                                            "column that holds the text")
    assert not path.exists()
    before = project.read_bytes()
    proc = run("import", str(project), str(blank), "--column", "question", "--no-encode",
               check_code=2)
    assert "has no text" in proc.stderr
    assert project.read_bytes() == before


def test_import_prints_its_summary_on_stdout(project):
    proc = run("import", str(project), str(ROOT / "tests" / "data" / "questions.csv"),
               "--column", "question", "--id-column", "qid", "--no-encode")
    assert proc.stdout == ("questions.csv: already imported with these columns; nothing "
                           "added\n")


def test_search_and_duplicates_say_when_there_is_nothing(tmp_path):
    import re

    empty, some = tmp_path / "empty.duplens", tmp_path / "some.duplens"
    from engine.project import Project

    Project.open(empty, create=True).close()   # no import makes one: a blank one is refused
    proc = run("search", str(empty), "hello")
    assert (proc.stdout, proc.stderr) == ("", "empty.duplens has 0 rows: nothing to search\n")
    assert run("search", str(empty), "hello", "--json").stdout == "[]\n"
    proc = run("duplicates", str(empty))
    assert (proc.stdout, proc.stderr) == ("", "empty.duplens has 0 rows: no clusters\n")
    two = tmp_path / "two.csv"
    two.write_text("question\nHow do I bake bread?\nWho painted the Mona Lisa?\n",
                   encoding="utf-8")
    run("import", str(some), str(two), "--column", "question", "--no-encode")
    proc = run("search", str(some), "hello")
    assert proc.stderr == (f"some.duplens has 2 rows but none is encoded yet: nothing to "
                           f"search; run 'duplens encode {some}' first\n")
    run("encode", str(some))
    proc = run("duplicates", str(some))
    assert proc.stdout == ""
    assert re.fullmatch(r"no clusters at 0\.\d+ in some\.duplens; a lower --threshold finds "
                        r"looser ones", proc.stderr.splitlines()[-1]), proc.stderr
    proc = run("duplicates", str(some), "--threshold", "0.85")
    assert proc.stderr.splitlines()[-1] == ("no clusters at 0.85 in some.duplens; a lower "
                                            "--threshold finds looser ones")
    proc = run("duplicates", str(some), "--threshold", "0.9", "--json")
    assert proc.stdout == "[]\n" and "no clusters at 0.9 in some.duplens" in proc.stderr


def test_every_option_and_argument_has_help():
    import argparse

    from engine.cli import build_parser

    lacking = []

    def walk(parser: argparse.ArgumentParser, name: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for command, sub in action.choices.items():
                    walk(sub, f"{name} {command}")
            elif not action.help:
                lacking.append(f"{name} {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser(), "duplens")
    assert lacking == []


def test_readme_commands_and_options_are_the_parsers():
    """Each `duplens …` line of README's command-line block names a command and options
    that `--help` has."""
    import argparse
    import re

    from engine.cli import build_parser

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Command line", 1)[1]
    lines = [line.split("#", 1)[0] for line in section.split("```")[1].splitlines()]
    commands = {a.dest: a for a in build_parser()._actions
                if isinstance(a, argparse._SubParsersAction)}["command"].choices
    current = None
    checked = 0
    for line in lines:
        words = line.split()
        if words[:1] == ["duplens"]:
            current = commands[words[1]]
            if words[1] == "eval":
                current = next(a for a in current._actions
                               if isinstance(a, argparse._SubParsersAction)).choices[words[2]]
        if current is None or not words:
            continue
        known = {s for a in current._actions for s in a.option_strings}
        for option in re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-[a-z])\b", line):
            assert option in known, f"README: {line.strip()} ({option})"
            checked += 1
    assert checked >= 20
