"""`carried_draws`: a new sample takes over the pairs judged before as a prefix of each
stratum's drawing order, so the draws stay a uniform sample of the stratum."""

from __future__ import annotations

import numpy as np

from engine.estimation.carried_draws import NEW_ALLOWED, carried_draws, prefix_length
from engine.estimation.drawing import pair_keys, priorities
from engine.estimation.graph_population import GraphPopulation
from engine.estimation.next_draws import design_flagged_share, next_draws
from tests.engine.estimation.small_population import THRESHOLD, small_population


def test_the_prefix_reaches_the_last_judged_pair_within_the_allowance():
    assert prefix_length(np.zeros(10, dtype=bool)) == 0
    assert prefix_length(np.array([1, 1, 0, 1, 0, 0], dtype=bool)) == 4
    # one judged pair after more unjudged ones than allowed is left out
    far = np.zeros(100, dtype=bool)
    far[[0, 1, 90]] = True
    assert prefix_length(far) == 2
    late = np.zeros(100, dtype=bool)
    late[NEW_ALLOWED] = True                 # NEW_ALLOWED unjudged pairs before it: fits
    assert prefix_length(late) == NEW_ALLOWED + 1


def _draw(population: GraphPopulation, k: int) -> list[dict]:
    share = design_flagged_share(population, THRESHOLD)
    rows = next_draws(population, 11, share, [], k)
    for r in rows:
        r["verdict"] = 0
    return rows


def test_the_pairs_drawn_before_are_carried_whole_and_in_order():
    population, _ = small_population()
    drawn = _draw(population, 25)
    keys = {int(pair_keys(np.array([d["text_a"]]), np.array([d["text_b"]]))[0])
            for d in drawn}
    carried = carried_draws(population, 11, keys)
    assert {(d["text_a"], d["text_b"]) for d in carried} == {
        (d["text_a"], d["text_b"]) for d in drawn}
    assert sorted(d["stratum"] for d in carried) == sorted(d["stratum"] for d in drawn)
    assert all(0 < d["probability"] <= 1 for d in carried)
    assert carried_draws(population, 11, set()) == []


def test_a_carried_stratum_is_a_uniform_sample_after_an_import():
    """A stratum of 200 old pairs (10% duplicates) gains 20 pairs of new texts (all
    duplicates): the old sample's 30 pairs, carried as a prefix of the new order, plus the
    new pairs before its end, give each pair about the same chance, and the duplicate share
    of the draws its true 40/220 on average. The old verdicts alone would say 10%."""
    old = np.arange(200, dtype=np.int64)
    new = np.arange(1000, 1020, dtype=np.int64)
    keys = pair_keys(np.r_[old, new], np.r_[old, new] + 5000)
    duplicate = np.r_[np.arange(200) % 10 == 0, np.ones(20, dtype=bool)]
    in_old, in_new, share, old_only = [], [], [], []
    for seed in range(2000):
        rank = priorities(seed, keys)
        judged = np.zeros(len(keys), dtype=bool)
        judged[np.argsort(rank[:200])[:30]] = True
        order = np.argsort(rank, kind="stable")
        length = prefix_length(judged[order])
        taken = order[:length]
        assert judged[taken].sum() == 30            # every verdict carried
        in_old.append((taken < 200).sum() / 200)
        in_new.append((taken >= 200).sum() / 20)
        share.append(duplicate[taken].mean())
        old_only.append(duplicate[judged].mean())
    assert abs(np.mean(in_old) - np.mean(in_new)) < 0.01
    assert abs(np.mean(share) - 40 / 220) < 0.005
    assert abs(np.mean(old_only) - 40 / 220) > 0.07
