"""`--executor ray` as a user runs it: real processes, a real local Ray, the real model."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.engine.cli.test_cli import ROOT, run, run_process, wait_for_embeddings


def test_a_wrong_cluster_address_is_one_line_and_imports_nothing(tmp_path):
    path = tmp_path / "p.duplens"
    data = ROOT / "tests" / "data" / "questions.csv"
    # A process of its own: this one may be connected to the session's Ray already, and a
    # process joins one Ray only (`engine.encoding.ray_cluster.connect`).
    proc = run_process("import", str(path), str(data), "--column", "question",
                       "--executor", "ray=127.0.0.1:1", check_code=2)
    assert proc.stderr.strip().splitlines() == [
        "duplens: cannot reach the Ray cluster at 127.0.0.1:1: nothing listens on port 1 of "
        "127.0.0.1"]
    assert not path.exists()
    proc = run("import", str(path), str(data), "--column", "question",
               "--executor", "spark", check_code=2)
    assert "unknown executor 'spark'" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_without_ray_installed_the_option_says_what_to_install(tmp_path):
    code = ("import sys; sys.modules['ray'] = None  # as if Ray were not installed\n"
            "from engine.cli import main; sys.exit(main(sys.argv[1:]))")
    proc = subprocess.run(
        [sys.executable, "-c", code, "import", str(tmp_path / "p.duplens"),
         str(ROOT / "tests" / "data" / "questions.csv"), "--column", "question",
         "--executor", "ray"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == 'duplens: --executor ray needs Ray: pip install ' \
                                  '"duplens[ray]"'


@pytest.mark.slow
def test_import_on_a_local_ray_leaves_nothing_behind(tmp_path):
    """`--executor ray` starts its own Ray with the machine's cores, encodes everything
    and removes that Ray's folder; Ray writes nothing to the home folder."""
    path = tmp_path / "q.duplens"
    token = Path.home() / ".ray" / "auth_token"
    had_token = token.exists()
    before = set(Path(tempfile.gettempdir()).glob("duplens-ray-*"))
    # Without the test session's Ray settings: as a user's shell would run it.
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    proc = subprocess.run(
        [sys.executable, "-m", "engine.cli", "import", str(path),
         str(ROOT / "tests" / "data" / "questions.csv"), "--column", "question",
         "--executor", "ray"],
        capture_output=True, text=True, env={**env, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"encoded on {os.cpu_count()} Ray worker(s)" in proc.stderr
    info = json.loads(run("info", str(path), "--json").stdout)
    assert info["encoded"] == 46 and info["index_items"] == 46
    assert set(Path(tempfile.gettempdir()).glob("duplens-ray-*")) == before
    assert token.exists() == had_token


@pytest.mark.slow
def test_a_killed_driver_resumes_on_the_cluster_with_every_text_once(ray_session, tmp_path):
    address = ray_session.gcs_address
    path = tmp_path / "killed.duplens"
    src = tmp_path / "many.csv"
    src.write_text("text\n" + "\n".join(
        f"Question {i}: how would you explain topic {i % 89} to someone aged {i % 17}?"
        for i in range(3000)))
    run("import", str(path), str(src), "--column", "text", "--no-encode")
    # A driver joining the session's cluster by address; small chunks, so the kill lands
    # with commits behind it and batches in flight on the workers.
    script = ("import sys\nfrom engine.encoding.executors import executor_for\n"
              "from engine.project import Project\n"
              "Project.open(sys.argv[1]).vectors.encode(chunk_texts=100, "
              "executor=executor_for('ray=' + sys.argv[2]))\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(path), address],
                            env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    done = wait_for_embeddings(path, 300)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 300 <= done < 3000, "encoding finished before it could be killed"
    proc = run("encode", str(path), "--executor", f"ray={address}")
    assert "encoded on 2 Ray worker(s)" in proc.stderr
    con = sqlite3.connect(path)
    assert con.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 3000
    assert con.execute("SELECT count(DISTINCT text_id) FROM embeddings").fetchone()[0] == 3000
    con.close()
    info = json.loads(run("info", str(path), "--json").stdout)
    assert info["encoded"] == 3000 and info["index_items"] == 3000


@pytest.mark.slow
def test_a_ray_import_into_a_server_project(ray_session, postgres_url):
    """Workers of the session's cluster encode, the driver commits to PostgreSQL: every
    text once, the index saved on the server, and search answers from it."""
    proc = run("import", postgres_url, str(ROOT / "tests" / "data" / "questions.csv"),
               "--column", "question", "--id-column", "qid",
               "--executor", f"ray={ray_session.gcs_address}")
    assert "encoded on 2 Ray worker(s)" in proc.stderr
    from engine.store.database import Store

    store = Store.open(postgres_url, read_only=True)
    try:
        with store.read() as conn:
            total, distinct = conn.exec_driver_sql(
                "SELECT count(*), count(DISTINCT text_id) FROM embeddings").one()
            saved = conn.exec_driver_sql("SELECT count FROM indexes").scalar()
    finally:
        store.close()
    assert total == distinct == saved == 46
    info = json.loads(run("info", postgres_url, "--json").stdout)
    assert info["encoded"] == 46 and info["index_items"] == 46
    hits = json.loads(run("search", postgres_url, "what is australia's capital city",
                          "-k", "3", "--json").stdout)
    assert hits[0]["id"] in {"q6", "q7"}
