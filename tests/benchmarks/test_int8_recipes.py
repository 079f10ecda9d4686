"""The int8 recipes benchmark's report (benchmarks/int8_recipes.py): a recipe meets the
goal only at the quality gate's recall and faster than the CPU default's own arithmetic, and
the best recipe is the one named."""

from __future__ import annotations

from benchmarks import int8_recipes
from benchmarks.quality_gate import MIN_RECALL
from engine.encoding.backends import class_default_name


def result(recalls: dict[str, float], speed: float = 900.0, bf16: bool = False) -> dict:
    rows = {"torch": {"what": "reference", "sentences_per_s": 400.0, "ratio_to_torch": 1.0,
                      "exact_recall_at_10": 1.0, "top1_agreement": 1.0,
                      "mean_cosine_to_torch": 1.0},
            "openvino fp32": {"what": "not quantised", "sentences_per_s": 420.0,
                              "ratio_to_torch": 1.05, "exact_recall_at_10": 0.996,
                              "top1_agreement": 0.996, "mean_cosine_to_torch": 0.99999}}
    if bf16:
        rows["openvino bf16"] = {**rows["openvino fp32"], "sentences_per_s": 800.0,
                                 "ratio_to_torch": 2.0, "exact_recall_at_10": 0.9964}
    for name, value in recalls.items():
        rows[name] = {"what": name, "sentences_per_s": speed, "ratio_to_torch": speed / 400,
                      "exact_recall_at_10": value, "top1_agreement": 0.9,
                      "mean_cosine_to_torch": 0.998, "calibration_texts": 300,
                      "quantise_s": 9.0}
    return {"rows": rows, "min_recall": MIN_RECALL, "k": 10, "threads": 2,
            "load_average": [1.0, 1.0, 1.0],
            "data": {"search_corpus": 10_000, "search_queries": 500, "timed_texts": 2000,
                     "batch_size": 64}}


def test_no_recipe_under_the_gates_recall_meets_the_goal() -> None:
    shown = int8_recipes.present(result({"shipped": 0.947, "fp32 feed-forward": 0.972}))
    head = shown["headline"][0]
    assert head["met"] is False
    assert "(fp32 feed-forward)" in head["figure"] and head["duplens"].startswith("0.972")
    assert head["baseline"].startswith("0.996")   # the unquantised model, same run
    # no bf16 row: the class without bf16 units, whose default is the code's
    assert f"stays {class_default_name('avx2', '')}." in shown["notes"][0]
    with_bf16 = int8_recipes.present(result({"shipped": 0.947}, bf16=True),
                                     hardware={"cpu": "AMD EPYC"})   # the recorded run's
    assert "stays openvino-bf16" in with_bf16["notes"][0]
    assert len(shown["tables"][0]["rows"]) == 4


def test_a_recipe_at_the_gates_recall_meets_it() -> None:
    shown = int8_recipes.present(result({"shipped": 0.947, "better": MIN_RECALL}))
    assert shown["headline"][0]["met"] is True
    assert "better" in shown["notes"][0]


def test_a_recipe_at_the_gates_recall_but_slower_than_bf16_does_not() -> None:
    shown = int8_recipes.present(result({"int8 weights": 0.9814}, speed=760.0, bf16=True))
    head = shown["headline"][0]
    assert head["met"] is False
    assert head["baseline"].startswith("0.996 at 2.00×")   # the bf16 row, not fp32's
    assert "none faster than openvino bf16" in shown["notes"][0]
    faster = int8_recipes.present(result({"int8 weights": 0.9814}, speed=850.0, bf16=True))
    assert faster["headline"][0]["met"] is True


def test_the_verdict_names_the_recorded_class_default() -> None:
    """A run records its CPU's class: an Intel CPU with VNNI and no bf16 units (no bf16
    row) is the int8 class, whose default is not AVX2's."""
    recorded = {**result({"shipped": 0.947}), "cpu_class": "int8"}
    shown = int8_recipes.present(recorded, hardware={"cpu": "Intel(R) Xeon(R) Processor"})
    assert f"stays {class_default_name('int8', 'intel')}." in shown["notes"][0]
    assert class_default_name("int8", "intel") != class_default_name("avx2", "intel")
