"""`JudgedDraws`: with every pair of a small project judged, the figures are the exact
counts and the row weights count each text with a duplicate once."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from engine.estimation.graph_population import cluster_labels
from engine.estimation.judged_draws import JudgedDraws
from engine.estimation.next_draws import design_flagged_share, next_draws
from tests.engine.estimation.small_population import THRESHOLD, small_population


def _judge_every_pair(population, group_of: dict[int, int]) -> list[dict]:
    """Draw until every pair is drawn, each judged by the groups."""
    share = design_flagged_share(population, THRESHOLD)
    drawn: list[dict] = []
    while rows := next_draws(population, 11, share, drawn, 100):
        drawn += [{**r, "verdict": int(group_of[r["text_a"]] >= 0
                                       and group_of[r["text_a"]] == group_of[r["text_b"]])}
                  for r in rows]
    return drawn


@pytest.fixture(scope="module")
def judged():
    population, group_of = small_population(seed=2)
    return population, group_of, _judge_every_pair(population, group_of)


def test_every_pair_judged_gives_the_exact_figures(judged):
    population, group_of, drawn = judged
    inputs = JudgedDraws(population, drawn)
    ids = population.graph.ids
    labels = cluster_labels(population.graph, THRESHOLD)
    cluster = dict(zip(ids.tolist(), labels.tolist(), strict=True))
    dups = {(a, b) for a, b in combinations(ids.tolist(), 2)
            if group_of[a] >= 0 and group_of[a] == group_of[b]}
    flagged = {(a, b) for a, b in combinations(ids.tolist(), 2)
               if cluster[a] >= 0 and cluster[a] == cluster[b]}
    tp = len(dups & flagged)
    assert tp > 0
    result = inputs.estimate_at(population, THRESHOLD, draws=200)
    for name, value in (("precision", tp / len(flagged)), ("recall", tp / len(dups)),
                        ("duplicates", len(dups))):
        figure = result.figure(name)
        assert figure.value == pytest.approx(value, abs=1e-9), name
        assert figure.low == pytest.approx(value, abs=1e-9), name
        assert figure.high == pytest.approx(value, abs=1e-9), name
    widest, _ = result.widest()
    more = inputs.more_to_halve(population, result, widest)
    assert more is None or more >= 0


def test_row_weights_count_each_text_with_a_duplicate_once(judged):
    population, group_of, drawn = judged
    inputs = JudgedDraws(population, drawn)
    weights = inputs.row_weights(population, copied=set())
    assert (weights[~inputs.dup] == 0).all()
    with_duplicate = sum(1 for g in group_of.values() if g >= 0)
    assert weights.sum() == pytest.approx(with_duplicate)
    # A text with copies of its own is counted apart (by its rows), never by weight.
    one = int(inputs.a[np.flatnonzero(inputs.dup)[0]])
    fewer = inputs.row_weights(population, copied={one}).sum()
    assert fewer == pytest.approx(with_duplicate - 1)


def test_row_weights_down_to_the_floor_count_only_texts_with_a_duplicate_above_it():
    """Two unrelated texts (similarity far below 0.5) called duplicates: the whole file's
    weights count them, the floored weights do not; on a census both are exact, and the
    estimate's floored "rows with a duplicate" is that count with no width."""
    from engine.estimation.estimators import RowsInput

    population, group_of = small_population(seed=2)
    ids = population.graph.ids.tolist()
    group_of = {**group_of, ids[30]: 99, ids[31]: 99}
    drawn = _judge_every_pair(population, group_of)
    below = population.strata.below_floor()
    assert below.any()
    above_texts = {t for d in drawn if d["verdict"] and not below[d["stratum"]]
                   for t in (d["text_a"], d["text_b"])}
    assert ids[30] not in above_texts and len(above_texts) == 30
    inputs = JudgedDraws(population, drawn)
    whole = inputs.row_weights(population, copied=set())
    floored = inputs.row_weights(population, copied=set(), below=below)
    assert whole.sum() == pytest.approx(32)
    assert floored.sum() == pytest.approx(30)
    got = inputs.estimate_at(population, THRESHOLD, draws=200,
                             rows=RowsInput(0, whole, 50, floored))
    assert (got.rows.value, got.rows.low, got.rows.high) == pytest.approx((32, 32, 32))
    f = got.floored.rows
    assert (f.value, f.low, f.high) == pytest.approx((30, 30, 30))
    assert got.as_json()["rows_with_duplicates_down_to"]["value"] == pytest.approx(30)
