"""Re-cutting only what changed: the greedy cut of an updated neighbour graph, replayed from
the previous cut where the graph changed, with the same result as cutting it whole.

`cut_clusters` walks every candidate centre in one order (most neighbours above the
threshold first, then the strongest, then the lowest position) and each free one takes
its free neighbours. After rows are added or deleted only the rows of a few texts change
(`engine.dedup.graph_update`), so most of that walk would do what it did before.
`recut_clusters` replays only the steps whose outcome can differ, in the same order:

- a text whose row changed (its count, its strength, hence its place in the order, or its
  neighbours) is evaluated again at its new place;
- when a text changes hands (taken by another centre, or let go), every text that has it
  as a neighbour above the threshold and comes later in the order is evaluated again, and
  so is the centre that lost it: a step can affect only later steps, since a centre takes
  a text only while the text's holder comes after it;
- the members of a centre whose row changed count as changing hands too (its place in the
  order may have moved past texts that now find them free, or taken).

A row that changed only below the threshold (a neighbour gained or lost under it: most of
what a week's import does to old rows) is not a changed row here: its place in the order
and what it can take are read from its entries at the threshold or above alone.

Every other step keeps its earlier outcome. A step reads the current holders: a text is
taken at a centre's turn when its holder comes earlier. The result is `cut_clusters` of
the new graph, cluster for cluster and in the same order (hypothesis tests on random
graphs check it), so the incremental and the full cut never differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from heapq import heappop, heappush

import numpy as np

from engine.dedup.cut import TextCluster, cut_clusters, linked_documents, rank_clusters, rows_above
from engine.dedup.graph import KnnGraph, row_spans

# Mirrored copies of an edge may carry similarities a rounding apart (each search measures
# its own); texts that may hold p above the threshold are looked for a little below it.
_MIRROR_SLACK = 1e-3


@dataclass(frozen=True)
class CutState:
    """A cut of one graph at one threshold (positions are that graph's)."""

    graph: KnnGraph
    threshold: float
    clusters: list[TextCluster]          # as `cut_clusters` returns them
    min_size: int = 2


@dataclass(frozen=True)
class Recut:
    state: CutState                      # the new cut
    changed: set[int]                    # centre text ids of clusters new or not as before
    gone: set[int]                       # centre text ids of earlier clusters not cut now


def full_cut(graph: KnnGraph, threshold: float, min_size: int = 2) -> CutState:
    return CutState(graph, threshold, cut_clusters(graph, threshold, min_size), min_size)


def recut_clusters(previous: CutState, graph: KnnGraph, touched: np.ndarray) -> Recut:
    """`cut_clusters(graph, previous.threshold)`, worked out from `previous` (the cut of
    the graph that `graph` was updated from) and `touched`: the ids of the texts whose rows
    changed (texts added; texts that gained or lost a neighbour). Texts removed since need
    not be named: their rows are gone, and their neighbours' rows changed.

    Documents: the rule that keeps them whole (`engine.dedup.cut`) makes a centre's take
    depend on the edges among the documents it could take, so a step is evaluated with
    that rule, and every document's row is compared with its earlier one, with those of
    its neighbours (an edge with a document at one end is scored from windows after the
    vectors' update, which `touched` does not see): a changed one is evaluated again with
    every text that holds it near the threshold, as if it had changed hands. A text that
    became or stopped being a document counts as changed. In a project of questions with
    a few documents that is a few hundred rows, not the whole cut."""
    t, min_size = previous.threshold, previous.min_size
    ids = graph.ids
    n = len(ids)
    counts = graph.counts_at(t)
    rank = _ranks(graph, counts, min_size)

    # The previous outcome in this graph's positions.
    old = previous.clusters
    sizes = np.fromiter((len(c.members) for c in old), dtype=np.int64, count=len(old))
    flat_old = (np.concatenate([c.members for c in old]) if old
                else np.zeros(0, dtype=np.int64))
    # Texts only added after the earlier ones (a week's import): every earlier text keeps
    # its position, and nothing need be looked up (a search of 700k positions: 0.15 s).
    same_positions = n >= len(previous.graph.ids) and \
        np.array_equal(ids[:len(previous.graph.ids)], previous.graph.ids)
    flat = flat_old if same_positions else \
        _positions(ids, previous.graph.ids[flat_old])             # -1: no longer here
    firsts = np.concatenate(([0], np.cumsum(sizes)[:-1])) if len(old) else sizes
    owner = np.full(n, -1, dtype=np.int64)                        # who holds each text
    centre_of = flat[firsts] if len(old) else flat                # -1: centre removed
    holders = np.repeat(centre_of, sizes)
    here = flat >= 0
    owner[flat[here]] = holders[here]
    cluster_at = {int(c): i for i, c in enumerate(centre_of.tolist()) if c >= 0}
    # The walk below reads and writes one text at a time, hundreds of thousands of times
    # after a week's import at 1M texts: Python lists, not NumPy scalars (several times
    # faster per access), and each row's entries near the threshold counted once.
    owner_of: list[int] = owner.tolist()
    rank_of: list[int] = rank.tolist()
    row_start: list[int] = graph.indptr[:-1].tolist()
    count_of: list[int] = counts.tolist()
    counts_near = graph.counts_at(t - _MIRROR_SLACK)
    near: list[int] = counts_near.tolist()
    indices = graph.indices

    members: dict[int, list[int]] = {}      # centres evaluated again: what they hold now
    evaluated: set[int] = set()

    # Earlier clusters as one Python list: a centre's members are a slice of it (a NumPy
    # slice and mask per call took a fifth of the walk after a week's import at 1M texts).
    flat_of: list[int] = flat.tolist()
    first_of: list[int] = firsts.tolist()
    size_of: list[int] = sizes.tolist()
    some_gone = not bool(here.all())

    def held_by(c: int) -> list[int]:
        """What centre c holds now: its earlier members still here, unless evaluated."""
        if c in members:
            return members[c]
        i = cluster_at.get(c)
        if i is None:
            return []
        part = flat_of[first_of[i]:first_of[i] + size_of[i]]
        return [p for p in part if p >= 0] if some_gone else part

    def row_above(p: int) -> list[int]:
        lo = row_start[p]
        return indices[lo:lo + count_of[p]].tolist()

    def above(p: int) -> tuple[list[int], list[float]]:
        lo = row_start[p]
        hi = lo + count_of[p]
        return indices[lo:hi].tolist(), graph.sims[lo:hi].tolist()

    # The queue holds ranks (one text each): integers compare faster than (rank, text).
    candidates = np.flatnonzero(rank >= 0)
    at_rank = np.empty(len(candidates), dtype=np.int64)
    at_rank[rank[candidates]] = candidates
    text_at: list[int] = at_rank.tolist()
    queue: list[int] = []
    queued: set[int] = set()

    def push(p: int, after: int) -> None:
        r = rank_of[p]
        if r > after and p not in queued:
            queued.add(p)
            heappush(queue, r)

    def changed_hands(p: int, after: int) -> None:
        push(p, after)
        lo = row_start[p]
        for q in indices[lo:lo + near[p]].tolist():
            r = rank_of[q]
            if r > after and q not in queued:
                queued.add(q)
                heappush(queue, r)

    # Before the walk every step is still to come (after = -1), so the first evaluations
    # are gathered as a set of texts and queued at once: one by one, the members of the
    # centres whose rows changed and their neighbours took half the re-cut at 1M texts.
    # `hands`: texts that changed hands (they and their neighbours near the threshold are
    # evaluated again); `evaluate`: texts evaluated again themselves.
    hands: list[int] = []
    # Texts whose holder left, or can no longer lead, are free from the start.
    for i in np.flatnonzero(centre_of < 0).tolist():
        for p in flat_of[first_of[i]:first_of[i] + size_of[i]]:
            if p >= 0:
                owner_of[p] = -1
                hands.append(p)
    for c in [c for c in cluster_at if rank_of[c] < 0]:
        for p in held_by(c):
            if owner_of[p] == c:
                owner_of[p] = -1
                hands.append(p)
        members[c] = []
    touched_at = _positions(ids, np.asarray(touched, dtype=np.int64))
    touched_at = touched_at[touched_at >= 0]
    documents = graph.documents.tolist() if graph.documents is not None else None
    around, flipped = _around_documents(previous.graph, graph)
    touched_at = np.union1d(_changed_above(previous.graph, graph,
                                           np.union1d(touched_at, around), counts, t),
                            flipped)
    for p in touched_at.tolist():
        if owner_of[p] == p:
            hands.extend(held_by(p)[1:])
    if documents is not None:
        # A document whose links changed counts as changing hands. So does each text near
        # a changed row: the rule may have left a neighbour of a centre free, and a free
        # text is not among the members that the centre rule alone would hand on.
        hands.extend(p for p in touched_at.tolist() if documents[p])
        spans = row_spans(graph.indptr[touched_at], counts_near[touched_at].astype(np.int64))
        hands.extend(indices[spans].tolist())
    hands.extend(flipped.tolist())
    queued_now = _first_steps(graph, np.asarray(hands, dtype=np.int64), touched_at, rank,
                              counts_near)
    queue.extend(rank[queued_now].tolist())      # ascending: already a heap
    queued.update(queued_now.tolist())

    while queue:
        r = heappop(queue)
        c = text_at[r]
        queued.discard(c)
        evaluated.add(c)
        holder = owner_of[c]
        taken = holder >= 0 and holder != c and rank_of[holder] < r
        take: list[int] = []
        if not taken:
            lo = row_start[c]
            for q in indices[lo:lo + count_of[c]].tolist():
                h = owner_of[q]
                if h < 0 or h == c or rank_of[h] > r:
                    take.append(q)
            if documents is not None and len(take) + 1 >= min_size:
                take = linked_documents(take, documents, rows_above(row_above))
        was = held_by(c)
        if taken or len(take) + 1 < min_size:
            if owner_of[c] == c:
                owner_of[c] = -1
                changed_hands(c, r)
            for m in was[1:]:
                if owner_of[m] == c:
                    owner_of[m] = -1
                    changed_hands(m, r)
            members[c] = []
            continue
        if owner_of[c] != c:
            owner_of[c] = c
            changed_hands(c, r)
        for q in take:
            h = owner_of[q]
            if h != c:
                owner_of[q] = c
                changed_hands(q, r)
                if h >= 0 and h != q:
                    push(h, r)
        kept = set(take)
        for m in was[1:]:
            if m not in kept and owner_of[m] == c:
                owner_of[m] = -1
                changed_hands(m, r)
        members[c] = [c, *take]

    centres = [c for c in cluster_at if c not in members]
    centres += [c for c, held in members.items() if held]
    centres.sort(key=lambda c: rank_of[c])
    made: list[TextCluster] = []
    changed: set[int] = set()
    for c in centres:
        i = cluster_at.get(c)
        if c not in members or (c not in evaluated and i is not None):
            made.append(old[i] if same_positions else
                        TextCluster(flat[firsts[i]:firsts[i] + sizes[i]], old[i].scores))
            continue
        targets, sims = above(c)
        score = dict(zip(targets, sims, strict=True))
        held = members[c]
        cluster = TextCluster(np.asarray(held, dtype=np.int64),
                              np.asarray([1.0, *(score[q] for q in held[1:])],
                                         dtype=np.float32))
        if i is not None and np.array_equal(held, flat[firsts[i]:firsts[i] + sizes[i]]) \
                and np.array_equal(cluster.scores, old[i].scores):
            made.append(old[i] if same_positions else cluster)
            continue
        made.append(cluster)
        changed.add(int(ids[c]))
    now = {int(ids[c]) for c in centres}
    gone = {int(previous.graph.ids[c.members[0]]) for c in old} - now
    return Recut(CutState(graph, t, rank_clusters(made), min_size), changed, gone)


def _around_documents(before: KnnGraph, after: KnnGraph) -> tuple[np.ndarray, np.ndarray]:
    """Positions (of `after`): the documents and every text in their rows, before and
    after, the rows an update may have changed without naming them; and the texts whose
    being a document changed since `before`."""
    now = after.documents if after.documents is not None \
        else np.zeros(len(after.ids), dtype=bool)
    old = _positions(before.ids, after.ids)
    was = np.zeros(len(after.ids), dtype=bool)
    if before.documents is not None:
        held = old >= 0
        was[held] = before.documents[old[held]]
    flipped = np.flatnonzero(now != was)
    docs = np.flatnonzero(now)
    neighbours = after.indices[row_spans(after.indptr[docs], after.degrees()[docs])]
    around = np.union1d(docs, neighbours)
    if before.documents is not None:
        earlier = np.flatnonzero(before.documents)
        held = before.indices[row_spans(before.indptr[earlier], before.degrees()[earlier])]
        still = _positions(after.ids, before.ids[np.union1d(earlier, held)])
        around = np.union1d(around, still[still >= 0])
    return around.astype(np.int64), flipped.astype(np.int64)


def _first_steps(graph: KnnGraph, hands: np.ndarray, evaluate: np.ndarray, rank: np.ndarray,
                 near: np.ndarray) -> np.ndarray:
    """The texts the walk evaluates first, ascending by rank: those of `evaluate` and
    `hands`, and every text among the entries near the threshold (the first `near` of a
    row) of one of `hands`, that can be a centre (rank >= 0): what `changed_hands(p, -1)`
    and `push(p, -1)` queue one text at a time."""
    marked = np.zeros(len(rank), dtype=bool)
    marked[evaluate] = True
    marked[hands] = True
    lengths = near[hands].astype(np.int64)
    marked[graph.indices[row_spans(graph.indptr[hands], lengths)]] = True
    chosen = np.flatnonzero(marked & (rank >= 0))
    return chosen[np.argsort(rank[chosen], kind="stable")]


def _ranks(graph: KnnGraph, counts: np.ndarray, min_size: int) -> np.ndarray:
    """Each text's place in `cut_clusters`' order (-1: never a centre).

    A candidate's strength sums its entries at the threshold or above, which are the first
    `counts[i]` of its row (rows are sorted by similarity): only those entries are read,
    not a mask and a row number for each of the graph's tens of millions, and they are
    summed in the same order as `cut_clusters` sums them."""
    n = len(graph.ids)
    candidates = np.nonzero(counts >= max(min_size - 1, 1))[0]
    lengths = counts[candidates].astype(np.int64)
    held = graph.sims[row_spans(graph.indptr[candidates], lengths)]
    strength = np.bincount(np.repeat(np.arange(len(candidates)), lengths), weights=held,
                           minlength=len(candidates))
    order = candidates[np.lexsort((candidates, -strength, -lengths))]
    rank = np.full(n, -1, dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank


def _changed_above(before: KnnGraph, after: KnnGraph, rows: np.ndarray, counts: np.ndarray,
                   threshold: float) -> np.ndarray:
    """The positions among `rows` (of `after`; `counts`: its entries at `threshold` or
    above per row) whose entries at the threshold or above differ from their row in
    `before` (neighbours or similarities), or that have no row there."""
    old = _positions(before.ids, after.ids[rows])
    held = old >= 0
    old_counts = np.zeros(len(rows), dtype=np.int64)
    if held.any():
        degrees = before.degrees()[old[held]]
        sims = before.sims[row_spans(before.indptr[old[held]], degrees)]
        old_counts[held] = np.bincount(np.repeat(np.arange(len(degrees)), degrees),
                                       weights=sims >= threshold, minlength=len(degrees))
    new_counts = counts[rows].astype(np.int64)
    same = held & (old_counts == new_counts)
    lengths = new_counts[same]
    if len(lengths):
        at_old = row_spans(before.indptr[old[same]], lengths)
        at_new = row_spans(after.indptr[rows[same]], lengths)
        differ = ((before.ids[before.indices[at_old]] != after.ids[after.indices[at_new]])
                  | (before.sims[at_old] != after.sims[at_new]))
        owner = np.repeat(np.arange(len(lengths)), lengths)
        same[np.flatnonzero(same)[np.bincount(owner[differ], minlength=len(lengths)) > 0]] \
            = False
    return rows[~same]


def _positions(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Positions of `wanted` text ids in the sorted `ids`; -1 where absent."""
    if not len(ids):
        return np.full(len(wanted), -1, dtype=np.int64)
    pos = np.minimum(np.searchsorted(ids, wanted), len(ids) - 1)
    return np.where(ids[pos] == wanted, pos, -1).astype(np.int64)
