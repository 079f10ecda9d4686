"""Fine-tuning: every objective trains and saves a loadable model; cancel leaves no trace."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.encoding.model_spec import resolve_model
from engine.errors import Cancelled, ModelError
from engine.progress import CancelToken
from engine.training import (
    OBJECTIVES,
    TrainingOptions,
    TrainingProgress,
    finetune,
    read_labelled_file,
    split_pairs,
)

pytestmark = pytest.mark.slow
QUICK = TrainingOptions(batch_size=4, max_steps=2)


@pytest.fixture(scope="module")
def train_pairs(request):
    data_dir = request.config.rootpath / "tests" / "data"
    pairs = read_labelled_file(data_dir / "labelled_pairs.csv").pairs
    return split_pairs(pairs, held_out=0.5, seed=0).train


@pytest.fixture(scope="module")
def base_weights(encoder):
    """The shared model's weights before any training test, to prove it is never touched."""
    return {k: v.detach().clone() for k, v in encoder.model.state_dict().items()}


def assert_unchanged(model, weights):
    state = model.state_dict()
    assert all(torch.equal(state[k], v) for k, v in weights.items())


def load(folder):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu", local_files_only=True)


@pytest.mark.parametrize("objective", list(OBJECTIVES))
def test_each_objective_trains_and_saves_a_loadable_model(encoder, base_weights, train_pairs,
                                                          tmp_path, objective):
    events = []
    result = finetune(encoder, train_pairs, objective, QUICK, tmp_path / "out",
                      progress=events.append)
    assert result.output_dir == tmp_path / "out" and result.steps == 2
    assert [step for step, _ in result.loss_history] == [1, 2]
    assert all(np.isfinite(loss) for _, loss in result.loss_history)
    assert result.device == "cpu" and result.seconds > 0 and result.examples_seen == 8
    training = [e for e in events if e.stage == "training"]
    assert [(e.done, e.total) for e in training] == [(0, 2), (1, 2), (2, 2)]
    assert training[-1].message.startswith("loss ")
    # Each logged step carries its loss as a number, for a live curve: the same as the result's.
    assert [(e.done, e.loss) for e in training if isinstance(e, TrainingProgress)] == \
        result.loss_history
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no staging left over

    vectors = load(result.output_dir).encode(["How do I learn Python?", "Why is the sky blue?"])
    assert vectors.shape == (2, encoder.dim)
    assert_unchanged(encoder.model, base_weights)


def test_training_changes_the_weights_it_saves(encoder, base_weights, train_pairs, tmp_path):
    result = finetune(encoder, train_pairs, "cosine", QUICK, tmp_path / "out")
    trained = load(result.output_dir).state_dict()
    assert any(not torch.equal(trained[k], v) for k, v in base_weights.items())


def test_a_model_folder_is_loaded_afresh_and_left_as_it_was(train_pairs, tmp_path):
    before = resolve_model(None).fingerprint
    result = finetune(None, train_pairs, "mnrl", TrainingOptions(batch_size=4, max_steps=1),
                      tmp_path / "out", device="cpu")
    assert result.steps == 1 and result.notes  # mnrl says it left the negatives out
    assert resolve_model(None).fingerprint == before
    assert resolve_model(str(result.output_dir)).fingerprint != before


def test_cancel_after_the_first_step_stops_and_leaves_nothing(encoder, base_weights,
                                                               train_pairs, tmp_path):
    cancel = CancelToken()
    events = []

    def progress(event):
        events.append(event)
        if event.stage == "training" and event.done == 1:
            cancel.cancel()

    with pytest.raises(Cancelled):
        finetune(encoder, train_pairs, "softmax", TrainingOptions(batch_size=4, max_steps=50),
                 tmp_path / "out", progress=progress, cancel=cancel)
    assert max(e.done for e in events) == 1
    assert list(tmp_path.iterdir()) == []
    assert_unchanged(encoder.model, base_weights)


def test_cancelled_before_starting_does_no_work(encoder, train_pairs, tmp_path):
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(Cancelled):
        finetune(encoder, train_pairs, "cosine", QUICK, tmp_path / "out", cancel=cancel)
    assert list(tmp_path.iterdir()) == []


def test_refuses_to_overwrite_or_download(encoder, train_pairs, tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "model.safetensors").write_text("precious")
    with pytest.raises(ModelError, match="already exists"):
        finetune(encoder, train_pairs, "cosine", QUICK, tmp_path / "taken")
    assert (tmp_path / "taken" / "model.safetensors").read_text() == "precious"
    with pytest.raises(ModelError, match="does not download"):
        finetune("sentence-transformers/all-mpnet-base-v2", train_pairs, "cosine", QUICK,
                 tmp_path / "new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_options_are_checked():
    assert TrainingOptions() == TrainingOptions(16, 1e-4, 0.1, 1, None, 0)
    with pytest.raises(ValueError):
        TrainingOptions(warmup_ratio=1.5)
    with pytest.raises(ValueError):
        TrainingOptions(max_steps=0)
