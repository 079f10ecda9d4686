"""`duplens copy`: a project to the private PostgreSQL server and back, compared table by
table, row by row, with its model version's folder file by file (real processes)."""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from devtools.postgres_server import ANALYST_PASSWORD
from engine.project import Project
from engine.review.history import ReviewHistory
from engine.store.database import Store
from engine.store.folder_blobs import FOLDER_BLOB
from engine.store.schema import metadata
from engine.training.version_folders import model_folder
from tests.engine.training.test_project_versions import QUERY, QUICK, make_project

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, code: int = 0) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "engine.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          timeout=300)
    assert proc.returncode == code, proc.stderr
    return proc


def tables(location) -> dict[str, list[tuple]]:
    """Every row of every table, in primary-key order."""
    store = Store.open(location, read_only=True)
    try:
        with store.read() as conn:
            return {t.name: [tuple(r) for r in conn.execute(
                select(t).order_by(*t.primary_key.columns))] for t in metadata.sorted_tables}
    finally:
        store.close()


@pytest.fixture(scope="module")
def original(tmp_path_factory, encoder):
    """A reviewed file project: labels, a canonical choice, a neighbour graph, and a
    fine-tuned version (active) with its own embeddings and index."""
    path = tmp_path_factory.mktemp("copy") / "questions.duplens"
    project = make_project(path, encoder)
    clusters = project.clusters.cut(0.75)
    ReviewHistory(project.verdicts).set_canonical(clusters[0], clusters[0].members[-1].item_id)
    version = project.versions.finetune(options=QUICK).version_id
    project.versions.activate(version)
    project.clusters.cut(0.75)              # the version's graph, stored
    hits = [(h.id, round(h.score, 6)) for h in project.search(QUERY, 5)]
    project.close()
    return path, hits


def test_a_project_goes_to_a_server_and_back_exactly(original, postgres_url, tmp_path):
    path, hits = original
    proc = cli("copy", str(path), postgres_url)
    assert "copied 48 rows" in proc.stderr
    assert ANALYST_PASSWORD not in proc.stderr and "@" in proc.stderr  # no password shown
    on_server = tables(postgres_url)
    before = tables(path)
    folder_blobs = {r[0] for r in on_server["blobs"] if r[0].startswith(FOLDER_BLOB)}
    assert len(folder_blobs) == 1                  # the version's folder travelled along
    on_server["blobs"] = [r for r in on_server["blobs"] if r[0] not in folder_blobs]
    assert on_server == before

    back = tmp_path / "back.duplens"
    cli("copy", postgres_url, str(back))
    after = tables(back)
    # The version's folder now lives beside the new file, and its row says so.
    moved = {r[0]: r[2] for r in after["models"]}
    assert {r[0]: r[2] for r in before["models"]} != moved
    for name in ("models",):
        strip = [(r[:2] + r[3:]) for r in after[name]], [(r[:2] + r[3:]) for r in before[name]]
        assert strip[0] == strip[1]
        after.pop(name), before.pop(name)
    assert after == before
    version_id, location = next((r[0], r[2]) for r in tables(back)["models"] if r[6])
    old = model_folder(path, dict((r[0], r[2]) for r in tables(path)["models"])[version_id])
    new = model_folder(back, location)
    assert new.parent.name == "back.duplens.models"
    comparison = filecmp.dircmp(old, new)
    assert not comparison.left_only and not comparison.right_only and not comparison.diff_files
    # The copy serves as the original did: the fine-tuned version, its index, its answers.
    with Project.open(back) as copy:
        assert [(h.id, round(h.score, 6)) for h in copy.search(QUERY, 5)] == hits


def test_copying_into_a_project_with_rows_is_refused_untouched(original, tmp_path):
    path, _ = original
    other = tmp_path / "other.duplens"
    cli("copy", str(path), str(other))
    before = tables(other)
    proc = cli("copy", str(path), str(other), code=2)
    assert "already holds a project" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert tables(other) == before


def test_a_project_of_an_older_duplens_is_upgraded_then_copied(original, tmp_path):
    """Every other command upgrades an old project as it opens it; a copy does too, says
    so, and copies what the upgrade made."""
    from engine.store.migrations import SCHEMA_VERSION
    from tests.engine.store.stored_texts import saved_at_schema

    path, hits = original
    old = tmp_path / "old.duplens"
    cli("copy", str(path), str(old))
    saved_at_schema(old, 10)

    new = tmp_path / "new.duplens"
    proc = cli("copy", str(old), str(new))
    said = "old.duplens was saved by an older Duplens (schema 10); upgrading it first"
    assert said in proc.stderr
    upgraded, copied = tables(old), tables(new)
    assert ("schema_version", str(SCHEMA_VERSION)) in upgraded["meta"]
    assert {k: v for k, v in copied.items() if k != "models"} == {
        k: v for k, v in upgraded.items() if k != "models"}
    with Project.open(new) as copy:
        assert [(h.id, round(h.score, 6)) for h in copy.search(QUERY, 5)] == hits


def test_a_version_served_by_its_fast_form_is_copied_with_it(tmp_path, encoder,
                                                              postgres_url):
    """The fast form's row shares its version's folder: a copy that moves the folder (to a
    server and back to a file) moves that row's location too, and the copy serves."""
    from engine.encoding.backend_choice import default_backend
    from engine.training.version_folders import sibling_of

    if default_backend("cpu") == "torch":
        pytest.skip("versions get no fast form on this CPU")
    path = tmp_path / "fast.duplens"
    project = make_project(path, encoder, backend=None)
    version = project.versions.finetune(options=QUICK).version_id
    project.versions.activate(version)
    assert sibling_of(project.model.row()) == version
    hits = [(h.id, round(h.score, 5)) for h in project.search(QUERY, 5)]
    project.close()

    cli("copy", str(path), postgres_url)
    back = tmp_path / "back.duplens"
    cli("copy", postgres_url, str(back))
    locations = {r[2] for r in tables(back)["models"] if r[0] != 1}
    assert locations == {"back.duplens.models/v2"}      # the version's and its form's
    with Project.open(back) as copy:
        assert sibling_of(copy.model.row()) == version
        assert [(h.id, round(h.score, 5)) for h in copy.search(QUERY, 5)] == hits
