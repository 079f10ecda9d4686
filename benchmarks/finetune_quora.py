"""Fine-tuning on Quora question pairs: which objective, and how much data, helps how much.

    python -m benchmarks.finetune_quora --on validation|test
        [--objectives contrastive mnrl cosine softmax triplet] [--sizes 1000 4000]
        [--held-out-limit N] [--set learning_rate=5e-5 epochs=2 ...]
        [--sweep learning_rate=2e-5,5e-5,1e-4,2e-4] [--train-seeds 0 1 2]
        [--pool training|none] [--merge]

The pairs are split three ways by connected question groups (Quora's qids as keys,
`split_pairs` twice): half for training, a quarter for validation, a quarter for test, so no
question of one part is in another. Every choice (objective's learning rate, epochs, the
engine's default recipe, the threshold) is made on validation (`--on validation`); the
figures the README and the report give are measured once on test (`--on test`), which
nothing is chosen on. A test run also scores the validation pairs, for the threshold of best
F1 there: the test F1 reported is at that threshold.

Each run trains the bundled default model afresh (a copy: the base is never changed) on the
first SIZE pairs of the shuffled training part, with Duplens' own `finetune`, and measures
average precision and F1 before and after, as `duplens finetune` reports them.
`--held-out-limit` measures on a seeded sample of each of validation and test. Results go to
benchmarks/results/finetune_quora.json and a table on stdout.

Training options are the engine's defaults (`TrainingOptions()`) unless `--set` changes some
(any field, e.g. `--set learning_rate=5e-5 epochs=2 hard_negatives=1`); `--sweep` runs each
of a field's values in turn (on top of `--set`). Each run records its options. `--merge`
keeps the runs already in the results file and skips a run measured there already (same
objective, size, options, seed and split), so a stopped benchmark is resumed by running the
same command again. `--train-seeds` repeats each run with other training seeds (data order,
dropout), the split and training pairs staying the same. Hard negatives are mined, as in a
project, from the training pairs' texts plus a pool of other texts: with `--pool training`
(the default) every question of the training part, never one of validation or test.
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
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from benchmarks.data import QUORA

RESULTS = Path(__file__).resolve().parent / "results" / "finetune_quora.json"
ALL_OBJECTIVES = ["contrastive", "mnrl", "cosine", "softmax", "triplet"]
# What fine-tuning the recommended recipe should gain in test AP points, by training size.
GAIN_GOALS = {1000: 2.5, 4000: 5.0}
SPLITS = ("validation", "test")


@dataclass(frozen=True)
class QuoraSplits:
    """The three parts every fine-tuning benchmark compares on (see the module doc)."""

    pairs: list              # every pair of the file
    train: list              # the training part, in a seeded random order (first N trained)
    validation: list         # the measured sample of the validation part
    test: list               # the measured sample of the test part
    sizes: dict              # pairs in each whole part, and dropped

    def measured(self, on: str) -> list:
        return {"validation": self.validation, "test": self.test}[on]


def three_way_split(pairs: list, seed: int) -> tuple[list, list, list, int]:
    """(training, validation, test, dropped): half, a quarter and a quarter of `pairs`, split
    by question groups so no question is in two parts. The held-out half of `split_pairs`
    is split again the same way: its groups are already apart from training's."""
    from engine.training import split_pairs

    first = split_pairs(pairs, held_out=0.5, seed=seed)
    second = split_pairs(first.held_out, held_out=0.5, seed=seed)
    return first.train, second.train, second.held_out, len(first.dropped) + len(second.dropped)


def quora_splits(seed: int, held_out_limit: int | None) -> QuoraSplits:
    """The Quora pairs split three ways, a seeded sample of `held_out_limit` pairs (or all)
    of validation and of test, and the training part in a seeded random order."""
    pairs = read_quora_pairs(QUORA)
    train, validation, test, dropped = three_way_split(pairs, seed)
    rng = np.random.default_rng(seed)

    def sample(part: list) -> list:
        if held_out_limit and held_out_limit < len(part):
            return [part[i] for i in sorted(rng.choice(len(part), held_out_limit,
                                                       replace=False))]
        return list(part)

    measured_validation, measured_test = sample(validation), sample(test)
    pool = [train[i] for i in rng.permutation(len(train))]
    return QuoraSplits(pairs, pool, measured_validation, measured_test,
                       {"train": len(train), "validation": len(validation),
                        "test": len(test), "dropped": dropped})


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


def f1_at(scores: np.ndarray, labels: np.ndarray, threshold: float) -> float:
    """F1 (percent) of calling every pair at or above `threshold` a duplicate."""
    called = np.asarray(scores) >= threshold
    labels = np.asarray(labels).astype(bool)
    tp = int((called & labels).sum())
    return 0.0 if tp == 0 else 100 * 2 * tp / (int(called.sum()) + int(labels.sum()))


def main(argv: list[str] | None = None) -> None:
    from engine.training.objectives import OBJECTIVES

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--on", choices=SPLITS,
                    help="validation: to choose on; test: the reported figures (chooses "
                         "nothing)")
    ap.add_argument("--objectives", nargs="+", default=ALL_OBJECTIVES, choices=list(OBJECTIVES))
    ap.add_argument("--sizes", nargs="+", type=int, default=[1000, 4000],
                    help="training pairs per run")
    ap.add_argument("--held-out-limit", type=int,
                    help="measure on this many pairs of validation (and of test)")
    ap.add_argument("--set", nargs="+", default=[], metavar="FIELD=VALUE", dest="overrides",
                    help="TrainingOptions fields that differ from the engine's defaults")
    ap.add_argument("--sweep", metavar="FIELD=V1,V2,...",
                    help="one run for each value of one TrainingOptions field")
    ap.add_argument("--epochs", type=int, help="the same as --set epochs=N")
    ap.add_argument("--batch-size", type=int, help="the same as --set batch_size=N")
    ap.add_argument("--seed", type=int, default=0, help="split seed (and the measured sample)")
    ap.add_argument("--train-seeds", nargs="+", type=int,
                    help="training seeds, one run each (default: --seed)")
    ap.add_argument("--pool", choices=["training", "none"], default="training",
                    help="texts hard negatives may also be mined from besides the pairs' own")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--merge", action="store_true",
                    help="keep the runs already in --out (same split, measured pairs and "
                         "model only) and skip the ones measured there already")
    ap.add_argument("--relabel", action="store_true",
                    help="measure nothing: mark which runs of --out the engine's current "
                         "defaults (objective and options) recommend, and rewrite it")
    args = ap.parse_args(argv)
    if args.relabel:
        _relabel(args.out)
        return
    if args.on is None:
        ap.error("--on validation or --on test is needed (which split to measure on)")

    from engine.encoding.model_spec import load_model, resolve_model
    from engine.training import (
        DEFAULT_OBJECTIVE,
        TrainingOptions,
        finetune,
        held_out_metrics,
    )
    from engine.training.hard_negatives import NegativePool

    variants = _variants(args)
    data = quora_splits(args.seed, args.held_out_limit)
    _say(f"{len(data.pairs)} pairs: {data.sizes['train']} for training, "
         f"{data.sizes['validation']} validation ({len(data.validation)} measured), "
         f"{data.sizes['test']} test ({len(data.test)} measured), "
         f"{data.sizes['dropped']} dropped; measuring on {args.on}")

    spec = resolve_model(None)
    base = load_model(spec, args.device)
    negative_pool = None
    if args.pool == "training" and (any(v.get("hard_negatives") for v in variants) or
                                    "triplet" in args.objectives):
        # A project's texts that are not labelled (here every training-part question), with
        # their vectors as its index holds them: encoded once, by the model being trained.
        texts = list(dict.fromkeys(t for p in data.train for t in (p.text_a, p.text_b)))
        negative_pool = NegativePool(texts, _pool_vectors(base, spec.name, texts))
    before = {on: _base_metrics(base, spec.name, data.measured(on), held_out_metrics)
              for on in SPLITS}
    for on, m in before.items():
        _say(f"base model on {on}: AP {m.average_precision:.2f}, best F1 {m.f1:.2f}")

    earlier = (json.loads(args.out.read_text(encoding="utf-8"))
               if args.merge and args.out.exists() else None)
    runs: list[dict] = []
    defaults = TrainingOptions()
    header = {
        "benchmark": "finetune_quora",
        "command": " ".join(["python -m benchmarks.finetune_quora",
                             *(sys.argv[1:] if argv is None else argv)]),
        "hardware": _hardware(args.device), "versions": _versions(),
        "data": {"file": QUORA.name, "pairs": len(data.pairs),
                 "train_pairs": data.sizes["train"],
                 "validation_pairs": data.sizes["validation"],
                 "test_pairs": data.sizes["test"], "dropped_pairs": data.sizes["dropped"],
                 "measured_validation": len(data.validation),
                 "measured_test": len(data.test), "split_seed": args.seed,
                 "validation_duplicates": int(sum(p.is_duplicate for p in data.validation)),
                 "test_duplicates": int(sum(p.is_duplicate for p in data.test))},
        "model": spec.name,
        "default_objective": DEFAULT_OBJECTIVE,
        "goals": {str(size): gain for size, gain in GAIN_GOALS.items()},
        "options": dataclasses.asdict(defaults),  # the engine's defaults at the time
        "before": {on: _rounded(m.as_dict()) for on, m in before.items()},
    }
    if earlier is not None and not _same_data(earlier, header):
        _say("the earlier results were measured on other pairs; not merged")
        earlier = None
    done = {_run_key(r) for r in (earlier or {}).get("runs", []) if "error" not in r}

    def write_report() -> None:
        """Written after every run, so a long benchmark stopped midway keeps what it measured."""
        report = {**header, "date": datetime.now(UTC).isoformat(timespec="seconds"),
                  "runs": runs}
        if earlier is not None:
            report = _merged(earlier, report)
        _label_runs(report)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_suffix(".json.part")
        tmp.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n",
                       encoding="utf-8")
        tmp.replace(args.out)

    for size in args.sizes:
        train = data.train[:size]
        for objective in args.objectives:
            for variant in variants:
                for seed in args.train_seeds or [args.seed]:
                    options = dataclasses.replace(defaults, **{**variant, "seed": seed})
                    mines = options.hard_negatives > 0 or objective == "triplet"
                    run = {"objective": objective, "train_pairs": len(train),
                           "options": dataclasses.asdict(options),
                           # texts besides the pairs' own that negatives were mined from
                           "negative_pool": len(negative_pool.texts)
                           if negative_pool and mines else 0,
                           "measured_on": args.on}
                    changed = _changed(run["options"], dataclasses.asdict(defaults))
                    if _run_key(run) in done:
                        _say(f"{objective} on {len(train)} pairs, {changed or 'defaults'}: "
                             f"measured on {args.on} already (kept)")
                        continue
                    _say(f"{objective} on {len(train)} pairs, {changed or 'default options'}…")
                    run["load_before"] = _load()
                    _train_and_measure(run, base, train, objective, options, data, args,
                                       before, negative_pool, finetune, held_out_metrics)
                    run["command"] = header["command"]
                    runs.append(run)
                    write_report()

    print(_table(before[args.on], [r for r in runs if "after" in r or "error" in r],
                 dataclasses.asdict(defaults)))
    _say(f"written to {args.out}")


def _train_and_measure(run: dict, base, train: list, objective: str, options, data,
                       args, before: dict, negative_pool, finetune, held_out_metrics) -> None:
    """Train one run and fill `run` with what it measured (or its error)."""
    with tempfile.TemporaryDirectory(prefix="duplens-bench-") as tmp:
        t0 = time.perf_counter()
        try:
            result = finetune(base, train, objective, options, Path(tmp) / "model",
                              device=args.device, pool=negative_pool)
        except Exception as exc:  # noqa: BLE001 - one failing run ends one run
            run["error"] = f"{type(exc).__name__}: {exc}"
            _say(f"  failed: {run['error']}")
            return
        total_s = time.perf_counter() - t0
        load_after = _load()
        if args.on == "test":
            # The threshold is chosen on validation; the test only reports.
            chosen = held_out_metrics(result.model, data.validation)
            after = held_out_metrics(result.model, data.test)
            run["validation_after"] = _rounded(chosen.as_dict())
            run["f1_at_validation_threshold"] = round(
                f1_at(after.scores, [p.is_duplicate for p in data.test], chosen.threshold), 4)
        else:
            after = held_out_metrics(result.model, data.validation)
    run.update({
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_after": load_after,
        "examples": result.examples, "steps": result.steps,
        "training_seconds": round(result.seconds, 1),
        # Training proper plus copying the model, mining negatives and saving: what a
        # person waits for between "measuring before" and "after".
        "total_seconds": round(total_s, 1),
        "seconds_per_pair": round(total_s / len(train), 4),
        "examples_per_second": round(result.examples_per_second, 1),
        "final_loss": result.loss_history[-1][1] if result.loss_history else None,
        "notes": result.notes,
        "before": _rounded(before[args.on].as_dict()), "after": _rounded(after.as_dict()),
    })
    b = before[args.on]
    _say(f"  {args.on} AP {b.average_precision:.2f} -> {after.average_precision:.2f}, "
         f"F1 {b.f1:.2f} -> {after.f1:.2f}, {result.seconds:.0f} s training "
         f"({total_s:.0f} s in all, load {run['load_before']} -> {load_after})")


@dataclasses.dataclass(frozen=True)
class _Measured:
    """The base model's metrics as a cache kept them (what the report reads)."""

    metrics: dict

    def __getattr__(self, name: str):
        try:
            return self.__dict__["metrics"][name]
        except KeyError:
            raise AttributeError(name) from None

    def as_dict(self) -> dict:
        return dict(self.metrics)


def _base_metrics(model, model_name: str, held: list, measure):
    """The base model on the measured pairs, kept in the temp folder between runs: the same
    model on the same pairs scores the same, and measuring 4,000 pairs took 14 minutes at a
    load average of 15 on this machine's 2 cores."""
    key = "\n".join([model_name, *(f"{p.text_a}\t{p.text_b}\t{p.label}" for p in held)])
    cache = (Path(tempfile.gettempdir())
             / f"duplens-bench-before-{hashlib.sha1(key.encode('utf-8')).hexdigest()[:16]}.json")
    if cache.exists():
        _say(f"base model's metrics from {cache}")
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
         + ", ".join(f"{r['objective']} on {r['train_pairs']} ({r.get('measured_on')})"
                     for r in marked))


def _pool_vectors(model, model_name: str, texts: list[str]) -> np.ndarray:
    """The pool's vectors under the base model, encoded once and kept in the temp folder
    between runs (a project's index holds them already; encoding them takes minutes here)."""
    digest = hashlib.sha1("\n".join([model_name, *texts]).encode("utf-8")).hexdigest()[:16]
    cache = Path(tempfile.gettempdir()) / f"duplens-bench-pool-{digest}.npy"
    if cache.exists():
        _say(f"negative pool: {len(texts)} training-part questions, vectors from {cache}")
        return np.load(cache)
    started = time.perf_counter()
    vectors = model.encode(texts, batch_size=64, normalize_embeddings=True,
                           convert_to_numpy=True, show_progress_bar=False)
    np.save(cache, vectors)
    _say(f"negative pool: {len(texts)} training-part questions, encoded in "
         f"{time.perf_counter() - started:.0f} s (a project's index holds them already)")
    return vectors


def _variants(args: argparse.Namespace) -> list[dict]:
    """--set FIELD=VALUE (and --epochs, --batch-size) as TrainingOptions keyword arguments,
    once per value of --sweep's field (or once)."""
    found = dict(_parse(item) for item in args.overrides)
    if args.epochs is not None:
        found["epochs"] = args.epochs
    if args.batch_size is not None:
        found["batch_size"] = args.batch_size
    if not args.sweep:
        return [found]
    name, _, values = args.sweep.partition("=")
    return [{**found, **dict([_parse(f"{name}={value}")])} for value in values.split(",")]


def _parse(item: str) -> tuple[str, object]:
    from engine.training import TrainingOptions

    fields = {f.name for f in dataclasses.fields(TrainingOptions)}
    name, _, value = item.partition("=")
    if name not in fields or not value:
        raise SystemExit(f"{item}: use FIELD=VALUE with a field of TrainingOptions: "
                         f"{', '.join(sorted(fields))}")
    default = getattr(TrainingOptions(), name)
    kind = type(default) if default is not None else int
    return name, None if value == "none" else kind(float(value) if kind is int else value)


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


def _run_key(run: dict) -> tuple:
    return (run["objective"], run["train_pairs"],
            json.dumps(run.get("options", {}), sort_keys=True), run.get("negative_pool", 0),
            run.get("measured_on"))


def _same_data(earlier: dict, header: dict) -> bool:
    return all(earlier.get(k) == header[k] for k in ("data", "model", "before"))


def _merged(earlier: dict, report: dict) -> dict:
    """`report` plus the runs of the `earlier` report (same data, see `_same_data`) that it
    did not redo; the earlier commands are listed."""
    redone = {_run_key(r) for r in report["runs"]}
    kept = [r for r in earlier["runs"] if _run_key(r) not in redone]
    commands = [*earlier.get("earlier_commands", []), earlier["command"]]
    if commands and commands[-1] == report["command"]:
        commands = commands[:-1]
    runs = sorted(kept + report["runs"], key=lambda r: (r.get("measured_on", ""),
                                                       r["train_pairs"], r["objective"],
                                                       _run_key(r)[2]))
    return {**report, "runs": runs, "earlier_commands": list(dict.fromkeys(commands))}


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

    from benchmarks.run import _cpuinfo, _ram_gib

    found = {"machine": platform.machine(), "processor": platform.processor() or None,
             "cpu": _cpuinfo("model name"), "ram_gib": _ram_gib(),
             "platform": platform.platform(), "cpu_count": os.cpu_count(),
             "torch_threads": torch.get_num_threads(), "device": device}
    if device.startswith("cuda") and torch.cuda.is_available():
        found["gpu"] = torch.cuda.get_device_name()
    return found


def _versions() -> dict:
    from importlib.metadata import version

    names = ("torch", "sentence-transformers", "transformers", "datasets", "accelerate")
    return {"python": platform.python_version(), **{n: version(n) for n in names}}


# -- what the report shows (benchmarks/report.py calls `present` on the results file) --------
_LOSSES = {"contrastive": "`OnlineContrastiveLoss`", "triplet": "`TripletLoss`, margin 1",
           "cosine": "`CosineSimilarityLoss`",
           "mnrl": "`MultipleNegativesRankingLoss`, duplicates only",
           "softmax": "`SoftmaxLoss`",
           "contrastive+mnrl": "`OnlineContrastiveLoss` + `MultipleNegativesRankingLoss`"}
_OLD_SPLIT = "held-out"  # runs made before the three-way split: measured on the held-out half


def _command_of(data: dict, on: str, run: dict | None = None) -> str | None:
    """The command that measured `run` (the first of its group) on `on`: the one it
    records, else (runs from before runs recorded it) the first of the file's commands that
    names that split and, for a run, its objective (or no objectives: all of them); for a
    run borrowed from ask_vs_random, that file's command; None: the file's last command."""
    if run is not None and run.get("command"):
        return run["command"]
    if run is not None and run.get("borrowed"):
        return run.get("borrowed_command")
    for command in [data.get("command"), *data.get("earlier_commands", [])]:
        words = (command or "").split()
        if f"--on {on}" not in (command or ""):
            continue
        if run is None or "--objectives" not in words:
            return command
        named = words[words.index("--objectives") + 1:]
        named = named[:next((i for i, w in enumerate(named) if w.startswith("--")),
                            len(named))]
        if run["objective"] in named:
            return command
    return None


def present(data: dict, results: dict | None = None) -> dict:
    """Headline, tables and notes from the runs: validation (what was chosen on) and test
    (what is reported), one row per recipe with its training seeds pooled. The recommended
    recipe is the engine's default of today (objective and `TrainingOptions()`). Where this
    file has no test run of it, the random arm of `ask_vs_random` on test is the same
    experiment (the first N training pairs, the default recipe, the same split and seeds)
    and is shown, marked as such, rather than trained twice."""
    data = _with_todays_defaults(_with_borrowed(data, results or {}))
    headline, tables = [], []
    for on in _splits_in(data):
        runs = [r for r in data["runs"] if r.get("measured_on", _OLD_SPLIT) == on]
        before = _before(data, on)
        best = best_learning_rates(data) if on == "test" else {}
        rows = [_row(group, before, on, _not_chosen(group[0], best)) for group in _groups(runs)]
        tables.append({
            "title": _table_title(data, on, before),
            "columns": ["recipe", "training pairs", "seeds",
                        f"{on} AP after (gain) (lowest–highest)",
                        "F1 at the validation threshold" if on == "test" else "best F1 after",
                        "training s", "s per pair", "load average", "measured"],
            "rows": rows})
        if on == "validation":
            best = best_learning_rates(data)
            if best:
                tables.append({
                    "title": "Each objective's best learning rate on validation (1,000 pairs "
                             "unless said; the test rows use it)",
                    "columns": ["objective", "training pairs", "other options",
                                "learning rates tried", "best", "validation AP there"],
                    "rows": [[o, f"{size:,}", others or "defaults",
                              ", ".join(f"{lr:g}" for lr in tried), f"{lr:g}", f"{ap:.2f}"]
                             for (o, size), (lr, ap, tried, others) in sorted(best.items())]})
    reported = "test" if "test" in _splits_in(data) else _OLD_SPLIT
    before = _before(data, reported)
    if before:
        measured = _measured_pairs(data, reported)
        headline.append({"figure": f"{reported} Quora AP ({measured:,} pairs), default model",
                         "command": _command_of(data, reported),
                         "duplens": f"{before['average_precision']:.2f}", "baseline": "",
                         "ratio": "", "goal": "", "met": None})
    goals = {int(k): v for k, v in data.get("goals", {}).items()}
    for group in _groups([r for r in data["runs"]
                          if r.get("measured_on", _OLD_SPLIT) == reported]):
        first, done = group[0], [r for r in group if "after" in r]
        if not (first.get("recommended") and done):
            continue
        aps = [r["after"]["average_precision"] for r in done]
        mean, base_ap = sum(aps) / len(aps), before["average_precision"]
        size, goal = first["train_pairs"], goals.get(first["train_pairs"])
        seeds = (f", mean of {len(aps)} seeds {min(aps):.2f}–{max(aps):.2f}"
                 if len(aps) > 1 else ", 1 seed")
        headline.append({
            "command": _command_of(data, reported, first),
            "figure": f"{reported} Quora AP after fine-tuning ({first['objective']}, "
                      f"{size:,} pairs{seeds}"
                      + ("; measured as ask_vs_random's random arm" if first.get("borrowed")
                         else "") + ")",
            "duplens": f"{mean:.2f}", "baseline": f"{base_ap:.2f}",
            "baseline_is": f"the default model on the same {reported} pairs",
            "ratio": f"{mean - base_ap:+.2f} points",
            "goal": f"≥ +{goal:g} points" if goal else "",
            "met": None if goal is None else mean - base_ap >= goal})
    notes = [f"Earlier runs kept by `--merge` were made by `{c}`."
             for c in data.get("earlier_commands", [])]
    if reported == _OLD_SPLIT:
        notes.insert(0, "Measured before the three-way split: every recipe was chosen on the "
                        "same held-out pairs that report it, so these figures are optimistic.")
    return {"headline": headline, "tables": tables, "notes": notes}


def _with_todays_defaults(data: dict) -> dict:
    """A copy of `data` whose runs are labelled against the engine's defaults of today."""
    import copy

    from engine.training import DEFAULT_OBJECTIVE, TrainingOptions

    labelled = copy.deepcopy(data)
    labelled["default_objective"] = DEFAULT_OBJECTIVE
    labelled["options"] = {**_BEFORE_OPTIONS,
                           **dataclasses.asdict(TrainingOptions())}
    for run in labelled["runs"]:
        run["options"] = {**_BEFORE_OPTIONS, **run.get("options", data.get("options", {}))}
    _label_runs(labelled)
    return labelled


# Options added after some runs were made, with the values those runs trained with.
_BEFORE_OPTIONS = {"margin": 0.5, "hard_negatives": 0, "validation": 0.0, "patience": 1}


def _with_borrowed(data: dict, results: dict) -> dict:
    """`data` plus ask_vs_random's random test runs as runs of the default recipe, where
    `data` has no test run of it and both used the same split and measured sample."""
    from engine.training import DEFAULT_OBJECTIVE, TrainingOptions

    ask_file = results.get("ask_vs_random") or {}
    ask = ask_file.get("result", {})
    defaults = dataclasses.asdict(TrainingOptions())
    info = data.get("data", {})
    same = (ask.get("setup", {}).get("split_seed") == info.get("split_seed")
            and ask.get("setup", {}).get("held_out_limit") == info.get("measured_test")
            and {k: v for k, v in ask.get("options", {}).items() if k != "seed"}
            == {k: v for k, v in defaults.items() if k != "seed"})
    has_own = any(r.get("measured_on") == "test" and r["objective"] == DEFAULT_OBJECTIVE
                  and not _changed(r.get("options", {}), defaults, ignore=("seed",))
                  for r in data.get("runs", []))
    if not same or has_own:
        return data
    borrowed = [{"objective": DEFAULT_OBJECTIVE, "train_pairs": r["pairs"],
                 "options": {**defaults, "seed": r["seed"]}, "negative_pool": 0,
                 "measured_on": "test", "borrowed": True, "date": r.get("date", "?"),
                 "training_seconds": r["training_seconds"],
                 "load_before": r.get("load_before"), "load_after": r.get("load_after"),
                 "after": {"average_precision": r["average_precision"], "f1": r["f1"]},
                 "f1_at_calibrated": r.get("f1_at_calibrated"),
                 "borrowed_command": r.get("command") or next(
                     (c for c in [ask_file.get("command"),
                                  *ask_file.get("earlier_commands", [])]
                      if c and "--on test" in c), None)}
                for r in ask.get("runs", [])
                if r["kind"] == "random" and r.get("measured_on") == "test"
                and not r.get("second_opinion")]  # silver is not the default recipe
    return {**data, "runs": [*data.get("runs", []), *borrowed]} if borrowed else data


def recommended_on(data: dict, on: str, results: dict | None = None) -> dict | None:
    """The recommended recipe's mean AP on `on` at its largest training size, for the
    quality benchmark's table: {"ap", "f1", "pairs", "seeds", "objective"}."""
    data = _with_todays_defaults(_with_borrowed(data, results or {}))
    runs = [r for r in data.get("runs", []) if r.get("recommended") and "after" in r
            and r.get("measured_on", _OLD_SPLIT) == on]
    if not runs:
        return None
    size = max(r["train_pairs"] for r in runs)
    chosen = [r for r in runs if r["train_pairs"] == size]
    return {"ap": sum(r["after"]["average_precision"] for r in chosen) / len(chosen),
            "f1": sum(_f1(r, on) for r in chosen) / len(chosen), "pairs": size,
            "seeds": len(chosen), "objective": chosen[0]["objective"]}


def best_learning_rates(data: dict) -> dict[tuple[str, int], tuple[float, float, list, str]]:
    """(objective, training pairs) -> (best learning rate, its validation AP, the rates
    tried, the other options as they differ from today's defaults): from the validation
    runs of a sweep, runs that differ from one another in the learning rate (and seed)
    alone, seeds averaged; where several sweeps exist, the one that tried the most rates."""
    data = _with_todays_defaults(data)
    defaults = data["options"]
    sweeps: dict[tuple[str, int, str], dict[float, list[float]]] = {}
    for r in data["runs"]:
        if r.get("measured_on") != "validation" or "after" not in r:
            continue
        if r.get("negative_pool") and r["objective"] != "triplet":
            continue
        rest = {k: v for k, v in r["options"].items() if k not in ("learning_rate", "seed")}
        others = _changed(rest, defaults)
        rates = sweeps.setdefault((r["objective"], r["train_pairs"], others), {})
        rates.setdefault(r["options"]["learning_rate"], []).append(
            r["after"]["average_precision"])
    out: dict[tuple[str, int], tuple[float, float, list, str]] = {}
    for (objective, size, others), rates in sweeps.items():
        if len(rates) < 2 or ((objective, size) in out
                              and len(out[(objective, size)][2]) >= len(rates)):
            continue
        mean = {lr: sum(v) / len(v) for lr, v in rates.items()}
        lr = max(mean, key=mean.get)
        out[(objective, size)] = (lr, mean[lr], sorted(rates), others)
    return out


def _splits_in(data: dict) -> list[str]:
    found = {r.get("measured_on", _OLD_SPLIT) for r in data.get("runs", [])}
    return [on for on in ("validation", "test", _OLD_SPLIT) if on in found]


def _before(data: dict, on: str) -> dict:
    before = data.get("before", {})
    return before.get(on, {}) if on in SPLITS else before


def _measured_pairs(data: dict, on: str) -> int:
    info = data.get("data", {})
    return info.get(f"measured_{on}", info.get("measured_pairs", 0))


def _table_title(data: dict, on: str, before: dict) -> str:
    info = data.get("data", {})
    dups = info.get(f"{on}_duplicates", info.get("held_out_duplicates", "?"))
    what = {"validation": "Validation (every choice is made here; one seed unless said)",
            "test": "Test (reported; nothing is chosen here)",
            _OLD_SPLIT: "Held-out half (two-way split)"}[on]
    f1 = ("F1 at the threshold of best F1 on validation" if on == "test"
          else f"best F1 (before: {before.get('f1', 0):.2f})")
    return (f"{what}: AP (before: {before.get('average_precision', 0):.2f}) and {f1} on "
            f"{_measured_pairs(data, on):,} {on} pairs ({_count(dups)} duplicates); options as "
            "they differ from the engine's defaults")


def _count(value) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def _groups(runs: list[dict]) -> list[list[dict]]:
    """Runs of one recipe (objective, options but the seed, size, pool), by size then mean AP."""
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        options = {k: v for k, v in r.get("options", {}).items() if k != "seed"}
        key = (r["train_pairs"], r["objective"], json.dumps(options, sort_keys=True),
               r.get("negative_pool", 0))
        groups.setdefault(key, []).append(r)
    return sorted(groups.values(), key=lambda g: (g[0]["train_pairs"], -_mean_ap(g)))


def _not_chosen(run: dict, best: dict) -> str:
    """For a test run at a learning rate other than the one validation chose for its
    objective (other options at their defaults), what validation chose: such a run (here,
    made before validation's grid was widened) is shown, not chosen from."""
    chosen = best.get((run["objective"], 1000))
    others = [part for part in run.get("changed", "").split()
              if not part.startswith(("seed=", "learning_rate="))]
    if chosen is None or chosen[3] or others or run.get("negative_pool") and \
            run["objective"] != "triplet":
        return ""
    return "" if run["options"]["learning_rate"] == chosen[0] else f"{chosen[0]:g}"


def _row(group: list[dict], before: dict, on: str, not_chosen: str = "") -> list:
    first = group[0]
    label = _recipe(first)
    if not_chosen:
        label += f" (not the rate validation chose, {not_chosen}: shown, not chosen from)"
    done = [r for r in group if "after" in r]
    if not done:
        return [label, f"{first['train_pairs']:,}", f"failed: {first.get('error')}",
                "", "", "", "", "", ""]
    base_ap = before["average_precision"]
    aps = [r["after"]["average_precision"] for r in done]
    mean = sum(aps) / len(aps)
    spread = f" ({min(aps):.2f}–{max(aps):.2f})" if len(aps) > 1 else ""
    moved = abs(mean - base_ap) >= 0.5
    per_pair = [r.get("seconds_per_pair") or r["total_seconds"] / r["train_pairs"]
                for r in done if r.get("total_seconds")]
    if first.get("borrowed"):
        label += " (the random arm of ask_vs_random, same run there; F1 at the threshold " \
                 "calibrated on its own verdicts)"
    return [("**recommended:** " if first.get("recommended") else "") + label,
            f"{first['train_pairs']:,}", len(done),
            f"{f'**{mean:.2f}**' if moved else f'{mean:.2f}'} ({mean - base_ap:+.2f}){spread}",
            f"{sum(_f1(r, on) for r in done) / len(done):.2f}",
            f"{sum(r['training_seconds'] for r in done) / len(done):.0f}",
            f"{sum(per_pair) / len(per_pair):.3f}" if per_pair else "",
            ", ".join(f"{r['load_before']} → {r['load_after']}" for r in done
                      if r.get("load_before") and r.get("load_after")),
            _minute(max(r.get("date", "?") for r in done))]


def _f1(run: dict, on: str) -> float:
    """The F1 a run reports: on test, at the threshold chosen on validation."""
    if on == "test" and run.get("f1_at_validation_threshold") is not None:
        return run["f1_at_validation_threshold"]
    if run.get("borrowed") and run.get("f1_at_calibrated") is not None:
        return run["f1_at_calibrated"]
    return run["after"]["f1"]


def _recipe(run: dict) -> str:
    """"contrastive (`OnlineContrastiveLoss`), learning_rate=5e-05" and the like."""
    changed = " ".join(part for part in run.get("changed", "").split()
                       if not part.startswith("seed="))
    pool = (f", negatives also from {run['negative_pool']:,} training-part questions"
            if run.get("negative_pool") else "")
    return (f"{run['objective']} ({_LOSSES.get(run['objective'], '?')})"
            f"{', ' + changed if changed else ''}{pool}")


def _mean_ap(runs: list[dict]) -> float:
    aps = [r["after"]["average_precision"] for r in runs if "after" in r]
    return sum(aps) / len(aps) if aps else 0.0


def _minute(stamp: str) -> str:
    """"2026-11-23T06:58:00+00:00" -> "2026-11-23 06:58 UTC"."""
    return f"{stamp[:10]} {stamp[11:16]} UTC" if len(stamp) >= 16 else stamp


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
