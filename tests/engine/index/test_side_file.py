"""The saved index's copy beside a project file (`index.side_file`): loaded straight when the
store's record says it is the saved index; anything else (truncated, restored from an old
copy, written into, missing, another process's) loads the blobs, gives the same answers,
and writes the file again. Real projects, the real encoder, real processes, a real full
tmpfs."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest
from sqlalchemy import select

from engine.copy_project import copy_project
from engine.errors import DiskFull
from engine.index.persist import load_saved
from engine.index.side_file import folder_for, record_key
from engine.project import Project
from engine.store import embeddings as embedding_store
from engine.store.database import Store
from engine.store.schema import indexes
from tests.engine.index.index_files import embed_texts
from tests.engine.store.project_checks import ROOT, fill, small_disk

QUERY = "how do I fix a flat tire"


def _open(path, encoder) -> Project:
    project = Project.open(path)
    project.model.attach(encoder, is_default=True)
    return project


def _answers(project) -> list[tuple[int, float]]:
    return [(h.id, round(h.score, 5)) for h in project.search(QUERY, k=5)]


def _side(path):
    (found,) = folder_for(path).glob("hnsw-*.bin")
    return found


def _assert_side_file_is_the_saved_index(path) -> None:
    """The file's bytes are the blob's (same sha256) and the record names this very file."""
    store = Store.open(path, read_only=True)
    try:
        with store.read() as conn:
            (model_id, sha256) = conn.execute(select(indexes.c.model_id, indexes.c.sha256)
                                              ).one()
        record = json.loads(store.get_meta(record_key(model_id)))
    finally:
        store.close()
    side = folder_for(path) / f"hnsw-{model_id}.bin"
    st = side.stat()
    assert hashlib.sha256(side.read_bytes()).hexdigest() == sha256 == record["sha256"]
    assert (record["size"], record["mtime_ns"], record["inode"]) == (
        st.st_size, st.st_mtime_ns, st.st_ino)
    assert [p.name for p in folder_for(path).iterdir()] == [side.name]  # no temporary left


def test_a_matching_side_file_is_loaded_instead_of_the_blobs(open_questions, encoder):
    expected, path = _answers(open_questions), open_questions.path
    open_questions.close()
    _assert_side_file_is_the_saved_index(path)
    with _open(path, encoder) as reopened:
        assert _answers(reopened) == expected
        assert reopened.vectors.index_source() == "side file"


def _truncate(side, _old) -> None:
    os.truncate(side, side.stat().st_size // 2)


def _restore_old_copy(side, old) -> None:
    shutil.copy2(old, side)   # as a backup tool would: the old bytes and the old mtime


def _write_into(side, _old) -> None:
    with side.open("r+b") as fh:
        fh.seek(side.stat().st_size // 2)
        fh.write(b"\xff" * 64)


def _delete(side, _old) -> None:
    side.unlink()


@pytest.mark.parametrize("spoil", [_truncate, _restore_old_copy, _write_into, _delete],
                         ids=["truncated", "old-copy-restored", "written-into", "missing"])
def test_a_side_file_that_is_not_the_saved_index_falls_back_to_the_blobs(
        open_questions, encoder, tmp_path, spoil):
    old = tmp_path / "old.bin"
    shutil.copy2(_side(open_questions.path), old)
    gone = open_questions.search(QUERY, k=1)[0]
    assert open_questions.rows.delete([gone.item_id]) == 1   # saved again: a newer side file
    expected, path = _answers(open_questions), open_questions.path
    assert gone.id not in [i for i, _ in expected]
    open_questions.close()
    spoil(_side(path), old)

    with _open(path, encoder) as reopened:
        assert _answers(reopened) == expected
        assert reopened.vectors.index_source() == "blobs"
    _assert_side_file_is_the_saved_index(path)   # written again by that open
    with _open(path, encoder) as again:
        assert _answers(again) == expected
        assert again.vectors.index_source() == "side file"


def test_a_project_copied_without_its_side_file_opens(open_questions, encoder, tmp_path):
    expected, path = _answers(open_questions), open_questions.path
    open_questions.close()
    plain, copied = tmp_path / "plain-copy.duplens", tmp_path / "copied.duplens"
    shutil.copy2(path, plain)                    # the file alone, as a user copies it
    copy_project(path, copied)                   # duplens copy
    for other in (plain, copied):
        assert not folder_for(other).exists()
        with _open(other, encoder) as project:
            assert _answers(project) == expected
            assert project.vectors.index_source() == "blobs"
        _assert_side_file_is_the_saved_index(other)


def test_a_read_only_open_uses_a_matching_side_file_and_writes_none(open_questions, tmp_path):
    path = open_questions.path
    open_questions.close()
    plain = tmp_path / "plain-copy.duplens"
    shutil.copy2(path, plain)
    for target, route in ((path, "side file"), (plain, "blobs")):
        store = Store.open(target, read_only=True)
        try:
            with store.read() as conn:
                model = embedding_store.list_models(conn)[0]
                loaded = load_saved(conn, model["id"], model["dim"])
        finally:
            store.close()
        assert loaded.route == route and loaded.pending is None and len(loaded.index) == 46
    assert not folder_for(plain).exists()


_SAVER = """
import sys
import numpy as np
from engine.index.hnsw import HnswIndex
from engine.index.persist import save_index
from engine.store.database import Store

path, model, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
store = Store.open(path)
rng = np.random.default_rng(seed)
for n in range(200, 208):
    vecs = rng.normal(size=(n, 16)).astype(np.float32)
    index = HnswIndex(16)
    index.add(np.arange(1, n + 1), vecs / np.linalg.norm(vecs, axis=1, keepdims=True))
    with store.write() as conn:
        save_index(conn, model, index, change_count=None)
store.close()
"""


def test_two_processes_saving_leave_a_side_file_that_agrees_with_the_store(tmp_path):
    path = tmp_path / "shared.duplens"
    store = Store.open(path, create=True)
    with store.write() as conn:
        model = embedding_store.get_or_add_model(conn, name="m", location="default",
                                              fingerprint="sha256:m", dim=16,
                                              max_seq_length=8)
        embed_texts(conn, model, range(1, 208), 16)   # the savers' labels are these texts
    store.close()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    savers = [subprocess.Popen([sys.executable, "-c", _SAVER, str(path), str(model), str(seed)],
                               cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
              for seed in (1, 2)]
    for saver in savers:
        _out, err = saver.communicate(timeout=300)
        assert saver.returncode == 0, err
    _assert_side_file_is_the_saved_index(path)
    store = Store.open(path, read_only=True)
    try:
        with store.read() as conn:
            loaded = load_saved(conn, model, 16)
    finally:
        store.close()
    assert loaded.route == "side file" and len(loaded.index) == 207


@pytest.mark.parametrize("leave", [0, 20_000, 60_000, 400_000],
                         ids=["nothing-saved", "side-file-dropped", "blob-only", "room"])
def test_a_full_disk_while_saving_keeps_the_project_and_its_side_file_right(
        tmp_path, data_dir, encoder, leave):
    """A row deletion saves the index; whichever write runs out of room first (the blob's
    pages or the side file), the project stays right: a side file left beside it is the
    saved index, no temporary file is left, and the reopened index holds the live rows.

    On this 20 MB tmpfs with the 83 kB test index (measured): 0 bytes left fails the
    deletion's own write (the old index and side file stay); 20 kB fails the save after the
    side file gave up (the old file is dropped, the save rolled back); 60 kB saves the blob
    without a side file; 400 kB saves both."""
    with small_disk(tmp_path / "disk") as disk:
        path = disk / "full.duplens"
        with Project.open(path, create=True) as project:
            project.model.attach(encoder, is_default=True)
            project.rows.import_table(data_dir / "questions.csv", ["question"])
            project.vectors.encode()
            gone = project.search(QUERY, k=1)[0]
            filler = fill(disk, leave)
            with contextlib.suppress(DiskFull):
                project.rows.delete([gone.item_id])
        filler.unlink()
        if any(folder_for(path).glob("*")):
            _assert_side_file_is_the_saved_index(path)
        with _open(path, encoder) as reopened:
            index = reopened.vectors.index()
            live = set(index.ids().tolist()) - index.deleted
            deleted = reopened.rows.count() == 47
            assert len(live) == (45 if deleted else 46)
            assert (gone.id in [h.id for h in reopened.search(QUERY, k=5)]) is not deleted
