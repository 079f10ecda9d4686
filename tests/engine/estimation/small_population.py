"""A small graph population for the estimation tests: groups of near copies among unrelated
texts, every label known."""

from __future__ import annotations

import numpy as np

from engine.dedup.graph import build_knn_graph
from engine.estimation.graph_population import GraphPopulation, graph_population
from engine.index.hnsw import HnswIndex

THRESHOLD = 0.8


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def small_population(seed: int = 0) -> tuple[GraphPopulation, dict[int, int]]:
    """Six groups of five near copies (pairwise about 0.9) among twenty unrelated texts,
    with ids that are not positions; and each text's group (-1: none)."""
    rng = np.random.default_rng(seed)
    groups = [_unit(rng.normal(size=(1, 32)) + 0.25 * rng.normal(size=(5, 32)))
              for _ in range(6)]
    vectors = np.concatenate([*groups, _unit(rng.normal(size=(20, 32)))])
    ids = np.arange(len(vectors), dtype=np.int64) * 2 + 7
    group_of = {int(t): (i // 5 if i < 30 else -1) for i, t in enumerate(ids)}
    index = HnswIndex(32)
    index.add(ids, vectors)
    graph = build_knn_graph(index, 4)
    by_id = dict(zip(ids.tolist(), vectors, strict=True))

    def read(text_ids: np.ndarray) -> np.ndarray:
        return np.asarray([by_id[int(t)] for t in text_ids])

    return graph_population(graph, 1, THRESHOLD, read, seed=11), group_of
