"""Updating the neighbour graph for texts added and removed, against building it again."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.dedup.cut import cut_clusters
from engine.dedup.graph import KnnGraph, build_knn_graph
from engine.dedup.graph_update import _merge, _positions, _remapped_columns, update_graph
from engine.dedup.recut import full_cut, recut_clusters
from engine.index.hnsw import HnswIndex

K = 10
FLOOR = 0.75


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _pairs_above(graph: KnnGraph, threshold: float) -> set[tuple[int, int]]:
    rows = graph.row_of_entries()
    keep = graph.sims >= threshold
    a, b = graph.ids[rows[keep]], graph.ids[graph.indices[keep]]
    return {(min(x, y), max(x, y)) for x, y in zip(a.tolist(), b.tolist(), strict=True)}


def _rows(graph: KnnGraph) -> dict[int, list[tuple[int, float]]]:
    out = {}
    for p, t in enumerate(graph.ids.tolist()):
        lo, hi = graph.indptr[p], graph.indptr[p + 1]
        out[t] = list(zip(graph.ids[graph.indices[lo:hi]].tolist(),
                          graph.sims[lo:hi].tolist(), strict=True))
    return out


@pytest.fixture(scope="module")
def world():
    """600 texts: 40 groups of 5 noisy copies (pairs about 0.9) and 400 loners, plus a
    dense group of 30; ids interleaved so that added texts land between old ones."""
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(40, 48))
    groups = _unit(np.repeat(centres, 5, axis=0) + 0.3 * rng.normal(size=(200, 48)))
    dense = _unit(rng.normal(size=(1, 48)) + 0.33 * rng.normal(size=(30, 48)))
    loners = _unit(rng.normal(size=(400, 48)))
    vectors = np.concatenate([groups, dense, loners])
    ids = rng.permutation(len(vectors)).astype(np.int64) * 2 + 1
    return ids, vectors


def _index(ids, vectors) -> HnswIndex:
    index = HnswIndex(48)
    index.add(ids, vectors)
    return index


def test_added_texts_find_what_a_full_build_finds(world):
    ids, vectors = world
    rng = np.random.default_rng(1)
    later = rng.random(len(ids)) < 0.25                    # a quarter arrive next week
    index = _index(ids[~later], vectors[~later])
    before = build_knn_graph(index, K, floor=FLOOR)
    index.add(ids[later], vectors[later])
    update = update_graph(before, index, ids)
    full = build_knn_graph(index, K, floor=FLOOR)
    assert set(update.added.tolist()) == set(ids[later].tolist()) and not len(update.removed)
    assert (update.graph.ids == full.ids).all()
    wanted = _pairs_above(full, 0.8)
    got = _pairs_above(update.graph, 0.8)
    assert got >= wanted                                   # every pair the build holds
    exact = vectors @ vectors.T
    at = {t: i for i, t in enumerate(ids.tolist())}
    for a, row in _rows(update.graph).items():           # and only real pairs
        assert all(abs(exact[at[a], at[b]] - s) < 1e-4 for b, s in row)
    # Rows the update did not touch are the rows they were.
    old_rows, new_rows = _rows(before), _rows(update.graph)
    untouched = set(old_rows) - set(update.touched.tolist())
    assert untouched and all(old_rows[t] == new_rows[t] for t in untouched)
    # Below the floor each text still has its k nearest (as the build's own search found).
    assert all(len(row) >= K for row in new_rows.values())


@pytest.mark.parametrize(("big", "budget"), [(2, 4_194_304), (64, 4_194_304), (64, 100),
                                             (10**9, 4_194_304)])
def test_a_dense_neighbourhood_is_scored_whole_in_products_or_pairs(big, budget,
                                                                    monkeypatch):
    """A neighbourhood of 150 texts all at the floor or above of one another: the added
    ones are scored against all of it, by one product per component (`big` and above;
    a few new texts at a time when `budget` scores cannot hold them all) or pair by pair,
    and either way every pair the full build holds is found."""
    import engine.dedup.graph_update as graph_update

    monkeypatch.setattr(graph_update, "_BIG_COMPONENT", big)
    monkeypatch.setattr(graph_update, "_SCORES_AT_ONCE", budget)
    rng = np.random.default_rng(3)
    dense = _unit(rng.normal(size=(1, 48)) + 0.5 * rng.normal(size=(150, 48)))
    vectors = np.concatenate([dense, _unit(rng.normal(size=(200, 48)))])
    ids = rng.permutation(len(vectors)).astype(np.int64) * 2 + 1
    later = rng.random(len(ids)) < 0.2
    index = _index(ids[~later], vectors[~later])
    before = build_knn_graph(index, K, floor=FLOOR)
    index.add(ids[later], vectors[later])
    update = update_graph(before, index, ids)
    full = build_knn_graph(index, K, floor=FLOOR)
    assert _pairs_above(update.graph, FLOOR) == _pairs_above(full, FLOOR)
    assert len(_pairs_above(full, FLOOR)) > 150 * 149 // 2 * 0.9   # the neighbourhood is dense
    assert len(_pairs_above(full, 0.85)) < 150 * 149 // 2 * 0.6   # with pairs all over it
    exact = vectors @ vectors.T
    at = {t: i for i, t in enumerate(ids.tolist())}
    for a, row in _rows(update.graph).items():
        assert all(abs(exact[at[a], at[b]] - s) < 1e-4 for b, s in row)


def test_removed_texts_leave_and_their_neighbours_keep_k(world):
    ids, vectors = world
    index = _index(ids, vectors)
    before = build_knn_graph(index, K, floor=FLOOR)
    gone = ids[::7]
    index.mark_deleted(gone)
    live = np.setdiff1d(ids, gone)
    update = update_graph(before, index, live)
    assert set(update.removed.tolist()) == set(gone.tolist())
    assert not set(update.graph.ids.tolist()) & set(gone.tolist())
    rows = _rows(update.graph)
    assert not {b for row in rows.values() for b, _ in row} & set(gone.tolist())
    assert all(len(row) >= K for row in rows.values())
    full = build_knn_graph(index, K, live, floor=FLOOR)
    assert _pairs_above(update.graph, 0.8) >= _pairs_above(full, 0.8)


def test_the_cut_of_an_updated_graph_is_recut_only_where_it_changed(world):
    ids, vectors = world
    later = np.zeros(len(ids), bool)
    later[-40:] = True
    index = _index(ids[~later], vectors[~later])
    before = build_knn_graph(index, K, floor=FLOOR)
    previous = full_cut(before, 0.8)
    index.add(ids[later], vectors[later])
    update = update_graph(before, index, ids)
    result = recut_clusters(previous, update.graph, update.touched)
    full = cut_clusters(update.graph, 0.8)
    assert [c.members.tolist() for c in result.state.clusters] == \
        [c.members.tolist() for c in full]
    assert len(result.changed) < len(full)


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans(), st.booleans(), st.booleans())
def test_a_merge_is_the_graph_of_all_its_entries(seed, remove, interleave, covered):
    """`_merge` copies untouched rows as they are and merges the new entries into the
    others: the result is what sorting every entry again gives, and it names every row
    that gained or lost one. `covered`: the new entries each have an end among some texts
    (the searched ones, as `update_graph` says), and only old entries there are compared
    with them."""
    rng = np.random.default_rng(seed)
    n_old = int(rng.integers(1, 40))
    old_ids = np.sort(rng.choice(np.arange(1, 400, 2), n_old, replace=False))
    e = int(rng.integers(0, 4 * n_old))
    old = KnnGraph.from_rows(old_ids, rng.integers(0, n_old, e), rng.integers(0, n_old, e),
                             rng.choice(np.linspace(0.5, 1.0, 11), e).astype(np.float32),
                             K, FLOOR)
    kept = old_ids[rng.random(n_old) > 0.3] if remove else old_ids
    fresh = rng.choice(np.arange(0, 400, 2) if interleave else np.arange(400, 500),
                       int(rng.integers(0, 10)), replace=False)
    new_ids = np.union1d(kept, fresh)
    n = len(new_ids)
    old_to_new = _positions(new_ids, old_ids)
    m = int(rng.integers(0, 3 * n + 1)) if n else 0
    rows, cols = rng.integers(0, n, m), rng.integers(0, n, m)
    sims = rng.choice(np.linspace(0.5, 1.0, 11), m).astype(np.float32)
    cover = None
    if covered and n:
        cover = rng.random(n) < 0.3
        ends = cover[rows] | cover[cols]
        rows, cols, sims = rows[ends], cols[ends], sims[ends]

    r_old, c_old = old_to_new[old.row_of_entries()], old_to_new[old.indices]
    lost = np.unique(r_old[(r_old >= 0) & (c_old < 0)])   # as update_graph names them
    merged, touched = _merge(old, new_ids, old_to_new, _remapped_columns(old, old_to_new),
                             lost, rows, cols, sims, cover)

    keep = (r_old >= 0) & (c_old >= 0)
    want = KnnGraph.from_rows(new_ids, np.concatenate([r_old[keep], rows]),
                              np.concatenate([c_old[keep], cols]),
                              np.concatenate([old.sims[keep], sims]), K, FLOOR)
    assert _rows(merged) == _rows(want)
    assert np.array_equal(merged.indptr, want.indptr)
    changed = {int(p) for p in rows[rows != cols]}
    changed |= {int(p) for p in r_old[(r_old >= 0) & (c_old < 0)]}
    assert changed <= set(np.flatnonzero(touched).tolist())
    assert set(np.flatnonzero(touched).tolist()) <= changed | {int(p) for p in rows}
