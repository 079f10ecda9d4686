"""A fine-tuning run's second opinion kept as a version beside its version (issue 45):
registered with it in one transaction, listed as its second opinion, copied out, deleted
with it or not at all, never activated, read from safetensors only.

These tests stand folders of random bytes in for trained models (no model is loaded: quick);
tests/engine/training/test_second_opinion.py trains and loads a real judge."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from engine.errors import InputError, ModelError
from engine.project import Project
from engine.store import version_rows
from engine.training import version_folders
from engine.training.ap_change import BETTER, WORSE, APChange, ap_change
from engine.training.held_out import PairMetrics
from engine.training.judge_versions import (
    KeptJudge,
    check_judge_folder,
    judge_to_keep,
    load_judge,
    offered,
)
from engine.training.second_opinion import SecondOpinion
from engine.training.version_folders import VERSION_FILE, register_version


def fake_model(folder: Path, kind: str = "SentenceTransformer") -> Path:
    """A folder `resolve_model` accepts: a config naming its kind, and weights of its own."""
    folder.mkdir(parents=True)
    (folder / "config_sentence_transformers.json").write_text(
        json.dumps({"model_type": kind}), encoding="utf-8")
    (folder / "model.safetensors").write_bytes(os.urandom(64))
    return folder


def fingerprint(folder: Path) -> str:
    from engine.encoding.model_spec import resolve_model

    return resolve_model(str(folder)).fingerprint


def judge_of(folder: Path, judge_ap: float = 90.0, version_ap: float = 80.0) -> KeptJudge:
    """A judge whose held-out pairs showed it better than its version when its AP is higher
    (the interval's conclusion is what `offered` reads)."""
    metrics = {"average_precision": judge_ap, "version_average_precision": version_ap,
               "version_ap_change": {"conclusion": BETTER if judge_ap > version_ap
                                     else WORSE}}
    return KeptJudge(folder, fingerprint(folder), metrics, {"kind": "second opinion"}, 128)


def add_version(project: Project, judge: bool = True, parent_id: int | None = None,
                **judge_aps) -> int:
    """Register a fake version, and with `judge` a fake judge beside it, as a run does from
    its staging folder; the version's id."""
    staging = version_folders.new_staging_folder(project.store)
    trained = fake_model(staging / "model")
    kept = judge_of(fake_model(staging / "judge", "CrossEncoder"), **judge_aps) \
        if judge else None
    try:
        return register_version(project.store, trained, name_root="base",
                                parent_id=parent_id, objective="contrastive", metrics={},
                                record={}, dim=8, max_seq_length=64, judge=kept)
    finally:
        shutil.rmtree(staging)


@pytest.fixture
def project(tmp_path):
    opened = Project.open(tmp_path / "q.duplens", create=True)
    yield opened
    opened.close()


def models_folder(project: Project) -> Path:
    return version_folders.models_folder(project.path)


def row_ids(project: Project) -> list[int]:
    from engine.store.embeddings import list_models

    with project.store.read() as conn:
        return [r["id"] for r in list_models(conn)]


def test_the_judge_is_stored_beside_its_version_and_listed_as_its_second_opinion(
        project, tmp_path):
    version = add_version(project)
    assert version == 1 and row_ids(project) == [1, 2]
    assert sorted(p.name for p in models_folder(project).iterdir()) == ["v1", "v2"]
    record = json.loads((models_folder(project) / "v2" / VERSION_FILE).read_text("utf-8"))
    assert record == {"version": 2, "second_opinion_of": 1, "kind": "second opinion"}
    listed = project.versions.list()
    assert [v["id"] for v in listed] == [1]   # the judge is no model search could use
    judge = listed[0]["second_opinion"]
    assert judge["id"] == 2 and judge["name"] == "base v1 second opinion"
    assert (judge["average_precision"], judge["version_average_precision"]) == (90.0, 80.0)
    assert judge["offered"] and judge["available"]
    assert Path(judge["folder"]) == models_folder(project) / "v2"
    assert project.versions.judge_for(1) == models_folder(project) / "v2"
    assert project.versions.judge_for(2) is None   # a judge has no judge
    with pytest.raises(InputError, match="no model version 7"):
        project.versions.judge_for(7)
    json.dumps(listed)   # `duplens models --json`


def test_a_run_without_a_second_opinion_stores_none(project, tmp_path):
    add_version(project, judge=False)
    assert row_ids(project) == [1]
    assert project.versions.list()[0]["second_opinion"] is None
    assert project.versions.judge_for(1) is None


def test_a_judge_cannot_be_activated(project, tmp_path):
    add_version(project)
    with pytest.raises(InputError) as refused:
        project.versions.activate(2)
    message = str(refused.value)
    assert "\n" not in message and "second opinion of version 1" in message
    assert "activate version 1 instead" in message


def test_the_judge_is_copied_out_like_any_version(project, tmp_path):
    add_version(project)
    out = project.versions.copy_out(2, tmp_path / "judge-out")
    assert (out / "model.safetensors").read_bytes() == \
        (models_folder(project) / "v2" / "model.safetensors").read_bytes()
    assert json.loads((out / VERSION_FILE).read_text("utf-8"))["second_opinion_of"] == 1


def test_deleting_a_version_deletes_its_judge_together(project, tmp_path):
    add_version(project)
    add_version(project)      # versions 3 and its judge 4 stay
    assert project.versions.delete(1) == "base v1"
    assert row_ids(project) == [3, 4]
    assert sorted(p.name for p in models_folder(project).iterdir()) == ["v3", "v4"]
    assert project.versions.list()[0]["second_opinion"]["id"] == 4


def test_a_failed_delete_leaves_the_version_and_its_judge_whole(project, tmp_path,
                                                                monkeypatch):
    add_version(project)
    real = version_rows.delete_model

    def fail_on_the_version(conn, model_id, **kwargs):
        real(conn, model_id, **kwargs)    # the judge's row goes first...
        if model_id == 1:
            raise OSError("disk gone")     # ...and the version's fails: nothing may go

    monkeypatch.setattr(version_rows, "delete_model", fail_on_the_version)
    with pytest.raises(OSError, match="disk gone"):
        project.versions.delete(1)
    assert row_ids(project) == [1, 2]
    assert sorted(p.name for p in models_folder(project).iterdir()) == ["v1", "v2"]
    assert (models_folder(project) / "v2" / "model.safetensors").is_file()
    assert project.versions.judge_for(1) == models_folder(project) / "v2"


def test_the_judge_alone_can_be_deleted(project, tmp_path):
    add_version(project)
    project.versions.delete(2)
    assert row_ids(project) == [1]
    assert project.versions.list()[0]["second_opinion"] is None
    assert sorted(p.name for p in models_folder(project).iterdir()) == ["v1"]


def test_registering_fails_whole(project, tmp_path):
    """A judge whose weights the project holds already fails the pair: no row, no folder."""
    add_version(project)
    staging = version_folders.new_staging_folder(project.store)
    trained = fake_model(staging / "model")
    judge = fake_model(staging / "judge", "CrossEncoder")
    (judge / "model.safetensors").write_bytes(
        (models_folder(project) / "v2" / "model.safetensors").read_bytes())
    with pytest.raises(ModelError, match="weights are version 2's"):
        register_version(project.store, trained, name_root="base", parent_id=None,
                         objective="contrastive", metrics={}, record={}, dim=8,
                         max_seq_length=64, judge=judge_of(judge))
    shutil.rmtree(staging)
    assert row_ids(project) == [1, 2]
    assert sorted(p.name for p in models_folder(project).iterdir()) == ["v1", "v2"]


def test_a_judge_that_cannot_be_recorded_takes_its_version_with_it(project, monkeypatch):
    """The version's folder and row are in place when the judge's row fails: both go."""
    real = version_rows.add_model_version

    def fail_on_the_judge(conn, model_id, **values):
        if values.get("judge_of") is not None:
            raise OSError("disk gone")
        real(conn, model_id, **values)

    monkeypatch.setattr(version_rows, "add_model_version", fail_on_the_judge)
    with pytest.raises(OSError, match="disk gone"):
        add_version(project)
    assert row_ids(project) == []
    assert [p.name for p in models_folder(project).iterdir()] == []


def test_a_judge_is_offered_only_where_the_held_out_pairs_show_it_better(project, tmp_path):
    add_version(project, judge_ap=70.0, version_ap=80.0)
    assert not project.versions.list()[0]["second_opinion"]["offered"]
    # A higher AP alone is not enough: the interval must lie above 0.
    rng = np.random.default_rng(1)
    labels = rng.random(60) < 0.4
    version = rng.random(60) + 0.3 * labels
    close = version + rng.normal(0, 0.1, 60) + 0.1 * labels   # 3 points up, on 60 pairs
    clear = version + 2.0 * labels                             # every duplicate first
    for judge_scores, shown in [(close, False), (clear, True)]:
        versus = ap_change(version, judge_scores, labels)
        metrics = {"average_precision": versus.after, "version_average_precision":
                   versus.before, "version_ap_change": versus.as_dict()}
        assert offered(metrics) is shown
        assert versus.after > versus.before + 1
    # A judge kept before the interval was stored is not offered, whatever its AP.
    assert not offered({"average_precision": 99.0, "version_average_precision": 80.0})


def test_scores_are_asked_only_of_an_offered_judge_of_the_active_version(project,
                                                                         tmp_path):
    add_version(project)
    # No active model (nor a judge of it): nothing is offered, nothing is loaded.
    assert project.versions.second_opinion() is None
    with pytest.raises(InputError, match="no second opinion"):
        project.versions.second_opinion_scores([("a", "b")])


@pytest.mark.parametrize("pickled", ["pytorch_model.bin", "sub/training_args.bin",
                                     "weights.pt", "state.pkl"])
def test_a_judge_folder_holding_a_pickle_is_refused_before_loading(tmp_path, pickled):
    folder = fake_model(tmp_path / "judge", "CrossEncoder")
    (folder / pickled).parent.mkdir(exist_ok=True)
    (folder / pickled).write_bytes(b"\x80\x04pickled")
    with pytest.raises(ModelError, match="safetensors only"):
        check_judge_folder(folder)
    with pytest.raises(ModelError, match="safetensors only"):
        load_judge(folder, "cpu")


def test_a_judge_folder_without_safetensors_is_refused(tmp_path):
    folder = fake_model(tmp_path / "judge", "CrossEncoder")
    (folder / "model.safetensors").unlink()
    with pytest.raises(ModelError, match="no safetensors"):
        check_judge_folder(folder)


def opinion(folder: Path | None) -> SecondOpinion:
    metrics = PairMetrics(91.0, 85.0, 0.5, 80.0, 90.0, 10, 4, [], None)
    return SecondOpinion(metrics, 70.0, 20, 3, 1.5, "cpu", 0.8, 0.15, 30, 4, [], folder, 256)


def versus_version() -> APChange:
    """A judge's AP less its version's, on 200 pairs where it ranks every duplicate first."""
    rng = np.random.default_rng(2)
    labels = rng.random(200) < 0.4
    version = rng.random(200) + 0.5 * labels
    return ap_change(version, version + 2.0 * labels, labels)


def test_what_a_run_keeps_of_its_judge(project, tmp_path):
    folder = fake_model(tmp_path / "judge", "CrossEncoder")
    versus = versus_version()
    marked, kept = judge_to_keep(project.store, opinion(folder), versus)
    assert marked.kept and marked.as_dict()["judge"]["kept"] is True
    assert marked.versus_version == versus
    assert marked.as_dict()["judge"]["versus_version"] == versus.as_dict()
    assert kept is not None and kept.folder == folder and kept.max_seq_length == 256
    assert kept.metrics["average_precision"] == 91.0
    assert kept.metrics["version_average_precision"] == round(versus.before, 4)
    assert kept.metrics["version_ap_change"] == versus.as_dict()
    assert kept.metrics["parent_average_precision"] == 70.0
    assert offered(kept.metrics)
    assert "kept as version 5" in replace(marked, kept_as=5).note

    missing, none = judge_to_keep(project.store, opinion(None), versus)
    assert none is None and not missing.kept and "no judge folder" in missing.note
    assert missing.as_dict()["judge"]["kept"] is False


def test_a_judge_the_project_keeps_already_is_not_kept_twice(project, tmp_path):
    add_version(project)
    folder = fake_model(tmp_path / "judge", "CrossEncoder")
    (folder / "model.safetensors").write_bytes(
        (models_folder(project) / "v2" / "model.safetensors").read_bytes())
    marked, kept = judge_to_keep(project.store, opinion(folder), versus_version())
    assert kept is None and not marked.kept
    assert "the judge was not kept: it is the same judge as version 2" in marked.note


def test_on_either_store_the_pair_is_kept_found_and_deleted_together(store_location):
    """A server keeps both folders as blobs, each computer unpacks the judge when asked
    (`judge_for`), and deleting the version removes both rows and both blobs."""
    from engine.store.embeddings import get_or_add_model
    from engine.store.folder_blobs import stored_folder_ids

    project = Project.open(store_location, create=True)
    try:
        with project.store.write() as conn:   # the model the run started from
            base = get_or_add_model(conn, name="base", location="default",
                                    fingerprint="sha256:00", dim=8, max_seq_length=64)
        version = add_version(project, parent_id=base)
        with project.store.read() as conn:
            blobs = stored_folder_ids(conn)
        assert blobs == (set() if project.store.is_file else {version, version + 1})
        folder = project.versions.judge_for(version)
        assert folder is not None and (folder / "model.safetensors").is_file()
        assert json.loads((folder / VERSION_FILE).read_text("utf-8"))["version"] == version + 1
        project.versions.delete(version)
        assert row_ids(project) == [base]
        with project.store.read() as conn:
            assert stored_folder_ids(conn) == set()
        assert not folder.exists()
    finally:
        project.close()


def test_a_copied_project_keeps_the_judge_beside_its_version(tmp_path):
    """`duplens copy` carries the judge's folder as it carries its version's (its parent is
    the run's, so it is one of the project's own versions)."""
    from engine.copy_project import copy_project
    from engine.store.embeddings import get_or_add_model

    with Project.open(tmp_path / "q.duplens", create=True) as project:
        with project.store.write() as conn:
            base = get_or_add_model(conn, name="base", location="default",
                                    fingerprint="sha256:00", dim=8, max_seq_length=64)
        version = add_version(project, parent_id=base)
    copy_project(tmp_path / "q.duplens", tmp_path / "copy.duplens")
    with Project.open(tmp_path / "copy.duplens") as copied:
        folder = copied.versions.judge_for(version)
        assert folder == tmp_path / "copy.duplens.models" / f"v{version + 1}"
        assert (folder / "model.safetensors").is_file()
        assert copied.versions.list()[1]["second_opinion"]["available"]
