"""Duplicate clusters of rows (items), built from clusters of distinct texts.

Texts are what the index knows; rows sharing a normalised text are exact duplicates and
always land in the same cluster, scored 1.0 against their text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from engine.dedup.cut import TextCluster
from engine.store.items import public_id


@dataclass(frozen=True)
class Member:
    item_id: int
    id: str            # the id column's value, else the source row number
    row: int
    source_id: int
    text: str
    score: float       # cosine similarity to the cluster's canonical text
    text_id: int
    verdict: str = ""   # the analyst's verdict against the canonical row (see CANONICAL…)

    def as_json(self) -> dict:
        return {"id": self.id, "row": self.row, "source_id": self.source_id, "text": self.text,
                "score": round(self.score, 6), "item_id": self.item_id,
                "decision": self.verdict}


# What a member's `verdict` can say. "canonical": the analyst chose it; "duplicate" / "not
# duplicate": the verdict on the pair (canonical, member); "": not reviewed yet. (`as_json`
# and exports still call it "decision": scripts read that key.)
CANONICAL, DUPLICATE, NOT_DUPLICATE, UNREVIEWED = "canonical", "duplicate", "not duplicate", ""


@dataclass(frozen=True)
class Cluster:
    # The stored id (`engine.dedup.id_rules`, e.g. "C000123"), which stays with the cluster
    # across cuts, imports and models; "" until `Clusters.cut` gives it.
    cluster_id: str
    members: list[Member] = field(default_factory=list)   # canonical first
    # Members the analyst moved out (judged "not duplicate" of the canonical): shown apart
    # and exported with their verdict, but no longer part of the cluster.
    rejected: list[Member] = field(default_factory=list)
    # Ids retired into this one by merges (each one's `merged_into` is this cluster's id).
    merged_from: tuple[str, ...] = ()

    @property
    def canonical(self) -> Member:
        return self.members[0]

    @property
    def score(self) -> float:
        """Mean similarity of the other members to the canonical: how tight the cluster is."""
        others = [m.score for m in self.members[1:]]
        return sum(others) / len(others) if others else 1.0

    @property
    def reviewed(self) -> bool:
        """Every member has a verdict (the canonical counts as decided)."""
        return all(m.verdict for m in self.members[1:]) and bool(self.members)

    def item_ids(self) -> list[int]:
        return [m.item_id for m in (*self.members, *self.rejected)]

    def as_json(self) -> dict:
        return {"cluster_id": self.cluster_id, "canonical_id": self.canonical.id,
                "size": len(self.members), "score": round(self.score, 6),
                "members": [m.as_json() for m in self.members],
                "rejected": [m.as_json() for m in self.rejected],
                "merged_from": list(self.merged_from)}


def member(item: dict, score: float) -> Member:
    shown = item.get("public_id") or public_id(item)   # worked out once by RowsByText
    return Member(item["id"], shown, item["row"], item["source_id"], item["text"],
                  float(score), item["text_id"])


def expand_clusters(text_clusters: list[tuple[list[int], list[float]]],
                    items_by_text: dict[int, list[dict]],
                    exact_only_texts: list[int],
                    member: Callable[[dict, float], Member] = member) -> list[Cluster]:
    """Turn (text ids, scores) clusters into row clusters, adding exact-duplicate-only ones.

    `exact_only_texts` are texts with several rows that no similarity cluster took.
    `member` makes a row's Member (a caching one keeps them between re-cuts).
    """
    keyed = expand_keyed(text_clusters, items_by_text, exact_only_texts, member)
    return [Cluster("", ms) for _, ms in rank_row_clusters(keyed)]


Keyed = tuple[int, list[Member]]   # (cluster key, its rows: the canonical first)


def cluster_key(text_cluster_ids: list[int] | None = None, exact_text: int | None = None
                ) -> int:
    """What names a row cluster between two cuts of one threshold: its centre text's id, or
    for a cluster of exact copies only, minus one minus the text's id."""
    return text_cluster_ids[0] if text_cluster_ids is not None else -1 - int(exact_text)


def expand_keyed(text_clusters: list[tuple[list[int], list[float]]],
                 items_by_text: dict[int, list[dict]], exact_only_texts: list[int],
                 member: Callable[[dict, float], Member] = member) -> list[Keyed]:
    """`expand_clusters`' row clusters with their keys, in the order they are made (text
    clusters first, then exact copies), not yet ranked."""
    built: list[Keyed] = []
    for text_ids, scores in text_clusters:
        members = [member(item, score) for t, score in zip(text_ids, scores, strict=True)
                   for item in items_by_text.get(t, [])]
        if len(members) >= 2:
            built.append((cluster_key(text_ids), members))
    for t in exact_only_texts:
        rows = items_by_text.get(t, [])
        if len(rows) >= 2:
            built.append((cluster_key(exact_text=t), [member(item, 1.0) for item in rows]))
    return built


def rank_key(members: list[Member]) -> tuple[int, float]:
    """Where a row cluster ranks: biggest first, then tighter (mean score of its rows)."""
    return -len(members), -sum(m.score for m in members) / len(members)


def rank_row_clusters(keyed: list[Keyed]) -> list[Keyed]:
    """Biggest first, then tighter; ties in the order made."""
    return sorted(keyed, key=lambda km: rank_key(km[1]))


def text_clusters_as_ids(clusters: list[TextCluster], ids) -> list[tuple[list[int], list[float]]]:
    by_position = np.asarray(ids).tolist()
    return [([by_position[p] for p in c.members.tolist()], c.scores.tolist()) for c in clusters]


def texts_in_no_cluster(texts: list[int], clusters: list[TextCluster], ids: np.ndarray
                        ) -> list[int]:
    """Those of `texts` (ascending text ids) in none of `clusters` (positions into the
    sorted `ids`), in their order: marks over the graph's positions, where a set of every
    clustered text took 0.3 s at 1M texts."""
    if not texts:
        return []
    wanted = np.asarray(texts, dtype=np.int64)
    marked = np.zeros(len(ids) + 1, dtype=bool)          # the last: texts not in the graph
    if clusters:
        marked[np.concatenate([c.members for c in clusters])] = True
    at = np.searchsorted(ids, wanted) if len(ids) else np.zeros(len(wanted), np.int64)
    found = at < len(ids)
    found[found] = ids[at[found]] == wanted[found]
    at[~found] = len(ids)
    return wanted[~marked[at]].tolist()
