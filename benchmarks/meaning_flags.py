"""The ⚠ beside a close pair: how much more often it marks a pair that is not a duplicate.

    python -m benchmarks --only meaning_flags [--quick]

Quora's labelled pairs, split three ways
as the fine-tuning benchmarks split them (`benchmarks.finetune_quora.quora_splits`, seed 0,
by question groups; quick: a seeded sample of 500 pairs of each part). The rules (which
differences mark a pair, the synonym cut-off) were chosen looking at the validation part, so
the figure reported is the test part's, measured once; the validation part's is shown beside
it, as where they were chosen. Each pair's similarity is the bundled model's, through the
engine's encoder (`load_encoder`, what a project stores), and the pairs at or above the
model's default threshold (`engine.encoding.model_threshold`, what a new project uses) are
the ones the window would call duplicates.
For each rule, in the same run on the same pairs: the share of those pairs labelled not
duplicate that it marks, the share of the duplicates it marks, and their ratio (goal: at
least 2, the ⚠ meaning "look here" rather than "close pair"):

- Duplens: `engine.review.overlap.overlap(a, b).marked(similarity, threshold)`: lemmas,
  synonyms the model's word embeddings agree on, and only what flips a meaning marks;
- the baseline: the rule before it, `content_word_differs` (any content word one text lacks),
  kept in the engine for this comparison.

The time per pair is `overlap` alone, after `warm_up`, over the pairs measured.
"""

from __future__ import annotations

import time
from collections import Counter

import numpy as np

GOAL_RATIO = 2.0
QUICK_PAIRS = 500
SEED = 0


def run(quick: bool) -> dict:
    from benchmarks.finetune_quora import quora_splits
    from engine.encoding.loading import load_encoder
    from engine.encoding.model_threshold import for_fingerprint
    from engine.review.overlap import content_word_differs, overlap, warm_up

    data = quora_splits(SEED, QUICK_PAIRS if quick else None)
    encoder = load_encoder(None, device="cpu", batch_size=64)
    threshold = for_fingerprint(encoder.spec.fingerprint).value
    started = time.perf_counter()
    warm_up()
    warm_s = time.perf_counter() - started
    validation = _measure(data.validation, encoder, threshold, overlap, content_word_differs)
    test = _measure(data.test, encoder, threshold, overlap, content_word_differs)
    return {
        "split": f"test (seed {SEED}); rules chosen on validation",
        "test_pairs": data.sizes["test"], "validation_pairs": data.sizes["validation"],
        "threshold": threshold, "warm_up_s": round(warm_s, 3),
        "test": test, "validation": validation,
    }


def _measure(pairs: list, encoder, threshold: float, overlap, content_word_differs) -> dict:
    """Both rules on the pairs at or above `threshold`: the shares each marks, and why the
    new rule marked them."""
    va = encoder.encode([p.text_a for p in pairs])
    vb = encoder.encode([p.text_b for p in pairs])
    scores = np.sum(va * vb, axis=1)
    duplicate = np.array([p.label >= 0.5 for p in pairs])
    close = np.flatnonzero(scores >= threshold)
    started = time.perf_counter()
    found = [overlap(pairs[i].text_a, pairs[i].text_b) for i in close]
    per_pair_ms = 1000 * (time.perf_counter() - started) / max(len(close), 1)
    new = np.array([f.marked(float(scores[i]), threshold)
                    for f, i in zip(found, close, strict=True)])
    old = np.array([content_word_differs(pairs[i].text_a, pairs[i].text_b) for i in close])
    dup = duplicate[close]
    reasons: dict[str, Counter] = {"duplicate": Counter(), "not duplicate": Counter()}
    for f, d, m in zip(found, dup, new, strict=True):
        if m:
            for reason in {r.split(":")[0] for r in f.flips.reasons()}:
                reasons["duplicate" if d else "not duplicate"][reason] += 1
    return {
        "measured_pairs": len(pairs), "close_pairs": int(len(close)),
        "close_duplicates": int(dup.sum()), "close_not_duplicates": int((~dup).sum()),
        "duplens": _shares(new, dup), "baseline": _shares(old, dup),
        "reasons": {k: dict(v.most_common()) for k, v in reasons.items()},
        "overlap_ms_per_pair": round(per_pair_ms, 3),
    }


def _shares(marked: np.ndarray, dup: np.ndarray) -> dict:
    not_dup = float(marked[~dup].mean()) if (~dup).any() else 0.0
    is_dup = float(marked[dup].mean()) if dup.any() else 0.0
    return {"not_duplicates_marked": round(not_dup, 4), "duplicates_marked": round(is_dup, 4),
            "ratio": round(not_dup / is_dup, 2) if is_dup else None}


def present(result: dict, results: dict | None = None) -> dict:
    if "test" not in result:    # a result from before the test part was measured
        result = {**result, "split": result["split"] + ", where the rules were chosen",
                  "test": result, "validation": None}
    test, validation = result["test"], result.get("validation")
    new, old = test["duplens"], test["baseline"]
    headline = [{
        "figure": "⚠ on close non-duplicates ÷ ⚠ on close duplicates (Quora, "
                  f"{result['split']})",
        "duplens": f"{new['ratio']:.2f}×", "baseline": f"{old['ratio']:.2f}×",
        "baseline_is": "the rule before: any content word differs, same run, same pairs",
        "ratio": f"{new['ratio'] / old['ratio']:.2f}×" if old["ratio"] else "–",
        "goal": f"≥ {GOAL_RATIO:.0f}×", "met": new["ratio"] is not None
        and new["ratio"] >= GOAL_RATIO}]

    def row(name: str, shares: dict) -> list:
        return [name, f"{100 * shares['not_duplicates_marked']:.1f}%",
                f"{100 * shares['duplicates_marked']:.1f}%",
                f"{shares['ratio']:.2f}×" if shares["ratio"] else "–"]

    def table(part: str, measured: dict) -> dict:
        return {"title": f"Quora {part}: {measured['measured_pairs']:,} pairs measured, "
                         f"{measured['close_pairs']:,} at or above the threshold "
                         f"{result['threshold']} ({measured['close_duplicates']:,} duplicates,"
                         f" {measured['close_not_duplicates']:,} not)",
                "columns": ["rule", "non-duplicates marked", "duplicates marked", "ratio"],
                "rows": [row("Duplens: lemmas, synonyms, what flips a meaning",
                             measured["duplens"]),
                         row("baseline: any content word differs", measured["baseline"])]}

    tables = [table(result["split"], test)]
    if validation is not None:
        tables.append(table("validation, where the rules were chosen", validation))
    why = {"title": "Why the new rule marked a close pair (test; a pair may have several "
                    "reasons)",
           "columns": ["reason", "non-duplicates", "duplicates"],
           "rows": [[r, test["reasons"]["not duplicate"].get(r, 0),
                     test["reasons"]["duplicate"].get(r, 0)]
                    for r in ("number", "name", "negation", "opposite")]}
    notes = [f"`overlap` costs {test['overlap_ms_per_pair']:.2f} ms a pair after "
             f"`warm_up` ({result['warm_up_s']:.2f} s, once); the search shows 10 hits."]
    return {"headline": headline, "tables": [*tables, why], "notes": notes}
