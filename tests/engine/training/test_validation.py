"""Early stopping on a validation part of the training pairs, with the real model."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest
import torch

from engine.errors import Cancelled
from engine.progress import CancelToken
from engine.training import LabelledPair, TrainingOptions, finetune, held_out_metrics
from engine.training.validation import early_stopping, split_validation

TOPICS = ["Python", "Java", "Rust", "Go", "Haskell", "chess", "guitar", "piano", "French",
          "Spanish", "German", "Japanese", "calculus", "statistics", "physics", "chemistry",
          "cooking", "baking", "painting", "drawing", "swimming", "running", "yoga", "boxing",
          "photography", "knitting", "sailing", "skiing", "poker", "sudoku", "Excel", "SQL",
          "Linux", "Docker", "Kotlin", "Swift", "welding", "typing", "juggling", "origami"]


def topic_pairs() -> list[LabelledPair]:
    """Per topic a duplicate and a non-duplicate about the same topic: 80 pairs, each topic a
    question group of its own."""
    pairs = []
    for topic in TOPICS:
        ask = f"How do I learn {topic} quickly?"
        pairs.append(LabelledPair(ask, f"What is the fastest way to learn {topic}?", 1))
        pairs.append(LabelledPair(ask, f"Why is {topic} so popular?", 0))
    return pairs


def keys(pairs):
    return {k for p in pairs for k in (p.key_a, p.key_b)}


def test_validation_is_split_by_question_groups_or_not_at_all():
    pairs = topic_pairs()
    whole = split_validation(pairs, 0.0, seed=0)
    assert whole.train == pairs and whole.validation == [] and whole.note == ""

    parts = split_validation(pairs, 0.5, seed=0)
    assert len(parts.train) + len(parts.validation) == 80 and len(parts.validation) >= 30
    assert not keys(parts.train) & keys(parts.validation)  # no question on both sides
    assert {p.is_duplicate for p in parts.validation} == {True, False}

    few = split_validation(pairs[:20], 0.5, seed=0)  # 10 would be set aside: too few
    assert few.train == pairs[:20] and few.validation == []
    assert few.note.startswith("no validation: 50% of 20 training pairs is too few")


def test_early_stopping_stops_on_a_worse_epoch_and_puts_the_best_weights_back(encoder):
    model = copy.deepcopy(encoder.model)
    validation = topic_pairs()
    original = {k: v.clone() for k, v in model.state_dict().items()}
    stopper = early_stopping(model, validation, patience=1, cancel=CancelToken())
    args, control = SimpleNamespace(num_train_epochs=5), SimpleNamespace(
        should_training_stop=False)

    stopper.on_epoch_end(args, None, control)  # epoch 1: the model as it came
    assert stopper.best_epoch == 1 and not control.should_training_stop
    stopper.on_step_end(args, None, control)  # a "training step" that wrecks the encoder
    with torch.no_grad():
        generator = torch.Generator().manual_seed(0)
        for weight in model.parameters():
            weight.add_(torch.randn(weight.shape, generator=generator) * 0.5)
    stopper.on_epoch_end(args, None, control)  # epoch 2: much worse
    (_, first), (_, second) = stopper.scores
    assert second < first - 10
    assert control.should_training_stop and stopper.stopped_early and stopper.best_epoch == 1

    stopper.restore()
    assert all(torch.equal(model.state_dict()[k], v) for k, v in original.items())
    assert held_out_metrics(model, validation).average_precision == pytest.approx(first)


def test_patience_waits_for_that_many_epochs_without_progress(encoder):
    model = copy.deepcopy(encoder.model)
    stopper = early_stopping(model, topic_pairs(), patience=2, cancel=CancelToken())
    args, control = SimpleNamespace(num_train_epochs=5), SimpleNamespace(
        should_training_stop=False)
    for _ in range(2):  # nothing changes between epochs: never better than the first
        stopper.on_epoch_end(args, None, control)
    assert not control.should_training_stop  # one epoch without progress is within patience
    stopper.on_epoch_end(args, None, control)
    assert control.should_training_stop and len(stopper.scores) == 3


def test_cancel_during_validation_stops_training(encoder):
    cancel = CancelToken()
    stopper = early_stopping(encoder.model, topic_pairs(), patience=1, cancel=cancel)
    cancel.cancel()
    control = SimpleNamespace(should_training_stop=False)
    stopper.on_epoch_end(SimpleNamespace(num_train_epochs=3), None, control)
    assert control.should_training_stop and stopper.scores == []


@pytest.mark.slow
def test_finetune_keeps_the_best_validated_epoch(encoder, tmp_path):
    pairs = topic_pairs()
    options = TrainingOptions(batch_size=8, epochs=3, validation=0.5, patience=3,
                              learning_rate=1e-4)
    result = finetune(encoder, pairs, "contrastive", options, tmp_path / "out")
    parts = split_validation(pairs, 0.5, seed=0)
    assert result.validation_pairs == len(parts.validation)
    assert [epoch for epoch, _ in result.validation] == [1, 2, 3]  # patience 3: no stop
    best = max(result.validation, key=lambda s: s[1])
    assert result.best_epoch == best[0]
    # The model kept is the best epoch's: measured again, it scores what that epoch did.
    kept = held_out_metrics(result.model, parts.validation).average_precision
    assert kept == pytest.approx(best[1], abs=1e-6)
    assert any("set aside to choose the epoch" in note for note in result.notes)


@pytest.mark.slow
def test_cancelled_finetune_with_validation_leaves_nothing(encoder, tmp_path):
    cancel = CancelToken()

    def stop_at_second_step(event):
        if event.stage == "training" and event.done >= 2:
            cancel.cancel()

    with pytest.raises(Cancelled):
        finetune(encoder, topic_pairs(), "contrastive",
                 TrainingOptions(batch_size=8, epochs=3, validation=0.5), tmp_path / "out",
                 progress=stop_at_second_step, cancel=cancel)
    assert not (tmp_path / "out").exists()
