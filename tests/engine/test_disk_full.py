"""A full disk during an import, an encode, an index save or a fine-tuned model save: one
line naming the file and saying the disk is full (exit 2 from the CLI), and afterwards the
project opens with what it had, its index agreeing with its embeddings. On a real 20 MB
tmpfs (root only)."""

from __future__ import annotations

import pytest

from engine.errors import DiskFull
from engine.progress import CancelToken
from engine.project import Project
from tests.engine.store.project_checks import (
    assert_index_agrees,
    cli,
    fill,
    small_disk,
    split_questions,
    state,
)


@pytest.fixture
def disk(tmp_path):
    with small_disk(tmp_path / "disk") as folder:
        yield folder


@pytest.mark.slow
@pytest.mark.parametrize("leave", [0, 120_000], ids=["rows", "index-save"])
def test_cli_import_on_a_full_disk_says_so_and_keeps_the_project(disk, tmp_path, leave):
    """`leave` 0: the rows' own write fails; 120 kB: the rows and embeddings fit, the
    index save does not (measured on this 20 MB tmpfs)."""
    first, second = split_questions(tmp_path)
    project = disk / "full.duplens"
    done = cli("import", str(project), str(first), "--column", "question")
    assert done.wait(timeout=600) == 0, done.stderr.read()
    before = state(project)
    filler = fill(disk, leave)
    proc = cli("import", str(project), str(second), "--column", "question")
    _out, err = proc.communicate(timeout=600)
    assert proc.returncode == 2, err
    # the bars the import left open are closed first, so the message has a line of its own
    said = [line for line in err.splitlines() if "duplens:" in line]
    assert said == [f"duplens: {project.name}: the disk is full (no space left on device); "
                    f"free some space and run it again (nothing that was saved before is "
                    f"lost)"], err
    assert "Traceback" not in err
    filler.unlink()

    after = assert_index_agrees(project)
    assert after["rows"] >= before["rows"]
    with Project.open(project) as reopened:   # as the window or the next command opens it
        reopened.model.configure(device="cpu")    # its own model, as the command made it
        index = reopened.vectors.index()
        (model,) = after["models"].values()
        assert set(index.ids().tolist()) - index.deleted == model["embedded"]
    again = cli("import", str(project), str(second), "--column", "question")
    assert again.wait(timeout=600) == 0, again.stderr.read()
    final = assert_index_agrees(project)
    (model,) = final["models"].values()
    assert final["rows"] == 48 and model["indexed"] == model["embedded"]


def test_encode_in_the_window_on_a_full_disk_raises_disk_full(disk, data_dir, encoder):
    """The engine calls the window's import job makes: rows in, then encode and save."""
    project = disk / "window.duplens"
    with Project.open(project, create=True) as opened:
        opened.model.attach(encoder, is_default=True)
        opened.rows.import_table(data_dir / "questions.csv", ["question"])
        filler = fill(disk, 20_000)
        with pytest.raises(DiskFull, match=f"^{project.name}: the disk is full"):
            opened.vectors.encode()
    filler.unlink()
    assert_index_agrees(project)
    with Project.open(project) as reopened:
        assert reopened.rows.count() == 48
        reopened.model.attach(encoder, is_default=True)
        reopened.vectors.encode()   # resumes
    final = assert_index_agrees(project)
    (model,) = final["models"].values()
    assert model["indexed"] == model["embedded"] and len(model["embedded"]) == 46


def test_a_fine_tuned_model_that_does_not_fit_leaves_nothing_behind(disk, encoder):
    """The model (~90 MB) cannot fit on the 20 MB disk: the real ENOSPC from the weights'
    writer becomes `DiskFull` naming the folder, and no half-written folder stays."""
    from engine.training.trainer import save_model_folder

    target = disk / "models" / "v2"
    with pytest.raises(DiskFull, match="the disk is full"):
        save_model_folder(encoder.model, target, CancelToken())
    assert not target.exists()
    assert list((disk / "models").iterdir()) == []
