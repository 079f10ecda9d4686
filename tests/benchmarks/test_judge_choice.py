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


def test_met_needs_the_chosen_judge_shown_better_not_a_mean_above():
    row = {"steps": 63, "train_seconds": 30.0, "score_seconds": 20.0, "recipe": "r"}
    result = {"bi_encoder_validation_ap": 76.0, "validation_pairs": 40,
              "validation_duplicates": 15, "chosen": "r"}
    within = {**row, "validation_ap": 76.2,
              "vs_bi_encoder": {"change": 0.2, "interval": [-0.3, 0.7],
                                "conclusion": "not enough pairs"}}
    shown = jc.present({**result, "rows": [within]})
    assert shown["headline"][0]["met"] is False       # above the mean, not shown better
    assert "-0.30 to +0.70" in shown["tables"][0]["rows"][0][4]
    better = {**within, "vs_bi_encoder": {"change": 1.0, "interval": [0.4, 1.6],
                                          "conclusion": "better"}}
    assert jc.present({**result, "rows": [better]})["headline"][0]["met"] is True


def test_versus_is_the_paired_change_against_the_bi_encoder():
    rng = np.random.default_rng(0)
    labels = rng.random(400) < 0.4
    pairs = [LabelledPair("a", "b", float(y)) for y in labels]
    bi = labels + rng.normal(0, 1.0, 400)
    found = jc.versus(bi, labels + rng.normal(0, 0.3, 400), pairs)   # a much better judge
    assert found["change"] > 0 and found["interval"][0] > 0
    assert found["conclusion"] == "better"
    assert jc.versus(bi, bi, pairs)["conclusion"] == "no change"


def test_prior_logits_are_the_calibrated_cosines(encoder):
    gold = [LabelledPair("How do I learn Python?", "How can I learn Python?", 1.0),
            LabelledPair("How do I learn Python?", "What is the capital of France?", 0.0),
            LabelledPair("Is coffee bad for you?", "Is coffee unhealthy?", 1.0),
            LabelledPair("Is coffee bad for you?", "How do planes fly?", 0.0)]
    fit = jc.calibration(encoder.model, gold)
    logits = jc.prior_logits(encoder.model, fit, gold)
    cos = jc.cosines(encoder.model, gold)
    assert np.argsort(logits).tolist() == np.argsort(cos).tolist()   # increasing in cosine
    assert logits[0] > 0 > logits[1]      # on the right side for these pairs
