"""Fine-tuning on Quora question pairs: which objective, and how much data, helps how much.

    python -m benchmarks.finetune_quora [--objectives contrastive mnrl cosine softmax triplet]
        [--sizes 1000 4000] [--held-out-limit N] [--epochs 1] [--batch-size 16]

The pairs are split by connected question groups (Quora's qids as keys, `split_pairs`), half
held out, so no held-out question was ever trained on. Each run trains the bundled default
model afresh (a copy: the base is never changed) on the first SIZE pairs of the shuffled
training half, with Duplens' own `finetune`, and measures held-out average precision and best
F1 before and after, as `duplens finetune` reports them. `--held-out-limit` measures on a
seeded sample of the held-out half for quick runs. Results go to
benchmarks/results/finetune_quora.json and a table on stdout.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from benchmarks.data import QUORA

RESULTS = Path(__file__).resolve().parent / "results" / "finetune_quora.json"
ALL_OBJECTIVES = ["contrastive", "mnrl", "cosine", "softmax", "triplet"]


def read_quora_pairs(path: Path) -> list:
    """Every pair of the file as a `LabelledPair` keyed by its qids."""
    from engine.training.pairs import LabelledPair

    if not path.exists():
        raise SystemExit(f"benchmark data not found: {path} (set DUPLENS_SHARED)")
    pairs = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            qid1, qid2, q1, q2, label = line.rstrip("\n").split("\t")
            pairs.append(LabelledPair(q1, q2, float(label), key_a=f"id:{qid1}",
                                      key_b=f"id:{qid2}"))
    return pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--objectives", nargs="+", default=ALL_OBJECTIVES, choices=ALL_OBJECTIVES)
    ap.add_argument("--sizes", nargs="+", type=int, default=[1000, 4000],
                    help="training pairs per run")
    ap.add_argument("--held-out-limit", type=int, help="measure on this many held-out pairs")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--merge", action="store_true",
                    help="keep the runs already in --out for other objectives or sizes "
                         "(same split, measured pairs and options only)")
    args = ap.parse_args()

    from engine.encoding.models import load_model, resolve_model
    from engine.training import (
        DEFAULT_OBJECTIVE,
        TrainingOptions,
        finetune,
        held_out_metrics,
        split_pairs,
    )

    pairs = read_quora_pairs(QUORA)
    split = split_pairs(pairs, held_out=0.5, seed=args.seed)
    rng = np.random.default_rng(args.seed)
    held = split.held_out
    if args.held_out_limit and args.held_out_limit < len(held):
        held = [held[i] for i in sorted(rng.choice(len(held), args.held_out_limit,
                                                   replace=False))]
    pool = [split.train[i] for i in rng.permutation(len(split.train))]
    _say(f"{len(pairs)} pairs: {len(split.train)} for training, {len(split.held_out)} held out "
         f"({len(held)} measured), {len(split.dropped)} dropped")

    spec = resolve_model(None)
    base = load_model(spec, args.device)
    started = time.perf_counter()
    before = held_out_metrics(base, held)
    measure_s = time.perf_counter() - started
    _say(f"base model: AP {before.average_precision:.2f}, best F1 {before.f1:.2f} "
         f"({measure_s:.0f} s to measure)")

    runs: list[dict] = []
    earlier = (json.loads(args.out.read_text(encoding="utf-8"))
               if args.merge and args.out.exists() else None)

    def write_report() -> None:
        """Written after every run, so a long benchmark stopped midway keeps what it measured."""
        report = {
            "benchmark": "finetune_quora",
            "command": " ".join(["python -m benchmarks.finetune_quora", *sys.argv[1:]]),
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "hardware": _hardware(args.device),
            "versions": _versions(),
            "data": {"file": QUORA.name, "pairs": len(pairs), "train_pairs": len(split.train),
                     "held_out_pairs": len(split.held_out), "measured_pairs": len(held),
                     "dropped_pairs": len(split.dropped), "split_seed": args.seed,
                     "held_out_duplicates": int(sum(p.is_duplicate for p in held))},
            "model": spec.name,
            "default_objective": DEFAULT_OBJECTIVE,
            "options": dataclasses.asdict(TrainingOptions(batch_size=args.batch_size,
                                                          epochs=args.epochs, seed=args.seed)),
            "before": _rounded(before.as_dict()),
            "runs": runs,
        }
        if earlier is not None:
            report = _merged(earlier, report)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n",
                            encoding="utf-8")

    for size in args.sizes:
        train = pool[:size]
        for objective in args.objectives:
            _say(f"{objective} on {len(train)} pairs…")
            options = TrainingOptions(batch_size=args.batch_size, epochs=args.epochs,
                                      seed=args.seed)
            run = {"objective": objective, "train_pairs": len(train)}
            with tempfile.TemporaryDirectory(prefix="duplens-bench-") as tmp:
                t0 = time.perf_counter()
                try:
                    result = finetune(base, train, objective, options, Path(tmp) / "model",
                                      device=args.device)
                except Exception as exc:  # noqa: BLE001 - one failing objective ends one run
                    run["error"] = f"{type(exc).__name__}: {exc}"
                    runs.append(run)
                    write_report()
                    _say(f"  failed: {run['error']}")
                    continue
                total_s = time.perf_counter() - t0
                after = held_out_metrics(result.model, held)
            run.update({
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                "examples": result.examples, "steps": result.steps,
                "training_seconds": round(result.seconds, 1),
                "total_seconds": round(total_s, 1),
                "examples_per_second": round(result.examples_per_second, 1),
                "final_loss": result.loss_history[-1][1] if result.loss_history else None,
                "notes": result.notes,
                "before": _rounded(before.as_dict()), "after": _rounded(after.as_dict()),
            })
            runs.append(run)
            write_report()
            _say(f"  AP {before.average_precision:.2f} -> {after.average_precision:.2f}, "
                 f"F1 {before.f1:.2f} -> {after.f1:.2f}, {result.seconds:.0f} s training")

    print(_table(before, runs))
    _say(f"written to {args.out}")


def _merged(earlier: dict, report: dict) -> dict:
    """`report` plus the runs of the `earlier` report that it did not redo, when both
    measured the same held-out pairs with the same options; else `report` alone."""
    same = all(earlier.get(k) == report[k] for k in ("data", "options", "model", "before"))
    if not same:
        _say("the earlier results were measured on other pairs or options; not merged")
        return report
    redone = {(r["objective"], r["train_pairs"]) for r in report["runs"]}
    kept = [r for r in earlier["runs"] if (r["objective"], r["train_pairs"]) not in redone]
    for run in kept:
        run.setdefault("date", earlier["date"])
    commands = [*earlier.get("earlier_commands", []), earlier["command"]]
    runs = sorted(kept + report["runs"], key=lambda r: (r["train_pairs"],
                                                       ALL_OBJECTIVES.index(r["objective"])))
    return {**report, "runs": runs, "earlier_commands": commands}


def _table(before, runs: list[dict]) -> str:
    lines = [f"{'objective':12} {'pairs':>6} {'AP before':>10} {'AP after':>9} {'F1 before':>10} "
             f"{'F1 after':>9} {'train s':>8}"]
    for run in runs:
        if "error" in run:
            lines.append(f"{run['objective']:12} {run['train_pairs']:>6}  {run['error']}")
            continue
        lines.append(f"{run['objective']:12} {run['train_pairs']:>6} "
                     f"{before.average_precision:10.2f} {run['after']['average_precision']:9.2f} "
                     f"{before.f1:10.2f} {run['after']['f1']:9.2f} "
                     f"{run['training_seconds']:8.1f}")
    return "\n".join(lines)


def _rounded(metrics: dict) -> dict:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in metrics.items()}


def _hardware(device: str) -> dict:
    import torch

    found = {"machine": platform.machine(), "processor": platform.processor() or None,
             "platform": platform.platform(), "cpu_count": os.cpu_count(),
             "torch_threads": torch.get_num_threads(), "device": device}
    if device.startswith("cuda") and torch.cuda.is_available():
        found["gpu"] = torch.cuda.get_device_name()
    return found


def _versions() -> dict:
    from importlib.metadata import version

    names = ("torch", "sentence-transformers", "transformers", "datasets", "accelerate")
    return {"python": platform.python_version(), **{n: version(n) for n in names}}


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
