"""Holding labelled pairs out for measurement without leaking questions into training.

If a question appears in a training pair and in a held-out pair, the held-out score measures
memory, not generalisation: the model has already been pulled towards that question's
neighbours. So the split is made over questions, not pairs. Questions are the nodes of a graph
and pairs its edges; a pair's two sides are one node when they share a key (see
`LabelledPair.key_a`) or the same normalised text, which catches identical texts filed under
different ids. Every connected component goes wholly to one side.

Whole components rarely add up to the requested fraction exactly: the split tries several
seeded orders, greedily filling the held-out side towards the target, and keeps the one
closest to the target (and to the overall share of duplicates, so both sides can be
measured). The fraction actually reached is reported.

A giant component (labelled data where every question is chained to every other, common when
one question was labelled against many candidates) can make any whole-component split miss
the target by far, or leave one side empty. Then, and only then, that one component is cut:
its questions are ordered breadth-first from a seeded start, so that neighbours stay together,
a prefix of that order goes to the held-out side, and the pairs that would join the two sides
are dropped from both (`PairSplit.dropped`), which keeps the split free of leakage at the cost
of those pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix, csr_matrix
from scipy.sparse.csgraph import breadth_first_order, connected_components

from engine.errors import InputError
from engine.text import norm_key
from engine.training.pairs import LabelledPair

DEFAULT_HELD_OUT = 0.5  # half measured, half trained on: the wizard's and CLI's default
DEFAULT_TOLERANCE = 0.1  # a whole-component split missing the target by more cuts the giant
_TRIES = 16  # seeded component orders tried
_BALANCE_WEIGHT = 0.5  # how much a side's share of duplicates straying from the overall counts
_DROP_WEIGHT = 0.5  # how much losing pairs counts against a cut of the giant component


@dataclass(frozen=True)
class PairSplit:
    train: list[LabelledPair]
    held_out: list[LabelledPair]
    requested: float  # the fraction asked to be held out
    held_out_fraction: float  # the fraction reached: held out / (train + held out)
    components: int  # groups of connected questions
    largest_component: int  # pairs in the biggest group
    dropped: list[LabelledPair]  # pairs cut because the biggest group had to be split

    @property
    def note(self) -> str:
        """One line for the user when the split is not what they asked for, else ""."""
        if self.dropped:
            return (f"{len(self.dropped)} pairs were left out: their questions are linked to "
                    f"almost all others, so they could not go to either side without sharing "
                    f"questions between training and measurement")
        if abs(self.held_out_fraction - self.requested) > 0.05:
            return (f"{self.held_out_fraction:.0%} of the pairs were held out rather than "
                    f"{self.requested:.0%}, so that no question is on both sides")
        return ""


def split_pairs(pairs: Sequence[LabelledPair], held_out: float = DEFAULT_HELD_OUT,
                seed: int = 0, *, tolerance: float = DEFAULT_TOLERANCE) -> PairSplit:
    """Split `pairs` into training and held-out sets sharing no question; see the module doc.

    Deterministic for a given `seed`. Raises InputError when the pairs cannot be split so that
    both sides get some (for instance when all are about the same two questions).
    """
    if not 0.0 < held_out < 1.0:
        raise ValueError(f"held_out must be between 0 and 1, not {held_out}")
    n = len(pairs)
    if n < 2:
        raise InputError(f"{n} labelled pairs cannot be split; at least 2 are needed")
    qa, qb = _question_ids(pairs)
    n_questions = int(max(qa.max(), qb.max())) + 1
    graph = coo_matrix((np.ones(n), (qa, qb)), shape=(n_questions, n_questions)).tocsr()
    n_comp, comp_of_question = connected_components(graph, directed=False)
    comp = comp_of_question[qa]
    sizes = np.bincount(comp, minlength=n_comp)
    dup = np.array([p.is_duplicate for p in pairs], dtype=float)
    dups = np.bincount(comp, weights=dup, minlength=n_comp)
    rng = np.random.default_rng(seed)
    target = held_out * n

    held_comps = _best_whole_split(sizes, dups, target, held_out, rng)
    held_pairs = held_comps[comp]
    reached = held_pairs.sum() / n
    dropped_mask = np.zeros(n, dtype=bool)
    if abs(reached - held_out) > tolerance or not 0 < held_pairs.sum() < n:
        giant = int(np.argmax(sizes))
        held_pairs, dropped_mask = _cut_giant(giant, comp, comp_of_question, graph, qa, qb,
                                              sizes, dups, held_out, rng)
    train_idx = np.flatnonzero(~held_pairs & ~dropped_mask)
    held_idx = np.flatnonzero(held_pairs & ~dropped_mask)
    if len(train_idx) == 0 or len(held_idx) == 0:
        raise InputError(f"the {n} labelled pairs are all about the same questions, so none can "
                         f"be held out without also being trained on; label more questions")
    return PairSplit(
        train=[pairs[i] for i in train_idx],
        held_out=[pairs[i] for i in held_idx],
        requested=held_out,
        held_out_fraction=len(held_idx) / (len(held_idx) + len(train_idx)),
        components=int(n_comp),
        largest_component=int(sizes.max()),
        dropped=[pairs[i] for i in np.flatnonzero(dropped_mask)],
    )


def _question_ids(pairs: Sequence[LabelledPair]) -> tuple[np.ndarray, np.ndarray]:
    """A question number for each side of each pair: one per key, merged with its text's."""
    names: dict[str, int] = {}
    sides: list[int] = []  # key node of each side: a0, b0, a1, b1…
    links_from: list[int] = []
    links_to: list[int] = []
    for pair in pairs:
        for key, text in ((pair.key_a, pair.text_a), (pair.key_b, pair.text_b)):
            key_node = names.setdefault("key:" + key, len(names))
            text_node = names.setdefault("text:" + norm_key(text), len(names))
            sides.append(key_node)
            links_from.append(key_node)
            links_to.append(text_node)
    size = len(names)
    same = coo_matrix((np.ones(len(links_from)), (links_from, links_to)), shape=(size, size))
    _, question = connected_components(same, directed=False)
    ids = question[np.array(sides)]
    return ids[0::2], ids[1::2]


def _best_whole_split(sizes: np.ndarray, dups: np.ndarray, target: float, fraction: float,
                      rng: np.random.Generator) -> np.ndarray:
    """Which components to hold out: the best of several greedy fills in seeded orders."""
    n = sizes.sum()
    overall = dups.sum() / n
    best, best_score = np.zeros(len(sizes), dtype=bool), np.inf
    for _ in range(_TRIES):
        chosen, held = _greedy_fill(sizes, target, rng.permutation(len(sizes)))
        if not 0 < held < n:
            continue
        held_dups = dups[chosen].sum()
        balance = (abs(held_dups / held - overall)
                   + abs((dups.sum() - held_dups) / (n - held) - overall))
        score = abs(held / n - fraction) + _BALANCE_WEIGHT * balance
        if score < best_score:
            best, best_score = chosen, score
    return best


def _greedy_fill(sizes: np.ndarray, target: float, order: np.ndarray) -> tuple[np.ndarray, int]:
    """Take components in `order` whenever that brings the total closer to `target`.

    Vectorised: the leading run that stays under the target is taken at once; after it only
    components smaller than twice the remaining gap can still help.
    """
    chosen = np.zeros(len(sizes), dtype=bool)
    total = np.cumsum(sizes[order])
    run = int(np.searchsorted(total, target, side="right"))
    chosen[order[:run]] = True
    held = int(total[run - 1]) if run else 0
    rest = order[run:]
    for c in rest[sizes[rest] < 2 * (target - held)]:
        if target - held < 0.5:  # no component (of at least 1 pair) can bring it closer
            break
        if sizes[c] < 2 * (target - held):
            chosen[c] = True
            held += int(sizes[c])
    return chosen, held


def _cut_giant(giant: int, comp: np.ndarray, comp_of_question: np.ndarray, graph: csr_matrix,
               qa: np.ndarray, qb: np.ndarray, sizes: np.ndarray, dups: np.ndarray,
               fraction: float, rng: np.random.Generator
               ) -> tuple[np.ndarray, np.ndarray]:
    """(held-out mask, dropped mask) after cutting the giant component; see the module doc."""
    n = len(comp)
    others = sizes.copy()
    others[giant] = 0
    other_dups = dups.copy()
    other_dups[giant] = 0
    held_comps = np.zeros(len(sizes), dtype=bool)
    if others.sum() > 0:
        held_comps = _best_whole_split(others, other_dups, fraction * others.sum(), fraction,
                                       rng)
        held_comps[giant] = False
    held_others = int(sizes[held_comps].sum())
    kept_others = int(others.sum())

    members = np.flatnonzero(comp_of_question == giant)
    start = int(members[rng.integers(len(members))])
    order = breadth_first_order(graph, start, directed=False, return_predecessors=False)
    position = np.full(len(comp_of_question), -1)
    position[order] = np.arange(len(order))
    in_giant = comp == giant
    first = np.minimum(position[qa], position[qb])[in_giant]
    last = np.maximum(position[qa], position[qb])[in_giant]
    # Holding out the first k questions of the order: a pair is held when both its questions
    # are among them, trained on when neither is, and dropped otherwise.
    k = np.arange(1, len(order))
    held_g = np.searchsorted(np.sort(last), k, side="left")
    train_g = len(last) - np.searchsorted(np.sort(first), k, side="left")
    dropped = len(last) - held_g - train_g
    held = held_others + held_g
    kept = kept_others + held_g + train_g
    valid = (held > 0) & (kept - held > 0)
    score = np.where(valid, np.abs(held / np.maximum(kept, 1) - fraction)
                     + _DROP_WEIGHT * dropped / n, np.inf)
    best_k = int(k[np.argmin(score)]) if len(k) else 0

    held_mask = held_comps[comp].copy()
    giant_idx = np.flatnonzero(in_giant)
    held_mask[giant_idx] = last < best_k
    dropped_mask = np.zeros(n, dtype=bool)
    dropped_mask[giant_idx] = (first < best_k) & (last >= best_k)
    return held_mask, dropped_mask
