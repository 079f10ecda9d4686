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
