"""Silver candidates: the graph's pairs around the threshold, never a held-out text's, never
a pair already judged, closest first; and their labels as the judge gives them."""

from __future__ import annotations

import numpy as np
import pytest

from engine.dedup.graph import KnnGraph
from engine.training.silver import SilverCandidate, label_silver, silver_candidates

IDS = np.array([10, 20, 30, 40, 50, 60], dtype=np.int64)
# Unordered pairs (positions) and their similarity; threshold 0.80 and band 0.15 take
# 0.65..0.95.
EDGES = {(0, 1): 0.99, (0, 2): 0.81, (1, 2): 0.78, (2, 3): 0.86, (3, 4): 0.70,
         (4, 5): 0.60, (1, 5): 0.84, (0, 5): 0.75, (3, 5): 0.94}


def graph(edges: dict[tuple[int, int], float] = EDGES) -> KnnGraph:
    """Both directions of every edge, as `build_knn_graph` mirrors them."""
    rows = [a for a, b in edges] + [b for a, b in edges]
    cols = [b for a, b in edges] + [a for a, b in edges]
    sims = list(edges.values()) * 2
    return KnnGraph.from_rows(IDS, np.array(rows), np.array(cols), np.array(sims), k=3)


def pairs_of(found: list[SilverCandidate]) -> list[tuple[int, int]]:
    return [(c.id_a, c.id_b) for c in found]


def test_pairs_within_the_band_come_once_closest_to_the_threshold_first():
    found = silver_candidates(graph(), 0.80, band=0.15, limit=100)
    # 0.99 and 0.60 lie outside; the rest by |similarity - 0.80|.
    assert pairs_of(found) == [(10, 30), (20, 30), (20, 60), (10, 60), (30, 40), (40, 50),
                               (40, 60)]
    assert all(abs(c.similarity - 0.80) <= 0.15 + 1e-6 for c in found)
    distances = [abs(c.similarity - 0.80) for c in found]
    assert distances == sorted(distances)
    assert len(set(pairs_of(found))) == len(found)  # each unordered pair once


def test_the_limit_keeps_the_closest():
    everything = silver_candidates(graph(), 0.80, limit=100)
    assert silver_candidates(graph(), 0.80, limit=3) == everything[:3]
    assert silver_candidates(graph(), 0.80, limit=0) == []


def test_no_pair_touches_a_held_out_text():
    found = silver_candidates(graph(), 0.80, limit=100, exclude_keys={30, 60, 999})
    assert found, "some pairs remain"
    assert all(30 not in pair and 60 not in pair for pair in pairs_of(found))
    assert pairs_of(found) == [(40, 50)]


def test_pairs_already_judged_are_skipped_either_way_round():
    labelled = {(30, 10), (20, 30), (60, 999)}
    found = pairs_of(silver_candidates(graph(), 0.80, limit=100, labelled=labelled))
    assert (10, 30) not in found and (20, 30) not in found
    assert found[0] == (20, 60)


def test_a_narrower_band_and_another_threshold_pick_other_pairs():
    assert pairs_of(silver_candidates(graph(), 0.80, band=0.03, limit=100)) == \
        [(10, 30), (20, 30)]
    assert pairs_of(silver_candidates(graph(), 0.95, band=0.05, limit=100)) == \
        [(40, 60), (10, 20)]


def test_the_same_graph_gives_the_same_list_whatever_the_edge_order():
    shuffled = dict(reversed(list(EDGES.items())))
    first = silver_candidates(graph(), 0.80, limit=100)
    assert silver_candidates(graph(shuffled), 0.80, limit=100) == first
    # Equal closeness (similarities exact in float32): ties go by text ids.
    ties = {(0, 1): 0.625, (2, 3): 0.375, (1, 2): 0.625}
    assert pairs_of(silver_candidates(graph(ties), 0.5, limit=100)) == \
        [(10, 20), (20, 30), (30, 40)]


def test_a_pair_held_with_two_similarities_takes_the_higher_and_one_way_counts_too():
    both = KnnGraph.from_rows(IDS, np.array([0, 2]), np.array([2, 0]),
                              np.array([0.81, 0.79]), k=1)
    found = silver_candidates(both, 0.80, limit=10)
    assert pairs_of(found) == [(10, 30)]
    assert found[0].similarity == pytest.approx(0.81)
    one_way = KnnGraph.from_rows(IDS, np.array([4]), np.array([1]), np.array([0.7]), k=1)
    assert pairs_of(silver_candidates(one_way, 0.80, limit=10)) == [(20, 50)]


def test_a_negative_band_or_limit_is_refused():
    with pytest.raises(ValueError):
        silver_candidates(graph(), 0.80, band=-0.1, limit=10)
    with pytest.raises(ValueError):
        silver_candidates(graph(), 0.80, limit=-1)


class FixedJudge:
    """A stand-in judge: a probability per text pair, as `CrossEncoder.predict` returns."""

    def __init__(self, probability: dict[tuple[str, str], float]) -> None:
        self.probability = probability
        self.calls: list[int] = []

    def predict(self, pairs, batch_size, show_progress_bar, activation_fn, convert_to_numpy):
        self.calls.append(batch_size)
        return np.array([self.probability[pair] for pair in pairs], dtype=np.float32)


def test_silver_labels_are_the_judges_probabilities_keyed_by_text_id():
    candidates = silver_candidates(graph(), 0.80, limit=3)
    texts = {int(i): f"question {i}" for i in IDS}
    judge = FixedJudge({(texts[c.id_a], texts[c.id_b]): p
                        for c, p in zip(candidates, (0.9, 0.25, 0.55), strict=True)})
    silver = label_silver(judge, candidates, texts.__getitem__, batch_size=8)
    assert [(p.text_a, p.text_b) for p in silver] == \
        [(texts[c.id_a], texts[c.id_b]) for c in candidates]
    assert [p.label for p in silver] == pytest.approx([0.9, 0.25, 0.55])
    assert [(p.key_a, p.key_b) for p in silver] == \
        [(f"text:{c.id_a}", f"text:{c.id_b}") for c in candidates]
    assert [p.is_duplicate for p in silver] == [True, False, True]
    assert judge.calls == [8]
    assert label_silver(judge, [], texts.__getitem__) == []
