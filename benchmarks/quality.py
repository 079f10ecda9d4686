"""Quality of the bundled model through Duplens, next to plain sentence-transformers.

    python -m benchmarks --only quality

STS benchmark test split (1,379 pairs), Spearman x100 of cosine similarity against the gold
scores, three ways in one run:
1. `duplens eval sts`: the engine's `evaluate_sts` (sentence-transformers' evaluator on the
   model as Duplens loads it);
2. the vectors Duplens stores: `SentenceEncoder.encode` (clipping, normalising, batch 64),
   cosine, SciPy's Spearman, so any change in the product's encode path shows here;
3. the baseline: a model sentence-transformers loads itself and its
   `EmbeddingSimilarityEvaluator`, data read with the csv module.
The held-out Quora average precision is read from benchmarks/results/finetune_quora.json
(the fine-tuning benchmark), not measured again. `--quick` (a smoke run): the first 400
pairs only.
"""

from __future__ import annotations

import csv
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.data import STSB_TEST

EXPECTED_SPEARMAN = 82.0
QUICK_PAIRS = 400


def run(quick: bool) -> dict:
    if not STSB_TEST.exists():
        raise SystemExit(f"benchmark data not found: {STSB_TEST} (set DUPLENS_SHARED)")
    with tempfile.TemporaryDirectory(prefix="duplens-quality-") as tmp:
        sts = _first_pairs(STSB_TEST, Path(tmp) / "sts.tsv", QUICK_PAIRS) if quick else STSB_TEST
        return _measure(sts)


def _measure(sts: Path) -> dict:
    from scipy.stats import spearmanr
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.evaluation import (
        EmbeddingSimilarityEvaluator,
    )

    from engine.encoding.loading import load_encoder
    from engine.encoding.model_spec import default_model_path
    from engine.evaluation import evaluate_sts

    encoder = load_encoder(None, device="cpu", batch_size=64)

    t0 = time.perf_counter()
    engine_eval = evaluate_sts(encoder, sts)
    engine_s = time.perf_counter() - t0

    s1, s2, gold = _read_sts(sts)
    t0 = time.perf_counter()
    v1, v2 = encoder.encode(s1), encoder.encode(s2)
    stored = 100 * float(spearmanr(np.sum(v1 * v2, axis=1), gold).statistic)
    stored_s = time.perf_counter() - t0

    plain_model = SentenceTransformer(str(default_model_path()), device="cpu")
    evaluator = EmbeddingSimilarityEvaluator(s1, s2, [g / 5.0 for g in gold],
                                             name="stsb-test", write_csv=False)
    t0 = time.perf_counter()
    metrics = evaluator(plain_model)
    plain_s = time.perf_counter() - t0
    plain = 100 * float(next(v for k, v in metrics.items() if k.endswith("spearman_cosine")))

    result = {
        "stsb_test_pairs": len(gold),
        "spearman": {"duplens_eval": round(engine_eval["spearman"], 2),
                     "duplens_stored_vectors": round(stored, 2),
                     "plain_sentence_transformers": round(plain, 2),
                     "expected": EXPECTED_SPEARMAN},
        "seconds": {"duplens_eval": round(engine_s, 1), "duplens_stored_vectors":
                    round(stored_s, 1), "plain_sentence_transformers": round(plain_s, 1)},
    }

    return result


def _first_pairs(source: Path, target: Path, pairs: int) -> Path:
    """The header and the first `pairs` lines of an STSb file, written to `target`."""
    with source.open(encoding="utf-8") as fh:
        lines = [line for _, line in zip(range(pairs + 1), fh, strict=False)]
    target.write_text("".join(lines), encoding="utf-8")
    return target


def _read_sts(path: Path) -> tuple[list[str], list[str], list[float]]:
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    return ([r["sentence1"] for r in rows], [r["sentence2"] for r in rows],
            [float(r["score"]) for r in rows])


def _quora(results: dict) -> dict | None:
    """The default model's Quora AP and the recommended fine-tuned one's, read when the
    report renders from the fine-tuning results (test where they have it)."""
    from benchmarks.finetune_quora import SPLITS, _before, _measured_pairs, recommended_on

    data = results.get("finetune_quora")
    if not data or "runs" not in data:
        return None
    splits = {r.get("measured_on", "held-out") for r in data["runs"]}
    on = "test" if "test" in splits else ("held-out" if "held-out" in splits else None)
    if on is None:
        return None
    before, tuned = _before(data, on), recommended_on(data, on, results)
    info = data.get("data", {})
    dups = info.get(f"{on}_duplicates", info.get("held_out_duplicates", "?"))
    rows = [["default model", f"{before['average_precision']:.2f}",
             f"{before['f1']:.2f}" if on not in SPLITS else ""]]
    if tuned:
        f1 = f"{tuned['f1']:.2f}" + (" (at the validation threshold)" if on == "test" else "")
        rows.append([f"fine-tuned ({tuned['objective']}, {tuned['pairs']:,} pairs, mean of "
                     f"{tuned['seeds']} seed{'s' if tuned['seeds'] > 1 else ''})",
                     f"{tuned['ap']:.2f}", f1])
    return {"title": f"Quora pairs, {on} ({_measured_pairs(data, on):,} pairs, {dups:,} "
                     f"duplicates), read from benchmarks/results/finetune_quora.json "
                     f"(`{data.get('command')}`, {data.get('date')})",
            "columns": ["model", "average precision", "F1"], "rows": rows}


def present(result: dict, results: dict | None = None) -> dict:
    sp = result["spearman"]
    plain = sp["plain_sentence_transformers"]
    headline = [{
        "figure": "STSb test Spearman ×100, default model",
        "duplens": f"{sp['duplens_eval']:.2f}", "baseline": f"{plain:.2f}",
        "baseline_is": "plain sentence-transformers `EmbeddingSimilarityEvaluator`, same run",
        "ratio": f"{sp['duplens_eval'] - plain:+.2f} points",
        "goal": f"{EXPECTED_SPEARMAN} expected",
        "met": abs(sp["duplens_eval"] - EXPECTED_SPEARMAN) < 0.1}]
    rows = [
        ["`duplens eval sts` (engine `evaluate_sts`)", f"**{sp['duplens_eval']:.2f}**",
         f"{sp['duplens_eval'] - plain:+.2f}", result["seconds"]["duplens_eval"]],
        ["Duplens' stored vectors (`SentenceEncoder.encode`, SciPy Spearman)",
         f"{sp['duplens_stored_vectors']:.2f}", f"{sp['duplens_stored_vectors'] - plain:+.2f}",
         result["seconds"]["duplens_stored_vectors"]],
        ["plain sentence-transformers `EmbeddingSimilarityEvaluator`", f"{plain:.2f}", "0",
         result["seconds"]["plain_sentence_transformers"]],
    ]
    tables = [{"title": f"STS benchmark test, {result['stsb_test_pairs']:,} pairs, Spearman "
                        f"×100 (published for all-MiniLM-L6-v2: 82.03)",
               "columns": ["measured by", "Spearman ×100", "vs plain", "seconds"],
               "rows": rows}]
    quora = _quora(results or {})
    if quora:
        # Table only: the summary's Quora rows come from the fine-tuning results themselves.
        tables.append(quora)
    return {"headline": headline, "tables": tables}
