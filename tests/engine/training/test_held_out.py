"""Held-out metrics: the pair metrics in percent, the same as `duplens eval pairs`."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, f1_score, precision_recall_curve

from engine.errors import InputError
from engine.evaluation import evaluate_pairs
from engine.training import (
    LabelledPair,
    changed_verdicts,
    held_out_metrics,
    metrics_from_scores,
    pair_scores,
    read_labelled_file,
)

SCORES = np.array([0.95, 0.90, 0.80, 0.72, 0.70, 0.55, 0.40, 0.30])
LABELS = np.array([1, 1, 0, 1, 1, 0, 0, 0])


def test_metrics_match_sklearn_on_a_hand_made_example():
    scores, labels = SCORES, LABELS
    m = metrics_from_scores(scores, labels)
    assert m.average_precision == pytest.approx(100 * average_precision_score(labels, scores))
    # Calling duplicates from 0.70 up catches all 4 with one false alarm: F1 = 8/9.
    assert m.f1 == pytest.approx(100 * 8 / 9)
    assert m.threshold == 0.70
    assert m.f1 == pytest.approx(100 * f1_score(labels, scores >= m.threshold))
    assert (m.precision, m.recall) == pytest.approx((80.0, 100.0))
    best_by_brute_force = max(f1_score(labels, scores >= t) for t in scores)
    assert m.f1 == pytest.approx(100 * best_by_brute_force)
    precision, recall, thresholds = precision_recall_curve(labels, scores)
    assert np.allclose([(c.threshold, c.precision, c.recall) for c in m.curve],
                       np.column_stack([thresholds, precision[:-1], recall[:-1]]))
    assert (m.pairs, m.positives) == (8, 4) and m.scores is not None


def test_one_class_cannot_be_measured():
    with pytest.raises(InputError, match="0 duplicates"):
        metrics_from_scores([0.2, 0.9], [0, 0])


def test_changed_verdicts_are_judged_at_each_models_threshold():
    pairs = [LabelledPair(f"a{i}", f"b{i}", float(label)) for i, label in enumerate(LABELS)]
    after = SCORES.copy()
    after[2] = 0.50  # the false alarm is fixed
    after[3] = 0.60  # a duplicate is lost
    changes = changed_verdicts(SCORES, after, 0.625, 0.65, pairs, limit=None)
    assert [(c.index, c.before_duplicate, c.after_duplicate, c.fixed) for c in changes] == [
        (2, True, False, True), (3, True, False, False)]
    assert changes[0].before_score == pytest.approx(0.8)
    assert changed_verdicts(SCORES, after, 0.625, 0.65, pairs, limit=1)[0].index == 2
    with pytest.raises(ValueError):
        changed_verdicts(SCORES, after[:3], 0.5, 0.5, pairs)


def test_model_metrics_agree_with_eval_pairs(encoder, data_dir):
    path = data_dir / "labelled_pairs.csv"
    pairs = read_labelled_file(path).pairs
    ours = held_out_metrics(encoder, pairs).as_dict()
    assert ours == evaluate_pairs(encoder, path)
    # sentence-transformers' own evaluator, on the same model and pairs, agrees on every
    # figure; its threshold is the midpoint to the next lower score, ours that score.
    from sentence_transformers.sentence_transformer.evaluation import (
        BinaryClassificationEvaluator,
    )

    evaluator = BinaryClassificationEvaluator(
        [p.text_a for p in pairs], [p.text_b for p in pairs],
        [int(p.is_duplicate) for p in pairs], similarity_fn_names=["cosine"], write_csv=False)
    theirs = {k.rsplit("cosine_", 1)[-1]: v for k, v in evaluator(encoder.model).items()}
    assert ours["average_precision"] == pytest.approx(100 * theirs["ap"], abs=1e-4)
    assert ours["f1"] == pytest.approx(100 * theirs["f1"], abs=1e-4)
    assert ours["precision"] == pytest.approx(100 * theirs["precision"], abs=1e-4)
    assert ours["recall"] == pytest.approx(100 * theirs["recall"], abs=1e-4)
    assert ours["threshold"] == pytest.approx(theirs["f1_threshold"], abs=0.02)
    # A plain SentenceTransformer gives the same scores as the engine's encoder.
    assert pair_scores(encoder.model, pairs[:6]) == pytest.approx(
        pair_scores(encoder, pairs[:6]), abs=1e-5)


def test_the_curve_is_thinned_for_plotting_but_keeps_its_ends():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 5000)
    scores = rng.random(5000) + 0.3 * labels
    m = metrics_from_scores(scores, labels)
    thresholds = [c.threshold for c in m.curve]
    assert len(thresholds) == 200 and thresholds == sorted(thresholds)
    _, _, every = precision_recall_curve(labels, scores)
    assert (thresholds[0], thresholds[-1]) == (every[0], every[-1])
