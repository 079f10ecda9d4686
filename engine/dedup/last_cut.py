"""The last cut, kept so that the next one after an import builds only the clusters that
changed, and which clusters those are.

A cut at a million rows spends most of its time outside the graph: turning text clusters
into row clusters, laying verdicts over them, labelling them with their ids. After an
import most clusters are exactly what they were: same texts (the incremental re-cut,
`engine.dedup.recut`, says which text clusters changed) and same rows (the rows kept
between cuts, `engine.dedup.clustered_rows`, say whose rows changed). Those are taken from
the last cut as they were, decided and labelled; only the others are built.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from engine.dedup.cut import TextCluster
from engine.dedup.recut import CutState
from engine.dedup.row_clusters import Cluster, Keyed, cluster_key, rank_key


@dataclass
class LastCut:
    state: CutState                       # the text clusters and the graph they came from
    k: int
    verdicts: tuple                       # `store.pair_verdicts.fingerprint` when decided
    keys: list[int]                       # per cluster below (`row_clusters.cluster_key`)
    raw: list[Cluster]                    # as cut, labelled, ranked
    decided: list[Cluster]                # the same with the verdicts laid over them
    ids_change_count: int | None = None   # the id records' change count once labelled
    # Per cluster above, `row_clusters.rank_key` of its rows (worked out once: a sum over
    # every row of every cluster took 0.2 s at 1M rows); computed when not given.
    ranks: list[tuple[int, float]] = field(default_factory=list)
    # Clusters made of rows the cut put in no cluster, joined by "duplicate" verdicts
    # (`engine.review.verdict_joins`), labelled: built again at every cut.
    extra: list[Cluster] = field(default_factory=list)
    _at: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._at = {key: i for i, key in enumerate(self.keys)}
        if len(self.ranks) != len(self.raw):
            self.ranks = [rank_key(c.members) for c in self.raw]

    @property
    def threshold(self) -> float:
        return self.state.threshold

    def find(self, key: int) -> int | None:
        return self._at.get(key)


@dataclass(frozen=True)
class Plan:
    """What the next cut takes from the last one and what it builds."""

    keep: dict[int, int]                  # key -> position in the last cut
    build_text: list[tuple[list[int], list[float]]]   # text clusters to build
    build_exact: list[int]                # texts of exact copies to build
    order: list[int]                      # every key, in the order clusters are made
    released: list[int]                   # rows of last clusters not kept (their ids move)


def plan(last: LastCut, clusters: list[TextCluster], ids: np.ndarray, changed: set[int],
         exact: list[int], touched_texts: set[int]) -> Plan:
    """Keep every cluster of `last` whose text cluster did not change (`changed`: centre
    text ids) and none of whose texts' rows changed (`touched_texts`); build the rest.
    `clusters` are the new cut's text clusters (positions into `ids`): only those built
    are turned into text ids, and which hold a touched text is found for all at once."""
    touched = np.zeros(len(ids), dtype=bool)
    if touched_texts and len(ids):
        wanted = np.fromiter(touched_texts, dtype=np.int64, count=len(touched_texts))
        at = np.minimum(np.searchsorted(ids, wanted), len(ids) - 1)
        touched[at[ids[at] == wanted]] = True
    sizes = np.fromiter((len(c.members) for c in clusters), dtype=np.int64,
                        count=len(clusters))
    if clusters:
        flat = np.concatenate([c.members for c in clusters])
        hit = np.bincount(np.repeat(np.arange(len(clusters)), sizes)[touched[flat]],
                          minlength=len(clusters)) > 0
        centres = ids[flat[np.cumsum(sizes) - sizes]].tolist()
    else:
        hit, centres = np.zeros(0, dtype=bool), []
    keep: dict[int, int] = {}
    build_text: list[tuple[list[int], list[float]]] = []
    build_exact: list[int] = []
    order: list[int] = []
    for cluster, centre, touches in zip(clusters, centres, hit.tolist(), strict=True):
        key = cluster_key([centre])
        order.append(key)
        at = last.find(key)
        if at is not None and key not in changed and not touches:
            keep[key] = at
        else:
            build_text.append((ids[cluster.members].tolist(), cluster.scores.tolist()))
    for t in exact:
        key = cluster_key(exact_text=t)
        order.append(key)
        at = last.find(key)
        if at is not None and t not in touched_texts:
            keep[key] = at
        else:
            build_exact.append(t)
    kept = set(keep.values())
    released = [i for at, c in enumerate(last.raw) if at not in kept for i in c.item_ids()]
    return Plan(keep, build_text, build_exact, order, released)


def assemble(last: LastCut, the_plan: Plan, built: list[Keyed], raw: list[Cluster],
             decided: list[Cluster]
             ) -> tuple[list[int], list[Cluster], list[Cluster], list[tuple[int, float]]]:
    """(keys, raw, decided, ranks) of the new cut: kept and built clusters in the order
    they are made, ranked as `row_clusters.rank_row_clusters` ranks them."""
    made: dict[int, tuple[Cluster, Cluster, tuple[int, float]]] = {
        key: (last.raw[at], last.decided[at], last.ranks[at])
        for key, at in the_plan.keep.items()}
    for (key, members), r, d in zip(built, raw, decided, strict=True):
        made[key] = (r, d, rank_key(members))
    entries = [(key, *made[key]) for key in the_plan.order if key in made]
    entries.sort(key=lambda e: e[3])
    return ([e[0] for e in entries], [e[1] for e in entries], [e[2] for e in entries],
            [e[3] for e in entries])


def rows_of(clusters: Iterable[Cluster]) -> list[int]:
    return [i for c in clusters for i in c.item_ids()]
