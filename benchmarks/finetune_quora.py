"""Fine-tuning on Quora question pairs: which objective, and how much data, helps how much.

    python -m benchmarks.finetune_quora [--objectives contrastive mnrl cosine softmax triplet]
        [--sizes 1000 4000] [--held-out-limit N] [--set learning_rate=5e-5 epochs=2 ...]
        [--train-seeds 0 1 2] [--pool training|none] [--merge]

The pairs are split by connected question groups (Quora's qids as keys, `split_pairs`), half
held out, so no held-out question was ever trained on. Each run trains the bundled default
model afresh (a copy: the base is never changed) on the first SIZE pairs of the shuffled
training half, with Duplens' own `finetune`, and measures held-out average precision and best
F1 before and after, as `duplens finetune` reports them. `--held-out-limit` measures on a
seeded sample of the held-out half for quick runs. Results go to
benchmarks/results/finetune_quora.json and a table on stdout.

Training options are the engine's defaults (`TrainingOptions()`) unless `--set` changes some
(any field, e.g. `--set learning_rate=5e-5 epochs=2 hard_negatives=1`); each run records
its options, and `--merge` keeps earlier runs of other objectives, sizes or options.
`--train-seeds` repeats each run with other training seeds (data order, dropout), the split
and training pairs staying the same. Hard negatives are mined, as in a project, from the
training pairs' texts plus a pool of other texts: with `--pool training` (the default) every
question of the training half, never one of the held-out half.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import hashlib
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
# What fine-tuning the recommended recipe should gain in held-out AP points, by training size.
GAIN_GOALS = {1000: 2.5, 4000: 5.0}


def quora_split(seed: int, held_out_limit: int | None):
    """The Quora pairs, split by question groups into training and held-out halves, the
    held-out sample that is measured (`held_out_limit` pairs, or all) and the training half
    in a seeded random order: what every fine-tuning benchmark compares on."""
    from engine.training import split_pairs

    pairs = read_quora_pairs(QUORA)
    split = split_pairs(pairs, held_out=0.5, seed=seed)
    rng = np.random.default_rng(seed)
    held = split.held_out
    if held_out_limit and held_out_limit < len(held):
        held = [held[i] for i in sorted(rng.choice(len(held), held_out_limit, replace=False))]
    pool = [split.train[i] for i in rng.permutation(len(split.train))]
    return pairs, split, held, pool


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
    from engine.training.objectives import OBJECTIVES

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--objectives", nargs="+", default=ALL_OBJECTIVES, choices=list(OBJECTIVES))
    ap.add_argument("--sizes", nargs="+", type=int, default=[1000, 4000],
                    help="training pairs per run")
    ap.add_argument("--held-out-limit", type=int, help="measure on this many held-out pairs")
    ap.add_argument("--set", nargs="+", default=[], metavar="FIELD=VALUE", dest="overrides",
                    help="TrainingOptions fields that differ from the engine's defaults")
    ap.add_argument("--epochs", type=int, help="the same as --set epochs=N")
    ap.add_argument("--batch-size", type=int, help="the same as --set batch_size=N")
    ap.add_argument("--seed", type=int, default=0, help="split seed (and the held-out sample)")
    ap.add_argument("--train-seeds", nargs="+", type=int,
                    help="training seeds, one run each (default: --seed)")
    ap.add_argument("--pool", choices=["training", "none"], default="training",
                    help="texts hard negatives may also be mined from besides the pairs' own")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--merge", action="store_true",
                    help="keep the runs already in --out for other objectives, sizes or "
                         "options (same split and measured pairs only)")
    ap.add_argument("--relabel", action="store_true",
                    help="measure nothing: mark which runs of --out the engine's current "
                         "defaults (objective and options) recommend, and rewrite it")
    args = ap.parse_args()
    if args.relabel:
        _relabel(args.out)
        return

    from engine.encoding.model_spec import load_model, resolve_model
    from engine.training import (
        DEFAULT_OBJECTIVE,
        TrainingOptions,
        finetune,
        held_out_metrics,
    )
    from engine.training.hard_negatives import NegativePool

    overrides = _overrides(args)
    pairs, split, held, pool = quora_split(args.seed, args.held_out_limit)
    _say(f"{len(pairs)} pairs: {len(split.train)} for training, {len(split.held_out)} held out "
         f"({len(held)} measured), {len(split.dropped)} dropped")

    spec = resolve_model(None)
    base = load_model(spec, args.device)
    negative_pool = None
    if args.pool == "training" and (overrides.get("hard_negatives") or
                                    "triplet" in args.objectives):
        # A project's texts that are not labelled (here every training-half question), with
        # their vectors as its index holds them: encoded once, by the model being trained.
        texts = list(dict.fromkeys(t for p in split.train for t in (p.text_a, p.text_b)))
        negative_pool = NegativePool(texts, _pool_vectors(base, spec.name, texts))
    started = time.perf_counter()
    before = _base_metrics(base, spec.name, held, held_out_metrics)
    measure_s = time.perf_counter() - started
    _say(f"base model: AP {before.average_precision:.2f}, best F1 {before.f1:.2f} "
         f"({measure_s:.0f} s to measure)")

    runs: list[dict] = []
    earlier = (json.loads(args.out.read_text(encoding="utf-8"))
               if args.merge and args.out.exists() else None)
    defaults = TrainingOptions()

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
            "goals": {str(size): gain for size, gain in GAIN_GOALS.items()},
            "options": dataclasses.asdict(defaults),  # the engine's defaults at the time
            "before": _rounded(before.as_dict()),
            "runs": runs,
        }
        if earlier is not None:
            report = _merged(earlier, report)
        _label_runs(report)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n",
                            encoding="utf-8")

    for size in args.sizes:
        train = pool[:size]
        for objective in args.objectives:
            for seed in args.train_seeds or [args.seed]:
                options = dataclasses.replace(defaults, **{**overrides, "seed": seed})
                changed = _changed(dataclasses.asdict(options), dataclasses.asdict(defaults))
                _say(f"{objective} on {len(train)} pairs, {changed or 'default options'}…")
                mines = options.hard_negatives > 0 or objective == "triplet"
                run = {"objective": objective, "train_pairs": len(train),
                       "options": dataclasses.asdict(options),
                       # texts besides the pairs' own that negatives were mined from
                       "negative_pool": len(negative_pool.texts) if negative_pool and mines
                       else 0,
                       "load_before": _load()}
                with tempfile.TemporaryDirectory(prefix="duplens-bench-") as tmp:
                    t0 = time.perf_counter()
                    try:
                        result = finetune(base, train, objective, options,
                                          Path(tmp) / "model", device=args.device,
                                          pool=negative_pool)
                    except Exception as exc:  # noqa: BLE001 - one failing run ends one run
                        run["error"] = f"{type(exc).__name__}: {exc}"
                        runs.append(run)
                        write_report()
                        _say(f"  failed: {run['error']}")
                        continue
                    total_s = time.perf_counter() - t0
                    load_after = _load()
                    after = held_out_metrics(result.model, held)
                run.update({
                    "date": datetime.now(UTC).isoformat(timespec="seconds"),
                    "load_after": load_after,
                    "examples": result.examples, "steps": result.steps,
                    "training_seconds": round(result.seconds, 1),
                    # Training proper plus copying the model, mining negatives and saving:
                    # what a person waits for between "measuring before" and "after".
                    "total_seconds": round(total_s, 1),
                    "seconds_per_pair": round(total_s / len(train), 4),
                    "examples_per_second": round(result.examples_per_second, 1),
                    "final_loss": result.loss_history[-1][1] if result.loss_history else None,
                    "notes": result.notes,
                    "before": _rounded(before.as_dict()), "after": _rounded(after.as_dict()),
                })
                runs.append(run)
                write_report()
                _say(f"  AP {before.average_precision:.2f} -> {after.average_precision:.2f}, "
                     f"F1 {before.f1:.2f} -> {after.f1:.2f}, {result.seconds:.0f} s training "
                     f"({total_s:.0f} s in all, load {run['load_before']} -> {load_after})")

    print(_table(before, runs, dataclasses.asdict(defaults)))
    _say(f"written to {args.out}")


@dataclasses.dataclass(frozen=True)
class _Measured:
    """The base model's held-out metrics as a cache kept them (what the report reads)."""

    metrics: dict

    def __getattr__(self, name: str):
        try:
            return self.__dict__["metrics"][name]
        except KeyError:
            raise AttributeError(name) from None

    def as_dict(self) -> dict:
        return dict(self.metrics)


def _base_metrics(model, model_name: str, held: list, measure):
    """The base model on the held-out pairs, kept in the temp folder between runs: the same
    model on the same pairs scores the same, and measuring 4,000 pairs took 14 minutes at a
    load average of 15 on this machine's 2 cores."""
    key = "\n".join([model_name, *(f"{p.text_a}\t{p.text_b}\t{p.label}" for p in held)])
    cache = (Path(tempfile.gettempdir())
             / f"duplens-bench-before-{hashlib.sha1(key.encode('utf-8')).hexdigest()[:16]}.json")
    if cache.exists():
        _say(f"base model's held-out metrics from {cache}")
        return _Measured(json.loads(cache.read_text(encoding="utf-8")))
    before = measure(model, held)
    cache.write_text(json.dumps(before.as_dict()), encoding="utf-8")
    return before


def _relabel(path: Path) -> None:
    """After the engine's defaults change: the runs that match them become the recommended
    ones (the report's headline and goals); every figure stays as measured."""
    from engine.training import DEFAULT_OBJECTIVE, TrainingOptions

    report = json.loads(path.read_text(encoding="utf-8"))
    report["default_objective"] = DEFAULT_OBJECTIVE
    report["options"] = dataclasses.asdict(TrainingOptions())
    _label_runs(report)
    path.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    marked = [r for r in report["runs"] if r["recommended"]]
    _say(f"{len(marked)} runs match the engine's defaults: "
         + ", ".join(f"{r['objective']} on {r['train_pairs']}" for r in marked))


def _pool_vectors(model, model_name: str, texts: list[str]) -> np.ndarray:
    """The pool's vectors under the base model, encoded once and kept in the temp folder
    between runs (a project's index holds them already; encoding them takes minutes here)."""
    digest = hashlib.sha1("\n".join([model_name, *texts]).encode("utf-8")).hexdigest()[:16]
    cache = Path(tempfile.gettempdir()) / f"duplens-bench-pool-{digest}.npy"
    if cache.exists():
        _say(f"negative pool: {len(texts)} training-half questions, vectors from {cache}")
        return np.load(cache)
    started = time.perf_counter()
    vectors = model.encode(texts, batch_size=64, normalize_embeddings=True,
                           convert_to_numpy=True, show_progress_bar=False)
    np.save(cache, vectors)
    _say(f"negative pool: {len(texts)} training-half questions, encoded in "
         f"{time.perf_counter() - started:.0f} s (a project's index holds them already)")
    return vectors


def _overrides(args: argparse.Namespace) -> dict:
    """--set FIELD=VALUE (and --epochs, --batch-size) as TrainingOptions keyword arguments."""
    from engine.training import TrainingOptions

    fields = {f.name: f for f in dataclasses.fields(TrainingOptions)}
    found: dict = {}
    for item in args.overrides:
        name, _, value = item.partition("=")
        if name not in fields or not value:
            raise SystemExit(f"--set {item}: use FIELD=VALUE with a field of TrainingOptions: "
                             f"{', '.join(fields)}")
        default = getattr(TrainingOptions(), name)
        kind = type(default) if default is not None else int
        found[name] = None if value == "none" else kind(float(value) if kind is int else value)
    if args.epochs is not None:
        found["epochs"] = args.epochs
    if args.batch_size is not None:
        found["batch_size"] = args.batch_size
    return found


def _changed(options: dict, defaults: dict, ignore: tuple[str, ...] = ()) -> str:
    """The options that differ from the defaults, as "learning_rate=5e-05 epochs=2"."""
    return " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                    for k, v in options.items() if v != defaults.get(k) and k not in ignore)


def _label_runs(report: dict) -> None:
    """Each run's options as they differ from the engine's defaults of this report, and
    whether it is the recommended recipe (default objective and options, any seed)."""
    defaults = report["options"]
    for run in report["runs"]:
        run["changed"] = _changed(run["options"], defaults)
        run["recommended"] = (run["objective"] == report["default_objective"]
                              and not _changed(run["options"], defaults, ignore=("seed",)))


# Options added after some runs were made, with the values those runs trained with.
_BEFORE_OPTIONS = {"margin": 0.5, "hard_negatives": 0, "validation": 0.0, "patience": 1}


def _run_key(run: dict) -> tuple:
    options = run.get("options", {})
    return (run["objective"], run["train_pairs"], json.dumps(options, sort_keys=True),
            run.get("negative_pool", 0))


def _merged(earlier: dict, report: dict) -> dict:
    """`report` plus the runs of the `earlier` report that it did not redo, when both
    measured the same held-out pairs of the same split with the same model; else `report`
    alone. Earlier runs that recorded no options of their own ran with the earlier report's."""
    same = all(earlier.get(k) == report[k] for k in ("data", "model", "before"))
    if not same:
        _say("the earlier results were measured on other pairs; not merged")
        return report
    for run in earlier["runs"]:
        run.setdefault("date", earlier["date"])
        run["options"] = {**_BEFORE_OPTIONS, **run.get("options", earlier["options"])}
    redone = {_run_key(r) for r in report["runs"]}
    kept = [r for r in earlier["runs"] if _run_key(r) not in redone]
    commands = [*earlier.get("earlier_commands", []), earlier["command"]]
    runs = sorted(kept + report["runs"], key=lambda r: (r["train_pairs"], r["objective"],
                                                       _run_key(r)[2]))
    return {**report, "runs": runs, "earlier_commands": commands}


def _table(before, runs: list[dict], defaults: dict) -> str:
    lines = [f"{'objective':17} {'options':40} {'pairs':>6} {'AP after':>9} {'F1 after':>9} "
             f"{'train s':>8} {'s/pair':>7}"]
    for run in runs:
        changed = _changed(run["options"], defaults)
        head = f"{run['objective']:17} {changed[:40]:40} {run['train_pairs']:>6}"
        if "error" in run:
            lines.append(f"{head}  {run['error']}")
            continue
        lines.append(f"{head} {run['after']['average_precision']:9.2f} "
                     f"{run['after']['f1']:9.2f} {run['training_seconds']:8.1f} "
                     f"{run['seconds_per_pair']:7.3f}")
    lines.append(f"(before: AP {before.average_precision:.2f}, F1 {before.f1:.2f})")
    return "\n".join(lines)


def _load() -> str:
    """The 1-minute load average: other work on the machine slows training down."""
    return f"{os.getloadavg()[0]:.2f}"


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
