import numpy as np
import pytest

from engine.dedup.cut import cut_clusters
from engine.dedup.graph import KnnGraph, build_knn_graph, texts_near
from engine.dedup.row_clusters import expand_clusters
from engine.index.hnsw import HnswIndex


def _graph(edges: dict[int, list[tuple[int, float]]], n: int, k: int = 3) -> KnnGraph:
    nbr = np.full((n, k), -1, np.int32)
    sim = np.zeros((n, k), np.float32)
    for i, row in edges.items():
        for j, (p, s) in enumerate(sorted(row, key=lambda x: -x[1])):
            nbr[i, j], sim[i, j] = p, s
    return KnnGraph.from_dense(np.arange(100, 100 + n), nbr, sim)


def test_clusters_do_not_chain():
    # A~B 0.9, B~C 0.9, A~C 0.5: at 0.8, C must not join A through B.
    g = _graph({0: [(1, 0.9), (2, 0.5)], 1: [(0, 0.9), (2, 0.9)], 2: [(1, 0.9), (0, 0.5)]}, 3)
    clusters = cut_clusters(g, 0.8)
    assert len(clusters) == 1
    members = set(clusters[0].members.tolist())
    centre = clusters[0].centre
    assert centre == 1 and members == {0, 1, 2}  # B is the centre: A and C are both near B
    for c in clusters:
        for p, s in zip(c.members[1:], c.scores[1:], strict=True):
            row = g.nbr[c.centre].tolist()
            assert g.sim[c.centre][row.index(int(p))] == s >= 0.8


def test_chain_broken_when_centre_cannot_reach_both_ends():
    # 0~1 0.95, 1~2 0.85, 2~3 0.95: greedy picks tight pairs, 0 and 3 never meet.
    g = _graph({0: [(1, 0.95)], 1: [(0, 0.95), (2, 0.85)], 2: [(3, 0.95), (1, 0.85)],
                3: [(2, 0.95)]}, 4)
    clusters = cut_clusters(g, 0.8)
    sets = [set(c.members.tolist()) for c in clusters]
    assert all(not ({0, 3} <= s) for s in sets)
    assert sum(len(s) for s in sets) <= 4


def _as_documents(graph: KnnGraph, *positions: int) -> KnnGraph:
    flags = np.zeros(len(graph.ids), dtype=bool)
    flags[list(positions)] = True
    return graph.with_documents(flags)


def test_documents_join_a_centre_only_within_the_threshold_of_every_document_in_it():
    # The graph of test_clusters_do_not_chain: as questions, A and C both join B; as
    # documents, C is not within 0.8 of A (0.5), so it is left out, and alone it is in none.
    g = _graph({0: [(1, 0.9), (2, 0.5)], 1: [(0, 0.9), (2, 0.9)], 2: [(1, 0.9), (0, 0.5)]}, 3)
    assert [c.members.tolist() for c in cut_clusters(g, 0.8)] == [[1, 0, 2]]
    assert [c.members.tolist() for c in cut_clusters(_as_documents(g, 0, 1, 2), 0.8)] \
        == [[1, 0]]
    # Only documents are held to it: with A a question, C (a document) joins B as before,
    # and so it does when B, the centre, is the only document.
    assert [c.members.tolist() for c in cut_clusters(_as_documents(g, 1, 2), 0.8)] \
        == [[1, 0, 2]]
    assert [c.members.tolist() for c in cut_clusters(_as_documents(g, 1), 0.8)] \
        == [[1, 0, 2]]


def test_a_document_left_out_of_a_cluster_stays_free_for_its_own_partner():
    # Two reworded copies and their originals: A (0) and A' (1) at 0.89; B' (2) reaches A
    # at 0.752 but its own original B (3) at 0.797. A, with more neighbours, is the centre
    # first. As questions it takes B' and leaves B alone; as documents B' is not within the
    # threshold of A', so B' and B make their own cluster.
    g = _graph({0: [(1, 0.89), (2, 0.752)], 1: [(0, 0.89)], 2: [(3, 0.797), (0, 0.752)],
                3: [(2, 0.797)]}, 4)
    assert sorted(sorted(c.members.tolist()) for c in cut_clusters(g, 0.75)) == [[0, 1, 2]]
    documents = _as_documents(g, 0, 1, 2, 3)
    assert sorted(sorted(c.members.tolist()) for c in cut_clusters(documents, 0.75)) \
        == [[0, 1], [2, 3]]


def test_document_flags_are_none_without_a_document_and_must_fit_the_graph():
    g = _graph({0: [(1, 0.9)], 1: [(0, 0.9)]}, 2)
    assert g.with_documents(np.zeros(2, dtype=bool)) is g
    marked = g.with_documents(np.array([True, False]))
    assert marked.documents.tolist() == [True, False]
    assert marked.with_documents(np.array([True, False])) is marked
    with pytest.raises(ValueError, match="3 document flags for a graph of 2 texts"):
        g.with_documents(np.ones(3, dtype=bool))


def test_threshold_above_everything_gives_no_clusters():
    g = _graph({0: [(1, 0.7)], 1: [(0, 0.7)]}, 2)
    assert cut_clusters(g, 0.8) == []
    assert len(cut_clusters(g, 0.6)) == 1


def test_graph_from_index_excludes_self_and_orders_by_similarity():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(50, 16)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    index = HnswIndex(16)
    ids = np.arange(7, 57)
    index.add(ids, v)
    g = build_knn_graph(index, 5)
    assert (g.ids == ids).all()
    assert not (g.nbr == np.arange(50)[:, None]).any()
    assert (np.diff(g.sim, axis=1) <= 1e-6).all()
    exact = np.argsort(-(v @ v.T), axis=1)[:, 1]
    assert (g.nbr[:, 0] == exact).mean() >= 0.98


def test_exact_duplicate_rows_share_a_cluster_even_without_neighbours():
    def item(i, t):
        return {"id": i, "ext_id": None, "row": i, "source_id": 1, "text": f"t{t}",
                "text_id": t}

    rows = {5: [item(1, 5), item(2, 5)], 6: [item(3, 6)], 7: [item(4, 7)]}
    clusters = expand_clusters([([6, 7], [1.0, 0.9])], rows, exact_only_texts=[5])
    assert [len(c.members) for c in clusters] == [2, 2]
    exact = next(c for c in clusters if c.canonical.text_id == 5)
    assert {m.item_id for m in exact.members} == {1, 2}
    assert all(m.score == 1.0 for m in exact.members)


def test_texts_near_are_every_text_a_lower_cut_could_cluster():
    ids = np.array([10, 11, 12, 13], dtype=np.int64)
    nbr = np.array([[1, 2], [0, -1], [3, 0], [2, -1]], dtype=np.int32)
    sim = np.array([[0.9, 0.7], [0.9, 0.0], [0.72, 0.7], [0.72, 0.0]], dtype=np.float32)
    graph = KnnGraph.from_dense(ids, nbr, sim)
    assert texts_near(graph, 0.8) == [10, 11]
    assert texts_near(graph, 0.71) == [10, 11, 12, 13]
    assert texts_near(graph, 0.95) == []
    clustered = {int(ids[p]) for c in cut_clusters(graph, 0.71) for p in c.members}
    assert clustered <= set(texts_near(graph, 0.71))


def test_member_cache_stays_bounded_while_the_threshold_moves():
    """Every new centre gives its members new similarities; the cache must not keep them
    all, and a member made again after a fresh start is equal to the first."""
    from engine.dedup import clustered_rows as rows_module
    from engine.dedup.clustered_rows import RowsByText

    cache = RowsByText()
    item = {"id": 7, "row": 3, "source_id": "q7", "text": "How do I boil an egg?",
            "text_id": 70, "public_id": "q7"}
    first = cache.member(item, 0.9)
    assert cache.member(item, 0.9) is first                 # made once per row and score
    limit = rows_module.MEMBERS_FLOOR
    for i in range(3 * limit):
        cache.member({**item, "id": 1000 + i}, 0.5)
    assert 0 < cache.member_count <= limit
    assert cache.member(item, 0.9) == first


def test_texts_in_no_cluster_keeps_the_order_and_the_texts_outside_the_graph():
    from engine.dedup.cut import TextCluster
    from engine.dedup.row_clusters import texts_in_no_cluster

    ids = np.asarray([3, 5, 8, 13, 21], dtype=np.int64)
    clusters = [TextCluster(np.asarray([1, 3]), np.asarray([1.0, 0.9], np.float32))]
    # 5 and 13 are clustered; 4 and 99 are not in the graph at all
    assert texts_in_no_cluster([3, 4, 5, 13, 21, 99], clusters, ids) == [3, 4, 21, 99]
    assert texts_in_no_cluster([5], [], ids) == [5]
    assert texts_in_no_cluster([], clusters, ids) == []
    assert texts_in_no_cluster([7], [], np.zeros(0, np.int64)) == [7]
