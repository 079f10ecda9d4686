"""Joining the clusters that "duplicate" verdicts tie together, after each cluster's own
verdicts were laid over it (`engine.review.verdict_overlay`).

The overlay works inside one cut cluster: it can part rows judged "not duplicate", but two
rows the analyst judged duplicate that the cut put in different clusters (or in none) stay
apart there. This pass brings them together, so that every cut obeys every verdict:

- two rows judged "not duplicate" never share a cluster;
- two rows judged "duplicate" always share one, unless a "not duplicate" verdict forbids it.

How a conflict resolves: the units are the clusters as the overlay left them (two rows or
more) and every other row (in no cluster, moved out, or left alone). The "duplicate" edges
between two units are applied one by one, strongest similarity of the pair's texts first
(then by the pair's item ids), each joining its two units unless a "not duplicate" verdict
lies between any row of one and any row of the other: then that edge is skipped, and "not"
wins. Every union is checked that way, so no group ever holds a "not" pair, and the result
depends only on the rows, the verdicts and the similarities, never on the order the
clusters come in (an incremental re-cut builds them in another order than a whole cut).

A group of units becomes one cluster. It sits where its *host* sat, the biggest cluster in
it (then the one whose canonical row is oldest, the lowest item id), and the other clusters
of the group are left empty (no rows: no cluster, `Clusters.cut` leaves them out). Its
canonical is a row the analyst chose, if any (the host's canonical first, then the other
clusters' canonicals, biggest first, then the other rows, oldest first), else the host's
canonical; the other members are scored against it (similarity of their texts) and
ordered by that score. Rows that were in no cluster and were joined only with one another
make new clusters, returned apart (`Joined.extra`), led by a chosen row or else the oldest.
The stored ids then follow the usual rules (`engine.dedup.id_rules`): a merged cluster keeps
the older id and the other is retired into it, a row that joins a cluster takes its id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from engine.dedup.row_clusters import CANONICAL, UNREVIEWED, Cluster, Member, rank_key
from engine.review.verdict_overlay import VERDICT_WORDS, Similarity, with_verdict
from engine.store.pair_verdicts import ordered


@dataclass(frozen=True)
class Joined:
    """The clusters given, one for one (a host grown, the clusters it took emptied), and
    the clusters made of rows that were in none (`extra`), biggest first."""

    clusters: list[Cluster]
    extra: list[Cluster] = field(default_factory=list)


def join_by_verdicts(clusters: Sequence[Cluster], loose: Mapping[int, Member],
                     verdicts: Mapping[tuple[int, int], int], chosen: set[int],
                     similarity: Similarity) -> Joined:
    """`clusters` (each as the overlay left it) joined as their rows' "duplicate" verdicts
    ask; `loose` are rows in no cluster that a "duplicate" verdict names (by item id).
    `verdicts` must hold every verdict among the rows of `clusters` and `loose`."""
    unit_of: dict[int, int] = {}                 # row -> its unit (index into `units`)
    units: list[list[Member]] = []
    host_of: list[int | None] = []               # unit -> the cluster it is, if one
    for at, c in enumerate(clusters):
        if len(c.members) > 1:
            for m in c.members:
                unit_of[m.item_id] = len(units)
            units.append(list(c.members))
            host_of.append(at)
    spare = {m.item_id: m for c in clusters for m in (*c.members, *c.rejected)
             if m.item_id not in unit_of}
    spare.update((i, m) for i, m in loose.items() if i not in unit_of)
    for i in sorted(spare):
        unit_of[i] = len(units)
        units.append([spare[i]])
        host_of.append(None)

    nots: dict[int, set[int]] = {}
    edges: list[tuple[float, tuple[int, int]]] = []
    text = {m.item_id: m.text_id for ms in units for m in ms}
    for (a, b), v in verdicts.items():
        if a not in unit_of or b not in unit_of or a == b:
            continue
        if v == 0:
            nots.setdefault(a, set()).add(b)
            nots.setdefault(b, set()).add(a)
        elif v == 1 and unit_of[a] != unit_of[b]:
            edges.append((-float(similarity(text[a], [text[b]])[0]), (a, b)))
    if not edges:
        return Joined(list(clusters))

    group = list(range(len(units)))              # unit -> its group's root
    rows: dict[int, set[int]] = {u: {m.item_id for m in ms} for u, ms in enumerate(units)}

    def root(u: int) -> int:
        while group[u] != u:
            group[u] = group[group[u]]
            u = group[u]
        return u

    for _, (a, b) in sorted(edges):
        ra, rb = root(unit_of[a]), root(unit_of[b])
        if ra == rb or any(nots.get(x, set()) & rows[rb] for x in rows[ra]):
            continue                                 # already one, or a "not" forbids it
        group[rb] = ra
        rows[ra] |= rows.pop(rb)

    groups: dict[int, list[int]] = {}
    for u in range(len(units)):
        groups.setdefault(root(u), []).append(u)
    out = list(clusters)
    extra: list[Cluster] = []
    placed: set[int] = set()                     # rows now members of a joined cluster
    for members_of in groups.values():
        if len(members_of) < 2:
            continue
        made = _joined([units[u] for u in members_of], [host_of[u] for u in members_of],
                       clusters, verdicts, chosen, similarity)
        placed.update(m.item_id for m in made.members)
        hosts = [(host_of[u], units[u]) for u in members_of if host_of[u] is not None]
        if not hosts:
            extra.append(made)
            continue
        host = min(hosts, key=lambda hu: (-len(hu[1]), hu[1][0].item_id))[0]
        out[host] = made
        for h, _ in hosts:
            if h != host:
                out[h] = Cluster(clusters[h].cluster_id, [], [], clusters[h].merged_from)
    # a row moved out of one cluster and joined to another is no longer shown as moved out
    out = [replace(c, rejected=[m for m in c.rejected if m.item_id not in placed])
           if any(m.item_id in placed for m in c.rejected) else c for c in out]
    extra.sort(key=lambda c: (rank_key(c.members), c.canonical.item_id))
    return Joined(out, extra)


def _joined(parts: list[list[Member]], hosts: list[int | None], clusters: Sequence[Cluster],
            verdicts: Mapping[tuple[int, int], int], chosen: set[int],
            similarity: Similarity) -> Cluster:
    """One cluster of the units `parts` (`hosts`: the cluster each was, if one)."""
    whole = sorted((ms for ms, h in zip(parts, hosts, strict=True) if h is not None),
                   key=lambda ms: (-len(ms), ms[0].item_id))
    singles = sorted((ms[0] for ms, h in zip(parts, hosts, strict=True) if h is None),
                     key=lambda m: m.item_id)
    leads = [ms[0] for ms in whole] + singles
    canonical = next((m for m in leads if m.item_id in chosen), None)
    if canonical is None:
        canonical = next((m for ms in whole for m in ms if m.item_id in chosen), leads[0])
    others = [m for ms in parts for m in ms if m.item_id != canonical.item_id]
    scored_against_it = {m.item_id for m in whole[0]} if whole and \
        whole[0][0].item_id == canonical.item_id else set()
    fresh = [m for m in others if m.item_id not in scored_against_it]
    sims = similarity(canonical.text_id, [m.text_id for m in fresh]) if fresh else []
    score = {m.item_id: m.score for m in others if m.item_id in scored_against_it}
    score.update((m.item_id, float(s)) for m, s in zip(fresh, sims, strict=True))
    head = with_verdict(canonical, 1.0, CANONICAL if canonical.item_id in chosen else UNREVIEWED)
    rest = [with_verdict(m, score[m.item_id],
                  VERDICT_WORDS.get(verdicts.get(ordered(canonical.item_id, m.item_id)),
                               UNREVIEWED))
            for m in sorted(others, key=lambda m: (-score[m.item_id], m.item_id))]
    ids = {m.item_id for m in (head, *rest)}
    hosted = [clusters[h] for h in hosts if h is not None]
    rejected = sorted((m for c in hosted for m in c.rejected if m.item_id not in ids),
                      key=lambda m: (-m.score, m.item_id))
    first = min(hosted, key=lambda c: (-len(c.members), c.members[0].item_id)) \
        if hosted else None
    return Cluster(first.cluster_id if first else "", [head, *rest], rejected,
                   first.merged_from if first else ())
