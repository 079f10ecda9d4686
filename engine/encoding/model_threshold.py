"""A model's own default threshold: where it calls a pair a duplicate before any verdict.

Cosine similarities are not on one scale across models: the bundled all-MiniLM-L6-v2 calls
Quora's duplicates best from about 0.75, and a fine-tuned version pulls duplicates closer
and pushes the rest apart, so its best threshold moves. One number for every model (0.80,
as before) found a quarter of the sample questions' duplicates. So the threshold travels
with the model:

- **the bundled model**: chosen by best F1 on Quora's validation pairs
  (`benchmarks/default_threshold.py`) and recorded in `duplens_data/model_thresholds.json`
  by `devtools/record_model_threshold.py`, keyed by the weights' fingerprint, so another
  model under the same name never inherits it;
- **a fine-tuned version**: the best-F1 threshold on its own held-out pairs, which training
  measures anyway (`metrics["after"]["threshold"]`), when they hold at least
  `ENOUGH_OF_EACH` of each kind; with fewer, one pair moves it by a large step, and the
  version keeps its parent's;
- **any other model**: none is recorded, and `FALLBACK` (0.80) is used and said to be that.

A version's fast form (OpenVINO) shares its weights and uses the version's threshold.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass

RECORD = "model_thresholds.json"
RECORD_FORMAT = 1
FALLBACK = 0.80
# The same bar as the project's calibration (`engine.review.calibration.ENOUGH_OF_EACH`,
# measured there): below ten of each, a best-F1 threshold is a few pairs' accident.
ENOUGH_OF_EACH = 10
_SIBLING_KEY = "fast_form_of"   # `engine.training.version_folders.SIBLING_KEY`


@dataclass(frozen=True)
class ModelThreshold:
    """A model's default threshold and what it was chosen on."""

    value: float
    chosen_on: str      # for people: "best F1 on 2,310 Quora validation pairs"
    recorded: bool      # False: nothing is recorded for this model; `FALLBACK` stands in

    def as_dict(self) -> dict:
        return {"value": self.value, "chosen_on": self.chosen_on, "recorded": self.recorded}


UNRECORDED = ModelThreshold(FALLBACK, "none recorded for this model", False)


@functools.cache
def shipped_records() -> dict[str, dict]:
    """The recorded thresholds by weights fingerprint ({} when the file is missing or not
    one this version reads: the model then falls back, it never fails to open)."""
    import duplens_data

    try:
        found = json.loads(duplens_data.path(RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError, RuntimeError):
        return {}
    if not isinstance(found, dict) or found.get("format") != RECORD_FORMAT:
        return {}
    models = found.get("models")
    return models if isinstance(models, dict) else {}


def for_fingerprint(weights: str) -> ModelThreshold:
    """The threshold recorded for these weights (a fingerprint without a backend tag)."""
    record = shipped_records().get(weights)
    try:
        value = float(record["threshold"])
    except (TypeError, KeyError, ValueError):
        return UNRECORDED
    if not 0.0 < value <= 1.0:
        return UNRECORDED
    return ModelThreshold(value, str(record.get("chosen_on", "recorded with the model")), True)


def recorded_by_name(name: str) -> ModelThreshold:
    """What is recorded for the model called `name` (About shows the bundled model's
    without hashing its weights on the GUI thread; a project matches by fingerprint)."""
    for fingerprint, record in shipped_records().items():
        if isinstance(record, dict) and record.get("name") == name:
            return for_fingerprint(fingerprint)
    return UNRECORDED


def for_row(row: dict | None, row_of: Callable[[int], dict | None]) -> ModelThreshold:
    """The default threshold of a project's model (`models` row); `row_of` reads another
    row by id (a fast form's version, a version's parent)."""
    from engine.encoding.backends import split_fingerprint

    seen: set[int] = set()
    inherited = False
    while row is not None and row["id"] not in seen:
        seen.add(row["id"])
        metrics = row.get("metrics") or {}
        if metrics.get(_SIBLING_KEY) is not None:       # a version's fast form
            row = row_of(int(metrics[_SIBLING_KEY]))
            continue
        after = metrics.get("after")
        if after is None:                               # not a trained version
            found = for_fingerprint(split_fingerprint(row["fingerprint"])[0])
        else:
            found = held_out_threshold(after)
        if found is not None:
            return _inherited(found) if inherited else found
        inherited = True   # too few held-out pairs: the parent's threshold
        row = row_of(int(row["parent_id"])) if row.get("parent_id") is not None else None
    return UNRECORDED


def _inherited(parent: ModelThreshold) -> ModelThreshold:
    """A version with too few held-out pairs of each kind keeps its parent's threshold."""
    if not parent.recorded:
        return parent
    return ModelThreshold(parent.value, f"its parent's, {parent.chosen_on} (too few "
                          f"held-out pairs to choose its own)", True)


def held_out_threshold(after: dict) -> ModelThreshold | None:
    """A trained version's best-F1 threshold on its held-out pairs, when they can carry it."""
    try:
        pairs, positives = int(after["pairs"]), int(after["positives"])
        value = float(after["threshold"])
    except (TypeError, KeyError, ValueError):
        return None
    if min(positives, pairs - positives) < ENOUGH_OF_EACH or not 0.0 < value <= 1.0:
        return None
    return ModelThreshold(round(value, 4), f"best F1 on its {pairs:,} held-out pairs", True)
