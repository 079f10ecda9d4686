"""The quality estimate's statistics, driven without a project: exact on a census, honest
intervals on a seeded synthetic population, and missed duplicates outside the graph counted."""

from __future__ import annotations

import numpy as np
import pytest

from engine.estimation.allocation import verdicts_to_halve, width_left_at_caps
from engine.estimation.estimators import RowsInput, estimate
from engine.estimation.simulation import PairPopulation, run_design
from engine.estimation.strata import make_strata


def _population(seed: int, candidates: int, outside: int, outside_share: float
                ) -> PairPopulation:
    """Candidate pairs whose duplicate chance rises steeply around 0.8, and outside pairs
    (low similarity) that are duplicates with `outside_share`."""
    rng = np.random.default_rng(seed)
    sims = np.clip(rng.beta(5, 2, candidates) * 0.7 + 0.3, 0, 1)
    dup = rng.random(candidates) < 1 / (1 + np.exp(-(sims - 0.8) / 0.04))
    out_sims = rng.beta(2, 5, outside) * 0.6
    out_dup = rng.random(outside) < outside_share
    return PairPopulation(np.r_[sims, out_sims],
                          np.r_[np.ones(candidates, bool), np.zeros(outside, bool)],
                          np.r_[dup, out_dup])


def _truth(pop: PairPopulation, flagged: np.ndarray) -> dict[str, float]:
    tp = int((flagged & pop.duplicate).sum())
    dups = int(pop.duplicate.sum())
    n_flagged = int(flagged.sum())
    return {"precision": tp / n_flagged, "recall": tp / dups,
            "f1": 2 * tp / (n_flagged + dups), "duplicates": dups}


def test_every_pair_judged_gives_the_exact_figures_and_no_width():
    pop = _population(0, 300, 600, 0.02)
    rng = np.random.default_rng(1)
    # Flagged: most pairs above the threshold, a few below it and a few outside the graph
    # (pairs in one cluster that the graph does not hold), as a cut can make them.
    flagged = (pop.similarity >= 0.8) & pop.candidate & (rng.random(900) < 0.9)
    flagged |= rng.random(900) < 0.01
    sample = run_design(pop, flagged, 0.8, 900, rng)
    assert sorted(sample.drawn.tolist()) == list(range(900))
    for threshold, flags in ((0.8, flagged), (0.7, pop.candidate & (pop.similarity >= 0.7))):
        got = sample.estimate(pop, flags, threshold=threshold)
        for name, value in _truth(pop, flags).items():
            figure = got.figure(name)
            assert figure.value == pytest.approx(value, abs=1e-9), name
            assert figure.low == pytest.approx(value, abs=1e-9), name
            assert figure.high == pytest.approx(value, abs=1e-9), name


def test_post_stratified_estimate_by_hand():
    # Stratum 0: 1000 pairs, none flagged; stratum 1: 100 pairs, 60 flagged.
    sizes, flagged_sizes = np.array([1000, 100]), np.array([0, 60])
    stratum = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1])
    dup = np.array([0, 1, 0, 0, 1, 1, 0, 1, 0], bool)
    flag = np.array([0, 0, 0, 0, 1, 1, 1, 0, 0], bool)
    got = estimate(sizes, flagged_sizes, stratum, dup, flag)
    tp = 60 * 2 / 3                      # flagged domain of stratum 1: 2 of 3
    missed = 1000 * 1 / 4 + 40 * 1 / 2   # stratum 0: 1 of 4; unflagged of stratum 1: 1 of 2
    assert got.precision.value == pytest.approx(tp / 60)
    assert got.recall.value == pytest.approx(tp / (tp + missed))
    assert got.f1.value == pytest.approx(2 * tp / (60 + tp + missed))
    assert got.duplicates.value == pytest.approx(tp + missed)
    assert got.flagged == 60 and got.verdicts == 9 and got.ready


def test_intervals_cover_the_truth_on_a_synthetic_population():
    """95% intervals from 150 verdicts, 2% duplicates in all (a few outside the graph)."""
    pop = _population(7, 4000, 40_000, 5e-4)
    flagged = pop.candidate & (pop.similarity >= 0.8)
    truth = _truth(pop, flagged)
    assert 0.01 < truth["duplicates"] / len(pop.duplicate) < 0.05
    reps, covered = 60, dict.fromkeys(truth, 0)
    for rep in range(reps):
        rng = np.random.default_rng(100 + rep)
        # The outside strata sized from 5,000 of the 40,000 outside pairs, anew each time.
        stratification = pop.strata(0.8, rng, phase_one=5000)
        assert not stratification[0].phase_one_complete
        sample = run_design(pop, flagged, 0.8, 150, rng, batch=5,
                            stratification=stratification)
        got = sample.estimate(pop, flagged, threshold=0.8, draws=1000, seed=rep)
        for name, value in truth.items():
            covered[name] += got.figure(name).low <= value <= got.figure(name).high
    assert all(c / reps >= 0.9 for c in covered.values()), covered


def test_duplicates_outside_the_graph_lower_the_recall():
    """Recall counted among candidate pairs only would be overstated: the outside strata's
    duplicates (what the index never returns) are estimated, without bias, and are in the
    denominator."""
    pop = _population(3, 1000, 3000, 0.05)
    flagged = pop.candidate & (pop.similarity >= 0.8)
    truth = _truth(pop, flagged)
    in_graph = int((pop.candidate & pop.duplicate).sum())
    within_graph = (flagged & pop.duplicate).sum() / in_graph
    assert truth["recall"] < within_graph - 0.15
    stratification = pop.strata(0.8)
    reps, dups, covered = 40, [], {"recall": 0, "duplicates": 0}
    for rep in range(reps):
        sample = run_design(pop, flagged, 0.8, 150, np.random.default_rng(rep), batch=5,
                            stratification=stratification)
        below = sample.strata.below_floor()[sample.stratum]
        assert abs(below.sum() - 0.1 * 150) <= 1          # their stated share of the verdicts
        got = sample.estimate(pop, flagged, threshold=0.8, draws=500)
        dups.append(got.duplicates.value)
        for name in covered:
            covered[name] += got.figure(name).low <= truth[name] <= got.figure(name).high
    # The number of duplicates is a sum over strata: unbiased, missed ones included.
    spread = np.std(dups) / np.sqrt(reps)
    assert abs(np.mean(dups) - truth["duplicates"]) < 3 * spread
    assert np.mean(dups) > in_graph + 2 * spread
    assert all(c >= 0.9 * reps for c in covered.values()), covered


def test_strata_put_a_boundary_at_the_threshold_and_merge_tiny_bins():
    rng = np.random.default_rng(0)
    sims = np.r_[rng.uniform(0.5, 1.0, 5000), [0.31, 0.42]]
    first = np.r_[rng.uniform(-0.1, 0.45, 900), rng.uniform(0.5, 0.7, 100)]
    strata = make_strata(sims, first, 10_000, 0.83)
    assert 0.83 in strata.bounds.tolist()
    g = strata.outside_count
    assert g >= 3 and strata.phase_one.sum() == 1000 and not strata.phase_one_complete
    assert strata.sizes[:g].sum() == pytest.approx(10_000)   # N0 * m_g / M
    assert strata.sizes.sum() == pytest.approx(15_002)
    # Tiny bins were merged, except across the floor (0.5): the two pairs below it stay
    # apart, as the pairs no threshold reaches (a pilot of two judges both).
    assert strata.sizes[g] == 2 and (strata.sizes[g + 1:] >= 20).all()
    assert (strata.phase_one >= 20).all()
    which = strata.of(sims)
    assert (which >= g).all()
    assert np.array_equal(np.bincount(which, minlength=strata.count)[g:], strata.sizes[g:])
    above = strata.of(np.array([0.83, 0.8299]))
    assert above[0] == above[1] + 1                 # the threshold starts a stratum
    assert strata.of_outside(np.array([-0.5, 0.65])).tolist() == [0, g - 1]
    assert strata.label(0).startswith("outside the graph, below")
    again = type(strata).from_json(strata.as_json())
    assert np.array_equal(again.sizes, strata.sizes) and again.outside_count == g


def test_verdicts_to_halve_one_stratum_needs_three_times_as_many_again():
    sizes = np.array([0, 10**9])          # only a (huge) candidate stratum matters
    drawn = np.array([0, 100])
    share = np.array([0.0, 0.3])
    flagged_share = np.array([0.0, 1.0])
    more = verdicts_to_halve(sizes, drawn, share, flagged_share, figure=0)
    assert more is not None and 290 <= more <= 310


def test_a_stratum_capped_by_its_first_phase_can_make_halving_impossible_and_says_so():
    """An outside stratum of a billion pairs can give only its 300 first-phase pairs: with
    100 judged, recall's width can shrink to sqrt(100/300) = 58% at most, so it cannot be
    halved, and the words say why instead of "more than a million more verdicts"."""
    from engine.estimation.measurement import Measurement

    sizes = np.array([10**9, 2000])
    drawn = np.array([100, 200])
    share = np.array([1e-6, 0.5])
    flagged_share = np.array([0.0, 0.5])
    caps = np.array([300, 2000])
    assert verdicts_to_halve(sizes, drawn, share, flagged_share, figure=1, caps=caps) is None
    left = width_left_at_caps(sizes, drawn, share, flagged_share, 1, caps)
    assert left == pytest.approx(np.sqrt(100 / 300), abs=1e-3)
    # without the cap the same doubt halves with verdicts
    assert verdicts_to_halve(sizes, drawn, share, flagged_share, figure=1) is not None
    assert width_left_at_caps(sizes, drawn, share, flagged_share, 1, sizes) < 0.1
    m = Measurement(None, 0.8, 300, 0, {}, "recall", None, "m", None, width_left=left)
    assert m.halving_words().startswith("the widest interval (recall) cannot be halved by "
                                        "verdicts alone: with every pair the sample can draw "
                                        f"judged, about {left:.0%} of its width would be left")
    assert "about 42 more verdicts" in Measurement(None, 0.8, 300, 0, {}, "recall", 42, "m",
                                                   None).halving_words()


def test_rows_with_a_duplicate_never_exceed_the_rows_of_the_file():
    """A few answers in a stratum of millions of pairs (the pairs outside the graph) left
    the interval of "rows with a duplicate" at 1,398,436 in a 2,254-row project; bounded by
    the rows the file has, the whole interval stays within it, and the duplicate pairs'
    within the pairs there are."""
    sizes, flagged_sizes = np.array([40, 2_500_000]), np.array([30, 0])
    stratum = np.array([0] * 10 + [1] * 5)
    dup = np.array([1, 1, 1, 1, 1, 0, 0, 0, 1, 1] + [0] * 5, bool)
    flag = np.array([1] * 8 + [0, 0] + [0] * 5, bool)
    weight = np.where(dup, 1.0, 0.0)
    unbounded = estimate(sizes, flagged_sizes, stratum, dup, flag, rows=RowsInput(3, weight))
    assert unbounded.rows.high > 2254              # what the file cannot hold
    got = estimate(sizes, flagged_sizes, stratum, dup, flag, rows=RowsInput(3, weight, 2254))
    assert got.rows.low <= got.rows.value <= got.rows.high <= 2254
    assert got.rows.value == pytest.approx(unbounded.rows.value)
    assert got.duplicates.high <= sizes.sum()


def test_the_floor_is_a_boundary_on_both_sides_even_where_its_bins_are_small():
    rng = np.random.default_rng(0)
    sims = np.r_[rng.uniform(0.5, 1.0, 5000), [0.31, 0.42, 0.48]]
    first = np.r_[rng.uniform(-0.1, 0.45, 900), rng.uniform(0.5, 0.7, 100), [0.49]]
    strata = make_strata(sims, first, 10_000, 0.83)
    assert 0.5 in strata.bounds.tolist() and 0.5 in strata.outside_bounds.tolist()
    assert strata.floor == 0.5
    below = strata.below_floor()
    g = strata.outside_count
    assert below[:g].tolist() == (strata.outside_bounds[1:] <= 0.5).tolist()
    assert below[g:].tolist() == (strata.bounds[1:] <= 0.5).tolist()
    # A threshold under the floor is the floor: every flagged pair is above it.
    low = make_strata(sims, first, 10_000, 0.45)
    assert low.floor == 0.45 and 0.45 in low.outside_bounds.tolist()


def test_recall_down_to_the_floor_is_exact_on_a_census_and_counts_what_lies_below():
    """Every pair judged: recall and duplicates down to 0.5 are the exact figures over the
    pairs scoring 0.5 or more, and what lies below is the exact count, at most itself."""
    pop = _population(0, 300, 600, 0.02)
    rng = np.random.default_rng(1)
    flagged = (pop.similarity >= 0.8) & pop.candidate
    sample = run_design(pop, flagged, 0.8, 900, rng)
    got = sample.estimate(pop, flagged, threshold=0.8).floored
    which = sample.strata.below_floor()[sample.stratum_of]
    assert (pop.similarity[~which] >= 0.5).all() and (pop.similarity[which] < 0.5).all()
    above_dups = pop.duplicate & ~which
    recall = (flagged & above_dups).sum() / above_dups.sum()
    assert got.floor == 0.5
    assert got.recall.value == pytest.approx(recall)
    assert (got.recall.low, got.recall.high) == pytest.approx((recall, recall))
    assert got.duplicates.value == pytest.approx(above_dups.sum())
    f1 = 2 * (flagged & above_dups).sum() / ((flagged & ~which).sum() + above_dups.sum())
    assert (got.f1.value, got.f1.low, got.f1.high) == pytest.approx((f1, f1, f1))
    hidden = int((pop.duplicate & which).sum())
    assert hidden > 0
    assert got.below["pairs"] == int(which.sum()) == got.below["answered"]
    assert got.below["duplicates_found"] == hidden
    assert got.below["estimate"] == pytest.approx(hidden)
    assert got.below["at_most"] == pytest.approx(hidden)


def test_recall_down_to_the_floor_covers_and_is_narrower_than_the_whole_files():
    """Millions of unrelated pairs below the floor, a few duplicates among them: the whole
    file's recall cannot be pinned by 150 verdicts; recall down to 0.5 can, and its
    interval holds the truth."""
    rng = np.random.default_rng(5)
    cand = 4000
    sims = np.clip(rng.beta(5, 2, cand) * 0.7 + 0.3, 0, 1)
    dup = rng.random(cand) < 1 / (1 + np.exp(-(sims - 0.8) / 0.04))
    outside = 2_000_000
    out_sims = np.r_[rng.beta(2, 9, outside - 3000) * 0.5, rng.uniform(0.5, 0.75, 3000)]
    out_dup = np.r_[rng.random(outside - 3000) < 2e-6, rng.random(3000) < 0.05]
    pop = PairPopulation(np.r_[sims, out_sims],
                         np.r_[np.ones(cand, bool), np.zeros(outside, bool)],
                         np.r_[dup, out_dup])
    flagged = pop.candidate & (pop.similarity >= 0.8)
    above = pop.similarity >= 0.5
    truth = (flagged & pop.duplicate & above).sum() / (pop.duplicate & above).sum()
    reps, covered, widths, whole = 30, 0, [], []
    for rep in range(reps):
        r = np.random.default_rng(200 + rep)
        stratification = pop.strata(0.8, r, phase_one=50_000)
        sample = run_design(pop, flagged, 0.8, 150, r, batch=5, stratification=stratification)
        got = sample.estimate(pop, flagged, threshold=0.8, draws=1000, seed=rep)
        f = got.floored.recall
        covered += f.low <= truth <= f.high
        widths.append(f.half_width)
        whole.append(got.recall.half_width)
        assert got.floored.below["at_most"] >= got.floored.below["estimate"]
    assert covered >= 0.9 * reps, covered
    assert np.mean(widths) < 0.5 * np.mean(whole), (np.mean(widths), np.mean(whole))


def test_precision_covers_when_most_of_the_flagged_pairs_are_judged():
    """With 120 of 200 flagged pairs judged, the 80 left are a binomial count at the judged
    share, not the share times 80: the product alone keeps about 60% of the spread and its
    95% interval covered about 80% of the time (measured on this population: 0.78)."""
    rng = np.random.default_rng(5)
    flagged_dup = rng.random(200) < 0.5
    sizes, flagged_sizes = np.array([200.0, 5000.0]), np.array([200.0, 0.0])
    truth = flagged_dup.mean()
    reps, covered, widths = 300, 0, []
    for rep in range(reps):
        draw = np.random.default_rng(1000 + rep).choice(200, 120, replace=False)
        stratum = np.r_[np.zeros(120, np.int64), np.ones(30, np.int64)]
        dup = np.r_[flagged_dup[draw], np.zeros(30, bool)]
        flag = np.r_[np.ones(120, bool), np.zeros(30, bool)]
        got = estimate(sizes, flagged_sizes, stratum, dup, flag, draws=1000, seed=rep)
        covered += got.precision.low <= truth <= got.precision.high
        widths.append(got.precision.half_width)
    # the binomial standard error with the finite-population correction, times 1.96
    nominal = 1.96 * np.sqrt(0.25 / 120 * (200 - 120) / 200)
    assert covered / reps >= 0.92, covered / reps
    assert 0.85 * nominal <= np.mean(widths) <= 1.2 * nominal, (np.mean(widths), nominal)
