"""The project's one threshold: set by hand, else calibrated on the verdicts, else the
model's default; saved with the project, refused out of range or on a read-only file."""

from __future__ import annotations

import pytest

from engine.errors import InputError, ProjectError
from engine.review.calibration import (
    BY_HAND,
    CALIBRATED,
    MODEL_DEFAULT,
    Calibration,
    project_threshold,
)


def test_the_rule_set_by_hand_then_calibrated_then_the_model_s_default():
    from engine.encoding.model_threshold import ModelThreshold

    model = ModelThreshold(0.77, "best F1 on 3,000 Quora validation pairs", True)
    enough = Calibration(0.7123, 0.9, 0.8, 0.85, positives=12, negatives=15)
    few = Calibration(0.6, 0.9, 0.8, 0.85, positives=12, negatives=3)
    assert project_threshold(None, model).source == MODEL_DEFAULT
    assert project_threshold(None, model).value == 0.77
    assert "best F1 on 3,000 Quora validation pairs" in project_threshold(None, model).reason
    assert project_threshold(few, model).value == 0.77          # too few of one kind
    calibrated = project_threshold(enough, model)
    assert (calibrated.source, calibrated.value) == (CALIBRATED, 0.7123)
    assert calibrated.reason.startswith("calibrated on 27 verdicts (among them precision ")
    by_hand = project_threshold(enough, model, by_hand=0.66)
    assert (by_hand.source, by_hand.value) == (BY_HAND, 0.66)
    assert by_hand.describe() == "threshold 0.66 (set by hand)"


def test_a_project_starts_at_its_model_s_recorded_default(open_questions):
    from engine.encoding.model_threshold import for_fingerprint

    current = open_questions.threshold.current()
    recorded = for_fingerprint(open_questions.model.encoder().spec.fingerprint)
    assert recorded.recorded
    assert (current.source, current.value) == (MODEL_DEFAULT, recorded.value)
    assert open_questions.asking.pairs(3) is not None   # the services read the same one
    assert open_questions.measuring.threshold() == recorded.value


def test_a_threshold_set_by_hand_is_saved_and_handed_back(new_project, tmp_path):
    from engine.project import Project

    project = new_project("hand.duplens")
    assert project.threshold.set_by_hand(0.71).source == BY_HAND
    project.close()
    with Project.open(tmp_path / "hand.duplens") as again:
        assert again.threshold.by_hand() == 0.71
        assert again.threshold.current().value == 0.71
        assert again.measuring.threshold() == 0.71
        for bad in (0.0, 1.5, -0.2):
            with pytest.raises(InputError, match="between 0 and 1"):
                again.threshold.set_by_hand(bad)
        assert again.threshold.by_hand() == 0.71             # a refused value changes nothing
        assert again.threshold.set_by_hand(None).source == MODEL_DEFAULT
        assert again.threshold.by_hand() is None
    with Project.open(tmp_path / "hand.duplens", read_only=True) as read_only, \
            pytest.raises(ProjectError, match="read-only"):
        read_only.threshold.set_by_hand(0.5)
