"""Two Duplens processes on one project file (SQLite): two CLI imports, a window writing
while an import runs, a writer that holds the lock too long. Each either works, waits, or
says one line and exits 2; nothing is lost and no older index is saved over a newer one."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

import engine.store.sqlite as lite
from engine.errors import BUSY_MESSAGE, ProjectBusy
from engine.project import Project
from tests.engine.store.project_checks import assert_index_agrees, cli, split_questions


@pytest.mark.slow
def test_two_cli_imports_at_once_both_land(tmp_path):
    first, second = split_questions(tmp_path)
    project = tmp_path / "shared.duplens"
    one = cli("import", str(project), str(first), "--column", "question")
    deadline = time.monotonic() + 120
    while not project.exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # the second starts while the first is writing
    two = cli("import", str(project), str(second), "--column", "question")
    outs = [p.communicate(timeout=600) for p in (one, two)]
    for proc, (_out, err) in zip((one, two), outs, strict=True):
        assert proc.returncode == 0, err
        assert "Traceback" not in err and "database is locked" not in err
    found = assert_index_agrees(project)
    assert found["rows"] == 48  # 50 lines: 2 empty questions are skipped
    (model,) = found["models"].values()
    assert model["indexed"] == model["embedded"] and len(model["embedded"]) == 46


def test_a_writer_that_holds_the_lock_too_long_gets_one_line_and_exit_2(tmp_path, data_dir):
    project = tmp_path / "busy.duplens"
    Project.open(project, create=True).close()
    holder = sqlite3.connect(project, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another Duplens in the middle of a long write
    try:
        proc = cli("import", str(project), str(data_dir / "questions.csv"), "--column",
                   "question", "--no-encode", busy_timeout=1)
        _out, err = proc.communicate(timeout=300)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert proc.returncode == 2, err
    lines = [line for line in err.splitlines() if line.startswith("duplens:")]
    assert len(lines) == 1 and BUSY_MESSAGE in lines[0], err
    assert "Traceback" not in err
    again = cli("import", str(project), str(data_dir / "questions.csv"), "--column",
                "question", "--no-encode")
    _out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    with Project.open(project, read_only=True) as opened:
        assert opened.rows.count() == 48


def test_a_window_verdict_waits_for_an_import_and_is_kept(tmp_path, data_dir, monkeypatch):
    """The window's write (a label) while another process holds the write lock: it waits
    for the lock and lands; when the other never lets go it is one `ProjectBusy` line."""
    project = tmp_path / "labels.duplens"
    with Project.open(project, create=True) as setup:
        setup.rows.import_table(data_dir / "questions.csv", ["question"])
    first, second = _two_item_ids(project)
    holder = sqlite3.connect(project, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # an import's batch in another process
    release = threading.Timer(1.0, lambda: holder.execute("COMMIT"))
    with Project.open(project) as window:
        release.start()
        started = time.monotonic()
        window.verdicts.set_verdict(first, second, 1)
        assert time.monotonic() - started >= 0.9  # it waited for the other writer
    release.join()
    holder.close()
    with Project.open(project, read_only=True) as reopened:
        assert reopened.verdicts.verdict(first, second) == 1

    monkeypatch.setattr(lite, "BUSY_TIMEOUT_S", 0.5)
    holder = sqlite3.connect(project, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # a writer that never lets go
    try:
        with Project.open(project) as window, pytest.raises(ProjectBusy, match=BUSY_MESSAGE):
            window.verdicts.set_verdict(first, second, 0)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with Project.open(project, read_only=True) as reopened:
        assert reopened.verdicts.verdict(first, second) == 1  # the earlier decision stays


def _two_item_ids(project) -> tuple[int, int]:
    with sqlite3.connect(project) as conn:
        first, second = (r[0] for r in conn.execute("SELECT id FROM items ORDER BY id LIMIT 2"))
    return first, second
