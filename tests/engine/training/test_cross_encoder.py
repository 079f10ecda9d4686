"""The second opinion: a cross-encoder trained from verdicts, saved as safetensors, loaded
back offline, scoring pairs as probabilities; cancelled, it leaves nothing.

One judge is trained for the whole module (from the bundled model's folder: a judge needs a
new classification head, so the session's bi-encoder cannot be reused) and the tests marked
slow read it: 15 training steps took 26-37 s on a 2-core CPU.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from engine.encoding.model_safety import PICKLED_WEIGHTS
from engine.encoding.model_spec import default_model_path
from engine.errors import Cancelled, InputError, ModelError
from engine.progress import CancelToken
from engine.training.cross_encoder import (
    SCORING_STAGE,
    TRAINING_STAGE,
    load_cross_encoder,
    score_pairs,
    train_cross_encoder,
)
from engine.training.pairs import LabelledPair
from engine.training.silver import SilverCandidate, label_silver

# Duplicates are a question and itself, non-duplicates two unrelated questions: a judge that
# learnt anything tells them apart. Questions 0-19 train it, 20-27 are never seen.
QUESTIONS = [
    "How do I learn Python quickly?", "Why is the sky blue?", "What is the capital of France?",
    "How can I lose weight fast?", "What causes earthquakes?", "How do vaccines work?",
    "Is coffee bad for your health?", "How do I reset my router?", "Who wrote Hamlet?",
    "What is machine learning?", "How do I bake sourdough bread?",
    "Why do cats purr?", "How far away is the Moon?", "What is inflation?",
    "How do I change a flat tyre?", "Why do leaves change colour in autumn?",
    "What is the best way to save money?", "How do airplanes stay in the air?",
    "What is a black hole?", "How do I improve my handwriting?",
    "How do solar panels make electricity?", "Why is the ocean salty?",
    "How do I write a good CV?", "What is photosynthesis?", "How do bees make honey?",
    "Why do we dream?", "How do I tie a tie?", "What is the speed of light?",
]
TRAIN, UNSEEN = QUESTIONS[:20], QUESTIONS[20:]
# 15 steps. At the default learning rate (2e-5, made for thousands of steps) the new head
# barely moves in 15: measured, duplicates 0.56 against 0.51; at 5e-4, 0.72 against 0.26.
EPOCHS, BATCH, LEARNING_RATE = 3, 8, 5e-4


def separable_pairs(questions: list[str]) -> list[LabelledPair]:
    n = len(questions)
    same = [LabelledPair(q, q, 1.0) for q in questions]
    other = [LabelledPair(q, questions[(i + n // 2) % n], 0.0) for i, q in enumerate(questions)]
    return same + other


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(result, progress events, the folder's parent) of one judge trained on 40 pairs."""
    parent = tmp_path_factory.mktemp("judge")
    events = []
    result = train_cross_encoder(separable_pairs(TRAIN), parent / "judge", epochs=EPOCHS,
                                 batch_size=BATCH, learning_rate=LEARNING_RATE, device="cpu",
                                 progress=events.append)
    return result, events, parent


@pytest.mark.slow
def test_trains_reports_progress_and_saves_safetensors_only(trained):
    result, events, parent = trained
    assert result.folder == parent / "judge" and result.pairs == 40
    assert result.steps == EPOCHS * 40 // BATCH and result.seconds > 0
    assert result.device == "cpu"
    assert [step for step, _ in result.loss_history] == list(range(1, result.steps + 1))
    steps = [(e.done, e.total) for e in events if e.stage == TRAINING_STAGE]
    assert steps[0] == (0, result.steps) and steps[-1] == (result.steps, result.steps)
    files = [p.name for p in result.folder.rglob("*") if p.is_file()]
    assert any(name.endswith(".safetensors") for name in files)
    assert not [name for name in files if name.endswith(PICKLED_WEIGHTS)]
    assert "README.md" not in files  # no model card copying training texts
    assert sorted(p.name for p in parent.iterdir()) == ["judge"]  # no staging left over


@pytest.mark.slow
def test_loads_back_offline_and_scores_probabilities(trained, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result, _, _ = trained
    judge = load_cross_encoder(result.folder)
    pairs = [(p.text_a, p.text_b) for p in separable_pairs(UNSEEN)]
    scores = score_pairs(judge, pairs, batch_size=4)
    assert scores.shape == (len(pairs),) and scores.dtype == np.float32
    assert np.all((scores >= 0) & (scores <= 1))
    # The folder holds what was trained: the same scores as the judge in memory.
    assert scores == pytest.approx(score_pairs(result.model, pairs), abs=1e-4)


@pytest.mark.slow
def test_duplicates_score_higher_than_unrelated_pairs_it_never_saw(trained):
    result, _, _ = trained
    unseen = separable_pairs(UNSEEN)
    scores = score_pairs(result.model, [(p.text_a, p.text_b) for p in unseen])
    duplicates = scores[[p.is_duplicate for p in unseen]]
    others = scores[[not p.is_duplicate for p in unseen]]
    assert duplicates.mean() > others.mean() + 0.2, (duplicates, others)


@pytest.mark.slow
def test_scoring_reports_progress_and_takes_no_pairs(trained):
    result, _, _ = trained
    events = []
    assert score_pairs(result.model, [], progress=events.append).shape == (0,)
    score_pairs(result.model, [("a", "b"), ("c", "d")], progress=events.append)
    assert [(e.stage, e.done, e.total) for e in events] == [
        (SCORING_STAGE, 0, 0), (SCORING_STAGE, 0, 2), (SCORING_STAGE, 2, 2)]
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(Cancelled):
        score_pairs(result.model, [("a", "b")], cancel=cancel)


@pytest.mark.slow
def test_silver_labels_from_the_real_judge_lie_in_0_1(trained):
    result, _, _ = trained
    texts = dict(enumerate(UNSEEN))
    candidates = [SilverCandidate(0, 1, 0.8), SilverCandidate(2, 5, 0.7)]
    silver = label_silver(result.model, candidates, texts.__getitem__)
    assert [(p.key_a, p.key_b) for p in silver] == [("text:0", "text:1"), ("text:2", "text:5")]
    assert all(0.0 <= p.label <= 1.0 for p in silver)


def test_a_cancelled_run_leaves_no_folder(tmp_path):
    cancel = CancelToken()

    def progress(event):
        if event.stage == TRAINING_STAGE:
            cancel.cancel()

    with pytest.raises(Cancelled):
        train_cross_encoder(separable_pairs(TRAIN), tmp_path / "judge", batch_size=BATCH,
                            device="cpu", progress=progress, cancel=cancel)
    assert list(tmp_path.iterdir()) == []


def test_pairs_of_one_verdict_are_refused_before_any_loading(tmp_path):
    only_duplicates = [LabelledPair(q, q, 1.0) for q in TRAIN]
    with pytest.raises(InputError, match="both verdicts"):
        train_cross_encoder(only_duplicates, tmp_path / "judge")
    with pytest.raises(InputError):
        train_cross_encoder([], tmp_path / "judge")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_folder_of_pickled_weights_only_is_refused(trained, tmp_path):
    result, _, _ = trained
    copy = shutil.copytree(result.folder, tmp_path / "pickled")
    for weights in copy.rglob("*.safetensors"):
        weights.with_suffix(".bin").write_bytes(b"not loaded")
        weights.unlink()
    with pytest.raises(ModelError, match="safetensors"):
        load_cross_encoder(copy)


def test_a_sentence_encoder_folder_is_not_taken_for_a_judge(tmp_path):
    with pytest.raises(ModelError, match="not a second-opinion"):
        load_cross_encoder(default_model_path())
    with pytest.raises(ModelError, match="no such"):
        load_cross_encoder(tmp_path / "missing")


# -- a residual judge: its logit adds to a prior (`prior_loss`) ----------------------------


def _bce(logits: np.ndarray, labels: np.ndarray) -> float:
    """Binary cross-entropy with logits, the mean over pairs, computed here by hand."""
    return float(np.mean(np.logaddexp(0.0, logits) - labels * logits))


@pytest.mark.slow
def test_a_residual_judge_starts_as_its_prior_and_learns_a_correction(tmp_path):
    pairs = separable_pairs(TRAIN)
    labels = np.array([p.label for p in pairs])
    # A prior that leans the right way for some pairs and the wrong way for others.
    prior = np.where(np.arange(len(pairs)) % 3 == 0, 1.5, -0.5)
    result = train_cross_encoder(pairs, tmp_path / "judge", epochs=4, batch_size=len(pairs),
                                 learning_rate=LEARNING_RATE, device="cpu",
                                 prior=prior.tolist())
    # One batch of every pair: the first step's loss is read before any update, when a
    # zeroed head adds nothing, so it is the prior's own loss.
    assert result.loss_history[0][1] == pytest.approx(_bce(prior, labels), rel=1e-3)
    assert result.loss_history[-1][1] < result.loss_history[0][1]
    texts = [(p.text_a, p.text_b) for p in pairs]
    with_prior = score_pairs(result.model, texts, prior=prior.tolist())
    own_logit = np.asarray(result.model.predict(texts, activation_fn=torch.nn.Identity()),
                           dtype=np.float64).reshape(-1)
    expected = 1 / (1 + np.exp(-(own_logit + prior)))
    assert np.allclose(with_prior, expected, atol=1e-4)   # scored as logit + prior
    assert not np.allclose(with_prior, 1 / (1 + np.exp(-prior)), atol=1e-3)  # it learnt


def test_a_prior_of_the_wrong_length_is_refused(tmp_path):
    with pytest.raises(ValueError, match="prior logits"):
        train_cross_encoder(separable_pairs(TRAIN), tmp_path / "judge", prior=[0.0])
    assert not (tmp_path / "judge").exists()
