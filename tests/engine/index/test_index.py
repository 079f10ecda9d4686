import numpy as np
import pytest

from engine.index.hnsw import HnswIndex, HnswParams


def _unit(rng, n, dim=32):
    v = rng.normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_grows_past_capacity_and_finds_itself():
    rng = np.random.default_rng(0)
    vecs = _unit(rng, 500)
    ids = np.arange(1000, 1500)
    index = HnswIndex(32, capacity=16)
    index.add(ids[:250], vecs[:250])
    index.add(ids[250:], vecs[250:])
    assert len(index) == 500
    labels, sims = index.query(vecs[:20], 1)
    assert (labels[:, 0] == ids[:20]).all()
    assert np.allclose(sims[:, 0], 1.0, atol=1e-5)


def test_recall_at_10_against_exact_search():
    rng = np.random.default_rng(1)
    vecs = _unit(rng, 3000, 64)
    index = HnswIndex(64)
    index.add(np.arange(3000), vecs)
    queries = _unit(rng, 100, 64)
    labels, _ = index.query(queries, 10)
    exact = np.argsort(-queries @ vecs.T, axis=1)[:, :10]
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(labels, exact, strict=True)])
    assert recall >= 0.99


def test_deleted_ids_are_not_returned_and_k_is_capped():
    rng = np.random.default_rng(2)
    vecs = _unit(rng, 5)
    index = HnswIndex(32)
    index.add(np.arange(5), vecs)
    index.mark_deleted(np.array([0, 1]))
    labels, _ = index.query(vecs[0], 10)
    assert labels.shape == (1, 3)
    assert not {0, 1} & set(labels[0].tolist())


def test_empty_index_returns_no_columns():
    labels, sims = HnswIndex(8).query(np.ones(8, np.float32), 5)
    assert labels.shape == (1, 0) and sims.shape == (1, 0)


def test_round_trip_through_bytes():
    rng = np.random.default_rng(3)
    vecs = _unit(rng, 200)
    index = HnswIndex(32)
    index.add(np.arange(200), vecs)
    copy = HnswIndex.from_bytes(index.to_bytes(), 32, HnswParams())
    a, _ = index.query(vecs[:10], 5)
    b, _ = copy.query(vecs[:10], 5)
    assert (a == b).all()


def test_garbage_bytes_are_rejected_not_loaded():
    with pytest.raises(ValueError):
        HnswIndex.from_bytes(b"\x00" * 10, 32, HnswParams())


def test_the_query_beam_widens_with_the_index_up_to_a_cap(monkeypatch):
    import engine.index.hnsw as hnsw

    monkeypatch.setattr(hnsw, "EF_BASE_ITEMS", 100)
    rng = np.random.default_rng(5)
    index = HnswIndex(16, HnswParams(ef=20))
    index.add(np.arange(50), _unit(rng, 50, 16))
    assert index.query_ef() == 20                     # below the base size: params.ef
    index.add(np.arange(50, 250), _unit(rng, 200, 16))
    assert index.query_ef() == 50                     # 250 items: 2.5 times as wide
    index.add(np.arange(250, 1000), _unit(rng, 750, 16))
    assert index.query_ef() == 20 * hnsw.EF_MAX_FACTOR
    exact = np.argsort(-(index.vectors(np.arange(1000)) @ index.vectors(np.array([3])).T)[:, 0])
    assert index.query(index.vectors(np.array([3])), 5)[0][0].tolist() == exact[:5].tolist()


def test_the_neighbour_graph_is_the_same_on_one_thread_or_several():
    from engine.dedup.graph import build_knn_graph

    rng = np.random.default_rng(6)
    index = HnswIndex(32)
    index.add(np.arange(2000), _unit(rng, 2000))
    one = build_knn_graph(index, 10, ef=128, threads=1)
    two = build_knn_graph(index, 10, ef=128, threads=2)
    assert np.array_equal(one.ids, two.ids) and np.array_equal(one.nbr, two.nbr)
    assert np.allclose(one.sim, two.sim)
