"""Laying the analyst's stored verdicts and canonical choices over freshly cut clusters.

Clusters are re-cut from the neighbour graph at every threshold, so verdicts cannot be
stored per cluster. They are stored per pair of rows (duplicate / not duplicate) and per row
(chosen as canonical), and laid over each cut here, the same way every time:

- a member the analyst chose as canonical leads its cluster (the first such member when a
  new threshold merges two reviewed clusters), and similarities are re-measured against it;
- a member judged "not duplicate" of the canonical is moved out of the cluster
  (`Cluster.rejected`), so "move out" is that verdict and undoing it brings the member back;
- other verdicts show as each member's `verdict`.
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

_VERDICT = {1: DUPLICATE, 0: NOT_DUPLICATE}


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

    head = _with(canonical, 1.0, CANONICAL if canonical.item_id in chosen else UNREVIEWED)
    kept: list[Member] = []
    rejected: list[Member] = []
    for m in everyone:
        if m.item_id == canonical.item_id:
            continue
        verdict = _VERDICT.get(verdicts.get(ordered(canonical.item_id, m.item_id)), UNREVIEWED)
        updated = _with(m, rescored[m.item_id], verdict)
        (rejected if verdict == NOT_DUPLICATE else kept).append(updated)
    kept.sort(key=lambda m: -m.score)
    rejected.sort(key=lambda m: -m.score)
    return Cluster(cluster.cluster_id, [head, *kept], rejected, cluster.merged_from)


def _with(m: Member, score: float, verdict: str) -> Member:
    return Member(m.item_id, m.id, m.row, m.source_id, m.text, score, m.text_id, verdict)
