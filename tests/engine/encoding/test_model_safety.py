"""Loading a model never runs code the model brings: no pickled weights, no classes of its
own, for folders and for hub models alike; hub models come from the cache when they can."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import offline
from engine.encoding.hub import hub_folder
from engine.encoding.loading import load_encoder
from engine.encoding.model_spec import resolve_model
from engine.errors import ModelError
from tests.model_folders import custom_module, model_copy, pickle_only, rewrite_json

HUB_NAME = "someone/their-model"


def test_a_folder_with_only_pickled_weights_is_refused(tmp_path):
    folder = pickle_only(tmp_path / "pickled")
    with pytest.raises(ModelError) as caught:
        resolve_model(str(folder))
    assert str(caught.value) == (f"model folder {folder} has no safetensors weights, only "
                                 f"pytorch_model.bin; Duplens loads only safetensors (no "
                                 f"pickled code)")


def test_pickles_beside_safetensors_are_left_unread(tmp_path):
    """Checkpoints often carry training_args.bin; with use_safetensors the loader never
    opens it, so the folder is fine."""
    folder = model_copy(tmp_path / "model")
    (folder / "training_args.bin").write_bytes(b"\x80\x04.")
    assert resolve_model(str(folder)).is_local


def test_a_module_with_only_pickled_weights_is_refused(tmp_path):
    folder = model_copy(tmp_path / "model")
    rewrite_json(folder / "modules.json", lambda m: [*m, {
        "idx": 3, "name": "3", "path": "3_Dense",
        "type": "sentence_transformers.models.Dense"}])
    (folder / "3_Dense").mkdir()
    (folder / "3_Dense" / "config.json").write_text('{"in_features": 384}', "utf-8")
    (folder / "3_Dense" / "pytorch_model.bin").write_bytes(b"\x80\x04.")
    with pytest.raises(ModelError, match=r"no safetensors weights \(3_Dense\), only "
                                         r"pytorch_model.bin"):
        resolve_model(str(folder))


def test_a_folder_without_any_weights_is_refused(tmp_path):
    folder = model_copy(tmp_path / "model", weights=False)
    with pytest.raises(ModelError, match="has no safetensors weights; Duplens loads only"):
        resolve_model(str(folder))


def test_a_module_class_of_its_own_is_refused_and_never_imported(tmp_path, monkeypatch):
    """sentence-transformers 6.2 refuses it too, but only after loading the transformer;
    Duplens refuses before reading anything, with the class named."""
    marker = tmp_path / "ran"
    folder = custom_module(tmp_path / "custom", marker)
    monkeypatch.syspath_prepend(str(folder))   # even importable, it must not be imported
    with pytest.raises(ModelError) as caught:
        load_encoder(str(folder), device="cpu")
    assert str(caught.value) == (f"model folder {folder} asks to run its own code "
                                 f"(modules.json names 'their_pooling.Pooling'); Duplens "
                                 f"refuses such models")
    assert not marker.exists()


def test_a_config_asking_for_its_own_modelling_code_is_refused(tmp_path):
    folder = model_copy(tmp_path / "model")
    rewrite_json(folder / "config.json", lambda c: {
        **c, "auto_map": {"AutoModel": "modeling_theirs.TheirModel"}})
    with pytest.raises(ModelError, match=r"asks to run its own code \(config.json has an "
                                         r"auto_map for modeling_theirs.TheirModel\)"):
        resolve_model(str(folder))


def test_a_router_naming_a_class_of_its_own_is_refused(tmp_path):
    folder = model_copy(tmp_path / "model")
    (folder / "router_config.json").write_text(
        '{"types": {"query_0": "their_router.Module"}}', "utf-8")
    with pytest.raises(ModelError, match="router_config.json names 'their_router.Module'"):
        resolve_model(str(folder))


def test_a_module_path_outside_the_folder_is_refused(tmp_path):
    folder = model_copy(tmp_path / "model")
    rewrite_json(folder / "modules.json", lambda m: [
        {**m[0]}, {**m[1], "path": "../elsewhere"}])
    with pytest.raises(ModelError, match="modules.json names '../elsewhere', outside"):
        resolve_model(str(folder))


def fake_hub_cache(cache: Path, name: str, fill) -> Path:
    """The Hugging Face Hub cache layout for `name` at one commit, its files made by
    `fill(snapshot_folder)`: what a finished download leaves."""
    repo = cache / ("models--" + name.replace("/", "--"))
    commit = "0123456789abcdef0123456789abcdef01234567"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    return fill(repo / "snapshots" / commit)


@pytest.fixture
def hub_cache(tmp_path, monkeypatch) -> Path:
    """An empty hub cache of this test, and the Hub off as a user's HF_HUB_OFFLINE=1
    would have it: nothing here may reach the network."""
    monkeypatch.setenv("SENTENCE_TRANSFORMERS_HOME", str(tmp_path / "hub"))
    monkeypatch.setattr(offline, "_USER_HUB_OFFLINE", "1")
    return tmp_path / "hub"


@pytest.mark.slow
def test_a_hub_model_in_the_cache_loads_from_it_without_the_network(hub_cache):
    snapshot = fake_hub_cache(hub_cache, HUB_NAME, model_copy)
    assert hub_folder(HUB_NAME) == snapshot
    encoder = load_encoder(HUB_NAME, device="cpu")
    assert encoder.spec.fingerprint == f"hub:{HUB_NAME}" and not encoder.spec.is_local
    assert encoder.encode(["Why do cats purr?"]).shape == (1, 384)


def test_a_hub_model_with_only_pickled_weights_is_refused(hub_cache):
    snapshot = fake_hub_cache(hub_cache, HUB_NAME, pickle_only)
    with pytest.raises(ModelError, match=f"model folder {HUB_NAME} has no safetensors "
                                         f"weights, only pytorch_model.bin"):
        load_encoder(HUB_NAME, device="cpu")
    assert snapshot.is_dir()


def test_a_hub_model_not_in_the_cache_needs_the_network_the_user_switched_off(hub_cache):
    with pytest.raises(ModelError, match=f"{HUB_NAME}: cannot download it from the Hugging "
                                         f"Face Hub \\(hub models need a network connection "
                                         f"the first time\\)"):
        load_encoder(HUB_NAME, device="cpu")


def test_the_hub_is_offline_except_while_a_named_model_downloads(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(offline, "_USER_HUB_OFFLINE", None)  # the user set nothing
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)   # as engine.offline leaves it
    with offline.hub_access():
        assert constants.HF_HUB_OFFLINE is False
    assert constants.HF_HUB_OFFLINE is True
    monkeypatch.setattr(offline, "_USER_HUB_OFFLINE", "1")  # the user said offline
    with offline.hub_access():
        assert constants.HF_HUB_OFFLINE is True
