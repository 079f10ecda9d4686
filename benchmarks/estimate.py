"""Quality estimate: do the 95% intervals cover, how wide are they, how far off is the figure?

    python -m benchmarks --only estimate   (A, B: 500 repetitions, C, S: 150; --quick: 100, 40)

A finite-population simulation with the truth known for every pair, scored by the bundled
model (cosine similarity):

- population A: the 23,497 labelled Quora pairs (37% duplicates);
- population B: A plus 500,000 random pairs of distinct Quora questions that no label joins,
  counted as not duplicate (about 1.7% duplicates);
- population C: every pair of 3,400 Quora questions, about 5.8 million, 0.04% of them
  duplicates (groups: the closure of Quora's duplicate labels), as imbalanced as a real
  file (`benchmarks/estimate_populations.py`);
- population S: every pair of the sample questions, duplicates by their answer key.

A pair is flagged when its similarity is at or above the threshold of best F1 on the whole
population (the truth's own; a pair population has no clusters, so "flagged" is the score
alone, as it is for OASIS). The figures are precision, recall and F1 there, and the number of
duplicate pairs; and recall, F1 and the number of duplicates down to the floor (over the
pairs scoring 0.50 or more, what `duplens estimate` quotes first). Each method gets the same
budget of answers (150, 300, 600; the oracle answers with the truth) and the same
populations, the same number of times:

- **Duplens**: the design of `engine.estimation` as a project runs it, one draw at a time:
  strata by similarity over the pairs the neighbour graph holds and over those outside it,
  the pilot, then the adaptive allocation (one answer in ten below the floor); the
  post-stratified estimators with their intervals. The graph is the real one:
  `engine.dedup.graph.build_knn_graph` (10 neighbours, completed above 0.75) over the 43,944
  distinct questions (C, S: over the population's own texts); a pair of the population is a
  candidate when the graph holds it, the others are outside it, drawn uniformly.
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

Then one run each through the real command line (`duplens estimate --next 50`, `duplens
label --from`, 300 answers) on a project of population C's questions and one of the sample
questions, with a scripted oracle (the groups), at the project's own threshold, against the
exact figures of that project.
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
# Populations C and S hold every pair of a few thousand texts (millions of pairs): each
# repetition costs seconds, so fewer (a coverage of 95% is then known to about ±1.5 points).
COMPLETE_REPS = 150
QUICK_COMPLETE_REPS = 40
BUDGETS = (150, 300, 600)
RANDOM_PAIRS = 500_000
SEED = 0
# The whole file's figures (the keys `duplens estimate --json` always had), then recall, F1
# and the number of duplicates down to the floor (`engine.estimation.strata.RECALL_FLOOR`).
FIGURES = ("precision", "recall", "f1", "duplicates", "recall_floor", "f1_floor",
           "duplicates_floor")
COUNTS = ("duplicates", "duplicates_floor")
GOAL_COVERAGE = 0.93
# At 300 answers on population C (issue's goals for an imbalanced file): precision within
# ±7 points, recall down to the floor within ±10, the number of duplicates (down to the
# floor) within ±25% of itself.
GOAL_C = {"precision": 0.07, "recall_floor": 0.10, "duplicates_floor": 0.25}
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
    from benchmarks import estimate_populations as ep

    quora = _quora()
    populations = {"A": (_population_a(quora), {}), "B": (_population_b(quora), {}),
                   "C": ep.population_c(quora), "S": ep.population_sample()}
    cells, described, repetitions = {}, {}, {}
    for name, (pop, made_of) in populations.items():
        truth, threshold = truth_of(pop)
        reps = ((QUICK_REPS if quick else REPS) if name in ("A", "B")
                else (QUICK_COMPLETE_REPS if quick else COMPLETE_REPS))
        repetitions[name] = reps
        described[name] = {"pairs": len(pop["dup"]), "duplicates": int(pop["dup"].sum()),
                           "candidates": int(pop["candidate"].sum()),
                           "threshold": threshold, "truth": truth, **made_of}
        _say(f"population {name}: {len(pop['dup']):,} pairs, {pop['dup'].mean():.3%} "
             f"duplicates, {pop['candidate'].mean():.2%} held by the graph; best-F1 "
             f"threshold {threshold:.3f} (P {truth['precision']:.3f}, R {truth['recall']:.3f}"
             f", R down to the floor {truth['recall_floor']:.3f}); {reps} repetitions")
        results = _simulate(pop, threshold, reps)
        for method, by_budget in results.items():
            for budget, figures in by_budget.items():
                for figure in FIGURES:
                    cells[(name, budget, method, figure)] = _stats(figures[figure],
                                                                   truth[figure])
    loops = {"C": _cli_loop_groups("C", *_c_texts(quora, populations["C"][0]), quick),
             "S": _cli_loop_groups("S", *_sample_texts(), quick)}
    from engine.estimation.estimators import END_SHIFT

    return {"populations": described, "reps": repetitions,
            "cells": {"|".join(map(str, k)): v for k, v in cells.items()},
            "cli_loops": loops, "oasis": _oasis_version(), "end_shift": END_SHIFT}


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


def truth_of(pop: dict) -> tuple[dict, float]:
    """Every figure's true value at the population's best-F1 threshold, and that threshold."""
    from engine.pair_metrics import threshold_curve

    curve = threshold_curve(pop["score"], pop["dup"])
    threshold = float(curve.best_threshold)
    return _exact(pop["score"] >= threshold, pop["dup"], pop["score"], threshold), threshold


def _exact(flagged: np.ndarray, dup: np.ndarray, score: np.ndarray, threshold: float) -> dict:
    """Every figure's true value, those down to the floor over the pairs scoring at least
    min(RECALL_FLOOR, threshold) (the floor is a boundary of every design)."""
    from engine.estimation.strata import RECALL_FLOOR

    above = score >= min(RECALL_FLOOR, threshold)
    tp = int((flagged & dup).sum())
    dups, n_flagged = int(dup.sum()), int(flagged.sum())
    tp_a, dups_a = int((flagged & dup & above).sum()), int((dup & above).sum())
    flagged_a = int((flagged & above).sum())
    return {"precision": tp / n_flagged, "recall": tp / dups,
            "f1": 2 * tp / (n_flagged + dups), "duplicates": float(dups),
            "recall_floor": tp_a / dups_a, "f1_floor": 2 * tp_a / (flagged_a + dups_a),
            "duplicates_floor": float(dups_a)}


# -- the methods -------------------------------------------------------------------------------
def _simulate(pop: dict, threshold: float, reps: int) -> dict:
    """{method: {budget: {figure: [(value, low, high), ...]}}}"""
    from engine.estimation.simulation import PairPopulation, Sample, run_design
    from engine.estimation.strata import RECALL_FLOOR

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
        srs = rng.choice(len(flagged), max(BUDGETS), replace=False)
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
                for figure, value in _srs_wilson(pop, flagged, srs[:budget],
                                                 min(RECALL_FLOOR, threshold)).items():
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
        f = figure_of(estimate, figure)
        into[figure].append((f.value, f.low, f.high))


def figure_of(estimate, figure: str):
    """One of `FIGURES` of an `Estimate`: a `_floor` figure from its floored part (the
    whole file's where there is no floor)."""
    if figure.endswith("_floor"):
        name = figure.removesuffix("_floor")
        floored = estimate.floored
        return getattr(floored, name) if floored is not None else estimate.figure(name)
    return estimate.figure(figure)


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


def _srs_wilson(pop: dict, flagged: np.ndarray, drawn: np.ndarray, floor: float) -> dict:
    """Simple random sampling's figures, those down to the floor from the sampled pairs
    scoring at least `floor`."""
    out = {}
    size = len(flagged)
    for suffix, keep in (("", np.ones(len(drawn), bool)),
                         ("_floor", pop["score"][drawn] >= floor)):
        y, f = pop["dup"][drawn] & keep, flagged[drawn] & keep
        tp, n_f, n_d = int((y & f).sum()), int(f.sum()), int(y.sum())
        j = _wilson(tp, int((y | f).sum()))
        share = _wilson(n_d, len(drawn))
        out.update({f"recall{suffix}": _wilson(tp, n_d),
                    f"f1{suffix}": tuple(2 * x / (1 + x) if np.isfinite(x) else float("nan")
                                         for x in j),
                    f"duplicates{suffix}": tuple(size * x for x in share)})
        if not suffix:
            out["precision"] = _wilson(tp, n_f)
    return out


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
                "duplicates": (len(labels) * (tp + fn) / t, nan, nan),
                # OASIS estimates the whole file's figures only.
                **{f: (nan, nan, nan) for f in FIGURES if f.endswith("_floor")}}
    return out


def _oasis_version() -> str:
    from importlib.metadata import version

    return version("oasis")


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
            "undefined": int((~ok).sum()), "truth": float(truth)}


# -- the command line, end to end ---------------------------------------------------------------
def _c_texts(quora: dict, pop: dict) -> tuple[dict, dict]:
    """Population C's questions as rows (id c0000…) and each row's group."""
    from benchmarks import corpus

    texts = corpus.questions()
    ids = [f"c{i:04d}" for i in range(len(pop["positions"]))]
    return ({i: texts[int(p)] for i, p in zip(ids, pop["positions"], strict=True)},
            {i: int(g) for i, g in zip(ids, pop["group"], strict=True)})


def _sample_texts() -> tuple[dict, dict]:
    """The sample questions' rows and each row's group by the answer key (-1: none)."""
    from benchmarks.estimate_populations import SAMPLE, SAMPLE_GROUPS

    with SAMPLE_GROUPS.open(encoding="utf-8") as fh:
        group = {r["id"]: int(r["group"]) for r in csv.DictReader(fh)}
    with SAMPLE.open(encoding="utf-8") as fh:
        rows = {r["id"]: r["question"] for r in csv.DictReader(fh)}
    return rows, {i: group.get(i, -1) for i in rows}


def _cli_loop_groups(name: str, questions: dict, group_of: dict, quick: bool) -> dict:
    """The rows in a project; `estimate --next 50`, answers from the groups (rows of one
    group are duplicates, any other pair is not), `label --from`, until the budget; then
    the estimate at the project's threshold against the exact figures of the project's cut
    there (the clusters before any verdict, which is what the estimate measures)."""
    budget = 150 if quick else 300
    with tempfile.TemporaryDirectory(prefix="duplens-estimate-") as folder:
        data = Path(folder) / "questions.csv"
        with data.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(["qid", "question"])
            writer.writerows(questions.items())
        project = str(Path(folder) / "questions.duplens")
        _cli("import", project, str(data), "--column", "question", "--id-column", "qid")
        threshold = float(json.loads(_cli("threshold", project, "--json"))["value"])
        # The model's cut, as the estimate measures it: before any verdict (the export's
        # clusters obey the verdicts given, and so differ from it after the loop).
        clusters = json.loads(_cli("duplicates", project, "--threshold", str(threshold),
                                   "--json"))
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
                    ga, gb = group_of[p["a"]["id"]], group_of[p["b"]["id"]]
                    writer.writerow([p["a"]["id"], p["b"]["id"],
                                     "dup" if ga >= 0 and ga == gb else "not"])
            _cli("label", project, "--from", str(answers))
            answered += len(drawn)
            calls += 1
        report = json.loads(_cli("estimate", project, "--threshold", str(threshold), "--json"))
        truth = _project_truth_groups(project, group_of, clusters, threshold)
    e = report["estimate"]
    got = {f: e[f] for f in ("precision", "recall", "f1", "duplicates")}
    for figure, key in (("recall_floor", "recall_down_to"), ("f1_floor", "f1_down_to"),
                        ("duplicates_floor", "duplicates_down_to")):
        got[figure] = e.get(key)
    covered = {f: (g is not None and g["low"] <= truth[f] <= g["high"])
               for f, g in got.items()}
    return {"population": name, "rows": len(questions), "answers": report["answers"],
            "calls": calls, "threshold": threshold, "truth": truth, "estimate": got,
            "below_floor": e.get("below_floor"), "covered": covered}


def _project_truth_groups(project: str, group_of: dict, clusters: list, threshold: float
                          ) -> dict:
    """The project's exact figures: pairs of distinct texts (rows sharing a normalised text
    are one text), duplicates where rows of the two texts share a group, flagged where one
    cluster holds both; those down to the floor by the project's own similarities."""
    from engine.project import Project
    from engine.store.schema import items

    with Project.open(project) as opened:
        with opened.store.read() as conn:
            text_of = dict(conn.execute(items.select().with_only_columns(
                items.c.ext_id, items.c.text_id)).all())
        groups: dict[int, set[int]] = defaultdict(set)
        for row, text in text_of.items():
            if group_of[row] >= 0:
                groups[text].add(group_of[row])
        members: dict[int, list[int]] = defaultdict(list)
        for text, gs in groups.items():
            for g in gs:
                members[g].append(text)
        dup = {frozenset((x, y)) for ts in members.values()
               for i, x in enumerate(sorted(set(ts))) for y in sorted(set(ts))[i + 1:]}
        flagged = set()
        for c in clusters:
            texts = sorted({text_of[m["id"]] for m in c["members"]})
            flagged |= {frozenset((x, y)) for i, x in enumerate(texts) for y in texts[i + 1:]}
        pairs = sorted({tuple(sorted(p)) for p in dup | flagged})
        ids = np.asarray(sorted({t for p in pairs for t in p}), dtype=np.int64)
        vectors = opened.vectors.vectors(ids)
    at = {int(t): i for i, t in enumerate(ids)}
    sims = {p: float(vectors[at[p[0]]] @ vectors[at[p[1]]]) for p in pairs}
    keys = list(sims)
    return _exact(np.asarray([frozenset(k) in flagged for k in keys], dtype=bool),
                  np.asarray([frozenset(k) in dup for k in keys], dtype=bool),
                  np.asarray([sims[k] for k in keys]), threshold)


def _cli(*args: str) -> str:
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-m", "engine.cli", *args], capture_output=True,
                          text=True, env=env, cwd=root, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"duplens {args[0]} failed: {done.stderr[-2000:]}")
    return done.stdout


# -- the report --------------------------------------------------------------------------------
POPULATION_NAMES = {
    "A": "A: the labelled Quora pairs",
    "B": "B: A plus 500,000 random pairs",
    "C": "C: every pair of 3,400 Quora questions (imbalanced)",
    "S": "S: every pair of the sample questions (answer key)"}


def present(result: dict, results: dict | None = None) -> dict:
    """Headline, table and notes derived from the measured cells when the report renders
    (benchmarks/report.py), so their wording, and what each baseline is, come from this
    code."""
    cells = {}
    for key, cell in result["cells"].items():
        pop, budget, method, figure = key.split("|")
        cells[(pop, int(budget), method, figure)] = cell
    rows = [[pop, budget, METHOD_NAMES[method], figure, _pct(c["coverage"]),
             _fmt(c["half_width"], figure), _fmt(c["rmse"], figure), _fmt(c["bias"], figure)]
            for (pop, budget, method, figure), c in cells.items()
            if c["rmse"] is not None]
    notes = []
    for name, d in result["populations"].items():
        t = d["truth"]
        notes.append(
            f"Population {POPULATION_NAMES.get(name, name)}: {d['pairs']:,} pairs, "
            f"{d['duplicates']:,} duplicates ({d['duplicates'] / d['pairs']:.3%}); the graph "
            f"holds {d['candidates']:,} pairs; best-F1 threshold {d['threshold']:.3f}: "
            f"precision {t['precision']:.3f}, recall {t['recall']:.3f} (down to the floor "
            f"{t['recall_floor']:.3f}), F1 {t['f1']:.3f}; {result['reps'][name]} "
            "repetitions.")
    notes += [
        "Every method's repetitions draw fresh random numbers; the budgets of one repetition "
        "are nested (the first 150 answers of the 600), as a sequential design allows.",
        "Coverage: the share of repetitions whose 95% interval holds the truth; half-width: "
        "half the interval's length, averaged; RMSE and bias of the point figure. Figures "
        "in points (percent) for ratios, in pairs for the numbers of duplicates.",
        "`_floor` figures are over the pairs scoring at least the floor (0.50, the lowest "
        "threshold one can set; `engine.estimation.strata.RECALL_FLOOR`); simple random "
        "sampling gets them from its sampled pairs above the floor; OASIS estimates only the "
        "whole file's figures. Rows without a point estimate are left out.",
        f"OASIS: oasis {result.get('oasis', '?')} from PyPI.",
        *([f"Interval ends moved {result['end_shift']:g} counts (`END_SHIFT`, chosen on "
           "validation populations: \"The estimate's interval ends, chosen on validation "
           "populations\")."] if "end_shift" in result else []),
        *[_loop_note(loop) for loop in result["cli_loops"].values()],
    ]
    return {"headline": _headline(cells),
            "tables": [{"title": "Coverage, half-width and error of the estimates",
                        "columns": ["population", "answers", "method", "figure",
                                    "coverage", "half-width", "RMSE", "bias"],
                        "rows": rows}],
            "notes": notes}


def _loop_note(loop: dict) -> str:
    got = loop["estimate"]
    shown = ", ".join(
        f"{f} {got[f]['value']:.3g} [{got[f]['low']:.3g}, {got[f]['high']:.3g}] "
        f"(truth {loop['truth'][f]:.3g})" for f in FIGURES if got.get(f))
    below = loop.get("below_floor") or {}
    hidden = (f"; below the floor {below['pairs']:,} pairs, {below['duplicates_found']} "
              f"duplicates in {below['answered']} checked, at most {below['at_most']:,.0f}"
              if below.get("at_most") is not None else "")
    return (f"End to end through the command line, population {loop['population']}: "
            f"{loop['rows']:,} rows, {loop['answers']} answers in {loop['calls']} rounds of "
            f"`estimate --next 50` and `label --from`, at the project's threshold "
            f"{loop['threshold']:.2f}: {shown}{hidden}; covered: "
            + ", ".join(f"{f} {'yes' if v else 'NO'}" for f, v in loop["covered"].items())
            + ".")


def _headline(cells: dict) -> list[dict]:
    headline = []
    ours = [c for k, c in cells.items() if k[2] == "duplens" and c["coverage"] is not None]
    worst = min(c["coverage"] for c in ours)
    headline.append({"figure": "coverage of the 95% intervals, worst of every figure, "
                     "budget and population", "duplens": _pct(worst), "baseline": "",
                     "baseline_is": "–",
                     "ratio": "", "goal": f">= {GOAL_COVERAGE:.0%}",
                     "met": bool(worst >= GOAL_COVERAGE)})
    if ("C", 300, "duplens", "precision") in cells:
        for figure, goal in GOAL_C.items():
            mine = cells[("C", 300, "duplens", figure)]
            srs = cells[("C", 300, "srs_wilson", figure)]
            if figure in COUNTS:
                truth = mine["truth"]
                shown = f"±{mine['half_width'] / truth:.0%} of {truth:,.0f}"
                theirs = f"±{srs['half_width'] / truth:.0%} (simple random)"
                met = mine["half_width"] / truth <= goal
                goal_text = f"<= ±{goal:.0%}"
            else:
                shown = f"±{mine['half_width'] * 100:.1f} points"
                theirs = f"±{srs['half_width'] * 100:.1f} points (simple random)"
                met = mine["half_width"] <= goal
                goal_text = f"<= ±{goal * 100:.0f} points"
            whole = cells[("C", 300, "duplens", figure.removesuffix("_floor"))]
            beside = ("" if figure == "precision" else
                      f"; the whole file's: ±{_fmt(whole['half_width'], figure)}")
            headline.append({
                "figure": f"{figure}'s 95% half-width at 300 answers, population C"
                          + beside, "duplens": shown, "baseline": theirs,
                "baseline_is": "simple random sampling with Wilson intervals, same budget, "
                               "same run", "ratio": "", "goal": goal_text, "met": bool(met)})
    for pop in ("A", "B", "C", "S"):
        for budget in BUDGETS:
            if (pop, budget, "duplens", "f1") not in cells:
                continue
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


def _fmt(x: float | None, figure: str) -> str:
    if x is None:
        return "—"
    return f"{x:,.0f}" if figure in COUNTS else f"{x * 100:.2f}"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.1%}"


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
