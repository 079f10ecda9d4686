"""The calibrated threshold: best F1 on the labels, used only once there are enough."""

import numpy as np

from engine.pair_metrics import threshold_curve
from engine.review.calibration import (
    DEFAULT_THRESHOLD,
    ENOUGH_OF_EACH,
    calibrate,
    default_threshold,
)


def test_best_f1_threshold_with_what_it_rests_on():
    scores = np.array([0.95, 0.91, 0.88, 0.86, 0.84, 0.70, 0.65, 0.60])
    labels = np.array([1, 1, 1, 0, 1, 0, 0, 0])
    c = calibrate(threshold_curve(scores, labels))
    assert c is not None
    assert c.threshold == 0.84 and (c.precision, c.recall) == (0.8, 1.0)
    assert (c.positives, c.negatives, c.verdicts) == (4, 4, 8)
    assert not c.enough and default_threshold(c) == DEFAULT_THRESHOLD


def test_one_kind_of_verdict_calibrates_nothing():
    assert calibrate(threshold_curve(np.array([0.9, 0.8]), np.array([1, 1]))) is None
    assert default_threshold(None) == DEFAULT_THRESHOLD


def test_enough_verdicts_move_the_default():
    rng = np.random.default_rng(0)
    n = ENOUGH_OF_EACH
    scores = np.concatenate([rng.uniform(0.9, 1.0, n), rng.uniform(0.5, 0.88, n)])
    labels = np.array([1] * n + [0] * n)
    c = calibrate(threshold_curve(scores, labels))
    assert c.enough and c.f1 == 1.0
    assert default_threshold(c) == round(scores[:n].min(), 4)
