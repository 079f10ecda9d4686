"""A model's default threshold: recorded for the bundled model from the benchmark that chose
it, measured on its held-out pairs for a fine-tuned version, none for any other model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.encoding.model_threshold import (
    ENOUGH_OF_EACH,
    FALLBACK,
    UNRECORDED,
    for_fingerprint,
    for_row,
    recorded_by_name,
)

ROOT = Path(__file__).resolve().parents[3]


def _row(model_id: int, fingerprint: str = "sha256:other", parent: int | None = None,
         metrics: dict | None = None) -> dict:
    return {"id": model_id, "fingerprint": fingerprint, "parent_id": parent,
            "metrics": metrics or {}}


def _trained(pairs: int, positives: int, threshold: float) -> dict:
    return {"before": {}, "after": {"pairs": pairs, "positives": positives,
                                    "threshold": threshold, "average_precision": 90.0}}


def test_the_shipped_record_is_the_benchmark_s_full_run_choice_for_the_installed_weights():
    """The number is the one `benchmarks/default_threshold.py` chose on every Quora
    validation pair (`devtools.record_model_threshold` copies it), for the weights the
    bundled package installs: never typed in, never another model's."""
    from devtools.record_model_threshold import RESULTS, record_from
    from engine.encoding.model_spec import resolve_model

    shipped = json.loads((ROOT / "duplens_data" / "model_thresholds.json").read_text())
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    assert results["mode"] == "full"
    assert shipped == record_from(results)
    fingerprint = resolve_model(None).fingerprint
    found = for_fingerprint(fingerprint)
    assert found.recorded and found.value == results["result"]["chosen"]
    assert "Quora validation pairs" in found.chosen_on
    assert recorded_by_name("all-MiniLM-L6-v2") == found
    # the same weights served by a quantised backend carry a tag: the record still holds
    assert for_row(_row(1, fingerprint + "+openvino-bf16"), {}.get) == found


def test_a_quick_run_is_not_recorded():
    from devtools.record_model_threshold import record_from

    with pytest.raises(ValueError, match="full run"):
        record_from({"mode": "quick", "result": {}})


def test_another_model_has_none_recorded_and_says_so():
    assert for_fingerprint("sha256:" + "0" * 64) == UNRECORDED
    assert UNRECORDED.value == FALLBACK and not UNRECORDED.recorded
    assert for_row(_row(1), {}.get) == UNRECORDED


def test_a_fine_tuned_version_records_the_best_threshold_on_its_held_out_pairs():
    rows = {1: _row(1), 2: _row(2, "sha256:v2", 1, _trained(60, 25, 0.6812345))}
    found = for_row(rows[2], rows.get)
    assert found.recorded and found.value == 0.6812
    assert found.chosen_on == "best F1 on its 60 held-out pairs"


def test_a_version_with_too_few_held_out_pairs_of_a_kind_keeps_its_parent_s():
    """Below ten of each kind one pair moves a best-F1 threshold a long way: the version
    keeps its parent's threshold, and says why."""
    parent = _row(2, "sha256:v2", 1, _trained(60, 25, 0.68))
    few = _row(3, "sha256:v3", 2, _trained(40, ENOUGH_OF_EACH - 1, 0.55))
    rows = {1: _row(1), 2: parent, 3: few}
    found = for_row(few, rows.get)
    assert found.value == 0.68
    assert found.chosen_on.startswith("its parent's, best F1 on its 60 held-out pairs")
    assert "too few held-out pairs" in found.chosen_on
    # a version of the unrecorded model with too few held-out pairs: still none recorded
    alone = _row(4, "sha256:v4", 1, _trained(12, 2, 0.5))
    assert for_row(alone, {1: _row(1), 4: alone}.get) == UNRECORDED


def test_a_fast_form_uses_its_version_s_threshold():
    version = _row(2, "sha256:v2", 1, _trained(60, 25, 0.7))
    fast = _row(5, "sha256:v2+openvino-int8", None, {"fast_form_of": 2})
    assert for_row(fast, {1: _row(1), 2: version, 5: fast}.get).value == 0.7
