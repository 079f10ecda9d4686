"""Opening a project from someone else never loads a model from elsewhere unasked, and never
runs code a model folder brings, even from the project's own `.models` folder.

The projects are made the way a sender's Duplens would leave them: through the real store,
with a model row naming a folder (or hub name) and that model active.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from engine import model_trust
from engine.encoding.encoder import SentenceEncoder
from engine.errors import ModelError, UntrustedModelLocation
from engine.project import Project
from engine.store import embeddings as embedding_store
from engine.store.database import Store
from engine.training.version_folders import model_source
from tests.model_folders import custom_module, model_copy, pickle_only

ROOT = Path(__file__).resolve().parents[2]
SOME_WEIGHTS = "sha256:" + "5" * 64


def their_project(path: Path, location: str, fingerprint: str = SOME_WEIGHTS) -> Path:
    """A project whose active model is recorded at `location`, as its sender left it."""
    store = Store.open(path, create=True)
    try:
        with store.write() as conn:
            model_id = embedding_store.get_or_add_model(
                conn, name="their model", location=location, fingerprint=fingerprint,
                dim=384, max_seq_length=256)
            store.set_meta("active_model_id", str(model_id), conn)
    finally:
        store.close()
    return path


def load_active_model(path: Path):
    with Project.open(path) as project:
        return project.model.encoder()


def test_pickled_weights_in_the_projects_own_folder_are_refused(tmp_path):
    pickle_only(tmp_path / "q.duplens.models" / "v2")
    project = their_project(tmp_path / "q.duplens", "q.duplens.models/v2")
    with pytest.raises(ModelError, match="q.duplens.models/v2 has no safetensors weights, "
                                         "only pytorch_model.bin; Duplens loads only "
                                         "safetensors"):
        load_active_model(project)


def test_a_class_of_its_own_in_the_projects_own_folder_is_refused_unrun(tmp_path):
    marker = tmp_path / "ran"
    custom_module(tmp_path / "q.duplens.models" / "v2", marker)
    project = their_project(tmp_path / "q.duplens", "q.duplens.models/v2")
    with pytest.raises(ModelError, match=r"asks to run its own code \(modules.json names "
                                         r"'their_pooling.Pooling'\); Duplens refuses"):
        load_active_model(project)
    assert not marker.exists()


def test_a_folder_outside_the_project_needs_consent_then_loads(tmp_path, encoder):
    elsewhere = model_copy(tmp_path / "downloads" / "their-model")
    project = their_project(tmp_path / "q.duplens", str(elsewhere),
                            fingerprint=encoder.spec.fingerprint)
    with pytest.raises(UntrustedModelLocation) as caught:
        load_active_model(project)
    error = caught.value
    assert error.project == project and error.location == str(elsewhere.resolve())
    assert not error.is_hub and "\n" not in str(error)
    assert str(error) == (f"q.duplens asks for the model folder {elsewhere.resolve()}, "
                          f"outside its own q.duplens.models folder; it is loaded only once "
                          f"you approve it")
    # What the window does once the user agrees:
    assert model_trust.approve(error.project, error.location)
    loaded = load_active_model(project)
    assert loaded.spec.location == str(elsewhere.resolve())
    assert model_trust.approved(project) == {str(elsewhere.resolve())}
    assert not model_trust.approved(tmp_path / "other.duplens")  # per project


def test_a_hub_name_needs_consent_and_downloads_nothing(tmp_path):
    project = their_project(tmp_path / "q.duplens", "someone/their-model", "hub:someone/x")
    with pytest.raises(UntrustedModelLocation) as caught:
        load_active_model(project)
    assert caught.value.is_hub and caught.value.location == "someone/their-model"
    assert "the hub model someone/their-model" in str(caught.value)


def test_a_link_in_the_models_folder_to_elsewhere_is_elsewhere(tmp_path):
    elsewhere = model_copy(tmp_path / "elsewhere")
    (tmp_path / "q.duplens.models").mkdir()
    (tmp_path / "q.duplens.models" / "v2").symlink_to(elsewhere)
    project = their_project(tmp_path / "q.duplens", "q.duplens.models/v2")
    with pytest.raises(UntrustedModelLocation) as caught:
        load_active_model(project)
    assert caught.value.location == str(elsewhere.resolve())


def test_a_relative_path_that_climbs_out_of_the_project_is_elsewhere(tmp_path):
    """It even ends like one of the project's own versions (`.models/v<N>`)."""
    model_copy(tmp_path / "elsewhere" / "x.models" / "v1")
    (tmp_path / "work").mkdir()
    project = their_project(tmp_path / "work" / "q.duplens", "../elsewhere/x.models/v1")
    with pytest.raises(UntrustedModelLocation):
        load_active_model(project)


def test_a_model_the_user_chose_is_approved_for_their_project(tmp_path, encoder):
    """Recording a chosen model in the project approves it for that project, so the user's
    own projects never ask; the same folder named by another project still does."""
    elsewhere = model_copy(tmp_path / "my-models" / "minilm")
    chosen = SentenceEncoder(encoder.model, replace(encoder.spec, location=str(elsewhere)),
                             "cpu")
    with Project.open(tmp_path / "mine.duplens", create=True) as project:
        project.model.attach(chosen, is_default=False)
        location = project.model.row()["location"]
    assert location == str(elsewhere)
    assert model_source(tmp_path / "mine.duplens", location) == str(elsewhere)
    theirs = their_project(tmp_path / "theirs.duplens", str(elsewhere))
    with pytest.raises(UntrustedModelLocation):
        model_source(theirs, str(elsewhere))


def test_the_default_and_the_projects_own_versions_need_no_consent(tmp_path):
    model_copy(tmp_path / "q.duplens.models" / "v2")
    project = their_project(tmp_path / "q.duplens", "q.duplens.models/v2")
    assert model_source(project, "default") is None
    assert model_source(project, "q.duplens.models/v2") == str(
        tmp_path / "q.duplens.models" / "v2")
    assert not model_trust.consent_file().exists() or not model_trust.approved(project)


def cli(*args: str, config: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DUPLENS_CONFIG_DIR": str(config)}
    return subprocess.run([sys.executable, "-m", "engine.cli", *args], capture_output=True,
                          text=True, env=env, timeout=300)


@pytest.mark.slow
def test_the_command_line_asks_for_the_flag_then_remembers(tmp_path, encoder):
    """A project made on another machine (its consents are not this user's): exit 2 with
    one line naming the folder and the flag; with the flag it searches, and remembers."""
    elsewhere = model_copy(tmp_path / "shared" / "minilm")
    sender = SentenceEncoder(encoder.model, replace(encoder.spec, location=str(elsewhere)),
                             "cpu")
    path = tmp_path / "theirs.duplens"
    with Project.open(path, create=True) as project:
        project.model.attach(sender, is_default=False)
        project.rows.import_table(ROOT / "tests" / "data" / "questions.csv", ["question"],
                             id_column="qid")
        project.vectors.encode()
    mine = tmp_path / "my-config"   # this user's config: no consent yet

    refused = cli("search", str(path), "learn python", "-k", "2", config=mine)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.strip().splitlines() == [
        f"duplens: theirs.duplens asks for the model folder {elsewhere.resolve()}, outside "
        f"its own theirs.duplens.models folder; it is loaded only once you approve it (run "
        f"again with --trust-model-location to load it)"]

    trusted = cli("search", str(path), "learn python", "-k", "2", "--trust-model-location",
                  config=mine)
    assert trusted.returncode == 0, trusted.stderr
    assert f"theirs.duplens: approved the model at {elsewhere.resolve()}" in trusted.stderr
    assert "[q1]" in trusted.stdout
    consents = json.loads((mine / model_trust.CONSENT_FILE).read_text("utf-8"))
    assert consents == {str(path.resolve()): [str(elsewhere.resolve())]}

    again = cli("search", str(path), "learn python", "-k", "2", config=mine)
    assert again.returncode == 0 and "[q1]" in again.stdout and "approved" not in again.stderr
