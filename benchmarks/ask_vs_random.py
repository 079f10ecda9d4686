"""Asked pairs against random pairs: does labelling what the model is unsure of train better?

    python -m benchmarks.ask_vs_random --on validation|test [--strategies uncertain ...]
        [--asked 1000] [--round 250] [--measure-at 1000] [--random-sizes 1000 4000]
        [--held-out-limit 4000] [--seed 0] [--train-seeds 0 1 2] [--merge]
        [--second-opinion 2000 4000] [--silver-band 0.15] [--second-opinion-arms ask random]

A simulated analyst on the Quora pairs: the three-way group split of
`benchmarks.finetune_quora` (same seed, same measured validation and test samples), the
Quora labels as the analyst's verdicts. The pool is the labelled pairs of the training part.
"random" labels the first N pairs of the pool in the shuffled order finetune_quora trains on;
"ask" labels what a strategy offers, in rounds of `--round` pairs: the model of the previous
round (the default model at first) scores every pool pair, the threshold is calibrated on
the verdicts so far (`engine.review.calibration`, 0.8 until there are enough), the strategy
picks the next pairs not yet labelled, and the default model is fine-tuned afresh on every
verdict so far. Both arms train with the engine's default recipe (objective and
`TrainingOptions()`), the same training seeds and split, in the same run.

Strategies are chosen on validation (`--on validation`) and the one the product uses
(`engine.review.picking.ASK_STRATEGY`) is reported on test (`--on test`), once, beside
random pairs measured in the same run. The F1 reported is at the threshold calibrated on
the run's own verdicts, as the product sets it (no measured pair chooses it).

Strategies (`STRATEGIES`): `uncertain` (nearest the threshold, spread out: the product's
`pick_uncertain`), `committee` (where this round's model and the previous one's disagree
most, each at its own threshold), `band` (spread out at random among the 4n pairs nearest
the threshold), `expected-loss` (the contrastive loss a verdict would give, its chance of
"duplicate" fitted on the verdicts so far), `mixed` (half `uncertain`, half at random),
`top` (the pairs the model is surest are duplicates: the negatives among them are its
hardest). A `+weak` suffix also trains on the pool's
unlabelled mutual nearest neighbours (`WEAK_MIN` or more similar under the default model) as
weak duplicates, at most as many as asked pairs.

`--second-opinion N ...` adds the arms of issue 45 (Augmented SBERT): the same gold pairs
(the `--asked` asked ones, and as many random ones) plus N silver pairs, labelled by a judge
(a cross-encoder) trained on that arm's gold pairs, through the product's own
`run_second_opinion`; the judge is measured on the measured split beside the bi-encoder.
The silver pairs come from the neighbour graph of the training part's questions under the
model in use (never a validation or test question), within `--silver-band` of the threshold
calibrated on the arm's verdicts (`benchmarks.second_opinion_arms`). One judge per arm and
seed labels the largest N; a smaller N takes the closest-first prefix of that list, which is
what the product would label for it. Each step's seconds are recorded (judge training,
measuring it, the graph, labelling silver, the bi-encoder's training). `--judge-kind
residual` makes the judge residual (`run_second_opinion`'s `prior`): its logit is added to
the default model's cosine made a logit by a logistic fit on the arm's gold pairs (the
recipe `benchmarks/judge_choice.py` found above the bi-encoder on validation), in training,
measuring and labelling alike.

`--merge` keeps the runs already in the results file (same split and measured samples) and
skips what they hold, so a stopped run resumes by running the same command again. A second,
cheap measurement justifies `ENOUGH_OF_EACH` (on validation only): the calibrated threshold
from N random verdicts of the default model, against the validation best threshold, over
many draws. Results go to benchmarks/results/ask_vs_random.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from benchmarks.finetune_quora import (
    SPLITS,
    _base_metrics,
    _hardware,
    _load,
    _versions,
    f1_at,
    quora_splits,
)
from engine.training.silver import DEFAULT_BAND

RESULTS = Path(__file__).resolve().parent / "results" / "ask_vs_random.json"
CALIBRATION_SIZES = (10, 20, 30, 50, 100, 200, 500, 1000)
CALIBRATION_DRAWS = 200
BAND_PER_PAIR = 4     # `band`: candidates per wanted pair, nearest the threshold first
WEAK_MIN = 0.9        # `+weak`: mutual nearest neighbours at least this similar
MARGIN = 0.5          # OnlineContrastiveLoss' margin (TrainingOptions.margin's default)
JUDGE_KINDS = ("plain", "residual")   # `--judge-kind`


@dataclass
class Round:
    """What a strategy sees when it picks: the pool scored by this round's model (and the
    previous round's), the verdicts so far and the score each had when it was picked."""

    scores: np.ndarray
    threshold: float
    previous: np.ndarray | None
    previous_threshold: float | None
    asked: list[int]
    labels: np.ndarray         # the pool's verdicts (read only at `asked`)
    picked_scores: np.ndarray  # each pool pair's score when it was picked (at `asked`)
    picked_thresholds: np.ndarray
    rng: np.random.Generator


def _uncertain(r: Round) -> np.ndarray:
    return np.abs(r.scores - r.threshold)


def _committee(r: Round) -> np.ndarray:
    """Signed geometric mean of the two models' distances from their thresholds: negative
    where they disagree (the more, the surer each is), so disagreement comes first."""
    if r.previous is None:
        return _uncertain(r)
    product = (r.scores - r.threshold) * (r.previous - r.previous_threshold)
    return np.sign(product) * np.sqrt(np.abs(product))


def _band(r: Round, wanted: int) -> np.ndarray:
    distance = _uncertain(r)
    width = np.sort(distance)[min(len(distance), BAND_PER_PAIR * wanted) - 1]
    cost = r.rng.uniform(0.0, 0.01, len(distance))
    return np.where(distance <= width, cost, 1.0 + distance)


def _expected_loss(r: Round) -> np.ndarray:
    """How much the contrastive loss a verdict gives is expected to be: p·d² for a duplicate,
    (1 - p)·max(0, margin - d)² for not (d the cosine distance), p fitted by logistic
    regression on the verdicts so far against their distance from the threshold when they
    were picked (scores of a model that had not trained on them)."""
    asked = np.asarray(r.asked, dtype=int)
    labels = r.labels[asked] if len(asked) else np.zeros(0)
    if len(asked) < 20 or labels.min(initial=1) == labels.max(initial=0):
        return _uncertain(r)
    from sklearn.linear_model import LogisticRegression

    x = (r.picked_scores[asked] - r.picked_thresholds[asked]).reshape(-1, 1)
    fit = LogisticRegression().fit(x, labels)
    p = fit.predict_proba((r.scores - r.threshold).reshape(-1, 1))[:, 1]
    d = 1.0 - r.scores
    expected = p * d ** 2 + (1 - p) * np.maximum(MARGIN - d, 0.0) ** 2
    return 0.1 * (1.0 - expected / max(float(expected.max()), 1e-12))


def _mixed(r: Round, wanted: int) -> np.ndarray:
    """Half the round nearest the threshold (spread out), half at random among the rest:
    uncertainty's picks alone never show the model the pairs it is sure of and wrong about."""
    cost = _uncertain(r)
    chosen = r.rng.choice(len(cost), size=min(len(cost), wanted - wanted // 2), replace=False)
    cost = cost.copy()
    cost[chosen] = -1.0 + r.rng.uniform(0.0, 0.01, len(chosen))   # these come first
    return cost


def _top(r: Round) -> np.ndarray:
    """The pairs the model calls duplicate most surely: those labelled "not duplicate" are
    its hardest negatives."""
    return 1.0 - r.scores


STRATEGIES: dict[str, Callable[[Round, int], np.ndarray]] = {
    "uncertain": lambda r, n: _uncertain(r),
    "committee": lambda r, n: _committee(r),
    "band": _band,
    "expected-loss": lambda r, n: _expected_loss(r),
    "mixed": _mixed,
    "top": lambda r, n: _top(r),
}


def strategy_names() -> list[str]:
    return [*STRATEGIES, *(f"{s}+weak" for s in STRATEGIES)]


def main(argv: list[str] | None = None) -> None:
    from engine.review.picking import ASK_STRATEGY

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--on", choices=SPLITS, required=True,
                    help="validation: to choose a strategy on; test: the reported figures")
    ap.add_argument("--strategies", nargs="*", choices=strategy_names(),
                    default=[ASK_STRATEGY], help="how the asked pairs are picked "
                                                 f"(default: the product's, {ASK_STRATEGY}; "
                                                 "none: no asked arm)")
    ap.add_argument("--asked", type=int, default=1000, help="verdicts asked in all")
    ap.add_argument("--round", type=int, default=250, help="verdicts asked per round")
    ap.add_argument("--measure-at", nargs="+", type=int,
                    help="asked counts measured (default: --asked only)")
    ap.add_argument("--random-sizes", nargs="+", type=int, default=[1000, 4000],
                    help="random pairs, one run each (none: --random-sizes 0)")
    ap.add_argument("--held-out-limit", type=int, default=4000)
    ap.add_argument("--pool-limit", type=int,
                    help="ask from the first N pool pairs only (a quick check of the code)")
    ap.add_argument("--objective", help="default: the engine's DEFAULT_OBJECTIVE")
    ap.add_argument("--seed", type=int, default=0, help="split seed (and the measured sample)")
    ap.add_argument("--train-seeds", nargs="+", type=int,
                    help="training seeds, both arms once each (default: --seed)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--second-opinion", nargs="+", type=int, default=[], metavar="N",
                    help="silver pairs a second opinion adds, one arm each (issue 45)")
    ap.add_argument("--silver-band", type=float, default=DEFAULT_BAND,
                    help="silver pairs within this of the calibrated threshold")
    ap.add_argument("--second-opinion-arms", nargs="+", choices=("ask", "random"),
                    default=["ask", "random"],
                    help="which gold pairs get a second opinion: the asked ones, as many "
                         "random ones, or both")
    ap.add_argument("--judge-epochs", type=int, default=1,
                    help="the judge's epochs (TrainingOptions.epochs of its run)")
    ap.add_argument("--judge-kind", choices=JUDGE_KINDS, default="plain",
                    help="plain: the product's judge; residual: its logit added to the "
                         "default model's cosine, calibrated on the arm's gold pairs")
    ap.add_argument("--merge", action="store_true",
                    help="keep the runs already in --out (same split and samples) and skip "
                         "the ones it holds")
    args = ap.parse_args(argv)
    measure_at = sorted(set(args.measure_at or [args.asked]))
    silver_counts = sorted({n for n in args.second_opinion if n > 0})
    if max(measure_at) > args.asked:
        raise SystemExit(f"--measure-at {max(measure_at)} is more than --asked {args.asked}")

    from engine.encoding.model_spec import load_model, resolve_model
    from engine.training import (
        DEFAULT_OBJECTIVE,
        TrainingOptions,
        held_out_metrics,
    )

    objective = args.objective or DEFAULT_OBJECTIVE
    data = quora_splits(args.seed, args.held_out_limit)
    pool = data.train[:args.pool_limit] if args.pool_limit else data.train
    pool_labels = np.asarray([p.is_duplicate for p in pool], dtype=np.int64)
    measured = data.measured(args.on)
    measured_labels = np.asarray([p.is_duplicate for p in measured], dtype=np.int64)
    keys = {k: i for i, k in enumerate(dict.fromkeys(
        k for p in pool for k in (p.key_a, p.key_b)))}
    key_a = np.asarray([keys[p.key_a] for p in pool])
    key_b = np.asarray([keys[p.key_b] for p in pool])
    _say(f"pool {len(pool)} pairs ({int(pool_labels.sum())} duplicates); measuring on "
         f"{args.on}, {len(measured)} pairs")

    spec = resolve_model(None)
    base = load_model(spec, args.device)
    before = {on: _base_metrics(base, spec.name, data.measured(on), held_out_metrics)
              for on in SPLITS}
    _say(f"default model on {args.on}: AP {before[args.on].average_precision:.2f}")
    base_vectors = _cached_vectors(base, spec.name, pool)
    options = TrainingOptions()
    setup = {"split_seed": args.seed, "held_out_limit": args.held_out_limit,
             "pool_pairs": len(pool),
             "objective": objective, "model": spec.name,
             "default_model_ap": {on: round(m.average_precision, 4)
                                  for on, m in before.items()}}
    earlier = (json.loads(args.out.read_text(encoding="utf-8"))
               if args.merge and args.out.exists() else None)
    if earlier is not None and not same_setup(earlier["result"].get("setup"), setup):
        _say("the earlier results were measured on other pairs; not merged")
        earlier = None
    if earlier is not None:
        setup = earlier["result"]["setup"]  # as first measured (see `same_setup`)
    old_runs = earlier["result"]["runs"] if earlier else []
    done = {_key(r) for r in old_runs}
    runs: list[dict] = []
    started = datetime.now(UTC)
    wall = time.perf_counter()
    command = " ".join(["python -m benchmarks.ask_vs_random",
                        *(sys.argv[1:] if argv is None else argv)])
    calibration = (earlier or {}).get("result", {}).get("calibration")
    if args.on == "validation" and not calibration:
        held_base = getattr(before["validation"], "scores", None)
        if held_base is None:  # the base model's metrics came from the cache, without scores
            held_base = _scores(base, measured)
        calibration = _calibration_study(np.einsum("ij,ij->i", *base_vectors), pool_labels,
                                         held_base, measured_labels, args.seed)
        _say("calibration study done")

    def write() -> None:
        result = {"setup": setup, "product_strategy": ASK_STRATEGY,
                  "options": _options_dict(options), "runs": old_runs + runs,
                  "calibration": calibration,
                  "before": {on: {k: round(v, 4) if isinstance(v, float) else v
                                  for k, v in m.as_dict().items()}
                             for on, m in before.items()}}
        report = {"benchmark": "ask_vs_random", "title": "Asked pairs against random pairs",
                  "command": command, "date": started.isoformat(timespec="seconds"),
                  "wall_seconds": round(time.perf_counter() - wall, 1),
                  "hardware": _hardware(args.device), "versions": _versions(),
                  "result": result}
        if earlier is not None:
            report["earlier_commands"] = [c for c in dict.fromkeys(
                [*earlier.get("earlier_commands", []), earlier["command"]]) if c != command]
            report["earlier_wall_seconds"] = round(earlier.get("earlier_wall_seconds", 0)
                                                   + earlier["wall_seconds"], 1)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_suffix(".json.part")
        tmp.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n",
                       encoding="utf-8")
        tmp.replace(args.out)

    trainer = _Trainer(base, objective, options, args.device, data, args.on, pool,
                       pool_labels, measured_labels)
    second = None
    if silver_counts:
        from benchmarks.second_opinion_arms import held_out_texts, silver_project

        project, where = silver_project(pool, held_out_texts(data.pairs, data.train))
        second = _SecondOpinionArms(args, silver_counts, project, where, pool, pool_labels,
                                    measured, before[args.on].scores, trainer)
        _say(f"second opinion: {len(project.texts)} training questions in the graph "
             f"({project.left_out} left out as held-out questions)")
    for seed in args.train_seeds or [args.seed]:
        for size in args.random_sizes:
            if size <= 0:
                continue
            entry = {"kind": "random", "strategy": None, "pairs": size, "seed": seed,
                     "measured_on": args.on}
            if _key(entry) in done:
                continue
            entry.update(trainer.run(list(range(size)), seed, [])[0])
            entry["command"] = command
            runs.append(entry)
            write()
        if second is not None and "random" in args.second_opinion_arms:
            head = {"kind": "random", "strategy": None, "pairs": args.asked, "seed": seed,
                    "measured_on": args.on}
            counts = [n for n in silver_counts if _key(second.entry(head, n)) not in done]
            if counts:
                chosen = list(range(args.asked))
                scores = np.einsum("ij,ij->i", *base_vectors)
                for entry in second.run(head, chosen, counts, base_vectors,
                                        _calibrated_default(scores[chosen],
                                                            pool_labels[chosen]),
                                        "default"):
                    entry["command"] = command
                    runs.append(entry)
                    write()
        for strategy in args.strategies:
            wanted = [{"kind": "ask", "strategy": strategy, "pairs": n, "seed": seed,
                       "measured_on": args.on, "round": args.round} for n in measure_at]
            counts = []
            if second is not None and "ask" in args.second_opinion_arms:
                head = {**wanted[-1], "pairs": args.asked}
                counts = [n for n in silver_counts if _key(second.entry(head, n)) not in done]
            if all(_key(w) in done for w in wanted) and not counts:
                continue
            for entry in _ask_chain(strategy, seed, args, measure_at, trainer, base,
                                    base_vectors, pool, pool_labels, key_a, key_b, spec.name,
                                    done=done, second=second, silver_counts=counts):
                entry["command"] = command
                runs.append(entry)
                write()
    if not runs and earlier is None:
        write()
    _say(f"written to {args.out}")


class _Trainer:
    """Fine-tune the default model afresh on some pool pairs and measure it."""

    def __init__(self, base, objective: str, options, device: str, data, on: str,
                 pool: list, pool_labels: np.ndarray, measured_labels: np.ndarray) -> None:
        self.base, self.objective, self.options, self.device = base, objective, options, device
        self.data, self.on, self.pool = data, on, pool
        self.pool_labels, self.measured_labels = pool_labels, measured_labels

    def run(self, chosen: list[int], seed: int, weak: list, *, measure: bool = True,
            silver: list | tuple = ()) -> tuple[dict, object]:
        """(what it measured, the model) for training on pool[chosen] plus `weak` pairs
        plus `silver` pairs (a second opinion's)."""
        import dataclasses

        from engine.training import finetune, metrics_from_scores

        train = [self.pool[i] for i in chosen] + list(weak) + list(silver)
        options = dataclasses.replace(self.options, seed=seed)
        load_before = _load()
        with tempfile.TemporaryDirectory(prefix="duplens-ask-") as tmp:
            result = finetune(self.base, train, self.objective, options, Path(tmp) / "model",
                              device=self.device)
        entry = {"duplicates": int(self.pool_labels[chosen].sum()), "weak_pairs": len(weak),
                 "training_seconds": round(result.seconds, 1), "load_before": load_before,
                 "load_after": _load()}
        if not measure:
            return entry, result.model
        scores = _scores(result.model, self.data.measured(self.on))
        after = metrics_from_scores(scores, self.measured_labels)
        own = _scores(result.model, [self.pool[i] for i in chosen])
        calibrated = _calibrated(own, self.pool_labels[chosen])
        entry.update({
            "average_precision": round(after.average_precision, 4), "f1": round(after.f1, 2),
            "best_threshold": round(after.threshold, 4),
            "calibrated_threshold": None if calibrated is None else round(calibrated, 4),
            "f1_at_calibrated": None if calibrated is None else round(
                f1_at(scores, self.measured_labels, calibrated), 2),
            "date": datetime.now(UTC).isoformat(timespec="seconds")})
        _say(f"  {len(chosen)} pairs (+{len(weak)} weak, +{len(silver)} silver) seed {seed}: "
             f"{self.on} AP "
             f"{entry['average_precision']:.2f}, {result.seconds:.0f} s training, load "
             f"{load_before} -> {entry['load_after']}")
        return entry, result.model


def _ask_chain(strategy: str, seed: int, args, measure_at: list[int], trainer: _Trainer,
               base, base_vectors, pool: list, pool_labels: np.ndarray, key_a: np.ndarray,
               key_b: np.ndarray, model_name: str, *, done: set | frozenset = frozenset(),
               second: _SecondOpinionArms | None = None, silver_counts: list[int] = ()):
    """Rounds of asking with `strategy` up to --asked verdicts, yielding a measured run at
    each count of `measure_at` (not yet `done`), and at --asked a run with a second opinion
    for each of `silver_counts` (its graph and threshold under the model that picked the
    last round: the one in use when the analyst trains)."""
    from engine.review.calibration import default_threshold
    from engine.review.picking import pair_vectors, pick_spread

    name, _, extra = strategy.partition("+")
    weak = _weak_pairs(base_vectors, pool, model_name) if extra == "weak" else []
    rng = np.random.default_rng(1000 + seed)
    asked: list[int] = []
    picked_scores = np.zeros(len(pool))
    picked_thresholds = np.zeros(len(pool))
    thresholds: list[float] = []
    model, previous, previous_threshold = base, None, None
    _say(f"ask ({strategy}), seed {seed}: rounds of {args.round} up to {args.asked}"
         + (f", {len(weak)} weak pairs" if weak else ""))
    while len(asked) < args.asked:
        vectors_a, vectors_b = base_vectors if model is base else _vectors(model, pool)
        scores = np.einsum("ij,ij->i", vectors_a, vectors_b)
        threshold = (default_threshold(None) if not asked else
                     _default(scores[asked], pool_labels[asked], default_threshold))
        open_ = np.setdiff1d(np.arange(len(pool)), asked)
        wanted = min(args.round, args.asked - len(asked))
        state = Round(scores[open_], threshold,
                      None if previous is None else previous[open_], previous_threshold,
                      asked, pool_labels, picked_scores, picked_thresholds, rng)
        # `Round.asked` indexes the whole pool; only the open pairs are scored.
        cost = STRATEGIES[name](state, wanted)
        picked = [int(open_[i]) for i in pick_spread(
            cost, key_a[open_], key_b[open_], wanted,
            vectors=pair_vectors(vectors_a[open_], vectors_b[open_]))]
        picked_scores[picked] = scores[picked]
        picked_thresholds[picked] = threshold
        asked += picked
        thresholds.append(round(float(threshold), 4))
        head = {"kind": "ask", "strategy": strategy, "pairs": len(asked), "seed": seed,
                "measured_on": args.on, "round": args.round}
        measure = len(asked) in measure_at and _key(head) not in done
        last = len(asked) >= args.asked
        chosen_weak = _without(weak, [pool[i] for i in asked])[:len(asked)]
        digest = _digest(asked)
        if last and second is not None and silver_counts:
            in_use = _calibrated_default(scores[asked], pool_labels[asked])
            for entry in second.run(head, list(asked), silver_counts,
                                    (vectors_a, vectors_b), in_use,
                                    "default" if model is base else "the last round's",
                                    weak=chosen_weak):
                yield {**entry, "asked_digest": digest, "asked_at": list(thresholds)}
        if last and not measure:
            break
        entry, trained = trainer.run(list(asked), seed, chosen_weak, measure=measure)
        previous, previous_threshold = scores, threshold
        model = trained
        if measure:
            yield {**head, **entry, "asked_digest": digest, "asked_at": list(thresholds)}


def _without(weak: list, asked: list) -> list:
    """The weak pairs that are not among the asked ones (those have a real verdict)."""
    taken = {frozenset((p.key_a, p.key_b)) for p in asked}
    return [w for w in weak if frozenset((w.key_a, w.key_b)) not in taken]


def _weak_pairs(base_vectors, pool: list, model_name: str) -> list:
    """Unlabelled mutual nearest neighbours among the pool's texts, at least WEAK_MIN similar
    under the default model, most similar first, as duplicates (label 1): what a project's
    neighbour graph offers without an analyst. Texts that are the same once normalised are
    left out (they teach nothing)."""
    from engine.text import norm_key
    from engine.training.pairs import LabelledPair

    vectors_a, vectors_b = base_vectors
    texts, keys, rows = [], [], []
    seen: dict[str, int] = {}
    for i, p in enumerate(pool):
        for text, key, vec in ((p.text_a, p.key_a, vectors_a[i]), (p.text_b, p.key_b,
                                                                  vectors_b[i])):
            if key not in seen:
                seen[key] = len(texts)
                texts.append(text)
                keys.append(key)
                rows.append(vec)
    matrix = np.asarray(rows, dtype=np.float32)
    nearest = np.empty(len(matrix), dtype=np.int64)
    best = np.empty(len(matrix), dtype=np.float32)
    for start in range(0, len(matrix), 2048):
        sims = matrix[start:start + 2048] @ matrix.T
        sims[np.arange(len(sims)), np.arange(start, start + len(sims))] = -1
        nearest[start:start + len(sims)] = sims.argmax(axis=1)
        best[start:start + len(sims)] = sims.max(axis=1)
    out = []
    for i in np.argsort(-best):
        j = int(nearest[i])
        if best[i] < WEAK_MIN:
            break
        if i < j and nearest[j] == i and norm_key(texts[i]) != norm_key(texts[j]):
            out.append(LabelledPair(texts[i], texts[j], 1.0, key_a=keys[i], key_b=keys[j]))
    return out


def _key(run: dict) -> tuple:
    second = run.get("second_opinion") or 0
    return (run["kind"], run.get("strategy"), run["pairs"], run["seed"], run["measured_on"],
            run.get("round") if run["kind"] == "ask" else None, second,
            run.get("silver_band") if second else None,
            run.get("judge_epochs") if second else None,
            run.get("judge_kind") or "plain" if second else None)


AP_TOLERANCE = 0.01   # points: the default model's AP as torch versions round it


def same_setup(old: dict | None, new: dict) -> bool:
    """Whether runs measured under `old` can be merged with runs under `new`: the same split,
    samples, pool, objective and model, and the default model's AP on each split within
    AP_TOLERANCE (the same pairs scored by another torch build differ in the 4th decimal)."""
    if not old:
        return False
    plain = {k: v for k, v in old.items() if k != "default_model_ap"}
    if plain != {k: v for k, v in new.items() if k != "default_model_ap"}:
        return False
    was, now = old.get("default_model_ap") or {}, new.get("default_model_ap") or {}
    return (isinstance(was, dict) and isinstance(now, dict) and was.keys() == now.keys()
            and all(abs(was[k] - now[k]) <= AP_TOLERANCE for k in was))


def _digest(chosen: list[int]) -> str:
    """A short fingerprint of which pool pairs an arm labelled (runs of the same chain that
    asked the same pairs share it)."""
    return hashlib.sha1(np.asarray(sorted(chosen), dtype=np.int64).tobytes()).hexdigest()[:12]


def _calibrated_default(scores: np.ndarray, labels: np.ndarray) -> float:
    """The threshold the product calibrates on these verdicts (its default until they are
    enough)."""
    from engine.review.calibration import default_threshold

    return _default(scores, labels, default_threshold)


class _SecondOpinionArms:
    """The issue-45 arms: the product's second opinion on an arm's gold pairs, then the
    bi-encoder trained on gold plus each count of silver (`benchmarks.second_opinion_arms`)."""

    def __init__(self, args, counts: list[int], project, where: np.ndarray, pool: list,
                 pool_labels: np.ndarray, measured: list, default_scores: np.ndarray,
                 trainer: _Trainer) -> None:
        self.args, self.counts, self.project, self.where = args, counts, project, where
        self.pool, self.pool_labels, self.measured = pool, pool_labels, measured
        self.default_scores, self.trainer = default_scores, trainer

    def entry(self, head: dict, count: int) -> dict:
        return {**head, "second_opinion": count, "silver_band": self.args.silver_band,
                "judge_epochs": self.args.judge_epochs, "judge_kind": self.args.judge_kind}

    def run(self, head: dict, chosen: list[int], counts: list[int], vectors, threshold: float,
            graph_model: str, weak: list | tuple = ()):
        """One judge on pool[chosen] labelling max(counts) silver pairs, then one measured
        bi-encoder per count, yielded as runs."""
        from benchmarks.second_opinion_arms import (
            project_vectors,
            quora_agreement,
            residual_prior,
            run_judge,
        )

        gold = [self.pool[i] for i in chosen]
        seed = head["seed"]
        load_before = _load()
        _say(f"second opinion on {len(gold)} {head['kind']} pairs, seed {seed}: silver "
             f"{counts} within {self.args.silver_band} of {threshold:.3f} ({graph_model} "
             f"model's graph)")
        with tempfile.TemporaryDirectory(prefix="duplens-judge-") as tmp:
            prior = (residual_prior(self.trainer.base, gold)
                     if self.args.judge_kind == "residual" else None)
            judge = run_judge(gold, self.measured, self.project,
                              project_vectors(self.where, *vectors), threshold,
                              silver=max(counts), band=self.args.silver_band,
                              epochs=self.args.judge_epochs, seed=seed,
                              default_scores=self.default_scores, device=self.args.device,
                              folder=Path(tmp) / "judge", prior=prior)
        opinion = judge.opinion
        _say(f"  judge: {self.args.on} AP {opinion.judge.average_precision:.2f}, "
             f"{len(opinion.silver)} silver labelled; {judge.seconds}")
        for count in counts:
            silver = opinion.silver[:count]
            labels = [p.label for p in silver]
            entry, _ = self.trainer.run(chosen, seed, list(weak), silver=silver)
            entry["load_before_judge"] = load_before
            yield {**self.entry(head, count), **entry,
                   "silver_pairs": len(silver),
                   "silver_duplicates": int(sum(p.is_duplicate for p in silver)),
                   "silver_mean_label": round(float(np.mean(labels)), 4) if labels else None,
                   "silver_quora": quora_agreement(silver, self.pool),
                   "silver_threshold": round(float(threshold), 4),
                   "silver_labelled": len(opinion.silver),
                   "graph_model": graph_model, "graph_left_out": self.project.left_out,
                   "judge": {"average_precision": round(opinion.judge.average_precision, 4),
                             "f1": round(opinion.judge.f1, 2), "trained_on": opinion.judge_pairs,
                             "steps": opinion.judge_steps, "device": opinion.device},
                   **judge.seconds}


def _options_dict(options) -> dict:
    import dataclasses

    return dataclasses.asdict(options)


def suite(quick: bool) -> None:
    """The suite's full run (`python -m benchmarks`): the product's strategy on test against
    random pairs, three training seeds; writes its own results file."""
    main(["--on", "test", "--train-seeds", "0", "1", "2", "--merge"])


def _scores(model, pairs) -> np.ndarray:
    from engine.training import pair_scores

    return pair_scores(model, pairs, 64)


def _vectors(model, pairs) -> tuple[np.ndarray, np.ndarray]:
    texts = list(dict.fromkeys(t for p in pairs for t in (p.text_a, p.text_b)))
    vectors = model.encode(texts, batch_size=64, normalize_embeddings=True,
                           convert_to_numpy=True, show_progress_bar=False)
    row = {t: i for i, t in enumerate(texts)}
    return (vectors[[row[p.text_a] for p in pairs]], vectors[[row[p.text_b] for p in pairs]])


def _cached_vectors(model, model_name: str, pairs) -> tuple[np.ndarray, np.ndarray]:
    """The default model's vectors of the pool, kept in the temp folder between runs (a
    project's index holds them already; encoding them takes minutes here)."""
    key = "\n".join([model_name, *(f"{p.text_a}\t{p.text_b}" for p in pairs)])
    cache = (Path(tempfile.gettempdir())
             / f"duplens-ask-pool-{hashlib.sha1(key.encode('utf-8')).hexdigest()[:16]}.npz")
    if cache.exists():
        found = np.load(cache)
        return found["a"], found["b"]
    a, b = _vectors(model, pairs)
    with cache.open("wb") as fh:
        np.savez(fh, a=a, b=b)
    return a, b


def _calibrated(scores: np.ndarray, labels: np.ndarray) -> float | None:
    from engine.pair_metrics import threshold_curve
    from engine.review.calibration import calibrate

    found = calibrate(threshold_curve(scores, labels))
    return None if found is None else found.threshold


def _default(scores: np.ndarray, labels: np.ndarray, default_threshold) -> float:
    from engine.pair_metrics import threshold_curve
    from engine.review.calibration import calibrate

    return default_threshold(calibrate(threshold_curve(scores, labels)))


def _calibration_study(pool_scores: np.ndarray, pool_labels: np.ndarray,
                       held_scores: np.ndarray, held_labels: np.ndarray, seed: int) -> list[dict]:
    """Calibrated threshold from N random verdicts (default model) vs the validation best,
    grouped by the fewer of the two kinds among the N."""
    thresholds = np.unique(held_scores)
    f1s = np.asarray([f1_at(held_scores, held_labels, t) for t in thresholds])
    best_f1, best_t = float(f1s.max()), float(thresholds[int(np.argmax(f1s))])
    rng = np.random.default_rng(seed + 1)
    by_fewer: dict[str, list[tuple[float, float]]] = {}
    buckets = ((1, 4), (5, 9), (10, 19), (20, 49), (50, 99), (100, 10**9))
    for n in (n for n in CALIBRATION_SIZES if n <= len(pool_scores)):
        for _ in range(CALIBRATION_DRAWS):
            pick = rng.choice(len(pool_scores), n, replace=False)
            labels = pool_labels[pick]
            fewer = int(min(labels.sum(), n - labels.sum()))
            t = _calibrated(pool_scores[pick], labels)
            if t is None:
                continue
            loss = best_f1 - f1_at(held_scores, held_labels, t)
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


def means(runs: list[dict], base_ap: float) -> list[dict]:
    """AP gain per arm (kind, strategy, N, round, second opinion) over the training seeds:
    mean, sample sd, range."""
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        key = (r["kind"], r.get("strategy") or "", r["pairs"],
               r.get("round") if r["kind"] == "ask" else None, _second(r))
        groups.setdefault(key, []).append(r)
    out = []
    for (kind, strategy, pairs, round_, second), group in sorted(
            groups.items(), key=lambda kv: (kv[0][2], kv[0][0], kv[0][1], kv[0][3] or 0,
                                            kv[0][4])):
        gains = np.asarray([r["average_precision"] - base_ap for r in group])
        f1s = [r.get("f1_at_calibrated") for r in group]
        f1s = [f for f in f1s if f is not None]
        out.append({"kind": kind, "strategy": strategy, "pairs": pairs, "round": round_,
                    "second_opinion": second[0], "silver_band": second[1],
                    "judge_epochs": second[2], "judge_kind": second[3] or "plain",
                    "seeds": len(group),
                    "seed_list": sorted(r["seed"] for r in group),
                    "gain": float(gains.mean()),
                    "sd": float(gains.std(ddof=1)) if len(gains) > 1 else 0.0,
                    "low": float(gains.min()), "high": float(gains.max()),
                    "f1": round(float(np.mean(f1s)), 2) if f1s else None,
                    "runs": group})
    return out


def _second(run: dict) -> tuple:
    """(silver pairs, band, judge epochs, judge kind) of a run with a second opinion;
    (0, 0.0, 0, "") else (comparable, so arms sort)."""
    if not run.get("second_opinion"):
        return (0, 0.0, 0, "")
    return (run["second_opinion"], run.get("silver_band") or 0.0, run.get("judge_epochs") or 0,
            run.get("judge_kind") or "plain")


# -- what the report shows (benchmarks/report.py calls `present`) -----------------------------
_OLD_SPLIT = "held-out"   # runs before the three-way split: measured on the held-out half
GOAL_FACTOR = 4           # N asked pairs should lift AP as much as 4N random ones


def present(result: dict, results: dict | None = None, file: dict | None = None) -> dict:
    """Headline, tables and notes from the runs: the product's strategy against random pairs
    measured in the same run, on test (validation: the strategies compared). `file`: the
    whole results file (its commands), which the report passes."""
    runs = result.get("runs", [])
    product = result.get("product_strategy", "uncertain")
    top = file if file is not None else (results or {}).get("ask_vs_random", {})
    splits = [on for on in ("validation", "test", _OLD_SPLIT)
              if any(_on(r) == on for r in runs)]
    tables, headline = [], []
    for on in splits:
        base_ap = _base_ap(result, on)
        these = [r for r in runs if _on(r) == on]
        got = means(these, base_ap)
        f1_is = f"{on} F1 at the threshold calibrated on the run's own verdicts"
        tables.append({
            "title": f"{_what(on)}: AP gain over the default model ({base_ap:.2f}), mean over "
                     "training seeds; every run fine-tunes the default model afresh with the "
                     "engine's default recipe",
            "columns": ["pairs chosen by", "N", "seeds", "AP gain (mean)", "sd", "min", "max",
                        f"{f1_is} (mean)"],
            "rows": [[_label(m, product), f"{m['pairs']:,}", m["seeds"], f"{m['gain']:+.2f}",
                      f"{m['sd']:.2f}", f"{m['low']:+.2f}", f"{m['high']:+.2f}", m["f1"]]
                     for m in got]})
    reported = "test" if "test" in splits else (_OLD_SPLIT if _OLD_SPLIT in splits else None)
    if reported:
        base_ap = _base_ap(result, reported)
        these = [r for r in runs if _on(r) == reported]
        tables.append(_each_run_table(these, base_ap, reported, product))
        got = means(these, base_ap)
        asked = [m for m in got if m["kind"] == "ask" and (m["strategy"] or "uncertain")
                 == product and not m["second_opinion"]]
        random = {m["pairs"]: m for m in got if m["kind"] == "random"
                  and not m["second_opinion"]}
        if asked:
            a = max(asked, key=lambda m: m["pairs"])
            for factor in (GOAL_FACTOR, 1):
                r = random.get(factor * a["pairs"])
                same = r is not None and r["seed_list"] == a["seed_list"]
                goal = factor == GOAL_FACTOR
                headline.append({
                    "command": _command_of(result, top, reported),
                    "figure": f"{reported} Quora AP gain, {a['pairs']:,} asked pairs "
                              f"({product}, mean of {a['seeds']} training seeds)",
                    "duplens": f"{a['gain']:+.2f} points (sd {a['sd']:.2f})",
                    "baseline": (f"{r['gain']:+.2f} points (sd {r['sd']:.2f})" if r
                                 else "not measured in this run"),
                    "baseline_is": (f"{factor * a['pairs']:,} random pairs, same recipe, "
                                    "split and seeds"
                                    + (", same run" if same else
                                       ": not measured with these seeds in this run")),
                    "ratio": f"{a['gain'] - r['gain']:+.2f} points" if r else "—",
                    "date": _last_date(a, r),
                    "goal": (f"≥ the gain of {GOAL_FACTOR:,}× as many random pairs" if goal
                             else ""),
                    "met": (a["gain"] >= r["gain"] if r and same else None) if goal
                    else None})
        headline += _second_opinion_headline(got, random, product, reported,
                                             _command_of(result, top, reported))
    for on in splits:
        these = [r for r in runs if _on(r) == on]
        table = _second_opinion_table(means(these, _base_ap(result, on)), on, product)
        if table:
            tables.append(table)
    calibration = result.get("calibration") or []
    if calibration:
        tables.append({
            "title": "Calibrated threshold from random verdicts (default model) against the "
                     "best threshold of the measured pairs, by the fewer of the two kinds",
            "columns": ["fewer of each kind", "draws", "median |error|", "90th pct |error|",
                        "mean F1 lost (points)", "90th pct F1 lost"],
            "rows": [[c["fewer_of_each"], c["draws"], c["median_threshold_error"],
                      c["p90_threshold_error"], c["mean_f1_loss"], c["p90_f1_loss"]]
                     for c in calibration]})
    notes = []
    if reported == _OLD_SPLIT:
        notes.append("Measured before the three-way split, on the held-out half that the "
                     "learning rate was also chosen on; the random baseline at 4,000 pairs "
                     "was not measured in this run.")
    notes += _second_opinion_notes(runs, result)
    notes += [f"Earlier runs kept by `--merge` were made by `{c}`."
              for c in top.get("earlier_commands", [])]
    return {"headline": headline, "tables": tables, "notes": notes}


def _command_of(result: dict, top: dict, on: str) -> str | None:
    """The command that measured the runs on `on`: the one each run records, else (runs
    from before runs recorded it) the first of the file's commands (`top`) that names that
    split; None: the file's last command."""
    named = [r["command"] for r in result.get("runs", []) if _on(r) == on and "command" in r]
    if named:
        return named[0]
    commands = [top.get("command"), *top.get("earlier_commands", [])]
    return next((c for c in commands if c and f"--on {on}" in c), None)


def _on(run: dict) -> str:
    return run.get("measured_on", _OLD_SPLIT)


def _base_ap(result: dict, on: str) -> float:
    before = result.get("before", {}).get(on)
    if before:
        return before["average_precision"]
    old = result.get("setup", {}).get("default_model_ap")
    return old[on] if isinstance(old, dict) else old


def _what(on: str) -> str:
    return {"validation": "Validation (strategies chosen here)",
            "test": "Test (reported once; nothing chosen here)",
            _OLD_SPLIT: "Held-out half (two-way split)"}[on]


def _label(m: dict, product: str) -> str:
    second = ""
    if m.get("second_opinion"):
        second = (f" + second opinion ({m['second_opinion']:,} silver, band "
                  f"{m.get('silver_band'):g}"
                  + (f", judge {m['judge_epochs']} epochs" if (m.get("judge_epochs") or 1) != 1
                     else "")
                  + (", residual judge" if m.get("judge_kind") == "residual" else "") + ")")
    if m["kind"] == "random":
        return "random" + second
    strategy = m["strategy"] or "uncertain"
    rounds = f", rounds of {m['round']:,}" if m.get("round") else ""
    return (f"ask: {strategy}{rounds}" + (" (the product's)" if strategy == product else "")
            + second)


def _last_date(*arms: dict | None) -> str | None:
    """When the figure's runs were last measured (not when the file was last written)."""
    dates = [r["date"] for m in arms if m for r in m["runs"] if r.get("date")]
    return max(dates) if dates else None


def _second_opinion_headline(got: list[dict], random: dict, product: str, on: str,
                             command: str | None) -> list[dict]:
    """Issue 45's goal: N asked pairs with a second opinion gain at least as much as
    GOAL_FACTOR·N random pairs without, with the same training seeds."""
    out = []
    for a in got:
        if not (a["second_opinion"] and a["kind"] == "ask"
                and (a["strategy"] or "uncertain") == product):
            continue
        r = random.get(GOAL_FACTOR * a["pairs"])
        same = r is not None and r["seed_list"] == a["seed_list"]
        out.append({
            "command": command,
            "figure": f"{on} Quora AP gain, {a['pairs']:,} asked pairs ({product}) with a "
                      f"second opinion ({a['second_opinion']:,} silver, band "
                      f"{a['silver_band']:g}; mean of {a['seeds']} training seeds)",
            "duplens": f"{a['gain']:+.2f} points (sd {a['sd']:.2f})",
            "baseline": (f"{r['gain']:+.2f} points (sd {r['sd']:.2f})" if r
                         else "not measured"),
            "baseline_is": (f"{GOAL_FACTOR * a['pairs']:,} random pairs, no second opinion, "
                            "same recipe and split"
                            + (", same seeds" if same else ": other training seeds")),
            "ratio": f"{a['gain'] - r['gain']:+.2f} points" if r else "—",
            "date": _last_date(a, r),
            "goal": f"≥ the gain of {GOAL_FACTOR:,}× as many random pairs",
            "met": a["gain"] >= r["gain"] if r and same else None})
    return out


def _second_opinion_notes(runs: list[dict], result: dict) -> list[str]:
    """A line for each split where the judges read the measured pairs worse than the
    default model (their silver then carries the worse reading into training)."""
    out = []
    for on in ("validation", "test"):
        judged = [r for r in runs if _on(r) == on and r.get("second_opinion")]
        if not judged:
            continue
        base_ap = _base_ap(result, on)
        aps = [r["judge"]["average_precision"] for r in judged]
        duplicates = sum(r.get("silver_duplicates") or 0 for r in judged)
        silver = sum(r.get("silver_pairs") or 0 for r in judged)
        if max(aps) < base_ap:
            out.append(f"On {on} every judge read the pairs worse than the default model "
                       f"(judge AP {min(aps):.2f}–{max(aps):.2f} against {base_ap:.2f}); its "
                       f"silver called {duplicates:,} of {silver:,} pairs duplicates.")
    return out


def _second_opinion_table(got: list[dict], on: str, product: str) -> dict | None:
    """Each second-opinion arm beside the same gold pairs without one: the judge's AP on the
    measured split, the bi-encoder's with and without silver, and each step's seconds (means
    over the seeds; the plain arm over the same seeds only)."""
    rows = []
    for m in got:
        if not m["second_opinion"]:
            continue
        runs = m["runs"]
        seeds = set(m["seed_list"])
        plain = next((p for p in got if not p["second_opinion"] and p["kind"] == m["kind"]
                      and p["strategy"] == m["strategy"] and p["pairs"] == m["pairs"]
                      and p["round"] == m["round"]), None)
        plain_runs = [r for r in (plain or {}).get("runs", []) if r["seed"] in seeds]
        plain_ap = (f"{np.mean([r['average_precision'] for r in plain_runs]):.2f}"
                    + (f" ({len(plain_runs)} of the seeds)" if len(plain_runs) < len(seeds)
                       else "")
                    if plain_runs else "—")

        def mean(field: str, of: list[dict] = runs) -> float | None:
            values = [r[field] for r in of if r.get(field) is not None]
            return float(np.mean(values)) if values else None

        def seconds(field: str) -> str:
            value = mean(field)
            return "—" if value is None else f"{value:.0f}"

        per_thousand = [1000 * r["silver_labelling_seconds"] / r["silver_labelled"]
                        for r in runs if r.get("silver_labelled")]
        agree = [r["silver_quora"]["agreement"] for r in runs
                 if (r.get("silver_quora") or {}).get("agreement") is not None]
        rows.append([
            _label(m, product), f"{m['pairs']:,}", m["seeds"],
            f"{np.mean([r['judge']['average_precision'] for r in runs]):.2f}",
            plain_ap, f"{np.mean([r['average_precision'] for r in runs]):.2f}",
            f"{mean('silver_pairs'):,.0f} ({mean('silver_duplicates'):,.0f} dup.)",
            f"{np.mean(agree):.0f}%" if agree else "—",
            seconds("judge_training_seconds"), seconds("judge_measuring_seconds"),
            seconds("graph_seconds"),
            f"{np.mean(per_thousand):.0f}" if per_thousand else "—",
            seconds("training_seconds"),
            ", ".join(sorted({str(r.get("load_before_judge")) for r in runs}))])
    if not rows:
        return None
    return {"title": f"Second opinion (issue 45), {on}: the judge (a cross-encoder trained on "
                     "the arm's gold pairs) against the bi-encoder, and each step's seconds "
                     "on this machine's 2 cores; means over the training seeds",
            "columns": ["arm", "gold pairs", "seeds", f"judge's {on} AP",
                        f"bi-encoder {on} AP, gold only (same seeds)",
                        f"bi-encoder {on} AP, gold + silver", "silver pairs",
                        "silver agreeing with Quora's label (pairs Quora labels)",
                        "judge training s", f"judge measuring s ({on} pairs)", "graph s",
                        "silver labelling s per 1,000", "bi-encoder training s (gold + silver)",
                        "load before the judge"],
            "rows": rows}


def _each_run_table(runs: list[dict], base_ap: float, on: str, product: str) -> dict:
    rows = []
    for r in sorted(runs, key=lambda r: (r["pairs"], r["kind"], r.get("strategy") or "",
                                         _second(r), r["seed"])):
        rows.append([_label({"kind": r["kind"], "strategy": r.get("strategy"),
                             "round": r.get("round"), "second_opinion": r.get("second_opinion"),
                             "silver_band": r.get("silver_band"),
                             "judge_epochs": r.get("judge_epochs"),
                             "judge_kind": r.get("judge_kind")}, product),
                     f"{r['pairs']:,}", r["seed"], r["duplicates"],
                     f"{r['average_precision']:.2f} ({r['average_precision'] - base_ap:+.2f})",
                     r.get("f1_at_calibrated"), r.get("best_threshold"),
                     r["calibrated_threshold"], r["training_seconds"]])
    return {"title": f"Each run, {on}; the default model's AP {base_ap:.2f}",
            "columns": ["pairs chosen by", "N", "training seed", "duplicates among them",
                        f"{on} AP (gain)", "F1 at the calibrated threshold",
                        "best threshold (not used)", "calibrated on own verdicts",
                        "training s"],
            "rows": rows}


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
