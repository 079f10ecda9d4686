"""Record the bundled model's default threshold from the benchmark that chose it.

    python -m devtools.record_model_threshold

Reads `benchmarks/results/default_threshold.json` (made by
`python -m benchmarks --only default_threshold`, the full run: every Quora validation pair)
and writes `duplens_data/model_thresholds.json`, which the engine reads
(`engine.encoding.model_threshold`). The number is never typed in by hand: a test checks
the two files agree, and refuses a record made from a quick run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from engine.encoding.model_threshold import RECORD, RECORD_FORMAT

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "default_threshold.json"
TARGET = ROOT / "duplens_data" / RECORD


def record_from(results: dict) -> dict:
    """The record `duplens_data/model_thresholds.json` holds, from the benchmark's file."""
    if results.get("mode") != "full":
        raise ValueError("the default threshold is recorded from a full run, not --quick")
    found = results["result"]
    at = found["validation"]["at_chosen"]
    return {
        "format": RECORD_FORMAT,
        "models": {found["fingerprint"]: {
            "name": found["model"],
            "threshold": found["chosen"],
            "chosen_on": f"best F1 on {found['validation_pairs']:,} Quora validation pairs",
            "validation": {"precision": round(at["precision"], 4),
                           "recall": round(at["recall"], 4), "f1": round(at["f1"], 4)},
            "made_by": "benchmarks/default_threshold.py, "
                       f"{results.get('date', 'date not recorded')}",
        }},
    }


def main() -> int:
    record = record_from(json.loads(RESULTS.read_text(encoding="utf-8")))
    TARGET.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n",
                      encoding="utf-8")
    for fingerprint, entry in record["models"].items():
        print(f"{entry['name']} ({fingerprint[:19]}…): {entry['threshold']} "
              f"({entry['chosen_on']}) -> {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
