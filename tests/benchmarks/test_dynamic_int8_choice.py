"""The dynamic int8 recipes' benchmark (benchmarks/dynamic_int8_choice.py): the texts timed
as a long document's windows fill a window, and its table shows window speeds only where a
run measured them."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from benchmarks import dynamic_int8_choice

RECORDED = Path(__file__).parents[2] / "benchmarks" / "results" / "dynamic_int8_choice.json"


def test_window_texts_join_consecutive_questions_without_reuse() -> None:
    questions = [f"question number {i} is here?" for i in range(500)]   # 5 words each
    texts = dynamic_int8_choice.window_texts(questions, 3, words=40)
    assert len(texts) == 3
    assert all(len(t.split()) >= 40 for t in texts)
    assert texts[0].startswith("question number 0 ") and "number 8 " not in texts[0]
    assert texts[1].startswith("question number 8 ")   # the next question, none reused
    assert len(dynamic_int8_choice.window_texts(questions[:10], 3, words=40)) == 1


def test_the_table_shows_window_speeds_only_when_measured() -> None:
    result = json.loads(RECORDED.read_text(encoding="utf-8"))["result"]
    table = dynamic_int8_choice.present(result)["tables"][0]
    has_windows = "windows_per_s" in result["rows"]["exact"]
    assert ("windows/s" in table["columns"]) is has_windows
    assert all(len(row) == len(table["columns"]) for row in table["rows"])
    other = copy.deepcopy(result)
    for row in other["rows"].values():
        if has_windows:
            row.pop("windows_per_s")
        else:
            row["windows_per_s"] = 10.0
    other["timed_windows"] = 96
    shown = dynamic_int8_choice.present(other)["tables"][0]
    assert ("windows/s" in shown["columns"]) is not has_windows
    assert all(len(row) == len(shown["columns"]) for row in shown["rows"])


def _result(recipes: dict[str, tuple[float, bool, float, float]]) -> dict:
    """A run's result: name -> (cut F1, gate passed, sentences/s, windows/s); the shipped
    recipe is "shipped" (group 32, the feed-forward outputs in float32)."""
    rows = {"exact": {"sentences_per_s": 100.0, "windows_per_s": 10.0}}
    for i, (name, (cut, passed, sentences, windows)) in enumerate(recipes.items()):
        rows[name] = {"group": 32 if name == "shipped" else 64 + i,
                      "float32_layers": ["ffn"], "cut_f1": cut,
                      "gate": {"passed": passed, "failed": []},
                      "sentences_per_s": sentences, "windows_per_s": windows}
    return {"rows": rows, "shipped": {"group": 32, "float32_layers": ["ffn"]}}


def test_the_rule_needs_the_margin_the_gate_and_both_speeds() -> None:
    bar = dynamic_int8_choice.MIN_CUT_F1 + dynamic_int8_choice.RULE_MARGIN
    result = _result({
        "shipped": (0.99, True, 150.0, 15.0),
        "windows only": (0.99, True, 140.0, 30.0),      # slower on questions
        "thin margin": (bar - 0.0001, True, 200.0, 25.0),
        "fails the gate": (0.99, False, 300.0, 40.0),
        "faster": (bar, True, 151.0, 16.0),
        "fastest on windows": (0.99, True, 160.0, 20.0),
    })
    assert dynamic_int8_choice.shipped_name(result) == "shipped"
    assert dynamic_int8_choice.rule_pick(result) == "fastest on windows"
    del result["rows"]["fastest on windows"], result["rows"]["faster"]
    assert dynamic_int8_choice.rule_pick(result) is None


def test_the_rule_judged_on_other_speeds_keeps_the_gate_figures() -> None:
    result = _result({"shipped": (0.99, True, 150.0, 15.0), "other": (0.99, True, 160.0, 20.0)})
    assert dynamic_int8_choice.rule_pick(result) == "other"
    free = {"exact": {"sentences_per_s": 90.0, "windows_per_s": 9.0},
            "shipped": {"sentences_per_s": 150.0, "windows_per_s": 18.0},
            "other": {"sentences_per_s": 160.0, "windows_per_s": 17.0}}
    assert dynamic_int8_choice.rule_pick(result, free) is None
    result.update(data={"stsb_pairs": 1, "quora_pairs": 1, "sample_pairs": 1,
                        "cut_questions": 1, "threshold": 0.75},
                  timed_texts=1, timed_windows=1, load_average=[1.0])
    for row in result["rows"].values():
        row.update(what="x", stsb_spearman_loss=0.0, quora_ap_loss=0.0,
                   sample_pairs_ap_loss=0.0, partner_top5_loss=0.0)
    result["uncapped"] = {"cpu_class": "bf16", "rows": free, "load_average": [1.0]}
    shown = dynamic_int8_choice.present(result)
    assert len(shown["tables"]) == 2
    assert [row[0] for row in shown["tables"][1]["rows"]] == ["exact", "shipped", "other"]
    assert shown["tables"][1]["rows"][2][5] == "0.94×"    # 17 / 18 windows a second
    assert any("\"other\" would replace" in n for n in shown["notes"])
    assert any("bf16 class" in n and "stays" in n for n in shown["notes"])


def test_speeds_are_timed_in_rounds_that_visit_every_recipe() -> None:
    calls: list[tuple[str, int]] = []

    def encoder(name: str):
        return lambda texts: calls.append((name, len(texts)))

    questions, windows = ["q"] * 50, ["w"] * 20
    speeds = dynamic_int8_choice.interleaved_speeds(
        {"a": encoder("a"), "b": encoder("b")}, questions, windows, rounds=2)
    assert set(speeds) == {"a", "b"}
    assert all(s["sentences_per_s"] > 0 and s["windows_per_s"] > 0 for s in speeds.values())
    timed = [c for c in calls if c[1] in (50, 20)]
    # warm-ups first, then a, b, a, b: each round times both recipes on both kinds of text
    assert calls[:4] == [("a", 5), ("a", 2), ("b", 5), ("b", 2)]
    assert timed == [("a", 50), ("a", 20), ("b", 50), ("b", 20)] * 2
