"""Each objective's loss and dataset, and how triplets are made from pairs."""

from __future__ import annotations

import pytest

from engine.errors import InputError
from engine.training import (
    OBJECTIVES,
    LabelledPair,
    TrainingOptions,
    build_training_data,
    get_objective,
    make_triplets,
    read_labelled_file,
)
from engine.training.objectives import mines_negatives
from engine.training.session import FINETUNE_STAGES, STAGE_MINING, finetune_stages

COLUMNS = {
    "softmax": (["sentence1", "sentence2", "label"], "SoftmaxLoss"),
    "cosine": (["sentence1", "sentence2", "label"], "CosineSimilarityLoss"),
    "triplet": (["anchor", "positive", "negative"], "TripletLoss"),
    "contrastive": (["sentence1", "sentence2", "label"], "OnlineContrastiveLoss"),
    "mnrl": (["anchor", "positive"], "MultipleNegativesRankingLoss"),
}


@pytest.fixture
def labelled(data_dir):
    return read_labelled_file(data_dir / "labelled_pairs.csv").pairs


def test_registry_has_the_six_objectives_with_an_explanation():
    assert list(OBJECTIVES) == ["softmax", "cosine", "triplet", "contrastive", "mnrl",
                                "contrastive+mnrl"]
    for objective in OBJECTIVES.values():
        assert objective.explanation and "\n" not in objective.explanation
    with pytest.raises(InputError, match="unknown training objective 'bert'; use one of"):
        get_objective("bert")


@pytest.mark.parametrize("name", list(COLUMNS))
def test_each_objective_builds_its_loss_and_columns(encoder, labelled, name):
    data = build_training_data(name, encoder.model, labelled)
    columns, loss = COLUMNS[name]
    assert data.dataset.column_names == columns
    assert type(data.loss).__name__ == loss == get_objective(name).loss  # as the wizard says
    assert data.examples == len(data.dataset) == (24 if name in ("triplet", "mnrl") else 40)
    assert data.no_duplicates == (name == "mnrl")
    if name in ("softmax", "contrastive"):
        assert set(data.dataset["label"]) == {0, 1}


def test_triplets_use_labelled_negatives_first():
    pairs = [LabelledPair("A", "A2", 1), LabelledPair("A", "X", 0),
             LabelledPair("B", "B2", 1), LabelledPair("B2", "Y", 0)]
    built = make_triplets(pairs)
    assert [(t.anchor, t.positive, t.negative) for t in built.triplets] == [
        ("A", "A2", "X"), ("B2", "B", "Y")]  # B has no negative of its own: turned round
    assert (built.mined, built.skipped) == (0, 0)


def test_triplets_mine_the_most_similar_non_duplicate(encoder):
    pairs = [LabelledPair("How do I learn Python quickly?", "Fastest way to learn Python?", 1),
             LabelledPair("Fastest way to learn Python?", "Quickest way to pick up Python?", 1),
             LabelledPair("How do I learn Java quickly?", "Best way to learn Java fast?", 1),
             LabelledPair("Why is the sky blue?", "What makes the sky look blue?", 1)]
    built = make_triplets(pairs, encoder.model)
    assert built.mined == 4
    first = built.triplets[0]
    # Not its own duplicate group (linked through the second pair), but the Java question.
    assert first.negative in ("How do I learn Java quickly?", "Best way to learn Java fast?")
    with pytest.raises(InputError, match="no triplet could be made"):
        make_triplets(pairs)  # no model to mine with, no labelled negatives


@pytest.mark.parametrize(("name", "labels", "message"), [
    ("softmax", [1, 1], "needs pairs labelled duplicate and not duplicate; all 2 are duplicate"),
    ("contrastive", [0, 0], "all 2 are not duplicate"),
    ("cosine", [0, 0], "needs pairs with different labels"),
    ("mnrl", [1, 0], "at least 2 pairs labelled duplicate; found 1"),
    ("triplet", [0, 0], "needs pairs labelled duplicate"),
])
def test_objectives_refuse_data_they_cannot_learn_from(encoder, name, labels, message):
    pairs = [LabelledPair(f"a{i}", f"b{i}", float(v)) for i, v in enumerate(labels)]
    with pytest.raises(InputError, match=message):
        build_training_data(name, encoder.model, pairs)


def test_graded_scores_are_noted_for_yes_no_objectives(encoder):
    pairs = [LabelledPair("a", "b", 0.8), LabelledPair("c", "d", 0.2), LabelledPair("e", "f", 1)]
    assert "2 graded scores" in build_training_data("softmax", encoder.model, pairs).notes[0]
    assert build_training_data("cosine", encoder.model, pairs).dataset["label"] == (
        pytest.approx([0.8, 0.2, 1.0]))


def test_contrastive_and_ranking_build_a_dataset_and_loss_each(encoder, labelled):
    data = build_training_data("contrastive+mnrl", encoder.model, labelled)
    assert sorted(data.dataset) == sorted(data.loss) == ["contrastive", "mnrl"]
    assert data.dataset["contrastive"].column_names == ["sentence1", "sentence2", "label"]
    assert data.dataset["mnrl"].column_names == ["anchor", "positive"]
    assert type(data.loss["contrastive"]).__name__ == "OnlineContrastiveLoss"
    assert type(data.loss["mnrl"]).__name__ == "MultipleNegativesRankingLoss"
    assert data.sizes == [40, 24] and data.examples == 64 and data.no_duplicates
    assert data.loss["contrastive"].margin == 0.5
    options = TrainingOptions(margin=0.3)
    assert build_training_data("contrastive", encoder.model, labelled,
                               options=options).loss.margin == 0.3


@pytest.mark.parametrize("name", ["contrastive", "contrastive+mnrl"])
def test_hard_negatives_add_mined_pairs_labelled_not_duplicate(encoder, labelled, name):
    events = []
    data = build_training_data(name, encoder.model, labelled,
                               options=TrainingOptions(hard_negatives=2), progress=events.append)
    pairs = data.dataset["contrastive"] if name == "contrastive+mnrl" else data.dataset
    mined = pairs.select(range(40, len(pairs)))
    duplicates = [p for p in labelled if p.is_duplicate]
    assert 0 < len(mined) <= 2 * len(duplicates) and set(mined["label"]) == {0}
    assert set(mined["sentence1"]) <= {p.text_a for p in duplicates}
    texts = {t for p in labelled for t in (p.text_a, p.text_b)}
    assert set(mined["sentence2"]) <= texts  # mined from the pairs' own texts
    # Never a text labelled duplicate of the anchor.
    labelled_duplicates = {(p.text_a, p.text_b) for p in duplicates}
    assert not labelled_duplicates & set(zip(mined["sentence1"], mined["sentence2"],
                                             strict=True))
    assert any(note.startswith(f"{len(mined)} mined pairs were added") for note in data.notes)
    assert {e.stage for e in events} == {"mining negatives"}


def test_mining_is_a_stage_only_when_something_is_mined():
    plain, mining = TrainingOptions(), TrainingOptions(hard_negatives=1)
    assert [mines_negatives(n, plain) for n in OBJECTIVES] == [
        False, False, True, False, False, False]
    assert [mines_negatives(n, mining) for n in OBJECTIVES] == [
        False, False, True, True, False, True]
    assert finetune_stages("contrastive", mining, converts=True) == FINETUNE_STAGES
    assert STAGE_MINING not in finetune_stages("contrastive", plain)
    assert finetune_stages("triplet", converts=True) == FINETUNE_STAGES
    assert finetune_stages("triplet") == FINETUNE_STAGES[:-1]   # no "converting"
