"""Read-only work goes on while the disk is full, from what was saved before: search, `info`,
the review (the engine calls the window makes) and exports to another disk. An index behind
its embeddings (what an import leaves when the disk fills during its index save) is caught up
in memory; it is saved by the next open that finds room, and then agrees with the
embeddings. On a real 20 MB tmpfs filled to its last block (root only; CI requires it).

Two ways a full disk meets SQLite: the project was closed (a WAL reader cannot even make its
32 kB `-shm` file: the project opens as a snapshot, `store.sqlite.open_when_full`), or
another process still has it open (the `-shm` file exists: it opens as usual, and only the
index's save fails).
"""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import subprocess
import sys
from contextlib import ExitStack, closing

import pytest

from engine.encoding.encode_job import encode_missing
from engine.errors import DiskFull
from engine.project import Project
from engine.store.database import Store
from tests.engine.store.project_checks import (
    cli,
    fill_completely,
    small_disk,
    split_questions,
    state,
)

# A question only in the second half of tests/data/questions.csv: found only once the index
# holds the embeddings the failed import stored.
SECOND_HALF = "How do I grow tomatoes on a balcony?"


@pytest.fixture
def disk(tmp_path):
    with small_disk(tmp_path / "disk") as folder:
        yield folder


def _behind_its_embeddings(disk, tmp_path, encoder):
    """A project whose saved index lacks the second half's embeddings: what an import
    leaves when the disk fills during its index save (rows and embeddings committed, the
    save rolled back). `encode_missing` is the import's encode step without that save."""
    first, second = split_questions(tmp_path)
    path = disk / "full.duplens"
    with Project.open(path, create=True) as project:
        project.model.attach(encoder, is_default=True)
        project.rows.import_table(first, ["question"])
        project.vectors.encode()
        project.rows.import_table(second, ["question"])
        encode_missing(project.store, encoder, project.model.id())
    (model,) = state(path)["models"].values()
    assert len(model["embedded"]) == 46 and len(model["indexed"]) == 25
    # `state` read it read-only, which leaves `-wal` and `-shm` behind; the last writable
    # connection to close removes them, as a process that closes the project does.
    with closing(sqlite3.connect(path)) as last:
        last.execute("SELECT count(*) FROM meta").fetchall()
    assert not os.path.exists(f"{path}-shm") and not os.path.exists(f"{path}-wal")
    return path


def _hold_open(path):
    """Another process's reader on the project: it keeps SQLite's `-shm` file in place."""
    reader = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    reader.execute("SELECT count(*) FROM items").fetchall()
    return closing(reader)


def _run(*args: str) -> tuple[str, str]:
    proc = cli(*args)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    return out, err


@pytest.mark.slow
@pytest.mark.parametrize("elsewhere", [False, True], ids=["closed", "open-elsewhere"])
def test_search_info_and_export_go_on_while_the_disk_is_full(disk, tmp_path, encoder,
                                                            elsewhere):
    path = _behind_its_embeddings(disk, tmp_path, encoder)
    out_dir = tmp_path / "elsewhere"
    out_dir.mkdir()
    with ExitStack() as stack:
        if elsewhere:
            stack.enter_context(_hold_open(path))
        filler = fill_completely(disk)

        out, err = _run("search", str(path), SECOND_HALF, "-k", "1", "--json")
        assert json.loads(out)[0]["text"] == SECOND_HALF, (out, err)
        assert "the disk is full" in err   # it says why nothing is saved
        assert ("opened as last saved" in err) is not elsewhere   # the two ways in, as meant

        out, _err = _run("info", str(path), "--json")
        info = json.loads(out)
        assert (info["items"], info["encoded"]) == (48, 46)

        _out, err = _run("duplicates", str(path), "--out", str(out_dir / "all.csv"))
        with (out_dir / "all.csv").open(newline="", encoding="utf-8") as fh:
            assert len(list(csv.DictReader(fh))) == 48, err
        filler.unlink()

    with Project.open(path) as reopened:             # as the next command or window opens it
        reopened.model.attach(encoder, is_default=True)
        assert reopened.search(SECOND_HALF, k=1)[0].text == SECOND_HALF
        assert not any("disk is full" in n for n in reopened.notices)
    (model,) = state(path)["models"].values()
    # saved by that open, stamped with the current version, holding every embedding
    assert model["indexed"] == model["embedded"] and len(model["embedded"]) == 46
    assert model["stamped"] is not None


@pytest.mark.slow
def test_the_windows_review_and_export_on_a_full_disk_then_a_verdict_once_freed(
        disk, tmp_path, encoder):
    """The calls the window's open, Review and export jobs make (desktop_app/bridge.py
    `_open`, controllers/review_controller.py), on a project closed before the disk filled:
    it opens as a snapshot; once space is freed, the same open project takes a label."""
    path = _behind_its_embeddings(disk, tmp_path, encoder)
    filler = fill_completely(disk)
    with Project.open(path) as project:
        project.model.configure(device="cpu", fast_queries=True)
        project.model.attach(encoder, is_default=True)
        assert project.store.snapshot and any("disk is full" in n for n in project.notices)
        raw = project.clusters.cut(0.75, verdicts=False)
        clusters = project.clusters.apply_verdicts(raw)
        assert any(len(c.members) > 1 for c in clusters)
        assert project.exports.rows(tmp_path / "review.csv", clusters, 0.75) == 48
        assert project.search(SECOND_HALF, k=1)[0].text == SECOND_HALF
        a, b = (m.item_id for m in next(c for c in clusters if len(c.members) > 1).members[:2])
        with pytest.raises(DiskFull, match=f"^{path.name}: the disk is full"):
            project.verdicts.set_verdict(a, b, 1)
        filler.unlink()
        project.verdicts.set_verdict(a, b, 1)            # room again: the write goes through
        assert not project.store.snapshot and project.verdicts.verdict(a, b) == 1


# -- the store alone: fast ---------------------------------------------------------------
def test_a_closed_project_opens_as_last_saved_on_a_full_disk(disk):
    path = disk / "p.duplens"
    with closing(Store.open(path, create=True)) as store:
        store.set_meta("kept", "yes")
    filler = fill_completely(disk)
    with closing(Store.open(path)) as store:
        assert store.snapshot and store.read_only
        assert store.get_meta("kept") == "yes"
        with pytest.raises(DiskFull, match=f"^{path.name}: the disk is full"):
            store.set_meta("more", "no")
        filler.unlink()
        store.set_meta("more", "yes")                # opened as usual now that there is room
        assert not store.snapshot and store.get_meta("more") == "yes"
    with closing(Store.open(path, read_only=True)) as store:
        assert store.get_meta("more") == "yes"


def test_commits_still_in_the_wal_are_never_hidden_by_a_snapshot(disk):
    """A `-wal` file left with commits in it (its writer died) and no `-shm` beside it: a
    snapshot of the file alone would miss those commits, so opening says the disk is full,
    in one line, instead; with room again everything is there."""
    path = disk / "p.duplens"
    Store.open(path, create=True).close()
    writer = ("import os, sqlite3, sys\n"
              "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
              "db.execute('PRAGMA wal_autocheckpoint=0')\n"
              "db.execute(\"INSERT INTO meta (key, value) VALUES ('late', 'commit')\")\n"
              "os._exit(0)\n")   # no close: the commit stays in the -wal file
    subprocess.run([sys.executable, "-c", writer, str(path)], check=True)
    os.unlink(f"{path}-shm")
    assert os.path.getsize(f"{path}-wal") > 0
    filler = fill_completely(disk)
    with pytest.raises(DiskFull, match=f"^{path.name}: the disk is full"):
        Store.open(path)
    filler.unlink()
    with closing(Store.open(path)) as store:
        assert store.get_meta("late") == "commit"
