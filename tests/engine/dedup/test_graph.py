"""The neighbour graph holds every pair above its floor, even where a text has more than k."""

import io
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.dedup.cut import cut_clusters
from engine.dedup.graph import KnnGraph, build_knn_graph, texts_near
from engine.index.hnsw import HnswIndex

GROUP = 30   # near-identical texts: each has 29 neighbours above the threshold, k is 10
K = 10
THRESHOLD = 0.8


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def dense_set():
    """A group of 30 noisy copies of one vector (pairwise about 0.9) among 400 unrelated
    ones (random in 48 dimensions: pairwise below 0.6), with ids that are not positions."""
    rng = np.random.default_rng(3)
    centre = rng.normal(size=(1, 48))
    group = _unit(centre + 0.33 * rng.normal(size=(GROUP, 48)))
    others = _unit(rng.normal(size=(400, 48)))
    vectors = np.concatenate([others[:200], group, others[200:]])
    ids = np.arange(len(vectors), dtype=np.int64) * 3 + 5
    index = HnswIndex(48)
    index.add(ids, vectors)
    return index, ids, vectors


def _pairs_above(graph: KnnGraph, threshold: float) -> set[tuple[int, int]]:
    rows = graph.row_of_entries()
    keep = graph.sims >= threshold
    a, b = graph.ids[rows[keep]], graph.ids[graph.indices[keep]]
    return {(min(x, y), max(x, y)) for x, y in zip(a.tolist(), b.tolist(), strict=True)}


def _exact_pairs(ids, vectors, threshold: float) -> set[tuple[int, int]]:
    i, j = np.nonzero(np.triu(vectors @ vectors.T >= threshold, 1))
    return {(int(ids[a]), int(ids[b])) for a, b in zip(i, j, strict=True)}


def test_every_pair_above_the_threshold_is_found_although_k_is_smaller(dense_set):
    index, ids, vectors = dense_set
    exact = _exact_pairs(ids, vectors, THRESHOLD)
    assert len(exact) >= GROUP * (GROUP - 1) // 2 * 0.95      # the group is really dense
    graph = build_knn_graph(index, K, floor=0.75)
    assert _pairs_above(graph, THRESHOLD) == exact
    # What the graph was before: each text's 10 nearest, mirrored, misses pairs.
    plain = build_knn_graph(index, K, floor=np.inf)
    assert len(_pairs_above(plain, THRESHOLD)) < len(exact)
    assert plain.floor == np.inf and graph.floor == 0.75


def test_a_centre_gathers_more_than_k_and_clusters_still_do_not_chain(dense_set):
    index, ids, vectors = dense_set
    graph = build_knn_graph(index, K)
    clusters = cut_clusters(graph, THRESHOLD)
    biggest = clusters[0]
    assert len(biggest.members) > K + 1
    centre = vectors[biggest.centre]
    for member, score in zip(biggest.members.tolist(), biggest.scores.tolist(), strict=True):
        assert float(vectors[member] @ centre) >= THRESHOLD - 1e-5
        assert abs(float(vectors[member] @ centre) - score) < 1e-5


def test_rows_are_symmetric_sorted_and_without_self_or_repeats(dense_set):
    index, _, vectors = dense_set
    graph = build_knn_graph(index, K)
    rows = graph.row_of_entries()
    assert not (rows == graph.indices).any()
    pairs = list(zip(rows.tolist(), graph.indices.tolist(), strict=True))
    assert len(set(pairs)) == len(pairs)
    assert set(pairs) == {(b, a) for a, b in pairs}
    for i in range(len(graph.ids)):
        run = graph.sims[graph.indptr[i]:graph.indptr[i + 1]]
        assert (np.diff(run) <= 0).all()
    exact = np.einsum("ij,ij->i", vectors[rows], vectors[graph.indices])
    assert np.allclose(graph.sims, exact, atol=1e-5)
    # The (n, k) views are each row's k nearest, as the search returned them.
    assert graph.nbr.shape == graph.sim.shape == (len(graph.ids), K)
    assert (graph.nbr[:, 0] == graph.indices[graph.indptr[:-1]]).all()


def test_the_graph_is_the_same_built_twice_on_any_number_of_threads(dense_set):
    index, _, _ = dense_set
    one = build_knn_graph(index, K, threads=1)
    two = build_knn_graph(index, K, threads=2)
    for name in ("ids", "indptr", "indices", "sims"):
        assert np.array_equal(getattr(one, name), getattr(two, name))
    assert [c.members.tolist() for c in cut_clusters(one, THRESHOLD)] == \
        [c.members.tolist() for c in cut_clusters(two, THRESHOLD)]


def test_vectors_can_come_from_elsewhere_and_are_normalised(dense_set):
    index, ids, vectors = dense_set
    by_id = dict(zip(ids.tolist(), (3 * vectors).tolist(), strict=True))   # not unit length
    calls = []

    def read(text_ids):
        calls.append(len(text_ids))
        return np.asarray([by_id[t] for t in text_ids.tolist()], dtype=np.float32)

    graph = build_knn_graph(index, K, vectors=read)
    assert calls and sum(calls) >= len(ids)
    assert _pairs_above(graph, THRESHOLD) == _exact_pairs(ids, vectors, THRESHOLD)


def test_bytes_round_trip_and_an_old_layout_is_refused(dense_set):

    index, _, _ = dense_set
    graph = build_knn_graph(index, K)
    again = KnnGraph.from_bytes(graph.to_bytes())
    for name in ("ids", "indptr", "indices", "sims"):
        assert np.array_equal(getattr(graph, name), getattr(again, name))
    assert (again.k, again.floor) == (graph.k, graph.floor)
    old = io.BytesIO()
    np.savez(old, ids=graph.ids, nbr=graph.nbr, sim=graph.sim)   # the (n, k) layout
    with pytest.raises((KeyError, ValueError)):
        KnnGraph.from_bytes(old.getvalue())


def test_an_empty_or_lonely_graph_cuts_to_nothing():
    index = HnswIndex(8)
    assert cut_clusters(build_knn_graph(index, K), THRESHOLD) == []
    index.add(np.array([4]), _unit(np.ones((1, 8))))
    lonely = build_knn_graph(index, K)
    assert lonely.ids.tolist() == [4] and len(lonely.indices) == 0
    assert np.isnan(lonely.nearest_similarities()).all()
    assert cut_clusters(lonely, THRESHOLD) == []


@pytest.fixture
def eggs_project(new_project, data_dir, tmp_path):
    """The 48 test questions and 30 near-identical ones (pairwise about 0.97), encoded by
    the real model."""
    src = tmp_path / "eggs.csv"
    lines = ["question"] + [f"How do I boil an egg? (question {i})" for i in range(GROUP)]
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    project = new_project()
    project.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
    project.rows.import_table(src, ["question"])
    project.vectors.encode()
    return project


def test_the_projects_graph_holds_every_pair_exact_search_finds(eggs_project):
    """Pair recall 1.0 against exact search on real embeddings at every threshold from the
    floor up, with k far smaller than the densest group; the plain 3-NN graph misses most."""
    project = eggs_project
    graph = project.clusters.graph(3)
    vectors = project.vectors.vectors(graph.ids)
    for threshold in (0.75, 0.8, 0.9):
        exact = _exact_pairs(graph.ids, vectors, threshold)
        assert len(exact) >= GROUP * (GROUP - 1) // 2
        assert _pairs_above(graph, threshold) == exact
    plain = build_knn_graph(project.vectors.index(), 3, floor=np.inf)
    assert len(_pairs_above(plain, 0.8)) < 0.5 * len(_exact_pairs(graph.ids, vectors, 0.8))


def test_thirty_near_identical_questions_form_one_cluster_with_k_10(eggs_project):
    clusters = eggs_project.clusters.cut(0.9, K)
    eggs = [c for c in clusters if "boil an egg? (question" in c.canonical.text]
    assert len(eggs) == 1
    assert sum("boil an egg? (question" in m.text for m in eggs[0].members) == GROUP


def test_duplens_duplicates_gathers_more_than_its_neighbours(eggs_project, tmp_path):
    """The command line cuts the same completed graph (a fresh process, graph from the
    project file or built anew)."""
    from tests.engine.cli.test_cli import run

    eggs_project.vectors.save_index()
    path = tmp_path / "test.duplens"
    eggs_project.close()
    proc = run("duplicates", str(path), "--threshold", "0.9", "--neighbours", "5", "--json")
    clusters = json.loads(proc.stdout)
    sizes = [sum("boil an egg? (question" in m["text"] for m in c["members"])
             for c in clusters]
    assert max(sizes) == GROUP


def test_a_component_bigger_than_the_score_budget_is_searched_in_smaller_blocks(
        dense_set, monkeypatch):
    """A budget of 100 scores leaves blocks of 3 rows in the 30-text group: the same pairs."""
    from engine.dedup import dense

    index, ids, vectors = dense_set
    monkeypatch.setattr(dense, "_SCORES_AT_ONCE", 100)
    graph = build_knn_graph(index, K, floor=0.75)
    assert _pairs_above(graph, THRESHOLD) == _exact_pairs(ids, vectors, THRESHOLD)


def test_the_stored_vectors_come_back_by_id_in_the_order_asked(eggs_project):
    """The graph's reader: a dense run of ids (one range read) and scattered ids (IN lists)
    give the vectors the model stored, in the order asked; an unknown id is an error."""
    from engine.errors import ProjectError
    from engine.store.embeddings import read_vectors

    project = eggs_project
    ids = np.sort(project.vectors.index().ids())
    model_id, dim = project.vectors.model_id(), project.vectors.index().dim
    expected = project.vectors.vectors(ids)
    with project.store.read() as conn:
        got = read_vectors(conn, model_id, dim, ids[::-1])          # dense, reversed
        scattered = read_vectors(conn, model_id, dim, ids[[0, -1]])  # span ≫ count
        with pytest.raises(ProjectError):
            read_vectors(conn, model_id, dim, np.r_[ids[:3], ids.max() + 1000])
    unit = got / np.linalg.norm(got, axis=1, keepdims=True)
    np.testing.assert_allclose(unit, expected[::-1], atol=1e-5)
    np.testing.assert_allclose(scattered, got[[-1, 0]])


# -- a stored graph from someone else's project ---------------------------------------------
def _archive(graph: KnnGraph, **changes) -> bytes:
    """`graph.to_bytes()` with some members replaced (or added)."""
    members = dict(format=np.int64(2), ids=graph.ids, indptr=graph.indptr,
                   indices=graph.indices, sims=graph.sims, k=np.int64(graph.k),
                   floor=np.float64(graph.floor))
    members.update(changes)
    buf = io.BytesIO()
    np.savez(buf, **members)
    return buf.getvalue()


def _crafted(graph: KnnGraph) -> dict[str, bytes]:
    n, e = len(graph.ids), len(graph.indices)
    indices, sims, indptr, ids = (graph.indices.copy(), graph.sims.copy(),
                                  graph.indptr.copy(), graph.ids.copy())
    far, below, own = indices.copy(), indices.copy(), indices.copy()
    far[e // 2] = n
    below[3] = -1
    own[graph.indptr[5]] = 5
    unsorted = sims.copy()
    row = int(np.flatnonzero(np.diff(indptr) >= 2)[0])
    unsorted[indptr[row]], unsorted[indptr[row] + 1] = sims[indptr[row] + 1] - 0.01, sims[
        indptr[row]]
    back = indptr.copy()
    back[7] = back[8] + 1
    swapped = ids.copy()
    swapped[[2, 3]] = swapped[[3, 2]]
    compressed = io.BytesIO()
    np.savez_compressed(compressed, format=np.int64(2), ids=ids, indptr=indptr,
                        indices=indices, sims=sims, k=np.int64(graph.k),
                        floor=np.float64(graph.floor))
    good = graph.to_bytes()
    return {
        "a neighbour beyond the nodes": _archive(graph, indices=far),
        "a negative neighbour": _archive(graph, indices=below),
        "a node its own neighbour": _archive(graph, indices=own),
        "rows that go back": _archive(graph, indptr=back),
        "rows past the entries": _archive(graph, indptr=np.r_[indptr[:-1], e + 5]),
        "a row start missing": _archive(graph, indptr=indptr[:-1]),
        "entries without similarities": _archive(graph, sims=sims[:-1]),
        "ids out of order": _archive(graph, ids=swapped),
        "ids the index does not hold": _archive(graph, ids=ids + 1),
        "a similarity NaN": _archive(graph, sims=np.where(np.arange(e) == 4, np.nan, sims)
                                     .astype(np.float32)),
        "a similarity of 2": _archive(graph, sims=np.where(np.arange(e) == 4, 2, sims)
                                      .astype(np.float32)),
        "a row not sorted": _archive(graph, sims=unsorted),
        "64-bit neighbours": _archive(graph, indices=indices.astype(np.int64)),
        "big-endian ids": _archive(graph, ids=ids.astype(">i8")),
        "a 2-d array": _archive(graph, sims=np.c_[sims, sims]),
        "another k": _archive(graph, k=np.int64(11)),
        "a floor of NaN": _archive(graph, floor=np.float64(np.nan)),
        "a member more": _archive(graph, extra=np.zeros(3)),
        "compressed members": compressed.getvalue(),
        "half an archive": good[: len(good) // 2],
        "an archive's start and garbage": good[:4] + bytes(200),
        "not an archive": b"\x93NUMPY" + bytes(100),
        "nothing": b"",
    }


def test_a_crafted_or_damaged_stored_graph_is_refused(dense_set):
    index, _, _ = dense_set
    graph = build_knn_graph(index, K)
    again = KnnGraph.from_bytes(graph.to_bytes(), k=K, labels=index.ids())
    assert np.array_equal(again.indices, graph.indices)
    for name, data in _crafted(graph).items():
        with pytest.raises(ValueError):
            KnnGraph.from_bytes(data, k=K, labels=index.ids())
            pytest.fail(name)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_whatever_bytes_a_stored_graph_holds_it_is_refused_or_cuts(dense_set, data):
    """Random damage to a real stored graph: ValueError, or a graph that every use of it
    (a cut, the dense views, the histogram) handles without an exception."""
    index, _, _ = dense_set
    blob = bytearray(_stored_graph(index))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(blob) - 1))
        blob[at:at + 8] = data.draw(st.binary(min_size=1, max_size=8))
    try:
        graph = KnnGraph.from_bytes(bytes(blob), k=K, labels=index.ids())
    except ValueError:
        return
    cut_clusters(graph, THRESHOLD)
    texts_near(graph, THRESHOLD)
    assert graph.nbr.shape == graph.sim.shape == (len(graph.ids), K)
    graph.nearest_similarities()


_GRAPHS: dict[int, bytes] = {}


def _stored_graph(index: HnswIndex) -> bytes:
    if id(index) not in _GRAPHS:
        _GRAPHS[id(index)] = build_knn_graph(index, K).to_bytes()
    return _GRAPHS[id(index)]


def test_a_project_whose_stored_graph_was_crafted_builds_it_again(open_questions, encoder):
    """The stored graph's stamp still matches (it is in the same file), its arrays do not add
    up: the review cuts the same clusters from a graph built again."""
    from engine.project import Project
    from engine.store.blobs import get_blob, put_blob

    project = open_questions
    before = [sorted(c.item_ids()) for c in project.clusters.cut(0.8)]
    path, model = project.path, project.model.id()
    name = f"knn/{model}/10"
    with project.store.write() as conn:
        stored = KnnGraph.from_bytes(get_blob(conn, name))
        indices = stored.indices.copy()
        indices[::3] = 10**6                          # far beyond the graph's nodes
        put_blob(conn, name, _archive(stored, indices=indices))
    project.close()
    reopened = Project.open(path)
    try:
        reopened.model.attach(encoder, is_default=True)
        assert [sorted(c.item_ids()) for c in reopened.clusters.cut(0.8)] == before != []
    finally:
        reopened.close()


@given(st.lists(st.floats(width=32, allow_nan=False), min_size=2, max_size=50))
def test_similarity_keys_sort_highest_first_as_the_floats_do(values):
    """The integer keys rows are sorted by (`graph.descending_keys`): highest similarity first,
    negatives, zeros and infinities included; equal floats, equal keys."""
    from engine.dedup.graph import descending_keys

    sims = np.asarray(values, dtype=np.float32)
    keys = descending_keys(sims)
    assert ((keys >= 0) & (keys < 2**32)).all()
    for i in range(len(sims) - 1):
        a, b = float(sims[i]), float(sims[i + 1])
        assert (keys[i] < keys[i + 1]) == (a > b) or (a == b and a == 0.0)
        if a == b and np.signbit(sims[i]) == np.signbit(sims[i + 1]):
            assert keys[i] == keys[i + 1]
