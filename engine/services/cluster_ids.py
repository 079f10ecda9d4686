"""`ClusterIds`: the stored ids every cut is labelled with, and what changed since an import.

Every cut (`Clusters.cut`: the window's review, `duplens duplicates`, every export) is
recorded: its clusters get their ids by `engine.dedup.id_rules` from the assignment the
project recorded last, and the changes are written back in one transaction. So "the"
assignment is always the last cut recorded, at whatever threshold it was made; because ids
follow their anchor rows and a retired id comes back with its anchor, a threshold visited
again gives back the ids it gave (docs/architecture.md, "Cluster ids that stay").

A cut that changes nothing writes nothing (one read of a change count), so moving the
slider over thresholds already seen costs no write. The assignment is kept in memory and
read again only when another process recorded one (the change count moved). A read-only
project labels cuts without recording them: its new clusters show numbers that are not
reserved. So does a project on a full disk (read-only work goes on there): the cut is
labelled from memory, and the next cut with room records it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from engine.dedup.id_rules import CutCluster, apply, assign, label
from engine.dedup.row_clusters import CANONICAL, Cluster
from engine.errors import DiskFull
from engine.store import cluster_records as records
from engine.store import items as item_store
from engine.store import sources as source_store
from engine.store.database import Store
from engine.store.id_records import Assignment, Before

# What happened to a row's cluster since an import (`changes_since`).
JOINED, NEW, MERGED, SPLIT, LEFT = "joined", "new", "merged", "split", "left"
# Another row leads the cluster (`Change.previous_canonical` did); the word is the verdict
# overlay's too (`row_clusters.CANONICAL`), in another column.
CANONICAL_CHANGED = "canonical"
CHANGES = (JOINED, NEW, MERGED, SPLIT, LEFT, CANONICAL_CHANGED)
THRESHOLD_KEY = "cluster_ids_threshold"

log = logging.getLogger("duplens.cluster_ids")


@dataclass(frozen=True)
class Change:
    change: str                    # one of CHANGES
    previous: str                  # the row's cluster id before ("" when in none)
    # CANONICAL_CHANGED only: the public id of the row that led the cluster before ("" otherwise)
    previous_canonical: str = ""


class ClusterIds:
    """Labels cuts with the project's stored cluster ids and records each assignment."""

    def __init__(self, store: Store, notice: Callable[[str], None] | None = None) -> None:
        self._store = store
        self._notice = notice or log.warning
        self._full_disk_said = False
        self._lock = threading.Lock()
        self._before: Before | None = None
        self._change_count: int | None = None

    def label(self, clusters: Sequence[Cluster], *, threshold: float | None = None,
              every_cluster: bool = True, released: Sequence[int] = ()) -> list[Cluster]:
        """`clusters` (a cut at `threshold`, the analyst's verdicts laid over it) with
        their stored ids, in the same order; the assignment is recorded unless the project
        is read-only, with its threshold when it changed anything (`recorded_threshold`).

        `every_cluster=False`: `clusters` are only those an incremental re-cut changed; the
        rest of the last recorded cut stands as it was, except the rows `released` (those of
        the earlier clusters these replace), which are in no cluster unless `clusters` hold
        them."""
        # A cluster's rows are its members: the rows the analyst's verdicts moved out are in
        # no cluster, and a cluster left with one row is none (it gets no id).
        real = [c for c in clusters if len(c.members) > 1]
        cuts = [CutCluster(tuple(m.item_id for m in c.members), c.canonical.item_id,
                           c.canonical.verdict == CANONICAL) for c in real]
        with self._lock:
            before = self._current()
            result = assign(cuts, before, every_cluster=every_cluster, released=released)
            if not result.writes_nothing and not self._store.read_only:
                try:
                    before, result = self._record(cuts, before, result, every_cluster,
                                                  threshold, released)
                except DiskFull:
                    # Read-only work goes on when the disk is full: the ids are shown as
                    # assigned, and the next cut with room records them.
                    if not self._full_disk_said:
                        self._full_disk_said = True
                        self._notice(f"{self._store.name}: the disk is full: the cluster "
                                     f"ids of this cut are not recorded until there is room")
            merged_from = _merged_from(before, result)
        given = {id(c): cid for c, cid in zip(real, result.ids, strict=True)}
        return [replace(c, cluster_id=label(given[id(c)]),
                        merged_from=tuple(label(m) for m in merged_from.get(given[id(c)], ())))
                if id(c) in given else replace(c, cluster_id="", merged_from=())
                for c in clusters]

    def _current(self) -> Before:
        """The last recorded assignment: kept in memory while its change count stands."""
        with self._store.read() as conn:
            stored = records.change_count(conn)
            if self._before is None or stored != self._change_count:
                self._before, self._change_count = records.read_before(conn), stored
        return self._before

    def _record(self, cuts: list[CutCluster], before: Before, result: Assignment,
                every_cluster: bool, threshold: float | None, released: Sequence[int]
                ) -> tuple[Before, Assignment]:
        """Write `result`; decided again first if another process recorded meanwhile."""
        with self._store.write() as conn:
            records.hold(conn)
            if records.change_count(conn) != self._change_count:
                before = records.read_before(conn)
                result = assign(cuts, before, every_cluster=every_cluster, released=released)
            records.write(conn, result, records.current_batch(conn))
            if threshold is not None:
                self._store.set_meta(THRESHOLD_KEY, repr(float(threshold)), conn)
            count = records.change_count(conn)
        self._before, self._change_count = apply(before, result), count
        return before, result

    def seen(self) -> int | None:
        """The change count of the assignment this process last read or wrote."""
        return self._change_count

    def stored(self) -> int:
        """The change count of the assignment in the store now (another process may have
        moved it: a cut kept from before is then labelled again)."""
        with self._store.read() as conn:
            return records.change_count(conn)

    def recorded_threshold(self) -> float | None:
        """The threshold of the last cut that changed the ids (None before any): where an
        import's new rows are placed at once (`Clusters.follow_imports`)."""
        value = self._store.get_meta(THRESHOLD_KEY)
        return float(value) if value is not None else None

    def forget(self) -> None:
        """Rows were deleted (their memberships too): read the assignment again."""
        with self._lock:
            self._before = self._change_count = None

    # -- what the assignment says ----------------------------------------------------------
    def retired(self) -> dict[str, str | None]:
        """Every retired id and the id it merged into (None: its rows are all gone)."""
        with self._store.read() as conn:
            found = records.retired(conn)
        return {label(cid): (label(into) if into else None) for cid, into in found.items()}

    def changes_since(self, batch: int) -> dict[int, Change]:
        """Rows (item ids, live) whose cluster changed since import `batch` was made, and
        a row for each cluster another row leads now, as recorded by the cuts since (cut
        first, so that the latest rows are placed):

        - "new": in a cluster whose id was made since (rows of a new cluster);
        - "split": in a cluster split off since from the one it was in; and, on one row of
          the part that kept the id (its canonical, unless that row has a change of its
          own), the id the split left behind, so both parts of a split are listed;
        - "merged": its cluster was merged since into the one it is in now (its previous
          id is the retired one, its cluster_id the id that one became);
        - "joined": in a cluster that existed before, which it was not in (rows of batch
          `batch` or later that joined an existing cluster, and older rows moved into one);
        - "left": in no cluster now, though it was in one;
        - "canonical": its cluster existed at the import and is led by another row now
          (the public id of the row that led it then is `previous_canonical`). A cluster
          is not a row, and an export's reader keys rows, so this goes on one row per
          cluster: the row that leads it now, or, when that row has a change of its own
          (it joined, or came with a merge), the row that led it then, if it is still
          there with no change of its own; failing both, the row that leads now is listed
          as "canonical" (its `previous` still says where it was). A lead recorded before
          schema 7 is not known: not listed.
        """
        with self._store.read() as conn:
            before = records.ids_before(conn, batch)
            now = records.members_now(conn)
            ids = records.ids_of(conn)
            led_by = records.canonicals_before(conn, batch)
            fresh = source_store.live_rows_since(conn, batch)
            asked = (set(before) | fresh) - fresh
            live = source_store.live_among(conn, asked) | fresh
            moved = _leads_moved(led_by, ids, batch)
            named = item_store.items_by_ids(conn, sorted({i for pair in moved.values()
                                                          for i in pair}))
        out: dict[int, Change] = {}
        for item in sorted(live):
            was = None if item in fresh else before.get(item, now.get(item))
            cid = now.get(item)
            if was == cid:
                continue
            kind = _kind(was, cid, ids, batch)
            out[item] = Change(kind, label(was) if was is not None else "")
        for cid, (was, lead) in moved.items():
            called = item_store.public_id(named[was]) if was in named else ""
            listed = Change(CANONICAL_CHANGED, label(cid), called)
            stays = [i for i in (lead, was) if i not in out and now.get(i) == cid
                     and i in named and not named[i]["deleted"]]
            if stays:
                out[stays[0]] = listed
            elif lead in out:
                out[lead] = replace(out[lead], change=CANONICAL_CHANGED,
                                    previous_canonical=called)
        for kept in _split_since(ids, batch):
            lead = ids[kept].get("canonical_item")
            if lead is not None and lead not in out and now.get(lead) == kept and lead in live:
                out[lead] = Change(SPLIT, label(kept))
        return dict(sorted(out.items()))

    def changed_clusters(self, batch: int, clusters: Sequence[Cluster]
                         ) -> dict[str, set[str]]:
        """The review's "since import N": cluster id -> what happened to it since — "joined"
        (new rows joined it), "new" (made since, splits included), "merged" (another id was
        merged into it since), "canonical" (it existed then, led by another row)."""
        with self._store.read() as conn:
            ids = records.ids_of(conn)
            fresh = source_store.live_rows_since(conn, batch)
            moved = _leads_moved(records.canonicals_before(conn, batch), ids, batch)
        parted = _split_since(ids, batch)
        absorbed = {r["merged_into"] for r in ids.values()
                    if r["retired"] and r["merged_into"] and r["changed_batch"] >= batch}
        out: dict[str, set[str]] = {}
        for c in clusters:
            if not c.cluster_id:
                continue
            record = ids.get(int(c.cluster_id[1:]))
            kinds: set[str] = set()
            if record is None or record["created_batch"] >= batch:
                kinds.add(NEW)
            elif fresh.intersection(c.item_ids()):
                kinds.add(JOINED)
            if record is not None and record["id"] in absorbed:
                kinds.add(MERGED)
            if record is not None and record["id"] in moved:
                kinds.add(CANONICAL_CHANGED)
            if record is not None and record["id"] in parted:
                kinds.add(SPLIT)   # the part that kept the id (the other part is "new")
            if kinds:
                out[c.cluster_id] = kinds
        return out


def _merged_from(before: Before, result: Assignment) -> dict[int, list[int]]:
    """Live id -> the ids retired into it (through a chain of merges), as the assignment
    just made leaves them."""
    def status(cid: int) -> tuple[bool, int | None]:
        if cid in result.retired:
            return True, result.retired[cid]
        rec = before.records.get(cid)
        if rec is None or cid in result.revived:
            return False, None
        return rec.retired, rec.merged_into

    into: dict[int, list[int]] = {}
    for cid in {*result.retired, *(r.id for r in before.records.values() if r.retired)}:
        gone, target = status(cid)
        seen = {cid}
        while gone and target is not None and target not in seen:
            seen.add(target)
            still_gone, after = status(target)
            if not still_gone:
                into.setdefault(target, []).append(cid)
                break
            target = after
    return {cid: sorted(found) for cid, found in into.items()}


def _leads_moved(led_by: dict[int, int | None], ids: dict[int, dict], batch: int
                 ) -> dict[int, tuple[int, int]]:
    """Live ids that existed before import `batch` and are led by another row than then:
    id -> (the row that led it then, the row that leads it now). An id made since is "new"
    whoever leads it; one whose lead then was not recorded (before schema 7) is left out."""
    out: dict[int, tuple[int, int]] = {}
    for cid, was in led_by.items():
        record = ids.get(cid)
        if record is None or record["retired"] or record["created_batch"] >= batch:
            continue
        lead = record["canonical_item"]
        if was is not None and lead is not None and was != lead:
            out[cid] = (was, lead)
    return out


def _split_since(ids: dict[int, dict], batch: int) -> set[int]:
    """The live ids a part was split off from since import `batch` (they kept the id)."""
    return {r["split_from"] for r in ids.values()
            if r["split_from"] is not None and r["created_batch"] >= batch
            and r["split_from"] in ids and not ids[r["split_from"]]["retired"]}


def _kind(was: int | None, now: int | None, ids: dict[int, dict], batch: int) -> str:
    if now is None:
        return LEFT
    record = ids[now]
    if was is not None and _merged_into(was, ids, batch) == now:
        return MERGED
    if record["created_batch"] >= batch:
        return SPLIT if record["split_from"] is not None and was is not None else NEW
    if was is not None and record["changed_batch"] >= batch and not record["retired"]:
        return SPLIT   # a retired id taken back by the part that left the merged cluster
    return JOINED


def _merged_into(cid: int, ids: dict[int, dict], batch: int) -> int | None:
    """The live id that `cid` became through merges made since `batch`, if it did."""
    seen = set()
    while cid in ids and ids[cid]["retired"] and ids[cid]["merged_into"] is not None \
            and cid not in seen:
        if ids[cid]["changed_batch"] < batch:
            return None
        seen.add(cid)
        cid = ids[cid]["merged_into"]
    return cid if seen else None

