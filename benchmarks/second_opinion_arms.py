"""The second opinion of `benchmarks.ask_vs_random`: a simulated project of the training part.

The product's second opinion (`engine.training.second_opinion.run_second_opinion`, issue 45)
trains a judge (a cross-encoder) on the analyst's gold pairs, measures it on held-out pairs
and labels silver pairs of the project's neighbour graph within a band of the model's
threshold. The benchmark calls that very function; this module lends it what a project
would (`SilverSource`):

- the project's texts are the training part's questions only, each normalised text once
  (a project keys texts so), numbered in the order the pool first shows them; a question
  whose normalised text is also a validation or test question's is left out, so no silver
  pair touches a measured question, even as an exact copy under another Quora id;
- their neighbour graph is the product's (`engine.dedup.graph.build_knn_graph` over an
  `HnswIndex`, `clusters.DEFAULT_NEIGHBOURS` per text, complete at the default floor), under
  the model in use when the analyst trains: the default model for random pairs, the last
  round's model for asked ones (the vectors the pool was scored with for that round);
- the threshold is the model in use's, calibrated on the arm's own verdicts
  (`engine.review.calibration`, as the product sets it).

The judge learns from the arm's gold pairs only (all of them: the benchmark's arms train
on every verdict, with no held-out part of their own); the measured split is what it is
measured on, as the run's held-out pairs are in the product.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.text import norm_key


@dataclass(frozen=True)
class SilverProject:
    """The training part's questions as a project's texts: id i is `texts[i]` (ids ascend
    from 0), `ids_by_key` maps each normalised text to its id."""

    texts: list[str]
    ids_by_key: dict[str, int]
    left_out: int  # training questions whose normalised text is a held-out question's

    def text_ids(self, keys: Iterable[str]) -> dict[str, int]:
        """`SilverSource.text_ids`: the ids of the normalised texts the project holds."""
        return {k: self.ids_by_key[k] for k in keys if k in self.ids_by_key}

    def texts_by_id(self, ids: Sequence[int]) -> dict[int, str]:
        return {int(i): self.texts[int(i)] for i in ids}


def silver_project(pool: Sequence, held_out_texts: Iterable[str]) -> tuple[SilverProject,
                                                                             np.ndarray]:
    """The project of the pool's questions without any held-out question (by normalised
    text), and for each of its texts where the pool first shows it: (pair index, side 0/1),
    an (n, 2) array, to take its vector from the pool's pair vectors."""
    banned = {norm_key(t) for t in held_out_texts}
    texts: list[str] = []
    ids: dict[str, int] = {}
    where: list[tuple[int, int]] = []
    left_out: set[str] = set()
    for i, p in enumerate(pool):
        for side, text in enumerate((p.text_a, p.text_b)):
            key = norm_key(text)
            if key in banned:
                left_out.add(key)
                continue
            if key not in ids:
                ids[key] = len(texts)
                texts.append(text)
                where.append((i, side))
    return (SilverProject(texts, ids, len(left_out)),
            np.asarray(where, dtype=np.int64).reshape(-1, 2))


def held_out_texts(all_pairs: Sequence, pool: Sequence) -> list[str]:
    """Every question of a pair outside the pool (validation, test, or dropped by the
    split) that is not itself a pool question (by its Quora id)."""
    pool_keys = {k for p in pool for k in (p.key_a, p.key_b)}
    in_pool = {(p.key_a, p.key_b) for p in pool}
    return [t for p in all_pairs if (p.key_a, p.key_b) not in in_pool
            for k, t in ((p.key_a, p.text_a), (p.key_b, p.text_b)) if k not in pool_keys]


def project_vectors(where: np.ndarray, vectors_a: np.ndarray, vectors_b: np.ndarray
                    ) -> np.ndarray:
    """The project's text vectors from the pool's pair vectors (`silver_project`'s `where`)."""
    out = np.where(where[:, 1:2] == 0, vectors_a[where[:, 0]], vectors_b[where[:, 0]])
    return np.ascontiguousarray(out, dtype=np.float32)


def silver_source(project: SilverProject, vectors: np.ndarray, threshold: float,
                  timings: dict | None = None):
    """The engine's `SilverSource` over `project`: its graph built by the product's code from
    `vectors` (row i: text id i) when the second opinion asks for it (seconds in
    `timings["graph_seconds"]`)."""
    from engine.dedup.graph import build_knn_graph
    from engine.index.hnsw import HnswIndex
    from engine.services.clusters import DEFAULT_NEIGHBOURS
    from engine.training.second_opinion import SilverSource

    def graph(progress, cancel):
        started = time.perf_counter()
        ids = np.arange(len(vectors), dtype=np.int64)
        index = HnswIndex(vectors.shape[1], capacity=len(vectors))
        index.add(ids, vectors)
        built = build_knn_graph(index, DEFAULT_NEIGHBOURS, ids,
                                vectors=lambda wanted: vectors[np.asarray(wanted)],
                                progress=progress, cancel=cancel)
        if timings is not None:
            timings["graph_seconds"] = round(time.perf_counter() - started, 1)
            timings["graph_texts"] = len(ids)
        return built

    return SilverSource(graph, float(threshold), project.texts_by_id, project.text_ids)


@dataclass
class JudgeRun:
    """A second opinion of one arm: the product's `SecondOpinion` and the seconds of each
    step (judge training proper, measuring it, the graph, labelling silver)."""

    opinion: object  # engine.training.second_opinion.SecondOpinion
    seconds: dict


def run_judge(gold: Sequence, measured: Sequence, project: SilverProject, vectors: np.ndarray,
              threshold: float, *, silver: int, band: float, epochs: int, seed: int,
              default_scores: Sequence[float], device: str, folder: Path,
              prior=None) -> JudgeRun:
    """`run_second_opinion` on the arm's gold pairs, measured on `measured`, labelling up to
    `silver` pairs of the project's graph within `band` of `threshold`; `prior` (from
    `residual_prior`) makes the judge residual."""
    from engine.progress import CancelToken
    from engine.training.options import TrainingOptions
    from engine.training.second_opinion import (
        STAGE_JUDGE_MEASURE,
        STAGE_SILVER,
        run_second_opinion,
    )

    # silver_always: the arms measure what silver does, whatever the judge's AP. The
    # product's guard compares the judge with the model on the run's held-out pairs, which
    # here are the measured split: deciding on them would choose on the split reported.
    options = TrainingOptions(epochs=epochs, seed=seed, second_opinion=silver,
                              silver_band=band, silver_always=True)
    timings: dict = {}
    first: dict[str, float] = {}

    def progress(p) -> None:
        first.setdefault(p.stage, time.perf_counter())

    started = time.perf_counter()
    opinion = run_second_opinion(gold, measured, gold, silver_source(
        project, vectors, threshold, timings), options, folder,
        bi_encoder_scores=default_scores, device=device, progress=progress,
        cancel=CancelToken(), seed=seed, prior=prior)
    ended = time.perf_counter()
    measure_at = first.get(STAGE_JUDGE_MEASURE, ended)
    silver_at = first.get(STAGE_SILVER, ended)
    seconds = {
        "judge_training_seconds": round(opinion.judge_seconds, 1),
        "judge_with_loading_seconds": round(measure_at - started, 1),
        "judge_measuring_seconds": round(silver_at - measure_at, 1),
        "graph_seconds": timings.get("graph_seconds"),
        "silver_labelling_seconds": round(ended - silver_at
                                          - (timings.get("graph_seconds") or 0.0), 1),
        "graph_texts": timings.get("graph_texts"),
    }
    return JudgeRun(opinion, seconds)


def residual_prior(model, gold: Sequence):
    """A residual judge's prior (`second_opinion.PriorLogits`): `model`'s cosine of each
    pair made a logit by a logistic fit of the gold verdicts on their cosines
    (`judge_choice.calibration`: two numbers, from the gold pairs alone)."""
    from benchmarks.judge_choice import calibration

    fit = calibration(model, list(gold))

    def prior(pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        a = model.encode([x for x, _ in pairs], normalize_embeddings=True)
        b = model.encode([y for _, y in pairs], normalize_embeddings=True)
        return fit.decision_function(np.sum(a * b, axis=1).reshape(-1, 1))

    return prior


def quora_agreement(silver: Sequence, pool: Sequence) -> dict:
    """How the silver pairs that are Quora pairs of the pool (unlabelled for the analyst)
    agree with Quora's labels: how many, and the share the judge called the same way."""
    labels = {frozenset((norm_key(p.text_a), norm_key(p.text_b))): p.is_duplicate
              for p in pool}
    same = [labels[k] == s.is_duplicate for s in silver
            if (k := frozenset((norm_key(s.text_a), norm_key(s.text_b)))) in labels]
    return {"pairs": len(same),
            "agreement": round(100 * sum(same) / len(same), 1) if same else None}
