"""Which stored id each freshly cut cluster gets: the rules that keep cluster ids still.

A cut numbers nothing; this gives each cluster the id it had, from what the project
recorded at the last cut (`Before`: which rows were in which id, and each id's anchor), so
an export's `cluster_id` can be a key in another system. The rules, in order:

1. A cluster keeps its id while it keeps the id's canonical row (its *anchor*). Failing
   that (the anchor was deleted or is in no cluster now), it keeps the id while it holds
   most (more than half) of the id's earlier rows that are still in the project.
2. A row that joins a cluster takes the cluster's id.
3. A cluster that holds several ids' claims (a merge) keeps the oldest (lowest) id; the
   others are retired, each recording the id it became (`merged_into`).
4. In a split, the part that keeps the anchor keeps the id; another part that mostly holds
   the id's earlier rows gets a new id (`split_from` the old one).
5. Any other cluster gets an id never used before in the project, except that a cluster
   holding the anchor of a retired id, and no live id's claim, takes that id back. That
   is what makes a threshold moved back and forth give the same ids again: raising it
   un-merges what lowering it merged, and the part that leaves takes back its old id.

The anchor is sticky: it moves only to the row the analyst chose as canonical, or, when the
id was kept by its rows (rule 1's second half), to the cluster's canonical then; a new
centre after a threshold move does not move it, so moving back finds it where it was. The
row that leads each cluster is noted apart (`Assignment.canonicals`): it is what the analyst
and the exports see as canonical, and "since import N" lists a cluster whose lead moved.
Pure: no database, no graph; the records it reads and returns are plain data
(`engine.store.id_records`), which `engine.services.cluster_ids` reads and writes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from engine.store.id_records import Assignment, Before, IdRecord

# How a cluster came by its id in one assignment.
KEPT, MERGED, NEW, SPLIT, REVIVED = "kept", "merged", "new", "split", "revived"


def label(number: int) -> str:
    """The id as people read it: C000123 (six digits, more when it takes more)."""
    return f"C{number:06d}"


def number(shown: str) -> int:
    """The stored number of a shown id (`label`'s inverse); ValueError for anything else."""
    if len(shown) < 2 or shown[0] not in "Cc" or not shown[1:].isdigit():
        raise ValueError(f"not a cluster id: {shown!r}")
    return int(shown[1:])


@dataclass(frozen=True)
class CutCluster:
    """One cluster as cut, the analyst's verdicts laid over it."""

    items: tuple[int, ...]      # its rows (not those the verdicts moved out of it)
    canonical: int              # the row that leads it
    chosen: bool = False        # the analyst chose that row as canonical


def assign(cuts: Sequence[CutCluster], before: Before, *, every_cluster: bool = True,
           released: Iterable[int] = ()) -> Assignment:
    """Ids for `cuts` under the rules above.

    With `every_cluster`, `cuts` is the whole cut: rows recorded in a cluster that no cut
    holds have left their clusters. Without, `cuts` are only the clusters that changed (an
    incremental re-cut): the others keep their rows and ids untouched, and only ids that
    these clusters' rows or anchors, or the rows `released` (those of the clusters they
    replace), name are looked at."""
    where: dict[int, int] = {}
    for k, cut in enumerate(cuts):
        for item in cut.items:
            where[item] = k
    # ids the cut can touch: those of its rows' earlier clusters and of anchors it holds
    tally: dict[int, Counter[int]] = defaultdict(Counter)
    for item, k in where.items():
        old = before.members.get(item)
        if old is not None:
            tally[old][k] += 1
    anchored = {i: ids for i in where if (ids := before.anchored_at(i))}
    relevant = set(tally)
    relevant.update(i for ids in anchored.values() for i in ids)
    relevant.update(cid for i in released if (cid := before.members.get(i)) is not None)
    if every_cluster:   # ids without rows too: one whose anchor was deleted is retired
        relevant.update(i for i, rec in before.records.items() if not rec.retired)
    live = sorted(i for i in relevant if not before.records[i].retired)

    claims: list[list[int]] = [[] for _ in cuts]
    by_rows: set[int] = set()    # ids claimed by most of their rows, not by their anchor
    for cid in live:
        rec = before.records[cid]
        if rec.anchor is not None and rec.anchor in where:
            claims[where[rec.anchor]].append(cid)
            continue
        size = before.sizes.get(cid, 0)
        for k, count in tally.get(cid, {}).items():
            if 2 * count > size:
                claims[k].append(cid)
                by_rows.add(cid)
                break

    ids: list[int] = [0] * len(cuts)
    how: list[str] = [""] * len(cuts)
    retired: dict[int, int | None] = {}
    anchors: dict[int, int] = {}
    kept: set[int] = set()
    unclaimed: list[int] = []
    for k, cut in enumerate(cuts):
        if not claims[k]:
            unclaimed.append(k)
            continue
        keep = min(claims[k])
        ids[k], how[k] = keep, (MERGED if len(claims[k]) > 1 else KEPT)
        kept.add(keep)
        for other in claims[k]:
            if other != keep:
                retired[other] = keep
        anchor = before.records[keep].anchor
        if keep in by_rows or (cut.chosen and cut.canonical != anchor):
            anchors[keep] = cut.canonical

    revived: set[int] = set()
    minted: dict[int, int | None] = {}
    next_id = before.next_id
    for k in unclaimed:
        cut = cuts[k]
        back = sorted(i for item in cut.items for i in anchored.get(item, ())
                      if before.records[i].retired and i not in revived)
        if back:
            ids[k], how[k] = back[0], REVIVED
            revived.add(back[0])
            if cut.chosen and cut.canonical != before.records[back[0]].anchor:
                anchors[back[0]] = cut.canonical
            continue
        came_from = Counter(before.members[i] for i in cut.items if i in before.members)
        source = came_from.most_common(1)[0][0] if came_from else None
        split = source is not None and source in kept and \
            2 * came_from[source] > sum(came_from.values())
        ids[k], how[k] = next_id, (SPLIT if split else NEW)
        minted[next_id] = source if split else None
        anchors[next_id] = cut.canonical
        next_id += 1

    # A live id that lost its anchor and every row is gone for good: retire it.
    for cid in live:
        if cid in kept or cid in retired:
            continue
        anchor = before.records[cid].anchor
        if anchor is None or anchor in before.dead:
            retired[cid] = None

    changed: dict[int, tuple[int | None, int | None]] = {}
    for item, k in where.items():
        old = before.members.get(item)
        if old != ids[k]:
            changed[item] = (old, ids[k])
    if every_cluster:
        gone = (i for i in before.members if i not in where)
    else:
        gone = (i for i, cid in before.members.items() if cid in relevant and i not in where)
    for item in gone:
        changed[item] = (before.members[item], None)
    # The row each cluster is led by, where it moved: recorded apart from the anchor, which
    # stays put, so that a new lead shows among the changes since an import.
    canonicals: dict[int, tuple[int | None, int]] = {}
    for cid, cut in zip(ids, cuts, strict=True):
        rec = before.records.get(cid)
        was = rec.canonical if rec is not None else None
        if was != cut.canonical:
            canonicals[cid] = (was, cut.canonical)
    return Assignment(ids, how, minted, retired, revived, anchors, changed, next_id,
                      canonicals)


def apply(before: Before, result: Assignment) -> Before:
    """`before` as it is once `result` is recorded: what the next assignment starts from."""
    members = dict(before.members)
    for item, (_, now) in result.changed.items():
        if now is None:
            members.pop(item, None)
        else:
            members[item] = now
    records = dict(before.records)
    for cid in result.minted:
        records[cid] = IdRecord(cid, result.anchors.get(cid))
    for cid, into in result.retired.items():
        records[cid] = replace(records[cid], retired=True, merged_into=into)
    for cid in result.revived:
        records[cid] = replace(records[cid], retired=False, merged_into=None)
    for cid, anchor in result.anchors.items():
        records[cid] = replace(records[cid], anchor=anchor)
    for cid, (_, canonical) in result.canonicals.items():
        records[cid] = replace(records[cid], canonical=canonical)
    return Before(members, records, max(before.next_id, result.next_id), set(before.dead))
