"""The judge study's own parts (benchmarks/judge_choice.py): both orders, the choice, the
bi-encoder-labelled pairs, and its table."""

from __future__ import annotations

import numpy as np

from benchmarks import judge_choice as jc
from engine.training.pairs import LabelledPair


def test_swapped_shows_each_pair_in_both_orders():
    pairs = [LabelledPair("a", "b", 1.0, key_a="1", key_b="2")]
    both = jc.swapped(pairs)
    assert [(p.text_a, p.text_b, p.key_a, p.key_b) for p in both] == [
        ("a", "b", "1", "2"), ("b", "a", "2", "1")]
    assert all(p.label == 1.0 for p in both)


def test_choose_takes_the_best_mean_over_slices():
    rows = [{"recipe": "x", "validation_ap": 70.0}, {"recipe": "x", "validation_ap": 60.0},
            {"recipe": "y", "validation_ap": 66.0}]
    assert jc.choose(rows) == "y"
    assert jc.choose([]) is None


def test_bi_encoder_labels_rank_as_its_cosines_and_never_read_the_labels(encoder):
    gold = [LabelledPair("How do I learn Python?", "How can I learn Python?", 1.0),
            LabelledPair("How do I learn Python?", "What is the capital of France?", 0.0),
            LabelledPair("Is coffee bad for you?", "Is coffee unhealthy?", 1.0),
            LabelledPair("Is coffee bad for you?", "How do planes fly?", 0.0)]
    unlabelled = [LabelledPair("How to cook rice?", "How do I cook rice?", 0.0),
                  LabelledPair("How to cook rice?", "Who wrote Hamlet?", 1.0)]
    soft = jc.soft_pairs(encoder.model, gold, unlabelled)
    assert [p.text_a for p in soft] == [p.text_a for p in unlabelled]
    assert soft[0].label > 0.5 > soft[1].label       # the cosine's order, not the labels'
    cos = jc.cosines(encoder.model, unlabelled)
    assert np.argsort(cos).tolist() == np.argsort([p.label for p in soft]).tolist()


def test_the_table_says_how_far_from_the_bi_encoder():
    row = {"steps": 63, "train_seconds": 30.0, "score_seconds": 20.0}
    result = {"bi_encoder_validation_ap": 76.0, "validation_pairs": 40,
              "validation_duplicates": 15, "chosen": "b",
              "rows": [{**row, "recipe": "a", "validation_ap": 56.0},
                       {**row, "recipe": "b", "validation_ap": 74.0}]}
    shown = jc.present(result)
    assert shown["headline"][0]["met"] is False
    assert shown["headline"][0]["ratio"] == "-2.00 AP"
    assert [r[0] for r in shown["tables"][0]["rows"]] == ["a", "b (chosen)"]
