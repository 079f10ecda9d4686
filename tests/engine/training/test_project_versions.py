"""Fine-tuning a project's model into versions: saved inactive, activated while search goes
on, rolled back without re-encoding, exported; cancel and errors leave nothing behind."""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
from pathlib import Path

import pytest

from engine.encoding.model_spec import resolve_model
from engine.errors import Cancelled, InputError, ModelError
from engine.progress import CancelToken
from engine.project import Project
from engine.text import norm_key
from engine.training import (
    DEFAULT_OBJECTIVE,
    LabelledPair,
    TrainingOptions,
    read_labelled_file,
)
from engine.training.version_folders import VERSION_FILE, data_hash

pytestmark = pytest.mark.slow
DATA = Path(__file__).resolve().parents[2] / "data"
QUICK = TrainingOptions(batch_size=4, max_steps=2)
QUERY = "which city is australia's capital"

# Review verdicts on tests/data/questions.csv: near-duplicate questions, and unrelated or
# merely related questions marked apart (a few link two topics, as real reviews do).
DUPLICATES = [("q1", "q2"), ("q2", "q3"), ("q4", "q5"), ("q6", "q7"), ("q8", "q9"),
              ("q10", "q11"), ("q12", "q13"), ("q14", "q15"), ("q16", "q17"), ("q18", "q19"),
              ("q20", "q21"), ("q22", "q23"), ("q24", "q25"), ("q26", "q27"), ("q28", "q29"),
              ("q30", "q31"), ("q47", "q48")]
NOT_DUPLICATES = [("q3", "q33"), ("q5", "q38"), ("q7", "q40"), ("q9", "q34"), ("q11", "q32"),
                  ("q13", "q50"), ("q15", "q49"), ("q17", "q39"), ("q19", "q37"),
                  ("q21", "q45"), ("q23", "q46"), ("q25", "q35"), ("q27", "q36"),
                  ("q29", "q10"), ("q31", "q8"), ("q48", "q26")]


def make_project(path: Path, encoder, labels=(DUPLICATES, NOT_DUPLICATES),
                 backend: str | None = "torch") -> Project:
    """The sample questions, encoded by `encoder`, with review verdicts. Versions are
    trained and served with `backend`: torch by default here, the path a GPU or a CPU without
    a fast backend takes (tests/engine/training/test_fast_form.py has the CPU default's)."""
    project = Project.open(path, create=True)
    project.model.configure(backend=backend)
    project.model.attach(encoder, is_default=True)
    project.rows.import_table(DATA / "questions.csv", ["question"], id_column="qid")
    project.vectors.encode()
    item = {r["id"]: r["item_id"] for r in project.rows.page(0, 100)}
    for label, pairs in zip((1, 0), labels, strict=True):
        for a, b in pairs:
            project.verdicts.set_verdict(item[a], item[b], label)
    return project


def load(folder):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu", local_files_only=True)


def served_version(project: Project) -> int:
    """The version the project searches with: the active row's, or the version whose fast
    form the active row is (`engine.training.fast_form`)."""
    from engine.training.version_folders import sibling_of

    row = project.model.row()
    return sibling_of(row) or row["id"]


def served_name(version_name: str) -> str:
    """What `info` and the status bar call a version served as a version trained here is:
    with its fast form's tag where this CPU's default backend is a fast one."""
    from engine.encoding.backend_choice import default_backend

    fast = default_backend("cpu")
    return version_name if fast == "torch" else f"{version_name} ({fast})"


def scores(hits):
    return {h.text: h.score for h in hits}


def models_rows(project):
    return [(v["id"], v["active"]) for v in project.versions.list()]


@pytest.fixture(scope="module")
def trained(tmp_path_factory, encoder):
    """A labelled project and its first fine-tuned version, made once for the module."""
    folder = tmp_path_factory.mktemp("versions")
    project = make_project(folder / "questions.duplens", encoder)
    before = project.search(QUERY, 5)
    events = []
    report = project.versions.finetune(options=QUICK, progress=events.append)
    yield project, report, before, events
    project.close()


def test_finetune_saves_an_inactive_version_that_loads(trained, encoder):
    project, report, before_hits, events = trained
    assert report.version_id == 2 and report.parent_id == 1
    assert report.objective == DEFAULT_OBJECTIVE == "contrastive"
    assert report.location == "questions.duplens.models/v2"
    assert report.folder == project.path.parent / "questions.duplens.models" / "v2"
    split = report.split
    assert len(split.train) + len(split.held_out) + len(split.dropped) == 33
    assert report.before.pairs == report.after.pairs == len(split.held_out)
    assert report.train.steps == 2 and report.train.model is None
    stages = list(dict.fromkeys(e.stage for e in events))
    assert stages == ["measuring before", "training", "measuring after", "saving"]

    record = json.loads((report.folder / VERSION_FILE).read_text(encoding="utf-8"))
    assert record["version"] == 2 and record["parent"]["id"] == 1
    assert record["objective"] == "contrastive"
    assert record["data_sha256"] == data_hash(split.train) == report.data_sha256
    assert record["metrics"]["before"]["average_precision"] == \
        pytest.approx(report.before.average_precision)
    assert record["options"]["max_steps"] == 2 and record["created_at"]

    versions = {v["id"]: v for v in project.versions.list()}
    assert [(i, v["active"]) for i, v in versions.items()] == [(1, True), (2, False)]
    v2 = versions[2]
    assert v2["parent_id"] == 1 and v2["objective"] == "contrastive" and v2["available"]
    assert v2["metrics"]["after"]["f1"] == pytest.approx(report.after.f1)
    assert v2["encoded"] == 0 and versions[1]["encoded"] == v2["texts"] == 46
    assert resolve_model(str(report.folder)).fingerprint != resolve_model(None).fingerprint
    assert sorted(p.name for p in report.folder.parent.iterdir()) == ["v2"]  # no staging

    # Not activated: the project searches exactly as before, with the same model.
    assert project.model.row()["id"] == 1 and project.model.encoder() is encoder
    assert scores(project.search(QUERY, 5)) == scores(before_hits)
    vectors = load(report.folder).encode(["How do I learn Python?"])
    assert vectors.shape == (1, encoder.dim)


def test_a_cancelled_finetune_saves_nothing(trained):
    project, _report, before_hits, _ = trained
    versions = project.versions.list()
    cancel = CancelToken()

    def progress(event):
        if event.stage == "training" and event.done == 1:
            cancel.cancel()

    with pytest.raises(Cancelled):
        project.versions.finetune(options=TrainingOptions(batch_size=4, max_steps=50),
                         progress=progress, cancel=cancel)
    assert project.versions.list() == versions
    assert sorted(p.name for p in (project.path.parent / "questions.duplens.models").iterdir()
                  ) == ["v2"]
    assert project.model.row()["id"] == 1
    assert scores(project.search(QUERY, 5)) == scores(before_hits)


def test_activation_serves_the_new_model_and_rollback_restores_the_old(trained, encoder):
    project, report, before_hits, _ = trained
    old = scores(before_hits)

    # 1. Cancelled after the first chunk: the old model stays, what was encoded is kept.
    cancel = CancelToken()

    def stop_early(event):
        if event.stage == "encoding" and event.done > 0:
            cancel.cancel()

    stopped = project.versions.activate(2, progress=stop_early, cancel=cancel, chunk_texts=8)
    assert stopped.cancelled and not stopped.activated
    assert 0 < stopped.encoded < 46 and stopped.remaining == 46 - stopped.encoded
    assert project.model.row()["id"] == 1
    assert scores(project.search(QUERY, 5)) == old

    # 2. Resumed in a worker thread while this one keeps searching: every answer comes
    # wholly from the old model or wholly from the new one, never an error.
    answers: list[dict] = []
    during: list[dict] = []

    def search_meanwhile(event):
        if event.stage in ("encoding", "indexing"):
            during.append(scores(project.search(QUERY, 5)))

    result = {}
    worker = threading.Thread(target=lambda: result.setdefault(
        "report", project.versions.activate(2, progress=search_meanwhile, chunk_texts=8)))
    worker.start()
    while worker.is_alive():
        answers.append(scores(project.search(QUERY, 5)))
    worker.join()
    activation = result["report"]
    assert activation.activated and not activation.cancelled
    assert activation.encoded == 46 - stopped.encoded
    assert during and all(d == old for d in during)

    # 3. The project now answers with the version's own encodings.
    assert project.model.row()["id"] == 2
    hits = project.search(QUERY, 5)
    model = load(report.folder)
    q, *texts = model.encode([QUERY, *[h.text for h in hits]], normalize_embeddings=True)
    assert [h.score for h in hits] == pytest.approx([float(t @ q) for t in texts], abs=1e-4)
    new = scores(hits)
    assert new != old
    assert all(a in (old, new) for a in answers)
    versions = {v["id"]: v for v in project.versions.list()}
    assert versions[2]["active"] and versions[2]["encoded"] == 46 and versions[2]["indexed"]
    assert project.info()["index_items"] == 46
    assert project.clusters.cut(0.75)  # the neighbour graph is rebuilt for the new model

    # 4. Back to the first version: nothing is encoded again, and the old scores return.
    back = project.versions.activate(1)
    assert back.activated and back.encoded == 0 and back.indexed == 0
    assert back.seconds < 5
    assert project.model.row()["id"] == 1 and project.model.encoder() is encoder
    assert scores(project.search(QUERY, 5)) == pytest.approx(old)
    again = project.versions.activate(1)
    assert again.already_active and again.activated


def test_export_copies_a_folder_sentence_transformers_loads(trained, tmp_path, encoder):
    project, report, _, _ = trained
    out = project.versions.copy_out(2, tmp_path / "exported")
    assert (out / "modules.json").is_file() and (out / VERSION_FILE).is_file()
    texts = ["How do I learn Python?", "Why is the sky blue?"]
    assert load(out).encode(texts) == pytest.approx(load(report.folder).encode(texts),
                                                    abs=1e-6)
    default = project.versions.copy_out(1, tmp_path / "default")
    assert load(default).encode(texts) == pytest.approx(encoder.model.encode(texts), abs=1e-5)
    with pytest.raises(ModelError, match="not an empty folder"):
        project.versions.copy_out(2, tmp_path / "exported")
    with pytest.raises(InputError, match="no model version 9"):
        project.versions.copy_out(9, tmp_path / "nine")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["default", "exported"]


def test_training_pairs_merge_review_verdicts_and_a_file(trained):
    project = trained[0]
    review = project.versions.training_pairs()
    assert len(review) == 33 and all(p.key_a.startswith("text:") for p in review)

    def same(pair):
        return frozenset((norm_key(pair.text_a), norm_key(pair.text_b)))

    seen = {same(p) for p in review}
    from_file = read_labelled_file(DATA / "labelled_pairs.csv").pairs
    file_only = [p for p in from_file if same(p) not in seen]
    assert len(file_only) < len(from_file)  # some pairs were judged in both places
    assert project.versions.training_pairs(DATA / "labelled_pairs.csv") == review + file_only


def test_too_few_or_one_sided_labels_fail_before_any_model_work(tmp_path, encoder):
    few = make_project(tmp_path / "few.duplens", encoder,
                       labels=(DUPLICATES[:2], NOT_DUPLICATES[:1]))
    try:
        with pytest.raises(InputError, match="Only 3 labelled pairs"):
            few.versions.finetune(options=QUICK)
        one_sided = [LabelledPair(f"question number {i}", f"the question numbered {i}", 1.0)
                     for i in range(25)]
        with pytest.raises(InputError, match="Every one of the 25 pairs is labelled duplicate"):
            few.versions.finetune(pairs=one_sided, options=QUICK)
        with pytest.raises(InputError, match="unknown training objective"):
            few.versions.finetune("nope", options=QUICK)
        assert [v["id"] for v in few.versions.list()] == [1]
        assert not (tmp_path / "few.duplens.models").exists()
    finally:
        few.close()


def test_a_moved_project_finds_and_activates_its_versions(trained, tmp_path):
    """Locations are relative to the project file: the project and its .models folder,
    moved together, work where they land (the version is loaded from disk and checked)."""
    project, report, _, _ = trained
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    source = sqlite3.connect(project.path)
    target = sqlite3.connect(moved / "questions.duplens")
    source.backup(target)  # a consistent copy, whatever is still in the WAL
    source.close()
    target.close()
    shutil.copytree(report.folder.parent, moved / "questions.duplens.models")
    copy = Project.open(moved / "questions.duplens")
    try:
        versions = {v["id"]: v for v in copy.versions.list()}
        assert versions[2]["folder"] == str(moved / "questions.duplens.models" / "v2")
        assert versions[2]["available"]
        events = []
        activated = copy.versions.activate(2, progress=events.append)
        assert activated.activated
        assert events[0].stage == "loading model"
        assert copy.search(QUERY, 3)
    finally:
        copy.close()


def test_hard_negatives_are_mined_from_the_projects_own_index(tmp_path, encoder):
    """With hard negatives, every indexed project text but the held-out pairs' is searched,
    with the vectors the index holds: only the training pairs' texts are encoded to mine."""
    # Labels on part of the project only: the other texts are unlabelled but indexed.
    project = make_project(tmp_path / "mined.duplens", encoder,
                           labels=(DUPLICATES[:12], NOT_DUPLICATES[:12]))
    events = []
    report = project.versions.finetune(
        "contrastive", options=TrainingOptions(batch_size=4, max_steps=2, hard_negatives=1),
        progress=events.append)
    project.close()
    held_out = {norm_key(t) for p in report.split.held_out for t in (p.text_a, p.text_b)}
    trained_on = {norm_key(t) for p in report.split.train for t in (p.text_a, p.text_b)}
    note = next(n for n in report.notes if "mined pairs were added" in n)
    assert f"of the {46 - len(held_out)} searched" in note
    assert 46 - len(held_out) > len(trained_on)  # unlabelled project texts were searched
    mining = [e for e in events if e.stage == "mining negatives"]
    assert mining and mining[-1].total == len(trained_on)
