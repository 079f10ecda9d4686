"""Updating the neighbour graph for rows added or deleted, instead of building it again.

Building the graph searches the index once per text (74.5 s at a million items); a week's
file adds a few thousand. So the graph is updated:

- texts removed (no live row left) leave it, with every entry pointing at them; the texts
  that lose a neighbour that way are searched again, so that they keep k;
- each text added is searched for its nearest others (`WIDEN` times k of them): its k
  nearest become its neighbours (and, mirrored, it becomes theirs, as in a full build),
  and an old text gains it beyond that where it is closer than that text's current k-th
  neighbour (or the text has fewer than k);
- dense neighbourhoods are completed as the full build does (`engine.dedup.dense`): in the
  component of links at the floor or above that each new text is in, every pair of it
  with another text at the floor or above is found by exact search.

Entries already in the graph stay as they are (with their similarity), so a row that gained
nothing is the same row: the incremental re-cut (`engine.dedup.recut`) starts from the rows
that changed (`GraphUpdate.touched`). An updated graph is not byte for byte what a full
build would give: a displaced k-th neighbour stays in a row (a full build drops it unless
it is mirrored), and a text's k-th neighbour among the new texts that did not find it is
missed when it is not among their `WIDEN` × k nearest; both only matter below the floor,
where the graph promises each text's k nearest, not every pair.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from engine.dedup.dense import VectorReader
from engine.dedup.graph import KnnGraph, descending_keys, normalised, row_spans
from engine.dedup.knn_search import GRAPH_EF
from engine.index.hnsw import HnswIndex
from engine.progress import CancelToken, Progress, ProgressCallback, RateMeter, no_progress

# An added text is searched for this many times k neighbours: the extra ones are offered to
# old texts they are closer to than those texts' k-th.
WIDEN = 2
_QUERY_BATCH = 4096
_PAIRS_AT_ONCE = 32_768   # (added text, member) pairs scored at once: 2 x 48 MB of vectors
# Components of at least this many texts are scored by one matrix product each, of at most
# this many scores at once (16 MB).
_BIG_COMPONENT = 64
_SCORES_AT_ONCE = 4_194_304


@dataclass(frozen=True)
class GraphUpdate:
    graph: KnnGraph          # the updated graph
    added: np.ndarray        # text ids added
    removed: np.ndarray      # text ids removed
    touched: np.ndarray      # text ids whose rows changed (the added ones included)


def update_graph(graph: KnnGraph, index: HnswIndex, ids: np.ndarray, *,
                 vectors: VectorReader | None = None, ef: int = GRAPH_EF,
                 threads: int | None = None, progress: ProgressCallback = no_progress,
                 cancel: CancelToken | None = None) -> GraphUpdate:
    """`graph` made the graph of the texts `ids` (all in `index`), searching only the texts
    added and those that lost a neighbour."""
    new_ids = _sorted_unique(np.asarray(ids, dtype=np.int64))
    added = np.setdiff1d(new_ids, graph.ids, assume_unique=True)
    removed = np.setdiff1d(graph.ids, new_ids, assume_unique=True)
    n, k = len(new_ids), graph.k
    floor = graph.floor if math.isfinite(graph.floor) else 2.0
    read = normalised(vectors or index.vectors)
    old_to_new = _positions(new_ids, graph.ids)
    remapped = _remapped_columns(graph, old_to_new)
    lost = (np.unique(old_to_new[graph.row_of_entries()[remapped < 0]])
            if remapped is not None else np.zeros(0, dtype=np.int64))
    lost = lost[lost >= 0]
    added_pos = _positions(new_ids, added)
    queries = np.union1d(added_pos, lost)

    # k-th similarity in each old row, before the update: where an added text is offered.
    kth = np.full(n, -np.inf, dtype=np.float32)
    full = graph.degrees() >= k
    if k and full.any():
        at = old_to_new[full]
        keep = at >= 0
        kth[at[keep]] = graph.sims[graph.indptr[:-1][full] + k - 1][keep]

    rows, cols, sims, own_kth = _search(index, read, new_ids, queries, k, ef, threads,
                                        progress, cancel)
    kth[added_pos] = own_kth[np.searchsorted(queries, added_pos)]
    offered = (sims > kth[cols]) | ~np.isfinite(kth[cols])
    rank_in_row = _rank_in_row(rows)
    chosen = (rank_in_row < k) | offered
    rows, cols, sims = rows[chosen], cols[chosen], sims[chosen]
    searched = np.zeros(n, dtype=bool)         # an end of every entry found
    searched[queries] = True
    first, touched = _merge(graph, new_ids, old_to_new, remapped, lost,
                            np.concatenate([rows, cols]), np.concatenate([cols, rows]),
                            np.concatenate([sims, sims]), searched)

    # Dense neighbourhoods the new texts reach, completed as a full build completes them.
    extra = _dense_pairs(first, read, added_pos, floor, (queries, own_kth),
                         progress=progress, cancel=cancel)
    final = first
    if len(extra[0]):
        a, b, s = extra
        searched[:] = False
        searched[added_pos] = True             # an end of every dense pair
        final, more = _merge(first, new_ids, np.arange(n), None, np.zeros(0, np.int64),
                             np.concatenate([a, b]), np.concatenate([b, a]),
                             np.concatenate([s, s]), searched)
        touched |= more
    touched[added_pos] = True
    return GraphUpdate(final, added, removed, new_ids[touched])


def _search(index: HnswIndex, read: VectorReader, ids: np.ndarray, queries: np.ndarray,
            k: int, ef: int, threads: int | None, progress: ProgressCallback,
            cancel: CancelToken | None
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(query position, neighbour position, similarity) of each query's `WIDEN` * k nearest
    others among `ids`, best first per query; and each query's k-th similarity (-inf when
    it has fewer than k)."""
    width = WIDEN * k
    rows, cols, sims = [], [], []
    kth = np.full(len(queries), -np.inf, dtype=np.float32)
    meter = RateMeter()
    for start in range(0, len(queries), _QUERY_BATCH):
        if cancel is not None:
            cancel.raise_if_cancelled()
        batch = queries[start:start + _QUERY_BATCH]
        labels, found = index.query(read(ids[batch]), width + 1, ef=max(ef, width + 1),
                                    threads=threads or os.cpu_count() or 1)
        pos = _positions(ids, labels.ravel()).reshape(labels.shape)
        valid = (pos >= 0) & (pos != batch[:, None])
        order = np.argsort(~valid, axis=1, kind="stable")[:, :width]
        valid = np.take_along_axis(valid, order, 1)
        pos = np.take_along_axis(pos, order, 1)
        found = np.take_along_axis(found, order, 1)
        if k and valid.shape[1] >= k:
            has = valid[:, k - 1]
            kth[start:start + len(batch)][has] = found[has, k - 1]
        r = np.repeat(batch, valid.shape[1]).reshape(valid.shape)
        rows.append(r[valid])
        cols.append(pos[valid])
        sims.append(found[valid].astype(np.float32))
        done = min(start + _QUERY_BATCH, len(queries))
        progress(Progress("neighbours of new texts", done, len(queries), meter.rate(done)))
    if not rows:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, np.float32), kth
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(sims), kth


def _sorted_unique(ids: np.ndarray) -> np.ndarray:
    """`ids` sorted without repeats; as they are when they already are (the live ids come
    so), since np.unique's hashing took 0.5-1 s at 1M ids on 2 busy cores."""
    if len(ids) < 2 or bool((ids[1:] > ids[:-1]).all()):
        return ids
    return np.unique(ids)


def _rank_in_row(rows: np.ndarray) -> np.ndarray:
    """For entries grouped by row (each group best first), the place within its group."""
    if not len(rows):
        return rows
    starts = np.r_[0, np.flatnonzero(np.diff(rows)) + 1]
    lengths = np.diff(np.r_[starts, len(rows)])
    return np.arange(len(rows)) - np.repeat(starts, lengths)


def _remapped_columns(graph: KnnGraph, old_to_new: np.ndarray) -> np.ndarray | None:
    """`graph.indices` as positions among the new ids (-1: text removed); None when every
    old text keeps its position (texts only added after them: the weekly import), so that
    the entries need not be copied."""
    old_n = len(old_to_new)
    if not old_n or (old_to_new[-1] == old_n - 1 and old_to_new[0] == 0
                     and np.array_equal(old_to_new, np.arange(old_n))):
        return None
    return old_to_new[graph.indices]


def _merge(graph: KnnGraph, new_ids: np.ndarray, old_to_new: np.ndarray,
           remapped: np.ndarray | None, lost: np.ndarray, rows: np.ndarray, cols: np.ndarray,
           sims: np.ndarray, cover: np.ndarray | None = None) -> tuple[KnnGraph, np.ndarray]:
    """`graph`'s entries (positions mapped by `old_to_new`, -1 dropped; `remapped`: its
    columns so mapped, None where no position moved; `lost`: the new positions of the rows
    that held a removed text) with the entries (rows, cols, sims) added where a row lacks
    them, and which rows may have changed: `KnnGraph.from_rows` of all of them, the old
    entries first.

    Rows that neither gain nor lose an entry are copied as they are, in one masked copy
    (old and new positions are both ascending, so their entries keep their order); into
    the other rows, already sorted, the new entries are merged (`_sorted_union`).
    `cover`: new positions such that every added entry has an end among them (the texts
    searched), so that only the old entries with an end there can repeat one. A
    million-row graph holds tens of millions of entries: nothing here makes a per-entry
    index array of them."""
    n = len(new_ids)
    columns = graph.indices if remapped is None else remapped
    touched = np.zeros(n, dtype=bool)
    touched[rows] = True
    touched[lost] = True
    here = old_to_new >= 0
    old_degrees = graph.degrees()
    old_touched = np.zeros(len(old_to_new), dtype=bool)
    old_touched[here] = touched[old_to_new[here]]
    plain_old = here & ~old_touched
    again_old = np.flatnonzero(here & old_touched)
    # Entries of the rows sorted again: each such row's span of the old arrays.
    spans = old_degrees[again_old]
    entries = row_spans(graph.indptr[again_old], spans)
    again_rows = np.repeat(old_to_new[again_old], spans)
    again_cols = columns[entries].astype(np.int64)
    valid = again_cols >= 0
    sub = _sorted_union(new_ids, again_rows[valid], again_cols[valid],
                        graph.sims[entries][valid], rows, cols, sims, cover, graph.k,
                        graph.floor)
    plain_new = np.zeros(n, dtype=bool)
    plain_new[old_to_new[plain_old]] = True
    degrees = sub.degrees()
    degrees[old_to_new[plain_old]] = old_degrees[plain_old]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(degrees, out=indptr[1:])
    source = np.repeat(plain_old, old_degrees)
    dest = np.repeat(plain_new, degrees)
    indices = np.empty(indptr[-1], dtype=np.int32)
    out_sims = np.empty(indptr[-1], dtype=np.float32)
    indices[dest] = columns[source]
    out_sims[dest] = graph.sims[source]
    np.logical_not(dest, out=dest)
    indices[dest] = sub.indices
    out_sims[dest] = sub.sims
    return KnnGraph(new_ids, indptr, indices, out_sims, graph.k, graph.floor), touched


def _sorted_union(ids: np.ndarray, old_rows: np.ndarray, old_cols: np.ndarray,
                  old_sims: np.ndarray, rows: np.ndarray, cols: np.ndarray, sims: np.ndarray,
                  cover: np.ndarray | None, k: int, floor: float) -> KnnGraph:
    """`KnnGraph.from_rows(ids, old + new entries)`, where the old entries are rows of a
    graph (ascending rows, each by similarity descending, then column; no repeats, no
    entry to itself): the new entries are sorted alone and merged in, and only the old
    entries that may repeat one are compared with them (those with an end in `cover`;
    all when `cover` is None or leaves out an end of some new entry). Sorting every
    touched row again took two sorts of 3.6M and 5.7M entries after a week's 10,000 texts
    at 1M; the new entries number a few hundred thousand."""
    n = len(ids)
    rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    sims = np.asarray(sims, dtype=np.float32)
    apart = rows != cols
    rows, cols, sims = rows[apart], cols[apart], sims[apart]
    if cover is None or not bool((cover[rows] | cover[cols]).all()):
        maybe = np.ones(len(old_rows), dtype=bool)
    else:
        maybe = cover[old_rows] | cover[old_cols]
    # An entry listed twice keeps its first similarity: old ones come first, then the new
    # in the order given (a stable sort of the keys that can repeat).
    keys = np.concatenate([old_rows[maybe] * max(n, 1) + old_cols[maybe], rows * max(n, 1) + cols])
    order = np.argsort(keys, kind="stable")
    first = np.ones(len(keys), dtype=bool)
    first[order[1:]] = keys[order[1:]] != keys[order[:-1]]
    fresh = first[int(maybe.sum()):]
    rows, cols, sims = rows[fresh], cols[fresh], sims[fresh]
    # The new entries in the rows' order: row, similarity descending, column.
    order = np.argsort(cols, kind="stable")
    order = order[np.argsort((rows[order] << 32) | descending_keys(sims[order]), kind="stable")]
    rows, cols, sims = rows[order], cols[order], sims[order]
    old_key = (old_rows << 32) | descending_keys(old_sims)
    new_key = (rows << 32) | descending_keys(sims)
    at = np.searchsorted(old_key, new_key, side="left")
    ties = np.searchsorted(old_key, new_key, side="right") - at
    tied = np.flatnonzero(ties)
    if len(tied):   # equal row and similarity: after the old entries of lower columns
        spans = row_spans(at[tied], ties[tied])
        lower = old_cols[spans] < np.repeat(cols[tied], ties[tied])
        at[tied] += np.bincount(np.repeat(np.arange(len(tied)), ties[tied]), weights=lower,
                                minlength=len(tied)).astype(np.int64)
    total = len(old_rows) + len(rows)
    placed = np.zeros(total, dtype=bool)
    placed[at + np.arange(len(rows))] = True
    out_cols = np.empty(total, dtype=np.int32)
    out_sims = np.empty(total, dtype=np.float32)
    out_cols[placed], out_sims[placed] = cols, sims
    np.logical_not(placed, out=placed)
    out_cols[placed], out_sims[placed] = old_cols, old_sims
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(old_rows, minlength=n) + np.bincount(rows, minlength=n),
              out=indptr[1:])
    return KnnGraph(np.asarray(ids, dtype=np.int64), indptr, out_cols, out_sims, int(k),
                    float(floor))


def _dense_pairs(graph: KnnGraph, read: VectorReader, added: np.ndarray, floor: float,
                 own_kth_of: tuple[np.ndarray, np.ndarray], *,
                 progress: ProgressCallback, cancel: CancelToken | None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs (an added text, any text) at the floor or above in the dense neighbourhoods the
    added texts are in: the component of links (entries at the floor or above with a
    saturated end, as in `engine.dedup.graph.build_knn_graph`) around each, searched
    exactly. Pairs of two old texts were completed when the graph was built; only the added
    texts' rows of a component are multiplied, so a large old component costs its size
    once per added text in it, not its square."""
    empty = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32))
    if floor > 1 or not len(added):
        return empty
    k, n = graph.k, len(graph.ids)
    saturated = np.zeros(n, dtype=bool)
    full = graph.degrees() >= k
    saturated[full] = graph.sims[graph.indptr[:-1][full] + k - 1] >= floor
    queries, own_kth = own_kth_of     # an added text: saturated by its own search, as built
    saturated[added] = own_kth[np.searchsorted(queries, added)] >= floor
    at_floor = graph.counts_at(floor)
    region = np.zeros(n, dtype=bool)
    region[added] = True
    frontier = np.flatnonzero(region)
    # Each text reached gets a number in the order it is reached (rings one after another,
    # ascending within a ring), and a ring's links leave its texts in that order: the links
    # are then a sparse matrix's rows as they come, with no conversion (building one from
    # pairs took longer than finding its components, at 7M links).
    local = np.full(n, -1, dtype=np.int64)
    local[frontier] = np.arange(len(frontier))
    reached_count = len(frontier)
    links_b, counts = [], []
    reached = np.zeros(n, dtype=bool)
    while len(frontier):
        lengths = at_floor[frontier]
        a = np.repeat(frontier, lengths)
        b = graph.indices[row_spans(graph.indptr[frontier], lengths)].astype(np.int64)
        link = saturated[a] | saturated[b]
        links_b.append(b[link])
        counts.append(np.bincount(np.repeat(np.arange(len(frontier)), lengths)[link],
                                  minlength=len(frontier)))
        # The next ring, sorted and without repeats, by marks over the graph's rows: a
        # sort (np.unique) of the links took a second per million at 1M texts.
        reached[b[link]] = True
        reached &= ~region
        frontier = np.flatnonzero(reached)
        region[frontier] = True
        reached[frontier] = False
        local[frontier] = np.arange(reached_count, reached_count + len(frontier))
        reached_count += len(frontier)
    b = np.concatenate(links_b)
    if not len(b):
        return empty
    nodes = np.empty(reached_count, dtype=np.int64)      # graph position of each number
    nodes[local[region]] = np.flatnonzero(region)
    # Imported here: SciPy takes a while, and `duplens info` imports this module.
    from scipy import sparse
    from scipy.sparse.csgraph import connected_components

    # In the types SciPy's components work in (float64 weights, int32 positions): in any
    # other it converts the 7M links first, which took as long as finding the components.
    index_type = np.int32 if len(b) < 2**31 else np.int64
    indptr = np.zeros(reached_count + 1, dtype=index_type)
    np.cumsum(np.concatenate(counts), out=indptr[1:])
    links = sparse.csr_matrix((np.ones(len(b)), local[b].astype(index_type), indptr),
                              shape=(reached_count, reached_count))
    # Every component holds an added text (the rings grew from them): weak components of
    # the links as given are the components of the undirected graph.
    _, label = connected_components(links, directed=True, connection="weak")
    # One read for every component's vectors, in id order (which the store reads fastest).
    by_id = np.argsort(nodes, kind="stable")
    every = read(graph.ids[nodes[by_id]])
    row_of = np.empty(reached_count, dtype=np.int64)
    row_of[by_id] = np.arange(reached_count)
    # Every (added text, other member of its component) pair: a week's texts fall into
    # thousands of components (at 1M texts: 8,600 of them, the largest 1,484). The large
    # ones are one matrix product each (added members by all members); the pairs of the
    # many small ones are scored together, where a loop over them spent more time in
    # NumPy's per-call overhead than in the products.
    members = np.argsort(label, kind="stable")
    sizes = np.bincount(label)
    starts = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    mine = local[added]
    big = sizes[label[mine]] >= _BIG_COMPONENT
    found_a, found_b, found_s = [], [], []
    meter = RateMeter()
    small = mine[~big]
    lengths = sizes[label[small]]
    owners = np.repeat(small, lengths)
    partners = members[row_spans(starts[label[small]], lengths)]
    other = owners != partners
    owners, partners = owners[other], partners[other]
    mine_big = mine[big]
    mine_big = mine_big[np.argsort(label[mine_big], kind="stable")]
    cuts = np.flatnonzero(np.diff(label[mine_big])) + 1
    groups = np.split(mine_big, cuts) if len(mine_big) else []
    total = len(owners) + int(sum(sizes[label[g[0]]] * len(g) for g in groups))
    done = 0
    for lo in range(0, len(owners), _PAIRS_AT_ONCE):
        if cancel is not None:
            cancel.raise_if_cancelled()
        a, b = owners[lo:lo + _PAIRS_AT_ONCE], partners[lo:lo + _PAIRS_AT_ONCE]
        scores = np.einsum("ij,ij->i", every[row_of[a]], every[row_of[b]])
        keep = scores >= floor
        found_a.append(nodes[a[keep]])
        found_b.append(nodes[b[keep]])
        found_s.append(scores[keep].astype(np.float32))
        done += len(a)
        progress(Progress("dense neighbourhoods of new texts", done, total, meter.rate(done)))
    for group in groups:
        if cancel is not None:
            cancel.raise_if_cancelled()
        c = label[group[0]]
        part = members[starts[c]:starts[c] + sizes[c]]
        others = every[row_of[part]].T
        # A few new texts at a time where the component is huge: the scores stay small.
        step = max(1, _SCORES_AT_ONCE // len(part))
        for lo in range(0, len(group), step):
            some = group[lo:lo + step]
            scores = every[row_of[some]] @ others
            scores[np.arange(len(some)), np.searchsorted(part, some)] = -np.inf   # itself
            i, j = np.nonzero(scores >= floor)
            found_a.append(nodes[some[i]])
            found_b.append(nodes[part[j]])
            found_s.append(scores[i, j].astype(np.float32))
            done += scores.size
            progress(Progress("dense neighbourhoods of new texts", done, total,
                              meter.rate(done)))
    if not found_a:
        return empty
    return np.concatenate(found_a), np.concatenate(found_b), np.concatenate(found_s)


def _positions(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Positions of `wanted` in the sorted `ids`; -1 where absent."""
    wanted = np.asarray(wanted, dtype=np.int64)
    if not len(ids):
        return np.full(len(wanted), -1, dtype=np.int64)
    pos = np.minimum(np.searchsorted(ids, wanted), len(ids) - 1)
    return np.where(ids[pos] == wanted, pos, -1).astype(np.int64)
