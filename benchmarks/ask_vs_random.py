"""Asked pairs against random pairs: does labelling what the model is unsure of train better?

    python -m benchmarks.ask_vs_random [--sizes 250 500 1000] [--held-out-limit 4000]
        [--seed 0] [--train-seeds 0 1 2] [--objective contrastive]

A simulated analyst on the Quora pairs: the group split of `benchmarks.finetune_quora`
(same seed, same 4,000 measured held-out pairs), the Quora labels as the analyst's
verdicts. The pool is the labelled pairs of the training half. "random" labels the first
SIZE pairs of the pool in the shuffled order finetune_quora trains on; "ask" labels what
`engine.review.picking` offers, in rounds: the model of the previous round (the default model
at first) scores every pool pair, the threshold is calibrated on the verdicts so far
(`engine.review.calibration`, 0.8 until there are enough), and the next pairs are the
uncertain, spread-out ones not yet labelled. Each run fine-tunes the default model afresh on
its SIZE verdicts (same objective, options and seed) and measures held-out average
precision, best F1, and how far the threshold calibrated on the run's own verdicts lies from
the held-out best-F1 threshold (and what F1 that costs). `--train-seeds` repeats both arms
with other training seeds (data order, dropout; for "ask" also the later rounds' picks, which
follow the previous round's model) on the same split, so the spread between seeds shows how
much of a gap is noise; random pairs stay finetune_quora's first SIZE, as its
`--train-seeds` runs do.

A second, cheap measurement justifies `ENOUGH_OF_EACH`: the calibrated threshold from N
random verdicts of the default model, against the held-out best threshold, over many draws.
Results go to benchmarks/results/ask_vs_random.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from benchmarks.finetune_quora import _hardware, _versions, quora_split

RESULTS = Path(__file__).resolve().parent / "results" / "ask_vs_random.json"
CALIBRATION_SIZES = (10, 20, 30, 50, 100, 200, 500, 1000)
CALIBRATION_DRAWS = 200


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="+", type=int, default=[250, 500, 1000])
    ap.add_argument("--held-out-limit", type=int, default=4000)
    ap.add_argument("--objective", default="contrastive")
    ap.add_argument("--seed", type=int, default=0, help="split seed (and the held-out sample)")
    ap.add_argument("--train-seeds", nargs="+", type=int,
                    help="training seeds, both arms once each (default: --seed)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--merge", action="store_true",
                    help="keep the runs already in --out for other training seeds (same split, "
                         "measured pairs and default model only)")
    args = ap.parse_args(argv)
    sizes = sorted(args.sizes)

    from engine.encoding.model_spec import load_model, resolve_model
    from engine.training import TrainingOptions, finetune, metrics_from_scores

    # The same split, measured sample and training order as benchmarks.finetune_quora.
    _pairs, _split, held, pool = quora_split(args.seed, args.held_out_limit)
    pool_labels = np.asarray([p.is_duplicate for p in pool], dtype=np.int64)
    held_labels = np.asarray([p.is_duplicate for p in held], dtype=np.int64)
    keys = {k: i for i, k in enumerate(dict.fromkeys(
        k for p in pool for k in (p.key_a, p.key_b)))}
    key_a = np.asarray([keys[p.key_a] for p in pool])
    key_b = np.asarray([keys[p.key_b] for p in pool])
    _say(f"pool {len(pool)} pairs ({int(pool_labels.sum())} duplicates), "
         f"{len(held)} held-out pairs measured")

    base = load_model(resolve_model(None), args.device)
    t0 = time.perf_counter()
    held_base = _scores(base, held)
    before = metrics_from_scores(held_base, held_labels)
    _say(f"default model: AP {before.average_precision:.2f} ({time.perf_counter() - t0:.0f} s)")
    started = datetime.now(UTC)
    wall = time.perf_counter()

    def run(kind: str, chosen: list[int], seed: int, extra: dict) -> tuple[dict, object]:
        train = [pool[i] for i in chosen]
        with tempfile.TemporaryDirectory(prefix="duplens-ask-") as tmp:
            result = finetune(base, train, args.objective, TrainingOptions(seed=seed),
                              Path(tmp) / "model", device=args.device)
            held_scores = _scores(result.model, held)
            own = _scores(result.model, train)
        after = metrics_from_scores(held_scores, held_labels)
        calibrated = _calibrated(own, pool_labels[chosen])
        entry = {"kind": kind, "pairs": len(chosen), "seed": seed,
                 "duplicates": int(pool_labels[chosen].sum()),
                 "average_precision": round(after.average_precision, 2),
                 "f1": round(after.f1, 2), "best_threshold": round(after.threshold, 4),
                 "calibrated_threshold": None if calibrated is None else round(calibrated, 4),
                 "f1_at_calibrated": None if calibrated is None else round(
                     100 * _f1_at(held_scores, held_labels, calibrated), 2),
                 "training_seconds": round(result.seconds, 1), **extra}
        _say(f"  {kind} {len(chosen)} seed {seed}: AP {entry['average_precision']}, "
             f"F1 {entry['f1']}, "
             f"calibrated {entry['calibrated_threshold']} vs best {entry['best_threshold']}, "
             f"{result.seconds:.0f} s training")
        return entry, result.model

    runs: list[dict] = []
    earlier = (json.loads(args.out.read_text(encoding="utf-8"))
               if args.merge and args.out.exists() else None)
    base_vectors = _vectors(base, pool)
    calibration = _calibration_study(np.einsum("ij,ij->i", *base_vectors), pool_labels,
                                     held_base, held_labels, args.seed)
    _say("calibration study done")

    def write() -> None:
        report = _report(args, before, runs, calibration, started, time.perf_counter() - wall)
        if earlier is not None:
            report = _merged(earlier, report, args, before)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n",
                            encoding="utf-8")

    from engine.review.calibration import default_threshold
    from engine.review.picking import pair_vectors, pick_uncertain

    for seed in args.train_seeds or [args.seed]:
        asked: list[int] = []
        model = base
        for size in sizes:
            vectors_a, vectors_b = base_vectors if model is base else _vectors(model, pool)
            scores = np.einsum("ij,ij->i", vectors_a, vectors_b)
            threshold = (default_threshold(None) if not asked else
                         _default(scores[asked], pool_labels[asked], default_threshold))
            open_ = np.setdiff1d(np.arange(len(pool)), asked)
            picked = pick_uncertain(scores[open_], key_a[open_], key_b[open_], threshold,
                                    size - len(asked),
                                    vectors=pair_vectors(vectors_a[open_], vectors_b[open_]))
            asked += [int(open_[i]) for i in picked]
            entry, model = run("ask", list(asked), seed,
                               {"asked_at": round(float(threshold), 4)})
            runs.append(entry)
            write()
        for size in sizes:
            entry, _model = run("random", list(range(size)), seed, {})
            runs.append(entry)
            write()
    print(json.dumps(runs, indent=1))
    _say(f"written to {args.out}")


def suite(quick: bool) -> None:
    """The suite's full run (`python -m benchmarks`): writes its own results file."""
    main([])


def _scores(model, pairs) -> np.ndarray:
    from engine.training import pair_scores

    return pair_scores(model, pairs, 64)


def _vectors(model, pairs) -> tuple[np.ndarray, np.ndarray]:
    texts = list(dict.fromkeys(t for p in pairs for t in (p.text_a, p.text_b)))
    vectors = model.encode(texts, batch_size=64, normalize_embeddings=True,
                           convert_to_numpy=True, show_progress_bar=False)
    row = {t: i for i, t in enumerate(texts)}
    return (vectors[[row[p.text_a] for p in pairs]], vectors[[row[p.text_b] for p in pairs]])


def _calibrated(scores: np.ndarray, labels: np.ndarray) -> float | None:
    from engine.pair_metrics import threshold_curve
    from engine.review.calibration import calibrate

    found = calibrate(threshold_curve(scores, labels))
    return None if found is None else found.threshold


def _default(scores: np.ndarray, labels: np.ndarray, default_threshold) -> float:
    from engine.pair_metrics import threshold_curve
    from engine.review.calibration import calibrate

    return default_threshold(calibrate(threshold_curve(scores, labels)))


def _f1_at(scores: np.ndarray, labels: np.ndarray, threshold: float) -> float:
    called = scores >= threshold
    tp = int((called & (labels == 1)).sum())
    precision = tp / max(int(called.sum()), 1)
    recall = tp / max(int(labels.sum()), 1)
    return 0.0 if tp == 0 else 2 * precision * recall / (precision + recall)


def _calibration_study(pool_scores: np.ndarray, pool_labels: np.ndarray,
                       held_scores: np.ndarray, held_labels: np.ndarray, seed: int) -> list[dict]:
    """Calibrated threshold from N random verdicts (default model) vs the held-out best,
    grouped by the fewer of the two kinds among the N."""
    best_f1 = max(_f1_at(held_scores, held_labels, t) for t in np.unique(held_scores))
    rng = np.random.default_rng(seed + 1)
    by_fewer: dict[str, list[tuple[float, float]]] = {}
    buckets = ((1, 4), (5, 9), (10, 19), (20, 49), (50, 99), (100, 10**9))
    best_t = held_scores[np.argmax([_f1_at(held_scores, held_labels, t)
                                    for t in held_scores])]
    for n in CALIBRATION_SIZES:
        for _ in range(CALIBRATION_DRAWS):
            pick = rng.choice(len(pool_scores), n, replace=False)
            labels = pool_labels[pick]
            fewer = int(min(labels.sum(), n - labels.sum()))
            t = _calibrated(pool_scores[pick], labels)
            if t is None:
                continue
            loss = 100 * (best_f1 - _f1_at(held_scores, held_labels, t))
            for low, high in buckets:
                if low <= fewer <= high:
                    name = f"{low}–{high}" if high < 10**9 else f"{low}+"
                    by_fewer.setdefault(name, []).append((abs(t - best_t), loss))
    out = []
    for low, high in buckets:
        name = f"{low}–{high}" if high < 10**9 else f"{low}+"
        got = np.asarray(by_fewer.get(name, []))
        if len(got):
            out.append({"fewer_of_each": name, "draws": len(got),
                        "median_threshold_error": round(float(np.median(got[:, 0])), 4),
                        "p90_threshold_error": round(float(np.percentile(got[:, 0], 90)), 4),
                        "mean_f1_loss": round(float(got[:, 1].mean()), 2),
                        "p90_f1_loss": round(float(np.percentile(got[:, 1], 90)), 2)})
    return out


def _report(args, before, runs: list[dict], calibration: list[dict], started: datetime,
            wall_s: float) -> dict:
    base_ap = before.average_precision
    seeds = sorted({r.get("seed", args.seed) for r in runs})
    rows = []
    for r in sorted(runs, key=lambda r: (r["pairs"], r["kind"], r.get("seed", args.seed))):
        rows.append([r["kind"], f"{r['pairs']:,}", r.get("seed", args.seed), r["duplicates"],
                     f"{r['average_precision']:.2f} ({r['average_precision'] - base_ap:+.2f})",
                     f"{r['f1']:.2f}", r["best_threshold"], r["calibrated_threshold"],
                     r["f1_at_calibrated"], r["training_seconds"]])
    means = _means(runs, base_ap)
    headline = []
    largest = max((r["pairs"] for r in runs), default=0)
    for m in means:
        if m["kind"] == "ask" and m["pairs"] == largest:
            headline.append({
                "figure": f"held-out Quora AP gain, {largest:,} asked pairs "
                          f"({args.objective}, mean of {m['seeds']} training seeds)",
                "duplens": f"{m['gain']:+.2f} points (sd {m['sd']:.2f})",
                "baseline": "+4.37 points (4,000 random pairs at the old learning rate 2e-5, "
                            "the issue's reference)",
                "ratio": f"{m['gain'] / 4.37:.2f}", "goal": "≥ +4.37 points",
                "met": m["gain"] >= 4.37})
    return {
        "benchmark": "ask_vs_random", "title": "Asked pairs against random pairs",
        "command": " ".join(["python -m benchmarks.ask_vs_random", *sys.argv[1:]]),
        "date": started.isoformat(timespec="seconds"), "wall_seconds": round(wall_s, 1),
        "hardware": _hardware(args.device), "versions": _versions(),
        "result": {
            "headline": headline,
            "tables": [
                {"title": f"Mean over training seeds {', '.join(map(str, seeds))} "
                          f"({args.objective}, default options); held-out AP of the default "
                          f"model {base_ap:.2f}",
                 "columns": ["pairs chosen by", "N", "seeds", "held-out AP gain (mean)",
                             "sd", "min", "max", "held-out F1 at calibrated (mean)"],
                 "rows": [[m["kind"], f"{m['pairs']:,}", m["seeds"], f"{m['gain']:+.2f}",
                           f"{m['sd']:.2f}", f"{m['low']:+.2f}", f"{m['high']:+.2f}",
                           m["f1_at_calibrated"]] for m in means]},
                {"title": f"Each run ({args.objective}); held-out AP of the default model "
                          f"{base_ap:.2f}, best F1 {before.f1:.2f} at {before.threshold:.4f}",
                 "columns": ["pairs chosen by", "N", "training seed", "duplicates among them",
                             "held-out AP (gain)", "held-out best F1", "best threshold",
                             "calibrated on own verdicts", "held-out F1 at calibrated",
                             "training s"], "rows": rows},
                {"title": "Calibrated threshold from random verdicts (default model) against "
                          "the held-out best, by the fewer of the two kinds",
                 "columns": ["fewer of each kind", "draws", "median |error|", "90th pct |error|",
                             "mean F1 lost (points)", "90th pct F1 lost"],
                 "rows": [[c["fewer_of_each"], c["draws"], c["median_threshold_error"],
                           c["p90_threshold_error"], c["mean_f1_loss"], c["p90_f1_loss"]]
                          for c in calibration]}],
            "notes": ["Same split, 4,000 measured held-out pairs and random training order as "
                      "finetune_quora; ask rounds re-score the pool with the previous round's "
                      "model and add pairs to the earlier ones; each run trains the default "
                      "model afresh with the default options (learning rate included)."],
            "runs": runs, "calibration": calibration,
            "setup": {"split_seed": args.seed, "held_out_limit": args.held_out_limit,
                      "objective": args.objective,
                      "default_model_ap": round(base_ap, 2)},
        },
    }


def _merged(earlier: dict, report: dict, args, before) -> dict:
    """`report` with the `earlier` report's runs of the training seeds it did not run again,
    when both measured the same held-out pairs of the same split from the same default
    model; else `report` alone. The tables are made again from all the runs."""
    if earlier["result"].get("setup") != report["result"]["setup"]:
        _say("the earlier results were measured on other pairs; not merged")
        return report
    redone = {r["seed"] for r in report["result"]["runs"]}
    runs = [r for r in earlier["result"]["runs"] if r["seed"] not in redone]
    runs += report["result"]["runs"]
    merged = _report(args, before, runs, report["result"]["calibration"],
                     datetime.fromisoformat(report["date"]), report["wall_seconds"])
    merged["earlier_commands"] = [*earlier.get("earlier_commands", []), earlier["command"]]
    merged["earlier_wall_seconds"] = (earlier.get("earlier_wall_seconds", 0)
                                      + earlier["wall_seconds"])
    return merged


def _means(runs: list[dict], base_ap: float) -> list[dict]:
    """AP gain per (kind, N) over the training seeds: mean, sample sd, range."""
    groups: dict[tuple[str, int], list[dict]] = {}
    for r in runs:
        groups.setdefault((r["kind"], r["pairs"]), []).append(r)
    out = []
    for (kind, pairs), group in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        gains = np.asarray([r["average_precision"] - base_ap for r in group])
        f1s = [r["f1_at_calibrated"] for r in group if r["f1_at_calibrated"] is not None]
        out.append({"kind": kind, "pairs": pairs, "seeds": len(group),
                    "gain": float(gains.mean()),
                    "sd": float(gains.std(ddof=1)) if len(gains) > 1 else 0.0,
                    "low": float(gains.min()), "high": float(gains.max()),
                    "f1_at_calibrated": round(float(np.mean(f1s)), 2) if f1s else None})
    return out


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
