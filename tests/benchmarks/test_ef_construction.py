"""The ef_construction check's measuring parts (benchmarks/ef_construction.py) on small
random vectors: exact search, recall and the pairs at a similarity, against plain numpy."""

from __future__ import annotations

import numpy as np

from benchmarks import ef_construction as ef


def _unit(rng, n: int, dim: int = 16) -> np.ndarray:
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_exact_top_is_numpys_argsort_in_any_chunking():
    rng = np.random.default_rng(0)
    items, queries = _unit(rng, 500), _unit(rng, 40)
    idx, sim = ef.exact_top(items, queries, 5)
    truth = np.argsort(-(queries @ items.T), axis=1)[:, :5]
    assert (idx == truth).all()
    assert np.allclose(sim, np.take_along_axis(queries @ items.T, truth, axis=1))


def test_recall_counts_shared_neighbours():
    truth = np.array([[1, 2], [3, 4]])
    assert ef.recall(truth, truth) == 1.0
    assert ef.recall(np.array([[2, 9], [8, 9]]), truth) == 0.25


def test_pairs_at_leave_out_self_and_count_a_pair_once():
    rows = np.array([0, 1])
    nbr = np.array([[0, 1, 5], [1, 0, -1]])
    sim = np.array([[1.0, 0.9, 0.7], [1.0, 0.9, 0.95]], dtype=np.float32)
    assert ef.pairs_at(rows, nbr, sim, 0.8) == {(0, 1)}
    assert ef.pairs_at(rows, nbr, sim, 0.6) == {(0, 1), (0, 5)}


def test_the_rule_and_its_table(monkeypatch):
    result = {"items": 1000, "real_items": 900, "queries": 10, "sample": 100,
              "exact_pairs": 50, "threads": 2, "adopt": False,
              "builds": {"200": {"insert_seconds": 10.0, "ms_per_item_core": 0.5,
                                 "query_ef": 128, "recall_at_10": 0.995, "pairs": 50,
                                 "pair_recall_vs_exact": 1.0, "pair_recall_vs_current": 1.0},
                         "100": {"insert_seconds": 5.0, "ms_per_item_core": 0.25,
                                 "query_ef": 128, "recall_at_10": 0.985, "pairs": 49,
                                 "pair_recall_vs_exact": 0.98,
                                 "pair_recall_vs_current": 0.98}}}
    shown = ef.present(result)
    assert "not adopted" in shown["headline"][0]["figure"]
    assert shown["headline"][0]["ratio"] == "2.00×"
    assert len(shown["tables"][0]["rows"]) == 2
