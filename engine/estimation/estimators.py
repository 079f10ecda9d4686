"""From judged draws to precision, recall, F1 and the number of duplicates, each with a
95% interval: stratified estimators, post-stratified by what the threshold flags.

Within stratum h (N_h pairs, n_h judged, drawn as a simple random sample), the threshold
splits the pairs in two domains of known size: F_h flagged (in one cluster of the cut) and
N_h - F_h not. The judged pairs of a domain are a random sample of it, so its number of
duplicates is estimated by its size times their duplicate share (post-stratification; when
no judged pair falls in a domain, the stratum's share stands in). Then

    TP = sum_h F_h p_hf,   D = TP + sum_h (N_h - F_h) p_hu,   F = sum_h F_h (known),
    precision = TP / F,    recall = TP / D,    F1 = 2 TP / (F + D).

With every pair judged each of these is the exact count (tests check it on small
populations).

Intervals. With about 150 verdicts and duplicates a few percent of the pairs, normal
(delta-method) intervals under-cover: a stratum with 0 duplicates in 10 verdicts has a
variance estimate of 0. Each domain's duplicate share instead gets its Jeffreys posterior,
Beta(y + 1/2, n - y + 1/2), whose intervals have close to nominal frequentist coverage for a
binomial even at 0 successes (Brown, Cai & DasGupta 2001), its ends shifted `END_SHIFT`
counts outwards; the duplicates among the pairs
not yet judged are a binomial count of the rest of the domain at that share (the
Beta-binomial predictive: with every pair judged the interval is a point, and with most of a
domain judged its width is the finite-population one, `unjudged_duplicates`). Each figure's
interval is the 2.5 and 97.5 percentiles of the figure computed over `DRAWS` joint draws of
all shares, which carries the correlations of numerator and denominator through the ratios
without a linearisation. Coverage is checked by simulation (tests/engine/estimation,
benchmarks/estimate.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

DRAWS = 4000
LEVEL = 0.95
# The two ends of an interval draw each share from a Beta posterior, `beta_parameters`:
# Jeffreys' Beta(y + 1/2, n - y + 1/2) moved `END_SHIFT` counts towards each end (the lower
# end's a and the upper end's b less the shift), and exact at the edges as Clopper-Pearson's
# are: no duplicate among the verdicts gives the lower end a share of exactly 0, all
# duplicates the upper end exactly 1. Summed over strata a share drawn from the plain
# Jeffreys posterior is not enough: five strata with no duplicate found would give their sum
# a lower end above 0, and a truth of 0 would never be covered (measured: recall covered 58%
# of the time on a synthetic population; with exact edges 99%). How far the ends move
# between the edges was chosen on validation populations only (`benchmarks/estimate_choice.py`:
# every candidate on the same samples; the rule, the smallest shift with every figure's
# coverage at least 94% at 150, 300 and 600 answers, fixed before the run). Of 0.5, 0.375,
# 0.25, 0.125 and 0 it chose 0.125 (worst coverage 94.0%; 0 covered recall 91.3%); at 300
# answers on the imbalanced validation population precision's half-width is 6.2 points
# against 6.8 with 0.5, recall down to the floor's 9.3 against 10.1.
END_SHIFT = 0.125
LOWER = "low"
UPPER = "high"
FIGURES = ("precision", "recall", "f1", "duplicates")


@dataclass(frozen=True)
class Figure:
    """An estimate with its interval (fractions for ratios, counts for counts)."""

    value: float
    low: float
    high: float

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def as_json(self) -> dict:
        return {"value": _num(self.value), "low": _num(self.low), "high": _num(self.high)}


@dataclass(frozen=True)
class RowsInput:
    """What the estimate of "rows with at least one duplicate" needs beyond the pairs.

    `copies`: live rows whose text has another live row (known exactly). `weight[i]`, for
    each judged draw: 0 unless it is a duplicate; then, for each of its two texts held by a
    single row, 1 over that text's estimated number of duplicate texts (see
    `engine.services.measuring`), so that summing over a text's duplicate pairs counts it
    once. `rows`: the live rows of the graph's texts, the most there can be: an interval
    never says more rows have a duplicate than the file has (it said 1,398,436 of 2,254)."""

    copies: int
    weight: np.ndarray
    rows: int | None = None
    # The same weights counting only duplicates at or above the recall floor
    # (`JudgedDraws.row_weights(below=...)`): "rows with a duplicate" down to the floor.
    floor_weight: np.ndarray | None = None


@dataclass(frozen=True)
class Floored:
    """Recall, F1 and the number of duplicates quoted down to a similarity `floor` (over
    the pairs of the strata at or above it), and what the pairs below could hide: `below` holds
    their number, the verdicts there, the duplicates those found, the estimate of their
    duplicates and the upper end of its 95% interval (`at_most`)."""

    floor: float
    recall: Figure
    duplicates: Figure
    below: dict
    f1: Figure | None = None
    rows: Figure | None = None    # rows with a duplicate scoring at least the floor

    def as_json(self) -> dict:
        return {"recall_down_to": {"floor": self.floor, **self.recall.as_json()},
                "duplicates_down_to": {"floor": self.floor, **self.duplicates.as_json()},
                **({"f1_down_to": {"floor": self.floor, **self.f1.as_json()}}
                   if self.f1 is not None else {}),
                **({"rows_with_duplicates_down_to": {"floor": self.floor,
                                                     **self.rows.as_json()}}
                   if self.rows is not None else {}),
                "below_floor": {"floor": self.floor, **self.below}}


@dataclass(frozen=True)
class Estimate:
    threshold: float
    precision: Figure
    recall: Figure
    f1: Figure
    duplicates: Figure
    rows: Figure | None
    flagged: int                 # flagged pairs at this threshold (known exactly)
    verdicts: int                # drawn pairs judged
    ready: bool                  # every non-empty stratum has a verdict
    strata: list[dict] = field(default_factory=list)
    floored: Floored | None = None

    def figure(self, name: str) -> Figure:
        return getattr(self, name)

    def quoted(self, name: str) -> Figure:
        """The figure as it is quoted first: recall and F1 down to the floor where there is
        one (the whole file's are beside them), else the figure itself."""
        if name == "recall" and self.floored is not None:
            return self.floored.recall
        if name == "f1" and self.floored is not None and self.floored.f1 is not None:
            return self.floored.f1
        return self.figure(name)

    def uncertain_stratum(self) -> dict | None:
        """The stratum above the floor whose pairs without a verdict could hide the most
        missed duplicates at the interval's upper end: what a wide recall comes from (the
        pairs below the floor are reported apart)."""
        return max((s for s in self.strata if not s.get("below_floor")),
                   key=lambda s: s["missed_could_be"], default=None)

    def widest(self) -> tuple[str, Figure]:
        """The ratio figure, as quoted, with the widest interval (what "halve the widest"
        means)."""
        ratios = [(name, self.quoted(name)) for name in ("precision", "recall", "f1")]
        finite = [r for r in ratios if np.isfinite(r[1].half_width)]
        return max(finite or ratios, key=lambda r: r[1].half_width)

    def as_json(self) -> dict:
        return {"threshold": round(self.threshold, 4), "answers": self.verdicts,
                "ready": self.ready, "flagged_pairs": self.flagged,
                **{name: self.figure(name).as_json() for name in FIGURES},
                "rows_with_duplicates": self.rows.as_json() if self.rows else None,
                **(self.floored.as_json() if self.floored else {}),
                "strata": self.strata}


def estimate(sizes: np.ndarray, flagged_sizes: np.ndarray, stratum: np.ndarray,
             duplicate: np.ndarray, flagged: np.ndarray, *, threshold: float = float("nan"),
             rows: RowsInput | None = None, draws: int = DRAWS, seed: int = 0,
             labels: list[str] | None = None,
             phase_one: tuple[np.ndarray, int] | None = None,
             floor: tuple[float, np.ndarray] | None = None,
             shift: float = END_SHIFT) -> Estimate:
    """The figures at one threshold.

    `sizes[h]` pairs in stratum h, `flagged_sizes[h]` of them flagged at the threshold;
    for each judged draw its `stratum`, whether it is a `duplicate` and whether it is
    `flagged`. `seed` fixes the interval's random draws (the same seed at every threshold
    gives a smooth band). `phase_one` = (m, N0): the first len(m) strata's sizes are
    estimates, N0 * m / sum(m), from a uniform first phase of the N0 pairs outside the graph;
    the intervals then draw those sizes too (N0 times a Dirichlet(m + 1/2) share).
    `floor` = (s, below): recall and the number of duplicates are also quoted over the
    strata not `below` (those scoring s or more), with the pairs below reported apart
    (`Floored`). `shift`: how far the interval ends move (`END_SHIFT`; only the benchmark
    that chooses it passes another).
    """
    stratum = np.asarray(stratum, dtype=np.int64)
    dup = np.asarray(duplicate, dtype=bool)
    flag = np.asarray(flagged, dtype=bool)
    count = len(sizes)
    n_f = np.bincount(stratum[flag], minlength=count)
    y_f = np.bincount(stratum[flag & dup], minlength=count)
    n_u = np.bincount(stratum[~flag], minlength=count)
    y_u = np.bincount(stratum[~flag & dup], minlength=count)
    n_h, y_h = n_f + n_u, y_f + y_u
    n_f_pop = np.asarray(flagged_sizes, dtype=np.float64)
    if (n_f > n_f_pop).any():
        raise ValueError("more judged flagged pairs than a stratum flags")
    # An estimated size is never below what is known to be in the stratum.
    sizes = np.maximum(np.asarray(sizes, dtype=np.float64), n_f_pop + n_u)
    n_u_pop = sizes - n_f_pop

    pooled = np.divide(y_h, n_h, out=np.zeros(count), where=n_h > 0)
    p_f = np.divide(y_f, n_f, out=pooled.copy(), where=n_f > 0)
    p_u = np.divide(y_u, n_u, out=pooled.copy(), where=n_u > 0)
    flagged_total = float(n_f_pop.sum())
    tp = float(np.sum(n_f_pop * p_f))
    dups = tp + float(np.sum(n_u_pop * p_u))
    point = _figures(np.array([tp]), np.array([dups]), flagged_total)

    rng = np.random.default_rng(seed)
    unflagged_sizes = n_u_pop
    if phase_one is not None:
        m, outside_total = np.asarray(phase_one[0], dtype=np.float64), phase_one[1]
        g = len(m)
        drawn_sizes = np.tile(sizes, (draws, 1))
        drawn_sizes[:, :g] = outside_total * rng.dirichlet(m + 0.5, size=draws)
        drawn_sizes = np.maximum(drawn_sizes, n_f_pop + n_u)
        unflagged_sizes = drawn_sizes - n_f_pop
    # Each bound from the side of every share that pushes the figure that way: the upper
    # bound of recall takes flagged duplicates from their upper ends and missed ones from
    # their lower ends.
    tp_lo = _domain_totals(rng, draws, n_f_pop, n_f, y_f, n_h, y_h, LOWER, shift)
    tp_hi = _domain_totals(rng, draws, n_f_pop, n_f, y_f, n_h, y_h, UPPER, shift)
    miss_lo = _domain_totals(rng, draws, unflagged_sizes, n_u, y_u, n_h, y_h, LOWER, shift)
    miss_hi = _domain_totals(rng, draws, unflagged_sizes, n_u, y_u, n_h, y_h, UPPER, shift)
    low = _figures(tp_lo, tp_lo + miss_hi, flagged_total)
    high = _figures(tp_hi, tp_hi + miss_lo, flagged_total)
    low["duplicates"] = tp_lo + miss_lo
    high["duplicates"] = tp_hi + miss_hi
    out = {name: _interval(float(point[name][0]), low[name], high[name]) for name in FIGURES}
    floored = None
    if floor is not None and np.asarray(floor[1], dtype=bool).any():
        below = np.asarray(floor[1], dtype=bool)
        domains = (n_f_pop, n_f, y_f, unflagged_sizes, n_u, y_u, n_h, y_h)
        floored = _floored(float(floor[0]), below, domains, (n_f_pop * p_f, n_u_pop * p_u),
                           sizes, rng, draws, shift)

    rows_figure = None
    if rows is not None:
        rows_figure = _rows(rows, sizes, stratum, dup, n_h, y_h, rng, draws, shift)
        if floored is not None and rows.floor_weight is not None:
            # The strata below the floor hold no pair of this figure: no size, no weight.
            keep = ~np.asarray(floor[1], dtype=bool)
            floor_rows = RowsInput(rows.copies, np.where(keep[stratum], rows.floor_weight, 0.0),
                                   rows.rows)
            floored = replace(floored, rows=_rows(floor_rows, sizes * keep, stratum,
                                                  dup & keep[stratum], n_h * keep, y_h * keep,
                                                  rng, draws, shift))

    # How many more missed duplicates each stratum could hold at its interval's upper end:
    # where the width of recall (and of the number of duplicates) comes from.
    from scipy.stats import beta as beta_dist

    own = n_u > 0
    a_u, b_u = beta_parameters(np.where(own, y_u, y_h), np.where(own, n_u, n_h), UPPER,
                                shift)
    upper = np.where(b_u > 0, beta_dist.ppf(1 - (1 - LEVEL) / 2, a_u, np.maximum(b_u, 1e-9)),
                     1.0)
    room = np.maximum(n_u_pop - n_u, 0.0) * np.maximum(upper - p_u, 0.0)
    table = [{"stratum": labels[h] if labels else str(h), "pairs": int(round(sizes[h])),
              "flagged": int(n_f_pop[h]), "answered": int(n_h[h]),
              "duplicates_found": int(y_h[h]), "missed_could_be": round(float(room[h])),
              **({"below_floor": bool(floor[1][h])} if floor is not None else {})}
             for h in range(count)]
    return Estimate(threshold, out["precision"], out["recall"], out["f1"], out["duplicates"],
                    rows_figure, int(flagged_total), int(len(stratum)),
                    bool(((n_h > 0) | (sizes == 0)).all()), table, floored)


def _floored(floor: float, below: np.ndarray, domains: tuple, point: tuple[np.ndarray, ...],
             sizes: np.ndarray, rng: np.random.Generator, draws: int,
             shift: float = END_SHIFT) -> Floored:
    """Recall and duplicates over the strata not `below`, and the duplicates the strata
    `below` could hold: the same domain totals as the whole file's, each restricted to its
    strata (a stratum left out has no pairs, no verdicts). `domains`: the flagged and
    unflagged domains' sizes, verdicts and duplicates found, and each stratum's verdicts
    and duplicates found; `point`: each stratum's estimated flagged and missed
    duplicates."""
    n_f_pop, n_f, y_f, unflagged, n_u, y_u, n_h, y_h = domains
    tp_point, miss_point = point

    def totals(keep: np.ndarray, size: np.ndarray, n: np.ndarray, y: np.ndarray,
               prior: str) -> np.ndarray:
        return _domain_totals(rng, draws, size * keep, n * keep, y * keep, n_h, y_h, prior,
                              shift)

    above = ~below
    tp_lo, tp_hi = (totals(above, n_f_pop, n_f, y_f, p) for p in (LOWER, UPPER))
    miss_lo, miss_hi = (totals(above, unflagged, n_u, y_u, p) for p in (LOWER, UPPER))
    tp, dups = float(tp_point[above].sum()), float((tp_point + miss_point)[above].sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        recall = _interval(tp / dups if dups > 0 else float("nan"),
                           np.where(tp_lo + miss_hi > 0, tp_lo / (tp_lo + miss_hi), np.nan),
                           np.where(tp_hi + miss_lo > 0, tp_hi / (tp_hi + miss_lo), np.nan))
    duplicates = _interval(dups, tp_lo + miss_lo, tp_hi + miss_hi)
    flagged = float(n_f_pop[above].sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        f1 = _interval(2 * tp / (flagged + dups) if flagged + dups > 0 else float("nan"),
                       2 * tp_lo / (flagged + tp_lo + miss_hi),
                       2 * tp_hi / (flagged + tp_hi + miss_lo))
    hidden_hi = (totals(below, n_f_pop, n_f, y_f, UPPER)
                 + totals(below, unflagged, n_u, y_u, UPPER))
    hidden = float((tp_point + miss_point)[below].sum())
    at_most = _interval(hidden, hidden_hi, hidden_hi).high
    return Floored(floor, recall, duplicates, {
        "pairs": int(round(float(sizes[below].sum()))), "answered": int(n_h[below].sum()),
        "duplicates_found": int(y_h[below].sum()), "estimate": _num(hidden),
        "at_most": _num(at_most)}, f1)


def stratum_shares(sizes: np.ndarray, stratum: np.ndarray, duplicate: np.ndarray
                   ) -> np.ndarray:
    """Each stratum's duplicate share among its judged draws (0 where none)."""
    count = len(sizes)
    stratum = np.asarray(stratum, dtype=np.int64)
    n_h = np.bincount(stratum, minlength=count)
    y_h = np.bincount(stratum[np.asarray(duplicate, dtype=bool)], minlength=count)
    return np.divide(y_h, n_h, out=np.zeros(count), where=n_h > 0)


def beta_parameters(y: np.ndarray, n: np.ndarray, end: str, shift: float = END_SHIFT
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The Beta(a, b) a share is drawn from for interval end `end` (`LOWER` or `UPPER`), given
    y duplicates among n verdicts (see `END_SHIFT`). With no verdict at all the lower end's
    share is 0 and the upper end's 1: an unjudged domain could be anything."""
    y = np.asarray(y, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    if end == LOWER:
        return np.where(y > 0, y + 0.5 - shift, 0.0), n - y + 0.5
    return y + 0.5, np.where(n > y, n - y + 0.5 - shift, 0.0)


def _domain_totals(rng: np.random.Generator, draws: int, size: np.ndarray, n: np.ndarray,
                   y: np.ndarray, n_h: np.ndarray, y_h: np.ndarray,
                   prior: str, shift: float = END_SHIFT) -> np.ndarray:
    """(draws,) joint draws of a domain family's duplicates summed over strata: the judged
    duplicates plus a binomial count of the rest of each domain at a share drawn from
    `beta_parameters` for interval end `prior` (the stratum's counts when the domain has no
    verdict of its own).
    `size`: each domain's size, or (draws, strata) sizes drawn with the shares."""
    own = n > 0
    a, b = beta_parameters(np.where(own, y, y_h), np.where(own, n, n_h), prior, shift)
    rest = np.maximum(np.asarray(size, dtype=np.float64) - n, 0.0)
    live = ((rest > 0).any(axis=0) if rest.ndim == 2 else rest > 0) & (a > 0)
    total = np.full(draws, float(y.sum()))
    if live.any():
        shares = rng.beta(a[live], np.maximum(b[live], 1e-9), size=(draws, int(live.sum())))
        rest_live = rest[:, live] if rest.ndim == 2 else rest[live]
        total += unjudged_duplicates(rng, rest_live, shares).sum(axis=1)
    return total


def unjudged_duplicates(rng: np.random.Generator, rest: np.ndarray, shares: np.ndarray
                        ) -> np.ndarray:
    """Duplicates among `rest` pairs without a verdict, given their share: a binomial count,
    so that with the Beta-drawn share the count is Beta-binomial, the posterior predictive.

    Why not `shares * rest`: that keeps only the share's uncertainty, m^2 p(1-p)/n for m pairs
    left after n verdicts, and drops the pairs' own binomial spread, m p(1-p). Where a large
    share of a domain is judged (m near n) that is half the variance: precision on the sample
    questions at 600 answers covered 90% (truth above the interval, never below) with the
    product, 95% with the count. The frequentist variance of a post-stratified total,
    F (F - n) p(1-p) / n with F = n + m, is exactly the Beta-binomial's m p(1-p) (n + m) / n."""
    counts = np.rint(np.broadcast_to(rest, shares.shape)).astype(np.int64)
    return rng.binomial(counts, np.clip(shares, 0.0, 1.0)).astype(np.float64)


def _figures(tp: np.ndarray, dups: np.ndarray, flagged: float) -> dict[str, np.ndarray]:
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = tp / flagged if flagged > 0 else np.full_like(tp, np.nan)
        recall = np.where(dups > 0, tp / dups, np.nan)
        f1 = np.where(flagged + dups > 0, 2 * tp / (flagged + dups), np.nan)
    return {"precision": precision, "recall": recall, "f1": f1, "duplicates": dups}


def _interval(value: float, low_draws: np.ndarray, high_draws: np.ndarray) -> Figure:
    if not np.isfinite(value):
        return Figure(value, float("nan"), float("nan"))
    tail = (1 - LEVEL) / 2 * 100
    lows, highs = low_draws[np.isfinite(low_draws)], high_draws[np.isfinite(high_draws)]
    low = float(np.percentile(lows, tail)) if len(lows) else float("nan")
    high = float(np.percentile(highs, 100 - tail)) if len(highs) else float("nan")
    return Figure(value, min(low, value), max(high, value))


def _rows(rows: RowsInput, sizes: np.ndarray, stratum: np.ndarray, dup: np.ndarray,
          n_h: np.ndarray, y_h: np.ndarray, rng: np.random.Generator, draws: int,
          shift: float = END_SHIFT) -> Figure:
    """Rows with a duplicate: the rows with copies, plus the stratified estimate of
    single-row texts with a duplicate text (sum of `weight` over duplicate pairs). Its
    interval draws each stratum's duplicate share (Jeffreys) and the mean weight of its
    duplicates (a Bayesian bootstrap of those judged; 2, the most a pair can add, where
    a stratum has none and no stratum has any)."""
    weight = np.asarray(rows.weight, dtype=np.float64)
    count = len(sizes)
    z_sum = np.bincount(stratum, weights=weight, minlength=count)
    value = rows.copies + float(np.sum(np.divide(sizes * z_sum, n_h, out=np.zeros(count),
                                                 where=n_h > 0)))
    rest = (sizes - n_h).astype(np.float64)
    all_dup_weights = weight[dup]
    mean_weights = np.empty((draws, count))
    for h in range(count):
        w = weight[(stratum == h) & dup]
        if not len(w):
            w = all_dup_weights
        if not len(w):
            mean_weights[:, h] = 2.0
            continue
        mean_weights[:, h] = rng.dirichlet(np.ones(len(w)), size=draws) @ w
    ends = []
    for end in (LOWER, UPPER):
        shares = np.zeros((draws, count))
        a, b = beta_parameters(y_h, n_h, end, shift)
        live = a > 0
        if live.any():
            shares[:, live] = rng.beta(a[live], np.maximum(b[live], 1e-9),
                                       size=(draws, int(live.sum())))
        found_later = unjudged_duplicates(rng, np.maximum(rest, 0.0), shares)
        ends.append(rows.copies + z_sum.sum() + (found_later * mean_weights).sum(axis=1))
    found = _interval(value, ends[0], ends[1])
    if rows.rows is None:
        return found
    most = float(rows.rows)
    return Figure(min(found.value, most), min(found.low, most), min(found.high, most))


def _num(x: float) -> float | None:
    return None if not np.isfinite(x) else round(float(x), 6)
