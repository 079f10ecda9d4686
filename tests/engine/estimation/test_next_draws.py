"""`next_draws` on a small graph population: pairs in drawing order, never one twice, each
with the chance it had, until every pair of the project is drawn."""

from __future__ import annotations

import numpy as np
import pytest

from engine.estimation.graph_population import GraphPopulation
from engine.estimation.next_draws import design_flagged_share, next_draws
from tests.engine.estimation.small_population import THRESHOLD, small_population


@pytest.fixture(scope="module")
def population() -> GraphPopulation:
    return small_population()[0]


def test_every_pair_is_drawn_once_with_its_chance(population):
    share = design_flagged_share(population, THRESHOLD)
    assert share.shape == (population.strata.count,) and ((share >= 0) & (share <= 1)).all()
    drawn: list[dict] = []
    while True:
        rows = next_draws(population, 11, share, drawn, 37)
        assert len(rows) <= 37
        if not rows:
            break
        for row in rows:
            assert row["text_a"] < row["text_b"]
            assert 0 < row["probability"] <= 1
            assert row["stratum_size"] == round(population.strata.sizes[row["stratum"]])
            drawn.append({**row, "verdict": None})
    pairs = {(d["text_a"], d["text_b"]) for d in drawn}
    n = population.texts
    assert len(drawn) == len(pairs) == n * (n - 1) // 2
    keys = np.asarray([(d["text_a"] << 32) | d["text_b"] for d in drawn], dtype=np.int64)
    sims = np.asarray([d["similarity"] for d in drawn])
    assert np.allclose(sims, population.similarity_of(keys))


def test_draws_are_the_same_for_the_same_seed_and_verdicts(population):
    share = design_flagged_share(population, THRESHOLD)
    first = next_draws(population, 11, share, [], 20)
    assert next_draws(population, 11, share, [], 20) == first
    more = next_draws(population, 11, share, [{**r, "verdict": 0} for r in first], 20)
    assert not {(r["text_a"], r["text_b"]) for r in more} & {
        (r["text_a"], r["text_b"]) for r in first}
