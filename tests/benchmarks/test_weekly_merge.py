"""Re-measuring one part of the weekly benchmark keeps the other part, each with its date."""

from __future__ import annotations

import json

from benchmarks.weekly import merge_results, present

WEEKS = {"weeks": [{"week": 1, "rows": 10, "rows_total": 10, "clusters": 2,
                    "clusters_unchanged": 0, "rows_checked": 0, "id_churn_rows": 0,
                    "rows_with_another_id": 0, "f1_vs_whole": 100.0,
                    "labels_f1_incremental": 80.0, "labels_f1_whole": 80.0,
                    "cut_seconds": 0.1}]}


def speed(seconds: float) -> dict:
    return {"items": 1_000_000, "added": 10_000, "threshold": 0.8,
            "incremental_seconds": seconds, "whole_seconds": 100.0, "ratio": 100 / seconds,
            "f1_vs_whole": 99.5}


def test_a_speed_run_replaces_speed_only_and_says_when_each_part_was_measured(tmp_path):
    path = tmp_path / "weekly.json"
    path.write_text(json.dumps({"benchmark": "weekly", "mode": "full",
                                "date": "2026-11-26T21:56:22+00:00",
                                "command": "python -m benchmarks --only weekly",
                                "hardware": {"cores": 2}, "wall_seconds": 851.0,
                                "result": {"weeks": WEEKS, "speed": speed(16.0)}}))
    merge_results({"speed": speed(12.5)}, ("speed",), False, "2026-11-27T05:00:00+00:00",
                  "python -m benchmarks.weekly --part speed --merge", path)
    record = json.loads(path.read_text())
    result = record["result"]
    assert result["weeks"] == WEEKS and result["speed"]["incremental_seconds"] == 12.5
    assert result["measured"]["weeks"]["date"].startswith("2026-11-26")
    assert result["measured"]["speed"]["command"].endswith("--part speed --merge")
    assert record["date"].startswith("2026-11-27") and record["hardware"] == {"cores": 2}
    assert record["command"] == ("python -m benchmarks.weekly --part speed --merge (speed); "
                                 "python -m benchmarks --only weekly (weeks)")
    assert "wall_seconds" not in record
    # The record holds what was measured; the page's text is derived when it renders.
    assert not {"headline", "tables", "notes"} & set(result)
    page = present(result)
    shown = {row["figure"]: row["duplens"] for row in page["headline"]}
    assert shown["adding 10,000 rows to 1,000,000: encoded to clusters updated"] == "12.50 s"
    assert any("speed part was measured on 2026-11-27" in n for n in page["notes"])
    assert any("weeks part was measured on 2026-11-26" in n for n in page["notes"])


def test_a_quick_run_never_mixes_with_a_full_record(tmp_path):
    path = tmp_path / "weekly.json"
    path.write_text(json.dumps({"benchmark": "weekly", "mode": "full", "date": "2026-11-26",
                                "result": {"weeks": WEEKS, "speed": speed(16.0)}}))
    merge_results({"speed": speed(1.0)}, ("speed",), True, "2026-11-27T05:00:00+00:00",
                  "python -m benchmarks.weekly --quick --part speed --merge", path)
    result = json.loads(path.read_text())["result"]
    assert "weeks" not in result and result["speed"]["incremental_seconds"] == 1.0
