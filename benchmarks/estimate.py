"""Quality estimate: do the 95% intervals cover, how wide are they, how far off is the figure?

    python -m benchmarks --only estimate          (500 repetitions; --quick: 100)

A finite-population simulation with the truth known for every pair, on the 23,497 labelled
Quora pairs scored by the bundled model (cosine similarity):

- population A: those pairs (37% duplicates);
- population B: A plus 500,000 random pairs of distinct Quora questions that no label joins,
  counted as not duplicate (about 1.7% duplicates), as imbalanced as a real file.

A pair is flagged when its similarity is at or above the threshold of best F1 on the whole
population (the truth's own; a pair population has no clusters, so "flagged" is the score
alone, as it is for OASIS). The figures are precision, recall and F1 there, and the number of
duplicate pairs. Each method gets the same budget of answers (150, 300, 600; the oracle
answers with the Quora label) and the same populations, `REPS` times:

- **Duplens**: the design of `engine.estimation` as a project runs it, one draw at a time:
  strata by similarity over the pairs the neighbour graph holds plus one stratum outside it,
  the pilot, then the adaptive allocation; the post-stratified estimators with their
  intervals. The graph is the real one: `engine.dedup.graph.build_knn_graph` (10 neighbours,
  completed above 0.75) over the 43,944 distinct questions; a pair of the population is a
  candidate when the graph holds it, the others are the outside stratum, drawn uniformly.
  The design is made for the best-F1 threshold (the analyst's current threshold).
- **Simple random sampling** of the population, Wilson intervals: precision among sampled
  flagged pairs, recall among sampled duplicates, F1 from the Jaccard share of
  flagged-or-duplicate pairs (F1 = 2J / (1 + J), J's Wilson interval carried over), the
  number of duplicates from the sampled share.
- **Proportional allocation**: the same strata and estimators as Duplens, each stratum's
  answers in proportion to its size (no adaptation).
- **OASIS** (`oasis` 0.1.3 from PyPI, Marchant & Rubinstein 2017): `OASISSampler(0.5,
  predictions, scores, oracle)` as its documentation runs it, `sample_distinct(budget)`;
  scores are the cosine similarities clipped to [0, 1] with `proba=True` (its docs ask for
  scores on [0, 1]; its default logistic rescaling of cosines, all near 0.5-0.73, is run as
  well and is worse). Precision, recall and the number of duplicates come from the same
  run's importance-weighted TP, FP and FN. OASIS gives no intervals.

Then one run through the real command line (`duplens estimate --next`, `duplens label
--from`) on a project of Quora questions with a scripted oracle, against the exact figures
of that project.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np

from benchmarks.data import QUORA

REPS = 500
QUICK_REPS = 100
BUDGETS = (150, 300, 600)
RANDOM_PAIRS = 500_000
SEED = 0
FIGURES = ("precision", "recall", "f1", "duplicates")
GOAL_COVERAGE = 0.93
GOAL_HALF_WIDTH = 0.05
METHODS = ("duplens", "srs_wilson", "proportional", "oasis", "oasis_logistic")
METHOD_NAMES = {"duplens": "Duplens (adaptive strata)", "srs_wilson": "simple random, Wilson",
                "proportional": "strata, proportional", "oasis": "OASIS (scores in [0, 1])",
                "oasis_logistic": "OASIS (default logistic scores)"}
Z = 1.959963984540054


def run(quick: bool) -> dict:
    try:
        _import_oasis()
    except ImportError:
        return {"skipped": "the comparison needs OASIS: pip install --no-deps oasis==0.1.3 "
                           "tables numexpr py-cpuinfo (it declares the retired `sklearn`)"}
    reps = QUICK_REPS if quick else REPS
    quora = _quora()
    populations = {"A": _population_a(quora), "B": _population_b(quora)}
    rows, cells, notes = [], {}, []
    for name, pop in populations.items():
        truth, threshold = _truth(pop)
        _say(f"population {name}: {len(pop['dup']):,} pairs, {pop['dup'].mean():.2%} "
             f"duplicates, {pop['candidate'].mean():.1%} held by the graph; best-F1 "
             f"threshold {threshold:.3f} (P {truth['precision']:.3f}, R {truth['recall']:.3f})")
        notes.append(f"Population {name}: {len(pop['dup']):,} pairs, {int(pop['dup'].sum()):,} "
                     f"duplicates ({pop['dup'].mean():.2%}); the graph holds "
                     f"{int(pop['candidate'].sum()):,} of them; best-F1 threshold "
                     f"{threshold:.3f}: precision {truth['precision']:.3f}, recall "
                     f"{truth['recall']:.3f}, F1 {truth['f1']:.3f}.")
        results = _simulate(pop, threshold, reps)
        for method, by_budget in results.items():
            for budget, figures in by_budget.items():
                for figure in FIGURES:
                    stats = _stats(figures[figure], truth[figure])
                    cells[(name, budget, method, figure)] = stats
                    rows.append([name, budget, METHOD_NAMES[method], figure,
                                 _pct(stats["coverage"]),
                                 _fmt(stats["half_width"], figure),
                                 _fmt(stats["rmse"], figure), _fmt(stats["bias"], figure)])
    loop = _cli_loop(quick)
    return _presentation(rows, cells, notes, loop, reps)


# -- the data ----------------------------------------------------------------------------------
def _quora() -> dict:
    """Labelled pairs as positions into the distinct questions, their vectors, and the
    neighbour graph of those questions."""
    from benchmarks import corpus
    from engine.dedup.graph import build_knn_graph
    from engine.index.hnsw import HnswIndex

    texts = corpus.questions()
    position = {t: i for i, t in enumerate(texts)}
    vectors = corpus.embed(texts)
    a, b, labels = [], [], []
    with gzip.open(QUORA, "rt", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            _, _, q1, q2, label = line.rstrip("\n").split("\t")
            a.append(position[q1])
            b.append(position[q2])
            labels.append(int(label))
    index = HnswIndex(vectors.shape[1], capacity=len(texts))
    ids = np.arange(len(texts), dtype=np.int64)
    index.add(ids, vectors)
    graph = build_knn_graph(index, 10, vectors=lambda t: vectors[np.asarray(t)])
    rows = graph.row_of_entries().astype(np.int64)
    cols = graph.indices.astype(np.int64)
    edges = np.unique(np.minimum(graph.ids[rows], graph.ids[cols]) * len(texts)
                      + np.maximum(graph.ids[rows], graph.ids[cols]))
    return {"a": np.asarray(a), "b": np.asarray(b), "dup": np.asarray(labels, bool),
            "vectors": vectors, "edges": edges, "n": len(texts)}


def _pairs(quora: dict, a: np.ndarray, b: np.ndarray, dup: np.ndarray) -> dict:
    v = quora["vectors"]
    score = np.einsum("ij,ij->i", v[a], v[b]).astype(np.float64)
    key = np.minimum(a, b) * quora["n"] + np.maximum(a, b)
    candidate = np.isin(key, quora["edges"]) | (a == b)
    return {"score": score, "dup": dup, "candidate": candidate, "key": key}


def _population_a(quora: dict) -> dict:
    return _pairs(quora, quora["a"], quora["b"], quora["dup"])


def _population_b(quora: dict) -> dict:
    """A plus RANDOM_PAIRS random pairs of distinct questions no label joins."""
    rng = np.random.default_rng(SEED)
    n = quora["n"]
    labelled = set((np.minimum(quora["a"], quora["b"]) * n
                    + np.maximum(quora["a"], quora["b"])).tolist())
    chosen: set[int] = set()
    while len(chosen) < RANDOM_PAIRS:
        i = rng.integers(0, n, RANDOM_PAIRS)
        j = rng.integers(0, n, RANDOM_PAIRS)
        for x, y in zip(i.tolist(), j.tolist(), strict=True):
            if x == y:
                continue
            key = min(x, y) * n + max(x, y)
            if key not in labelled and key not in chosen:
                chosen.add(key)
                if len(chosen) == RANDOM_PAIRS:
                    break
    keys = np.fromiter(chosen, dtype=np.int64, count=len(chosen))
    keys.sort()
    a = np.r_[quora["a"], keys // n]
    b = np.r_[quora["b"], keys % n]
    return _pairs(quora, a, b, np.r_[quora["dup"], np.zeros(len(keys), bool)])


def _truth(pop: dict) -> tuple[dict, float]:
    from engine.pair_metrics import threshold_curve

    curve = threshold_curve(pop["score"], pop["dup"])
    threshold = float(curve.best_threshold)
    flagged = pop["score"] >= threshold
    tp = int((flagged & pop["dup"]).sum())
    dups, n_flagged = int(pop["dup"].sum()), int(flagged.sum())
    return ({"precision": tp / n_flagged, "recall": tp / dups,
             "f1": 2 * tp / (n_flagged + dups), "duplicates": float(dups)}, threshold)


# -- the methods -------------------------------------------------------------------------------
def _simulate(pop: dict, threshold: float, reps: int) -> dict:
    """{method: {budget: {figure: [(value, low, high), ...]}}}"""
    from engine.estimation.simulation import PairPopulation, Sample, run_design

    population = PairPopulation(pop["score"], pop["candidate"], pop["dup"])
    flagged = pop["score"] >= threshold
    out: dict = {m: {b: defaultdict(list) for b in BUDGETS} for m in METHODS}
    oasis_strata: dict = {}
    started = time.perf_counter()
    for rep in range(reps):
        rng = np.random.default_rng(1000 + rep)
        # Each repetition sizes the outside strata from its own first phase.
        strata, which = population.strata(threshold, rng)
        if "duplens" in METHODS:
            sample = run_design(population, flagged, threshold, max(BUDGETS), rng,
                                stratification=(strata, which))
        if "proportional" in METHODS:
            proportional = _proportional(strata, which, max(BUDGETS), rng)
        srs = rng.permutation(len(flagged))[:max(BUDGETS)]
        for budget in BUDGETS:
            if "duplens" in METHODS:
                prefix = Sample(strata, which, sample.drawn[:budget], sample.stratum[:budget])
                _record(out["duplens"][budget],
                        prefix.estimate(population, flagged, threshold=threshold, seed=rep))
            if "proportional" in METHODS:
                chosen = proportional[budget]
                fixed = Sample(strata, which, chosen, which[chosen])
                _record(out["proportional"][budget],
                        fixed.estimate(population, flagged, threshold=threshold, seed=rep))
            if "srs_wilson" in METHODS:
                for figure, value in _srs_wilson(pop, flagged, srs[:budget]).items():
                    out["srs_wilson"][budget][figure].append(value)
        for method, proba in (("oasis", True), ("oasis_logistic", False)):
            if method not in METHODS:
                continue
            for budget, figures in _oasis(pop, flagged, proba, 1000 + rep,
                                          oasis_strata).items():
                for figure, value in figures.items():
                    out[method][budget][figure].append(value)
        if rep % 20 == 19:
            _say(f"  {rep + 1}/{reps} repetitions, {time.perf_counter() - started:.0f} s")
    return out


def _record(into: dict, estimate) -> None:
    for figure in FIGURES:
        f = estimate.figure(figure)
        into[figure].append((f.value, f.low, f.high))


def _proportional(strata, which: np.ndarray, budget: int, rng: np.random.Generator
                  ) -> dict[int, np.ndarray]:
    """For each budget, positions drawn with answers in proportion to stratum sizes
    (largest remainders), at least one per non-empty stratum; nested across budgets."""
    order = rng.permutation(len(which))
    members = [order[which[order] == h] for h in range(strata.count)]
    out = {}
    for b in BUDGETS:
        share = strata.sizes / strata.sizes.sum() * b
        n = np.floor(share).astype(int)
        n = np.minimum(np.maximum(n, (strata.sizes > 0).astype(int)),
                       [len(m) for m in members])
        for h in np.argsort(-(share - np.floor(share))):
            if n.sum() >= b:
                break
            n[h] += 1
        while n.sum() > b:
            n[int(np.argmax(n))] -= 1
        out[b] = np.concatenate([members[h][:n[h]] for h in range(strata.count)])
    return out


def _wilson(successes: int, trials: int) -> tuple[float, float, float]:
    if trials == 0:
        return (float("nan"), 0.0, 1.0)
    p = successes / trials
    denom = 1 + Z ** 2 / trials
    centre = (p + Z ** 2 / (2 * trials)) / denom
    half = Z * math.sqrt(p * (1 - p) / trials + Z ** 2 / (4 * trials ** 2)) / denom
    return (p, max(0.0, centre - half), min(1.0, centre + half))


def _srs_wilson(pop: dict, flagged: np.ndarray, drawn: np.ndarray) -> dict:
    y, f = pop["dup"][drawn], flagged[drawn]
    tp, n_f, n_d = int((y & f).sum()), int(f.sum()), int(y.sum())
    union = int((y | f).sum())
    j = _wilson(tp, union)
    f1 = tuple(2 * x / (1 + x) if np.isfinite(x) else float("nan") for x in j)
    share = _wilson(n_d, len(drawn))
    size = len(flagged)
    return {"precision": _wilson(tp, n_f), "recall": _wilson(tp, n_d), "f1": f1,
            "duplicates": tuple(size * x for x in share)}


def _oasis(pop: dict, flagged: np.ndarray, proba: bool, seed: int, cache: dict) -> dict:
    """OASIS's F1 sampler, run to each budget of distinct labels in turn (nested)."""
    oasis = _import_oasis()
    scores = np.clip(pop["score"], 0.0, 1.0) if proba else pop["score"]
    key = (id(pop), proba)
    labels = pop["dup"].astype(int)
    np.random.seed(seed)           # OASIS draws with numpy's global generator
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if key not in cache:
            cache[key] = oasis.OASISSampler(0.5, flagged.astype(int), scores,
                                            lambda i: labels[i], proba=proba,
                                            max_iter=200_000).strata
        sampler = oasis.OASISSampler(0.5, flagged.astype(int), scores,
                                     lambda i: labels[i], proba=proba, max_iter=200_000,
                                     strata=cache[key])
        out, done = {}, 0
        for budget in BUDGETS:
            sampler.sample_distinct(budget - done)
            done = budget
            tp, fp, fn = (float(x[0]) for x in (sampler._TP, sampler._FP, sampler._FN))
            t = sampler.t_
            nan = float("nan")
            out[budget] = {
                "f1": (float(sampler.estimate_[t - 1]), nan, nan),
                "precision": (tp / (tp + fp) if tp + fp > 0 else nan, nan, nan),
                "recall": (tp / (tp + fn) if tp + fn > 0 else nan, nan, nan),
                "duplicates": (len(labels) * (tp + fn) / t, nan, nan)}
    return out


def _import_oasis():
    """The `oasis` package (0.1.3, installed with --no-deps plus tables: it declares the
    retired `sklearn` package). Its stratification calls `scipy.percentile` and
    `scipy.ptp`, numpy aliases that SciPy has since removed: its module is handed a stand-in
    for scipy that has them (numpy's own), in this process only; nothing else is changed."""
    import types

    import oasis
    import oasis.stratification as stratification

    if not hasattr(stratification.sp, "percentile"):
        stand_in = types.SimpleNamespace(percentile=np.percentile, ptp=np.ptp)
        stratification.sp = stand_in
    return oasis


def _stats(values: list, truth: float) -> dict:
    arr = np.asarray(values, dtype=np.float64)
    value, low, high = arr[:, 0], arr[:, 1], arr[:, 2]
    ok = np.isfinite(value)
    err = value[ok] - truth
    has_interval = np.isfinite(low) & np.isfinite(high)
    return {"coverage": float(np.mean((low <= truth) & (truth <= high)))
            if has_interval.any() else None,
            "half_width": float(np.mean((high - low)[has_interval] / 2))
            if has_interval.any() else None,
            "rmse": float(np.sqrt(np.mean(err ** 2))) if ok.any() else None,
            "bias": float(np.mean(err)) if ok.any() else None,
            "undefined": int((~ok).sum())}


# -- the command line, end to end ---------------------------------------------------------------
def _cli_loop(quick: bool) -> dict:
    """Quora questions in a project; `estimate --next`, answers from the labels (pairs no
    label joins are not duplicates), `label --from`, until the budget; then the estimate
    against the project's exact figures (every pair's truth is known)."""
    pairs_used = 600 if quick else 1500
    budget = 150 if quick else 300
    rows = []
    truth_pairs: dict[tuple[str, str], int] = {}
    with gzip.open(QUORA, "rt", encoding="utf-8") as fh:
        next(fh)
        for i, line in enumerate(fh):
            if i >= pairs_used:
                break
            qid1, qid2, q1, q2, label = line.rstrip("\n").split("\t")
            rows += [(qid1, q1), (qid2, q2)]
            truth_pairs[(min(qid1, qid2), max(qid1, qid2))] = int(label)
    questions = dict(rows)
    threshold = 0.8
    with tempfile.TemporaryDirectory(prefix="duplens-estimate-") as folder:
        data = Path(folder) / "questions.csv"
        with data.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(["qid", "question"])
            writer.writerows(questions.items())
        project = str(Path(folder) / "quora.duplens")
        _cli("import", project, str(data), "--column", "question", "--id-column", "qid")
        answered, calls = 0, 0
        while answered < budget:
            drawn = json.loads(_cli("estimate", project, "--next", "50", "--threshold",
                                    str(threshold), "--json"))
            if not drawn:
                break
            answers = Path(folder) / f"answers-{calls}.csv"
            with answers.open("w", newline="", encoding="utf-8") as fh:
                writer = csv.writer(fh)
                writer.writerow(["a_id", "b_id", "verdict"])
                for p in drawn:
                    key = (min(p["a"]["id"], p["b"]["id"]), max(p["a"]["id"], p["b"]["id"]))
                    writer.writerow([p["a"]["id"], p["b"]["id"],
                                     "dup" if truth_pairs.get(key) == 1 else "not"])
            _cli("label", project, "--from", str(answers))
            answered += len(drawn)
            calls += 1
        report = json.loads(_cli("estimate", project, "--threshold", str(threshold), "--json"))
        clusters = json.loads(_cli("duplicates", project, "--threshold", str(threshold),
                                   "--json"))
    truth = _project_truth(questions, truth_pairs, clusters)
    e = report["estimate"]
    covered = {f: e[f]["low"] <= truth[f] <= e[f]["high"] for f in FIGURES}
    return {"questions": len(questions), "answers": report["answers"], "calls": calls,
            "threshold": threshold, "truth": truth,
            "estimate": {f: e[f] for f in FIGURES}, "covered": covered}


def _project_truth(questions: dict, truth_pairs: dict, clusters: list) -> dict:
    """The project's exact figures: pairs of distinct texts (rows sharing a normalised text
    are one text), duplicates where a label says so, flagged where one cluster holds both."""
    from engine.text import normalise

    text_of = {q: normalise(t) for q, t in questions.items()}
    dup_texts = {frozenset((text_of[a], text_of[b])) for (a, b), y in truth_pairs.items()
                 if y == 1 and text_of[a] != text_of[b]}
    flagged = set()
    for c in clusters:
        texts = sorted({normalise(m["text"]) for m in c["members"]})
        flagged |= {frozenset((x, y)) for i, x in enumerate(texts) for y in texts[i + 1:]}
    tp = len(flagged & dup_texts)
    return {"precision": tp / len(flagged), "recall": tp / len(dup_texts),
            "f1": 2 * tp / (len(flagged) + len(dup_texts)), "duplicates": len(dup_texts)}


def _cli(*args: str) -> str:
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-m", "engine.cli", *args], capture_output=True,
                          text=True, env=env, cwd=root, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"duplens {args[0]} failed: {done.stderr[-2000:]}")
    return done.stdout


# -- the report --------------------------------------------------------------------------------
def present(result: dict, results: dict | None = None) -> dict:
    """The headline from the measured cells when the report renders (benchmarks/report.py),
    so its wording, and what each baseline is, come from this code."""
    cells = {}
    for key, cell in result["cells"].items():
        pop, budget, method, figure = key.split("|")
        cells[(pop, int(budget), method, figure)] = cell
    return {"headline": _headline(cells), "tables": result["tables"], "notes": result["notes"]}


def _headline(cells: dict) -> list[dict]:
    headline = []
    ours = [cells[k] for k in cells if k[2] == "duplens"]
    worst = min(c["coverage"] for c in ours)
    headline.append({"figure": "coverage of the 95% intervals, worst of every figure, "
                     "budget and population", "duplens": _pct(worst), "baseline": "",
                     "baseline_is": "–",
                     "ratio": "", "goal": f">= {GOAL_COVERAGE:.0%}",
                     "met": bool(worst >= GOAL_COVERAGE)})
    hw = cells[("B", 150, "duplens", "precision")]["half_width"]
    srs_hw = cells[("B", 150, "srs_wilson", "precision")]["half_width"]
    headline.append({"figure": "precision's half-width at 150 answers, population B",
                     "duplens": f"{hw * 100:.1f} points",
                     "baseline": f"{srs_hw * 100:.1f} points (simple random)",
                     "baseline_is": "simple random sampling of pairs with Wilson intervals, "
                                    "the same answers' budget, same run",
                     "ratio": "", "goal": f"<= {GOAL_HALF_WIDTH * 100:.0f} points",
                     "met": bool(hw <= GOAL_HALF_WIDTH)})
    for pop in ("A", "B"):
        for budget in BUDGETS:
            mine = cells[(pop, budget, "duplens", "f1")]["rmse"]
            theirs = min(cells[(pop, budget, m, "f1")]["rmse"]
                         for m in ("oasis", "oasis_logistic"))
            headline.append({"figure": f"F1 RMSE, population {pop}, {budget} answers",
                             "duplens": f"{mine * 100:.2f} points",
                             "baseline": f"{theirs * 100:.2f} points (OASIS, better setting)",
                             "ratio": f"{mine / theirs:.2f}x", "goal": "<= OASIS",
                             "baseline_is": "oasis 0.1.3 from PyPI on the same population and "
                                            "oracle, the better of its two score settings "
                                            "at each budget, same run",
                             "met": bool(mine <= theirs)})
    return headline


def _presentation(rows: list, cells: dict, notes: list, loop: dict, reps: int) -> dict:
    headline = _headline(cells)
    got = loop["estimate"]
    loop_row = ", ".join(f"{f} {got[f]['value']:.3g} [{got[f]['low']:.3g}, "
                         f"{got[f]['high']:.3g}] (truth {loop['truth'][f]:.3g})"
                         for f in FIGURES)
    notes = notes + [
        f"{reps} repetitions per population; every method's repetitions draw fresh random "
        "numbers; the budgets of one repetition are nested (the first 150 answers of the "
        "600), as a sequential design allows.",
        "Coverage: the share of repetitions whose 95% interval holds the truth; half-width: "
        "half the interval's length, averaged; RMSE and bias of the point figure. Figures "
        "in points (percent) for ratios, in pairs for the number of duplicates.",
        f"End to end through the command line: {loop['questions']:,} Quora questions, "
        f"{loop['answers']} answers in {loop['calls']} rounds of `estimate --next 50` and "
        f"`label --from`, at threshold {loop['threshold']}: {loop_row}; covered: "
        + ", ".join(f"{f} {'yes' if v else 'NO'}" for f, v in loop["covered"].items()) + ".",
    ]
    return {"headline": headline,
            "tables": [{"title": "Coverage, half-width and error of the estimates",
                        "columns": ["population", "answers", "method", "figure",
                                    "coverage", "half-width", "RMSE", "bias"],
                        "rows": rows}],
            "notes": notes, "cells": {"|".join(map(str, k)): v for k, v in cells.items()},
            "cli_loop": loop, "reps": reps}


def _fmt(x: float | None, figure: str) -> str:
    if x is None:
        return "—"
    return f"{x:,.0f}" if figure == "duplicates" else f"{x * 100:.2f}"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.1%}"


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
