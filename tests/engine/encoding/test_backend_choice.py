"""Choosing a backend never swaps the project's model or its embeddings behind the user's
back: opening keeps what the project was encoded with, reloading keeps the active version,
and a version's folder is recorded relative to the project wherever it is loaded from."""

from __future__ import annotations

import torch

from engine.encoding.model_spec import load_model, resolve_model
from engine.project import Project
from engine.training.version_folders import location_for, models_folder


def test_opening_with_a_quantised_preference_keeps_the_torch_embeddings(new_project, data_dir):
    project = new_project()
    project.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
    project.vectors.encode()
    before, encoded = project.model.row(), project.info()["encoded"]
    path = project.path
    project.close()

    reopened = Project.open(path)
    try:
        reopened.model.configure(device="cpu", backend="onnx-int8")
        encoder = reopened.model.encoder()   # torch serves the torch rows; no new model identity
        assert encoder.spec.backend == "torch"
        assert reopened.model.row()["id"] == before["id"]
        assert reopened.info()["encoded"] == encoded > 0
    finally:
        reopened.close()


def test_reloading_with_another_backend_keeps_a_fine_tuned_version_active(new_project):
    project = new_project()
    version = models_folder(project.path) / "v1"
    _save_changed_copy(version)
    project.model.configure(device="cpu")
    project.model.use(str(version))
    active = project.model.row()
    assert active["location"] == f"{project.path.name}.models/v1"

    project.model.reload("torch")
    assert project.model.row()["id"] == active["id"]
    assert project.model.preferences.backend == "torch"


def test_only_the_projects_own_versions_are_stored_relative(tmp_path):
    project_path = tmp_path / "q.duplens"
    inside = models_folder(project_path) / "v3"
    inside.mkdir(parents=True)
    assert location_for(project_path, str(inside)) == "q.duplens.models/v3"
    elsewhere = tmp_path / "my-model"
    elsewhere.mkdir()
    assert location_for(project_path, str(elsewhere)) == str(elsewhere)
    assert location_for(project_path, "org/some-model") == "org/some-model"


def _save_changed_copy(folder) -> None:
    """The default model with one bias nudged: other weights, so a model of its own (a
    stand-in for a fine-tuned version, without the minutes of training)."""
    model = load_model(resolve_model(None), "cpu")
    with torch.no_grad():
        next(p for n, p in model.named_parameters() if n.endswith("bias")).add_(1e-3)
    model.save(str(folder))


def test_torch_embeddings_are_served_by_an_exact_class_default_and_kept_otherwise(
        monkeypatch):
    """On a CPU whose default gives torch's embeddings (openvino, exact), a project with
    torch's embeddings is served by it under "auto"; a quantised default never serves them
    (it would mix two models' vectors), and a named preference is obeyed."""
    from engine.encoding import backend_choice, backends
    from tests.required import unavailable

    if backends.missing_modules(backends.BACKENDS["openvino"]):
        unavailable("OPENVINO", "openvino is not installed: pip install 'duplens[openvino]'")
    klass = backend_choice.cpu_class()
    monkeypatch.setattr(backends, "VENDOR_CLASS_DEFAULTS", {})   # the class's default alone
    monkeypatch.setitem(backends.CPU_CLASS_DEFAULTS, klass, "openvino")
    assert backend_choice.for_stored("sha256:abc", None, "cpu") == "openvino"
    assert backend_choice.for_stored("sha256:abc", "torch", "cpu") == "torch"
    assert backend_choice.for_stored("sha256:abc+openvino-int8", None, "cpu") == "openvino-int8"
    monkeypatch.setitem(backends.CPU_CLASS_DEFAULTS, klass, "openvino-int8")
    assert backend_choice.for_stored("sha256:abc", None, "cpu") == "torch"


def test_an_unmeasured_class_is_not_called_measured(monkeypatch):
    """arm64 and x86-64 without AVX2 keep torch, and the words say it was not measured."""
    from engine.encoding import backend_choice

    for klass in ("arm64", "older"):
        monkeypatch.setattr(backend_choice, "cpu_class", lambda klass=klass: klass)
        words = backend_choice.why_default("cpu")
        assert words.startswith("torch:") and "no default was measured" in words
    monkeypatch.setattr(backend_choice, "cpu_class", lambda: "avx2")
    assert "the measured default for an AVX2 CPU" in backend_choice.why_default("cpu")


def test_a_named_gpu_device_needs_no_torch_to_pick_the_stored_backend(monkeypatch):
    """`duplens info` on a project last used on CUDA must not resolve the device (that
    imports torch): a named device is taken as named."""
    from engine.encoding import backend_choice

    def resolve(_):
        raise AssertionError("pick_device called for a named device")
    monkeypatch.setattr(backend_choice, "pick_device", resolve)
    assert backend_choice.for_stored("sha256:abc", None, "cuda") == "torch"
