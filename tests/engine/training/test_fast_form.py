"""A version trained on a CPU whose default backend is a fast one gets that backend's form
right after training, checked on the project's own pairs and texts; "Use this model" then
encodes and serves with it; a form that fails its check leaves the version with torch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.encoding import backend_choice, gate_rules, model_threshold
from engine.encoding.backend_choice import default_backend
from engine.encoding.backends import AUTO, BACKENDS, split_fingerprint
from engine.encoding.loading import load_encoder
from engine.encoding.torch_free_encoder import TorchFreeEncoder
from engine.errors import InputError
from engine.project import Project
from engine.store import embeddings as embedding_store
from engine.training import fast_form
from engine.training.session import STAGE_SAVING
from engine.training.version_folders import SIBLING_KEY
from tests.engine.training.test_project_versions import QUERY, QUICK, load, make_project

pytestmark = pytest.mark.slow

FAST = default_backend("cpu")
needs_fast_default = pytest.mark.skipif(
    BACKENDS[FAST].exact, reason=f"this CPU's default backend, {FAST}, gives torch's "
                                 f"embeddings: versions are not converted")
TEXTS = ["How do I learn Python?", "What is the capital of Australia?"]


def model_rows(project: Project) -> dict[int, dict]:
    with project.store.read() as conn:
        return {r["id"]: r for r in embedding_store.list_models(conn)}


def count_embeddings(project: Project, model_id: int) -> int:
    with project.store.read() as conn:
        return embedding_store.count_embeddings(conn, model_id)


def test_only_a_cpu_whose_default_is_fast_converts_versions():
    assert backend_choice.for_trained_version("torch", "cpu") is None        # the user named torch
    assert backend_choice.for_trained_version("openvino", "cpu") is None     # or any backend
    expected = None if BACKENDS[FAST].exact else FAST   # torch, or AMD's exact OpenVINO
    assert backend_choice.for_trained_version(AUTO, "cpu") \
        == backend_choice.for_trained_version(None, "cpu") == expected


@needs_fast_default
def test_a_trained_version_is_converted_checked_and_serves_with_its_fast_form(
        store_location, encoder, tmp_path, monkeypatch):
    project = make_project(store_location, encoder, backend=None)
    try:
        events = []
        report = project.versions.finetune(options=QUICK, progress=events.append)
        version = report.version_id
        stages = list(dict.fromkeys(e.stage for e in events))
        assert stages[-2:] == [STAGE_SAVING, fast_form.STAGE_CONVERTING]

        check = report.fast_form
        assert check["backend"] == FAST and check["passed"] and check["failed"] == []
        assert check["torch_average_precision"] == pytest.approx(
            report.after.average_precision)
        assert check["torch_average_precision"] - check["average_precision"] <= 0.5
        # Judged on the cut at the version's own threshold and on the held-out duplicates'
        # partners (tests/engine/training/test_fast_form_rules.py has each rule failing).
        rows = model_rows(project)
        assert check["threshold"] == model_threshold.for_row(rows[version], rows.get).value
        assert check["cut_f1"] >= gate_rules.MIN_CUT_F1 and check["texts"] == 46
        assert check["cut_pairs"] > 0 and check["torch_cut_pairs"] > 0
        held_out_duplicates = sum(p.is_duplicate for p in report.split.held_out)
        assert check["partner_pairs"] == held_out_duplicates > 0 and check["not_judged"] == []
        assert check["torch_partner_top5"] - check["partner_top5"] <= gate_rules.PARTNER_LOSS
        assert 0 < check["recall_at_10"] <= 1 and check["queries"] == 46   # reported only

        siblings = [r for r in rows.values() if (r["metrics"] or {}).get(SIBLING_KEY)]
        assert len(siblings) == 1
        sibling = siblings[0]
        assert sibling["metrics"][SIBLING_KEY] == version and sibling["parent_id"] is None
        assert sibling["location"] == rows[version]["location"]
        assert split_fingerprint(sibling["fingerprint"]) == (rows[version]["fingerprint"], FAST)
        assert rows[version]["metrics"]["fast_form"] == check

        # One entry per version: the form is part of its version, not listed apart.
        listed = {v["id"]: v for v in project.versions.list()}
        assert sorted(listed) == [1, version]
        assert listed[version]["backend"] == FAST and not listed[version]["active"]
        assert listed[version]["encoded"] == 0

        # "Use this model": every text encoded by the fast form, which then serves.
        activated = project.versions.activate(version)
        assert activated.activated and activated.model_id == sibling["id"]
        assert activated.encoded == 46 == count_embeddings(project, sibling["id"])
        assert count_embeddings(project, version) == 0
        served = project.model.encoder()
        assert isinstance(served, TorchFreeEncoder)   # torch-free, as the bundled model's form
        assert served.spec.fingerprint == sibling["fingerprint"]
        folder = Path(listed[version]["folder"])
        own = load_encoder(str(folder), device="cpu", backend=FAST)
        q, *texts = own.encode([QUERY, *[h.text for h in project.search(QUERY, 5)]])
        hits = project.search(QUERY, 5)
        assert [h.score for h in hits] == pytest.approx([float(t @ q) for t in texts],
                                                        abs=1e-4)
        torch_vectors = load(folder).encode([QUERY, *[h.text for h in hits]],
                                            normalize_embeddings=True)
        assert [h.score for h in hits] == pytest.approx(
            [float(t @ torch_vectors[0]) for t in torch_vectors[1:]], abs=0.02)
        listed = {v["id"]: v for v in project.versions.list()}
        assert listed[version]["active"] and listed[version]["encoded"] == 46
        assert project.versions.activate(version).already_active

        # A version trained from it comes from the version, and is numbered as one.
        child = project.versions.finetune(options=QUICK)
        assert child.parent_id == version
        assert child.name == f"all-MiniLM-L6-v2 v{child.version_id}"
        assert child.fast_form["passed"]
    finally:
        project.close()

    # Opened again on another computer (its own cache): the form is made there and serves.
    monkeypatch.setenv("DUPLENS_CACHE_DIR", str(tmp_path / "second-analyst-cache"))
    with Project.open(store_location) as again:
        assert again.model.id() == sibling["id"]
        assert again.model.encoder().spec.fingerprint == sibling["fingerprint"]
        assert [(h.text, round(h.score, 4)) for h in again.search(QUERY, 5)] == \
            [(h.text, round(h.score, 4)) for h in hits]

        # Deleting: never the active version (its form serves); the form goes with it.
        with pytest.raises(InputError, match="is the active model"):
            again.versions.delete(version)
        again.versions.activate(1)
        with pytest.raises(InputError, match="goes when that version is deleted"):
            again.versions.delete(sibling["id"])
        again.versions.delete(child.version_id)
        again.versions.delete(version)
        assert sorted(model_rows(again)) == [1]
        assert count_embeddings(again, sibling["id"]) == 0


@needs_fast_default
def test_a_fast_form_that_fails_its_check_leaves_the_version_with_torch(
        tmp_path, encoder, monkeypatch):
    # No form can lose less than nothing: every check fails, on the real figures.
    monkeypatch.setattr(gate_rules, "PAIR_AP_LOSS", -1.0)
    project = make_project(tmp_path / "q.duplens", encoder, backend=None)
    try:
        report = project.versions.finetune(options=QUICK)
        check = report.fast_form
        assert not check["passed"] and check["backend"] == FAST
        assert check["failed"][0].startswith("pair AP")
        assert check["average_precision"] is not None
        rows = model_rows(project)
        assert sorted(rows) == [1, report.version_id]            # no form's row
        assert rows[report.version_id]["metrics"]["fast_form"] == check
        listed = {v["id"]: v for v in project.versions.list()}
        assert listed[report.version_id]["backend"] == "torch"

        activated = project.versions.activate(report.version_id)
        assert activated.activated and activated.model_id == report.version_id
        served = project.model.encoder()
        assert not isinstance(served, TorchFreeEncoder) and served.spec.backend == "torch"
        np.testing.assert_allclose(served.encode(TEXTS),
                                   load(report.folder).encode(TEXTS, normalize_embeddings=True),
                                   atol=1e-5)
    finally:
        project.close()


@needs_fast_default
def test_a_new_projects_model_trains_versions_named_after_the_model(tmp_path):
    """A new project here encodes with the bundled model's fast form: training from it
    makes the model's version ("… v2"), not a version of the form ("… (openvino-bf16) v2"),
    which then gets its own checked form."""
    default_form = load_encoder(None, device="cpu", backend=FAST)
    project = make_project(tmp_path / "q.duplens", default_form, backend=None)
    try:
        assert project.model.row()["name"] == f"all-MiniLM-L6-v2 ({FAST})"
        report = project.versions.finetune(options=QUICK)
        assert report.name == "all-MiniLM-L6-v2 v2" and report.parent_id == 1
        assert report.fast_form["passed"]
        assert project.versions.activate(report.version_id).activated
        assert project.model.row()["name"] == f"all-MiniLM-L6-v2 v2 ({FAST})"
    finally:
        project.close()


@needs_fast_default
def test_a_conversion_that_fails_keeps_the_version_with_torch(tmp_path, encoder, monkeypatch):
    """The export has nowhere to go (the cache folder's parent is a file): the version is
    saved all the same, with torch, and its row says why."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("", encoding="utf-8")
    project = make_project(tmp_path / "q.duplens", encoder, backend=None)
    try:
        monkeypatch.setenv("DUPLENS_CACHE_DIR", str(blocker / "cache"))
        report = project.versions.finetune(options=QUICK)
        check = report.fast_form
        assert not check["passed"] and check["failed"][0].startswith("the conversion failed")
        assert check["average_precision"] is None
        assert report.folder.is_dir()
        rows = model_rows(project)
        assert sorted(rows) == [1, report.version_id]
        assert rows[report.version_id]["metrics"]["fast_form"] == check
        activated = project.versions.activate(report.version_id)
        assert activated.model_id == report.version_id
        assert project.model.encoder().spec.backend == "torch"
    finally:
        project.close()
