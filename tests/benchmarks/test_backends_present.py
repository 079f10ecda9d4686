"""The backends benchmark's report (`benchmarks.backends.present`) from a synthetic result:
the quality gate's table, the default it chooses and whether the code agrees, and results
from before the gate rendered as before."""

from __future__ import annotations

import copy

import pytest

from benchmarks.backends import class_of, present
from engine.encoding import backends

FAST = "openvino-int8"


def row(speed: float, stsb: float, quora: float, sample: float, recall: float,
        passed: bool | None, **extra) -> dict:
    found = {"label": "x", "exact": True, "export_and_load_s": 1.0, "served": "x", "threads": 2,
             "sentences_per_s": speed, "ratio_to_torch": round(speed / 400, 2),
             "query_p50_ms": 10.0, "query_p95_ms": 12.0, "min_cosine_to_torch": 0.99,
             "stsb_spearman": stsb, "spearman_delta": round(stsb - 82.0, 2),
             "quora_ap": quora, "quora_ap_delta": round(quora - 70.0, 2),
             "sample_pairs_ap": sample, "sample_pairs_ap_delta": round(sample - 60.0, 2),
             "recall_at_10": recall, "exact_recall_at_10": recall, "top1_agreement": 0.99}
    if passed is not None:
        found["gate"] = {"passed": passed, "failed": [] if passed else ["STSb 0.90 lower"]}
    return {**found, **extra}


RESULT = {
    "mode": "quick", "cpu": {"flags": ["avx2"], "int8_isa": "avx2"}, "threads": [2],
    "texts": 1000, "rounds": 3, "queries": 100, "batch_size": 64, "cores": 2,
    "load_average": 0.5, "not_installed": {"onnx-int8": "not installed: onnxruntime"},
    "backends": {"torch": row(400, 82.0, 70.0, 60.0, 0.99, True),
                 "openvino": row(600, 82.0, 70.0, 60.0, 0.99, True),
                 FAST: row(1000, 81.9, 69.8, 59.9, 0.985, True),
                 "onnx": row(1200, 81.1, 70.0, 60.0, 0.99, False)},
    "gate": {"data": {"stsb_pairs": 1379, "quora_pairs": 4000, "quora_duplicates": 1500,
                      "sample_pairs": 1290, "sample_duplicates": 430,
                      "search_corpus": 10000, "search_queries": 500},
             "tolerances": {}},
    "query_mixing": None,
}


@pytest.fixture
def code_default(monkeypatch):
    """The code's CPU default as a test sets it (`present` reads it when called)."""
    def choose(name: str) -> None:
        monkeypatch.setitem(backends.CPU_CLASS_DEFAULTS, class_of(RESULT["cpu"]["flags"]), name)
    return choose


def test_the_gate_chooses_the_fastest_passing_backend_and_checks_the_code(code_default):
    code_default(FAST)
    shown = present(RESULT)
    head = shown["headline"][0]
    assert head["figure"].startswith("CPU default backend")
    assert head["duplens"].startswith(f"{FAST}:")
    assert head["baseline_is"] and head["met"] is True
    gate = next(t for t in shown["tables"] if t["title"].startswith("Quality gate"))
    verdicts = {r[0]: r[-1] for r in gate["rows"]}
    assert verdicts["torch"] == "reference" and verdicts[FAST] == "passes"
    assert verdicts["onnx"].startswith("fails: STSb")
    assert "onnx failed: STSb 0.90 lower" in shown["notes"][0]
    assert any("onnx-int8: skipped, not installed" in n for n in shown["notes"])
    assert all(h.get("baseline_is") for h in shown["headline"])


def test_a_verdict_other_than_the_codes_default_is_not_met_and_says_so(code_default):
    code_default(FAST)
    result = copy.deepcopy(RESULT)
    result["backends"][FAST]["gate"] = {"passed": False, "failed": ["search recall@10 0.9"]}
    shown = present(result)
    assert shown["headline"][0]["duplens"].startswith("openvino:")
    assert shown["headline"][0]["met"] is False
    assert "DISAGREES" in shown["notes"][0]


def test_torch_as_the_code_default_is_met_when_nothing_faster_passes(code_default):
    """int8 failing and OpenVINO passing at 1.1x torch (under the 1.2x a new default needs):
    the verdict is torch, which a torch default meets."""
    code_default("torch")
    result = copy.deepcopy(RESULT)
    result["backends"][FAST]["gate"] = {"passed": False, "failed": ["search recall@10 0.9"]}
    result["backends"]["openvino"]["sentences_per_s"] = 440
    shown = present(result)
    assert shown["headline"][0]["duplens"].startswith("torch:")
    assert shown["headline"][0]["met"] is True


def test_a_result_from_before_the_gate_shows_timing_only():
    result = copy.deepcopy(RESULT)
    result["threads"] = 2
    for r in result["backends"].values():
        for key in ("gate", "served", "threads", "quora_ap", "sample_pairs_ap"):
            r.pop(key, None)
    del result["gate"]
    shown = present(result)
    assert [t["title"] for t in shown["tables"]] == [
        "Backends on this CPU (ratios against torch, same run)"]
    assert "served" not in shown["tables"][0]["columns"]
    assert shown["headline"][0]["figure"].startswith("bulk encoding")
