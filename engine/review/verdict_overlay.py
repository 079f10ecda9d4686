"""Laying the analyst's stored verdicts and canonical choices over freshly cut clusters.

Clusters are re-cut from the neighbour graph at every threshold, so verdicts cannot be
stored per cluster. They are stored per pair of rows (duplicate / not duplicate) and per row
(chosen as canonical), and laid over each cut here, the same way every time:

- a member the analyst chose as canonical leads its cluster (the first such member when a
  new threshold merges two reviewed clusters), and similarities are re-measured against it;
- every "not duplicate" verdict between two members is obeyed: they never stay in one
  cluster. The cluster is kept in order, the canonical first, then the others by similarity
  to it; rows judged "duplicate" of each other move as one (a tie that would join two rows
  judged "not duplicate" is not made: "not" wins over "duplicate"); a row, or a tied group,
  judged "not duplicate" of a row already kept leaves the cluster (`Cluster.rejected`).
  So "move out" is that verdict, and undoing it brings the member back;
- a cluster left with its canonical alone is no cluster (`ClusterIds.label` gives it no id
  and `Clusters.cut` leaves it out);
- other verdicts show as each member's `verdict` (against the canonical).

The rows moved out are in no cluster: no id, no canonical, in no export's cluster, unless
a "duplicate" verdict ties them elsewhere. A "duplicate" verdict between rows the cut put in
different clusters (or in none) is not this module's: `engine.review.verdict_joins` joins
them after it, across the whole cut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engine.dedup.row_clusters import (
    CANONICAL,
    DUPLICATE,
    NOT_DUPLICATE,
    UNREVIEWED,
    Cluster,
    Member,
)
from engine.store.pair_verdicts import ordered

# similarity(text_id, [text_id, …]) -> cosine similarity of the first to each of the others
Similarity = Callable[[int, Sequence[int]], Sequence[float]]

# What a stored verdict (1 or 0) is called on a member (`Member.verdict`).
VERDICT_WORDS = {1: DUPLICATE, 0: NOT_DUPLICATE}


def apply_verdicts(cluster: Cluster, verdicts: dict[tuple[int, int], int], chosen: set[int],
                   similarity: Similarity) -> Cluster:
    """The cluster as the analyst's verdicts and canonical choices make it; `cluster` is as
    cut (centre first)."""
    everyone = [*cluster.members, *cluster.rejected]
    if not everyone:
        return cluster
    canonical = next((m for m in everyone if m.item_id in chosen), everyone[0])
    if canonical.item_id != everyone[0].item_id:
        others = [m for m in everyone if m.item_id != canonical.item_id]
        sims = similarity(canonical.text_id, [m.text_id for m in others])
        rescored = {m.item_id: float(s) for m, s in zip(others, sims, strict=True)}
    else:
        rescored = {m.item_id: m.score for m in everyone}
    rescored[canonical.item_id] = 1.0

    order = [canonical, *sorted((m for m in everyone if m.item_id != canonical.item_id),
                                key=lambda m: (-rescored[m.item_id], m.item_id))]
    kept_ids = _kept(order, verdicts)
    head = with_verdict(canonical, 1.0, CANONICAL if canonical.item_id in chosen else UNREVIEWED)
    kept: list[Member] = []
    rejected: list[Member] = []
    for m in order[1:]:
        verdict = VERDICT_WORDS.get(verdicts.get(ordered(canonical.item_id, m.item_id)),
                                    UNREVIEWED)
        updated = with_verdict(m, rescored[m.item_id], verdict)
        (kept if m.item_id in kept_ids else rejected).append(updated)
    return Cluster(cluster.cluster_id, [head, *kept], rejected, cluster.merged_from)


def _kept(order: list[Member], verdicts: dict[tuple[int, int], int]) -> set[int]:
    """The rows that stay, `order` being the canonical first and then the rest by
    similarity to it: rows tied by "duplicate" verdicts form units (a tie is refused when
    it would put two rows judged "not duplicate" in one unit), and each unit, in the order
    of its first row, stays unless one of its rows was judged "not duplicate" of a row
    already kept. The canonical's unit always stays."""
    ids = [m.item_id for m in order]
    nots: dict[int, set[int]] = {i: set() for i in ids}
    dups: list[tuple[int, int]] = []
    for (a, b), v in _among(ids, verdicts):
        if v == 0:
            nots[a].add(b)
            nots[b].add(a)
        elif v == 1:
            dups.append((a, b))
    unit = {i: {i} for i in ids}            # row -> the set of its unit (shared object)
    for a, b in dups:
        ua, ub = unit[a], unit[b]
        if ua is ub or any(nots[x] & ub for x in ua):
            continue
        ua |= ub
        for x in ub:
            unit[x] = ua
    kept: set[int] = set()
    seen: set[int] = set()
    for i in ids:
        members = unit[i]
        if id(members) in seen:
            continue
        seen.add(id(members))
        if not kept or not any(nots[x] & kept for x in members):
            kept |= members
    return kept


def with_verdict(m: Member, score: float, verdict: str) -> Member:
    """`m` scored against its canonical and with its verdict on the pair it makes with it."""
    return Member(m.item_id, m.id, m.row, m.source_id, m.text, score, m.text_id, verdict)


def _among(ids: list[int], verdicts: dict[tuple[int, int], int]
           ) -> list[tuple[tuple[int, int], int]]:
    """The verdicts between rows of `ids`, in pair order. `verdicts` holds every verdict
    among a whole cut's rows and this runs once per cluster that has one: the cluster's
    pairs are looked up when they are fewer than the verdicts, else the verdicts scanned."""
    if len(ids) * (len(ids) - 1) // 2 < len(verdicts):
        found = ((p, verdicts.get(p)) for p in
                 (ordered(a, b) for n, a in enumerate(ids) for b in ids[n + 1:]))
        return sorted((p, v) for p, v in found if v is not None)
    present = set(ids)
    return sorted((p, v) for p, v in verdicts.items()
                  if p[0] in present and p[1] in present and p[0] != p[1])
