"""Model versions on both kinds of project: fine-tuned, activated, opened again by another
analyst (a fresh cache on a server), exported and deleted; a server keeps each version's
folder in the database and every computer checks its unpacked copy (real PostgreSQL)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from engine.encoding.model_spec import default_model_path, resolve_model
from engine.errors import ModelError
from engine.project import Project
from engine.services import live_index
from engine.store.blobs import put_blob
from engine.store.embeddings import get_model_row
from engine.store.folder_blobs import folder_blob_name, stored_folder_ids, tar_folder
from engine.training import version_blobs
from tests.engine.training.test_project_versions import QUERY, QUICK, load, make_project

pytestmark = pytest.mark.slow
TEXTS = ["which city is australia's capital", "how do I reset my password"]


def weights_sha(folder: Path) -> str:
    return "sha256:" + hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()


def folder_blobs(project: Project) -> set[int]:
    with project.store.read() as conn:
        return stored_folder_ids(conn)


def test_a_version_is_trained_activated_reopened_exported_and_deleted(
        store_location, encoder, tmp_path, monkeypatch):
    project = make_project(store_location, encoder)
    on_server = not project.store.is_file
    try:
        report = project.versions.finetune(options=QUICK)
        version = report.version_id
        listed = {v["id"]: v for v in project.versions.list()}[version]
        assert listed["available"] and not listed["active"]
        assert listed["location"].endswith(f".models/v{version}")
        trained = Path(listed["folder"])
        assert weights_sha(trained) == resolve_model(str(trained)).fingerprint
        assert folder_blobs(project) == ({version} if on_server else set())
        expected = load(trained).encode(TEXTS, normalize_embeddings=True)

        other = Project.open(store_location)      # an analyst searching meanwhile
        default_hits = other.search(QUERY, 5)
        project.versions.activate(version)
        assert project.model.id() == version
        hits = [(h.text, round(h.score, 5)) for h in project.search(QUERY, 5)]
        assert hits != [(h.text, round(h.score, 5)) for h in default_hits]
        # The other process keeps its model and index, and is told once.
        monkeypatch.setattr(live_index, "FOLLOW_SECONDS", 0.0)
        assert other.search(QUERY, 5) == default_hits
        other.search(QUERY, 5)
        told = [n for n in other.notices if "made model version" in n]
        assert told == [f"{other.store.name}: someone else made model version {version} the "
                        f"active one; searches here use version 1 until the project is "
                        f"opened again"]
        other.close()
    finally:
        project.close()

    # Another analyst: nothing unpacked on this computer yet.
    monkeypatch.setenv("DUPLENS_CACHE_DIR", str(tmp_path / "second-analyst-cache"))
    with Project.open(store_location) as again:
        assert again.model.id() == version
        served = again.model.encoder()
        assert served.spec.fingerprint == listed_fingerprint(again, version)
        np.testing.assert_allclose(served.encode(TEXTS), expected, atol=1e-5)
        assert [(h.text, round(h.score, 5)) for h in again.search(QUERY, 5)] == hits
        if on_server:
            assert Path(served.spec.location).is_relative_to(tmp_path / "second-analyst-cache")

        exported = again.versions.copy_out(version, tmp_path / "exported")
        np.testing.assert_allclose(load(exported).encode(TEXTS, normalize_embeddings=True),
                                   expected, atol=1e-5)

        with pytest.raises(Exception, match="active model"):
            again.versions.delete(version)
        again.versions.activate(report.parent_id)
        again.versions.delete(version)
        assert version not in {v["id"] for v in again.versions.list()}
        assert folder_blobs(again) == set()
        if on_server:
            assert not list(version_blobs.project_cache(again.store).glob(f"v{version}-*"))
        else:
            assert not trained.exists()


def listed_fingerprint(project: Project, version: int) -> str:
    with project.store.read() as conn:
        return get_model_row(conn, version)["fingerprint"]


def test_a_tampered_cached_folder_is_unpacked_again(postgres_url, encoder):
    with make_project(postgres_url, encoder) as project:
        version = project.versions.finetune(options=QUICK).version_id
        project.versions.activate(version)
        row = next(v for v in project.versions.list() if v["id"] == version)
        cached = Path(row["folder"])
        good = weights_sha(cached)
        weights = bytearray((cached / "model.safetensors").read_bytes())
        weights[-1] ^= 0xFF                      # the last weight's last byte changed
        (cached / "model.safetensors").write_bytes(bytes(weights))
        assert weights_sha(cached) != good

    with Project.open(postgres_url) as again:
        served = again.model.encoder()          # loads from the cache: checked first
        assert served.spec.fingerprint == good and weights_sha(cached) == good
        # A blob that does not hold what its row recorded is refused, never loaded.
        with again.store.write() as conn:
            put_blob(conn, folder_blob_name(version), tar_folder(default_model_path()))
        version_blobs.forget(again.store, version)
        model_row = {"id": version, "name": row["name"], "fingerprint": good}
        with pytest.raises(ModelError, match="does not hold the weights"):
            version_blobs.version_folder(again.store, model_row)
        assert not list(version_blobs.project_cache(again.store).glob(f"v{version}-*"))


def test_a_server_project_uses_no_model_from_one_analysts_disk(postgres_url, encoder,
                                                              tmp_path):
    from engine.encoding.encoder import SentenceEncoder
    from engine.encoding.model_spec import load_model

    folder = tmp_path / "mine"
    encoder.model.save(str(folder))
    (folder / "extra.txt").write_text("a different folder, the same weights")
    spec = resolve_model(str(folder))
    mine = SentenceEncoder(load_model(spec, "cpu"), spec, "cpu", 32)
    with Project.open(postgres_url, create=True) as project, \
            pytest.raises(ModelError, match="bundled model or versions fine-tuned"):
        project.model.attach(mine, is_default=False)
