"""The incremental re-cut against the full cut of the same graph, on random graphs: texts
added and removed, edges gained and lost, similarities tied on purpose."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.dedup.cut import cut_clusters
from engine.dedup.graph import KnnGraph
from engine.dedup.recut import full_cut, recut_clusters

SIMS = [0.5, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.99]   # few values: ties in counts and sums


def graph_of(ids: list[int], edges: dict[tuple[int, int], float]) -> KnnGraph:
    """The symmetric graph of `edges` ({(a, b): sim}, text ids, a < b) over `ids`."""
    ids = np.asarray(sorted(ids), dtype=np.int64)
    pos = {t: i for i, t in enumerate(ids.tolist())}
    rows, cols, sims = [], [], []
    for (a, b), s in edges.items():
        rows += [pos[a], pos[b]]
        cols += [pos[b], pos[a]]
        sims += [s, s]
    return KnnGraph.from_rows(ids, np.asarray(rows, np.int64), np.asarray(cols, np.int64),
                              np.asarray(sims, np.float32), k=5)


def rows_by_id(graph: KnnGraph) -> dict[int, list[tuple[int, float]]]:
    out = {}
    for p, t in enumerate(graph.ids.tolist()):
        lo, hi = graph.indptr[p], graph.indptr[p + 1]
        out[t] = list(zip(graph.ids[graph.indices[lo:hi]].tolist(),
                          graph.sims[lo:hi].tolist(), strict=True))
    return out


def as_ids(graph: KnnGraph, clusters) -> list[tuple[list[int], list[float]]]:
    return [(graph.ids[c.members].tolist(), c.scores.tolist()) for c in clusters]


@st.composite
def changes(draw):
    n = draw(st.integers(2, 40))
    ids = draw(st.lists(st.integers(0, 500), min_size=n, max_size=n, unique=True))
    pairs = st.tuples(st.sampled_from(ids), st.sampled_from(ids)).filter(lambda p: p[0] != p[1])
    edges = {tuple(sorted(p)): s for p, s in draw(st.lists(
        st.tuples(pairs, st.sampled_from(SIMS)), max_size=4 * n))}
    removed = draw(st.lists(st.sampled_from(ids), max_size=max(1, n // 4), unique=True))
    added = draw(st.lists(st.integers(0, 500).filter(lambda i: i not in ids), max_size=10,
                          unique=True))
    after = [i for i in ids if i not in removed] + added
    new_edges = {e: s for e, s in edges.items() if not set(e) & set(removed)}
    if len(after) >= 2:
        more = st.tuples(st.sampled_from(after), st.sampled_from(after)).filter(
            lambda p: p[0] != p[1])
        for p, s in draw(st.lists(st.tuples(more, st.sampled_from(SIMS)), max_size=3 * n)):
            new_edges.setdefault(tuple(sorted(p)), s)
        dropped = draw(st.lists(st.sampled_from(sorted(new_edges)), max_size=3, unique=True)) \
            if new_edges else []
        for e in dropped:
            del new_edges[e]
    threshold = draw(st.sampled_from([0.7, 0.75, 0.8, 0.85, 0.9]))
    return ids, edges, after, new_edges, threshold


@settings(max_examples=400, deadline=None)
@given(changes())
def test_the_incremental_cut_is_the_full_cut_of_the_same_graph(case):
    ids, edges, after, new_edges, threshold = case
    old = graph_of(ids, edges)
    new = graph_of(after, new_edges)
    before, now = rows_by_id(old), rows_by_id(new)
    touched = np.asarray(sorted(t for t in now if before.get(t) != now[t]), dtype=np.int64)
    previous = full_cut(old, threshold)
    result = recut_clusters(previous, new, touched)
    full = cut_clusters(new, threshold)
    assert as_ids(new, result.state.clusters) == as_ids(new, full)
    old_cut = {tuple(m): s for m, s in as_ids(old, previous.clusters)}
    for members, scores in as_ids(new, full):
        if members[0] not in result.changed:
            assert old_cut.get(tuple(members)) == scores   # unchanged means as before
    centres_now = {m[0] for m, _ in as_ids(new, full)}
    assert result.gone == {m[0] for m in old_cut} - centres_now


def test_nothing_touched_is_the_same_cut():
    g = graph_of([1, 2, 3, 4], {(1, 2): 0.9, (3, 4): 0.85, (2, 3): 0.6})
    previous = full_cut(g, 0.8)
    result = recut_clusters(previous, g, np.zeros(0, np.int64))
    assert result.state.clusters == previous.clusters and not result.changed


@st.composite
def changes_with_documents(draw):
    """`changes`, with some texts documents before and after (a text may become one, or
    stop being one), and some rows after the update differing outside `touched` (as the
    windows' scores of document edges do)."""
    ids, edges, after, new_edges, threshold = draw(changes())
    was = {t: draw(st.booleans()) for t in ids}
    now = {t: was.get(t, False) if draw(st.integers(0, 5)) else not was.get(t, False)
           for t in after}
    return ids, edges, after, new_edges, threshold, was, now


def with_documents(graph: KnnGraph, flags: dict[int, bool]) -> KnnGraph:
    marks = np.asarray([flags[t] for t in graph.ids.tolist()], dtype=bool)
    return graph.with_documents(marks) if marks.any() else graph


@settings(max_examples=600, deadline=None)
@given(changes_with_documents())
def test_a_graph_holding_documents_is_re_cut_as_it_is_cut_whole(case):
    """Documents are kept whole by the cut (each within the threshold of every other
    document of its cluster); the replay follows that rule too, and finds the rows of
    documents that changed without being named (only the added texts are named here)."""
    ids, edges, after, new_edges, threshold, was, now = case
    old = with_documents(graph_of(ids, edges), was)
    new = with_documents(graph_of(after, new_edges), now)
    before, rows_now = rows_by_id(old), rows_by_id(new)
    named = [t for t in rows_now if before.get(t) != rows_now[t]
             and not (was.get(t) or now[t])]
    previous = full_cut(old, threshold)
    result = recut_clusters(previous, new, np.asarray(sorted(named), dtype=np.int64))
    assert as_ids(new, result.state.clusters) == as_ids(new, cut_clusters(new, threshold))


def test_rows_that_changed_only_below_the_threshold_are_not_cut_again():
    """Most old rows a week's import touches gain a neighbour under the threshold; such a
    row's place and reach are the same, so it is not counted as changed."""
    from engine.dedup.recut import _changed_above

    old = graph_of([1, 2, 3, 4], {(1, 2): 0.9, (3, 4): 0.85})
    new = graph_of([1, 2, 3, 4, 5], {(1, 2): 0.9, (3, 4): 0.85, (2, 5): 0.6, (3, 5): 0.95})
    rows = np.arange(len(new.ids))
    changed = _changed_above(old, new, rows, new.counts_at(0.8), 0.8)
    assert new.ids[changed].tolist() == [3, 5]       # 2 gained 5 at 0.6 only
