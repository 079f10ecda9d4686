"""What a version's fast form is judged on (`fast_form.judge`), on small made-up embeddings:
the held-out pairs' AP, the cut at the version's threshold and a held-out duplicate's
partner among the five nearest, in `gate_rules.failures`' words; recall@10 is reported,
never judged. (tests/engine/training/test_fast_form.py runs the whole conversion.)"""

from __future__ import annotations

import numpy as np
import pytest

from engine.encoding import gate_rules
from engine.encoding.model_threshold import ModelThreshold
from engine.training import fast_form

DIM = 64
CLOSE, HARD, SINGLES = 60, 20, 80     # pairs at 0.9 (in the cut), pairs at 0.6, lone texts
THRESHOLD = ModelThreshold(0.8, "best F1 on its 40 held-out pairs", True)


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def partner_of(rng: np.random.Generator, base: np.ndarray, cos: float) -> np.ndarray:
    other = unit(rng.normal(size=DIM))
    other = unit(other - (other @ base) * base)
    return unit(cos * base + np.sqrt(1 - cos ** 2) * other)


def texts(seed: int = 0) -> np.ndarray:
    """Rows 0-119: 60 pairs at cosine 0.9 (the cut at 0.8 holds them); rows 120-159: 20
    pairs at 0.6 (duplicates the cut misses, each the other's nearest); then lone texts."""
    rng = np.random.default_rng(seed)
    rows = []
    for cos, count in ((0.9, CLOSE), (0.6, HARD)):
        for _ in range(count):
            base = unit(rng.normal(size=DIM))
            rows += [base, partner_of(rng, base, cos)]
    rows += list(unit(rng.normal(size=(SINGLES, DIM))))
    return np.asarray(rows, dtype=np.float32)


REFERENCE = texts()
DUPLICATES = np.array([(i, i + 1) for i in range(0, 2 * (CLOSE + HARD), 2)])


def judge(candidate: np.ndarray, duplicates=DUPLICATES, ap: float = 80.0):
    return fast_form.judge("openvino-bf16", REFERENCE, candidate.astype(np.float32),
                           duplicates, THRESHOLD, ap, 80.0)


def test_the_same_embeddings_pass_with_every_figure_recorded():
    check = judge(REFERENCE.copy())
    assert check.passed and check.failed == [] and check.not_judged == []
    assert check.threshold == 0.8 and check.threshold_chosen_on == THRESHOLD.chosen_on
    assert check.cut_f1 == 1.0 and check.cut_pairs == check.torch_cut_pairs == CLOSE
    assert check.partner_top5 == check.torch_partner_top5 == 100.0
    assert check.partner_pairs == CLOSE + HARD
    assert check.recall_at_10 == pytest.approx(1.0, abs=0.01)
    assert check.texts == len(REFERENCE) and check.queries == fast_form.CHECK_QUERIES
    assert fast_form.describe(check.as_dict()).startswith("It runs as openvino-bf16")


def test_neighbours_swapping_places_is_reported_not_judged():
    """Each pair and each lone text moved together by its own random step: every pair
    stays as close, so the cut and the partners are float32's, while the far neighbours
    (similarities near 0) reshuffle and recall@10 falls well below the old bar (0.98)."""
    rng = np.random.default_rng(1)
    steps = 0.4 * unit(rng.normal(size=(CLOSE + HARD + SINGLES, DIM)))
    moved = unit(REFERENCE + np.concatenate([np.repeat(steps[:CLOSE + HARD], 2, axis=0),
                                             steps[CLOSE + HARD:]]))
    check = judge(moved)
    assert check.recall_at_10 < 0.9
    assert check.cut_f1 == 1.0 and check.partner_top5 == 100.0
    assert check.passed and check.failed == []


def test_a_fast_form_that_changes_the_cut_fails_on_the_cut():
    rng = np.random.default_rng(2)
    moved = REFERENCE.copy()
    for row in range(0, 10, 2):          # five of the sixty cut pairs drawn apart to 0.7:
        moved[row + 1] = partner_of(rng, moved[row], 0.7)   # still each other's nearest
    check = judge(moved)
    assert check.cut_pairs == CLOSE - 5 and check.torch_cut_pairs == CLOSE
    assert check.cut_f1 == pytest.approx(2 * 55 / 115) and check.cut_f1 < gate_rules.MIN_CUT_F1
    assert check.partner_top5 == check.torch_partner_top5 == 100.0
    assert not check.passed and len(check.failed) == 1
    assert check.failed[0].startswith("the cut's pair F1")
    assert check.failed == gate_rules.failures({"cut_f1": check.cut_f1}, {})
    assert "the cut's pair F1" in fast_form.describe(check.as_dict())


def test_a_fast_form_that_keeps_the_cut_within_the_rule_passes():
    """A little noise everywhere, and one cut pair of sixty lost (F1 0.992): it passes."""
    rng = np.random.default_rng(3)
    moved = unit(REFERENCE + rng.normal(scale=0.002, size=REFERENCE.shape))
    moved[1] = partner_of(rng, moved[0], 0.7)
    check = judge(moved)
    assert check.cut_f1 == pytest.approx(2 * 59 / 119) and check.cut_f1 >= gate_rules.MIN_CUT_F1
    assert check.passed and check.failed == []


def test_a_fast_form_that_loses_partners_fails_on_the_partner():
    """Two of the pairs at 0.6 (below the threshold: not in either cut) lose each other:
    4 of the 160 directions, 2.5 points."""
    rng = np.random.default_rng(4)
    moved = REFERENCE.copy()
    for row in (2 * CLOSE, 2 * CLOSE + 2):
        moved[row + 1] = unit(rng.normal(size=DIM))
    check = judge(moved)
    assert check.cut_f1 == 1.0
    assert check.torch_partner_top5 == 100.0 and check.partner_top5 == pytest.approx(97.5)
    assert not check.passed and len(check.failed) == 1
    assert check.failed[0].startswith(f"partner in the top {gate_rules.PARTNER_K}")
    assert check.failed == gate_rules.failures({"partner_top5": 97.5},
                                                     {"partner_top5": 100.0})


def test_without_held_out_duplicates_the_partner_is_not_judged():
    rng = np.random.default_rng(4)
    moved = REFERENCE.copy()
    moved[2 * CLOSE + 1] = unit(rng.normal(size=DIM))   # would lose a partner, if judged
    check = judge(moved, duplicates=np.empty((0, 2), dtype=np.int64))
    assert check.passed and check.failed == []
    assert check.partner_top5 is None and check.torch_partner_top5 is None
    assert check.partner_pairs == 0 and check.not_judged == [fast_form.NO_DUPLICATES]
    assert "partner" not in fast_form.describe(check.as_dict())


def test_a_held_out_ap_loss_beyond_the_rule_fails_on_pair_ap():
    assert judge(REFERENCE.copy(), ap=80.0 - gate_rules.PAIR_AP_LOSS).passed
    check = judge(REFERENCE.copy(), ap=79.6)
    assert not check.passed and check.failed == gate_rules.failures({"pair_ap": 79.6},
                                                                    {"pair_ap": 80.0})
    assert check.failed[0].startswith("pair AP")


def test_a_check_stored_before_the_cut_rule_is_still_described():
    """Rows written by the recall@10 gate hold no cut or partner figures."""
    old = {"backend": "openvino-bf16", "passed": True, "failed": [],
           "average_precision": 81.0, "torch_average_precision": 81.1,
           "recall_at_10": 0.995, "texts": 46, "queries": 46, "seconds": 1.0}
    said = fast_form.describe(old)
    assert "99.5% of PyTorch's ten nearest neighbours (46 of the project's texts)" in said
    assert fast_form.describe({**old, "passed": False, "failed": ["search recall@10 0.9"]}) \
        .endswith("(search recall@10 0.9).")
