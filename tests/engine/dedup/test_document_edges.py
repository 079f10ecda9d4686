"""Document edges scored from windows, and MinHash candidates joining the graph."""

from __future__ import annotations

import numpy as np

from engine.dedup.document_edges import rescored
from engine.dedup.graph import KnnGraph
from engine.documents.window_match import match_windows, window_weights

DIM = 16


def _unit(rng, n):
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _setup():
    """Text 1: a document of 4 windows; text 2: the same 4 windows after 2 new ones (a new
    introduction); text 3: a question; text 4: a document sharing nothing."""
    rng = np.random.default_rng(0)
    body, intro, other = _unit(rng, 4), _unit(rng, 2), _unit(rng, 3)
    spans = lambda n: np.array([(i * 100, i * 100 + 200) for i in range(n)])  # noqa: E731
    windows = {1: (spans(4), body), 2: (spans(6), np.vstack((intro, body))),
               4: (spans(3), other)}
    means = {t: w[1].mean(axis=0) for t, w in windows.items()}
    means[3] = _unit(rng, 1)[0]
    vectors = {t: v / np.linalg.norm(v) for t, v in means.items()}
    return windows, vectors


def _readers(windows, vectors):
    def read_windows(ids):
        return {int(t): windows[int(t)] for t in ids if int(t) in windows}

    def read_vectors(ids):
        return np.stack([vectors[int(t)] for t in ids])

    return read_windows, read_vectors


def _sim(graph, a, b):
    i = int(np.searchsorted(graph.ids, a))
    row = slice(graph.indptr[i], graph.indptr[i + 1])
    hits = graph.ids[graph.indices[row]] == b
    return float(graph.sims[row][hits][0]) if hits.any() else None


def test_edges_touching_documents_get_the_window_similarity_and_candidates_join():
    windows, vectors = _setup()
    ids = np.array([1, 2, 3, 4])
    # The vectors' graph: 1-3 and 2-3 (a question near each), 1-4; no 1-2 edge at all.
    rows, cols = np.array([0, 2, 1, 2, 0, 3]), np.array([2, 0, 2, 1, 3, 0])
    sims = np.full(6, 0.5, dtype=np.float32)
    graph = KnnGraph.from_rows(ids, rows, cols, sims, k=2, floor=0.75)
    read_windows, read_vectors = _readers(windows, vectors)
    scored = rescored(graph, np.array([1, 2, 4]), read_windows, read_vectors,
                      candidates=[(1, 2), (2, 99)])          # 99: not in the graph
    contained = match_windows(windows[1][1], windows[1][0], windows[2][1], windows[2][0],
                              cutoff=0.9)
    assert contained.held_ab == 1.0 and contained.held_ba < 1.0   # 2 holds all of 1
    assert _sim(scored, 1, 2) == _sim(scored, 2, 1) == np.float32(contained.similarity)
    assert _sim(scored, 1, 2) > 0.99
    # A question against a document: its best window, or how the question covers the
    # whole document (each window's cosine, weighted), whichever is more.
    cosines = windows[1][1] @ vectors[3]
    expected = max(cosines.max(), float(window_weights(windows[1][0]) @ cosines))
    assert _sim(scored, 1, 3) == _sim(scored, 3, 1) == np.float32(expected)
    assert _sim(scored, 1, 4) < 0.5
    assert _sim(scored, 2, 99) is None
    # Scores come from the windows, never from the score an edge had: scoring again
    # changes nothing.
    again = rescored(scored, np.array([1, 2, 4]), read_windows, read_vectors,
                     candidates=[(1, 2)])
    assert np.array_equal(again.sims, scored.sims)
    assert np.array_equal(again.indices, scored.indices)


def test_a_graph_of_questions_comes_back_unchanged():
    windows, vectors = _setup()
    ids = np.array([3])
    graph = KnnGraph.from_rows(ids, np.zeros(0), np.zeros(0), np.zeros(0), k=2)
    read_windows, read_vectors = _readers(windows, vectors)
    assert rescored(graph, np.zeros(0, dtype=np.int64), read_windows, read_vectors) is graph


def test_minhash_candidates_from_the_project_reach_its_graph(new_project, tmp_path):
    """Signatures are stored when long texts are encoded; a graph whose vectors missed a
    pair of near copies gets that edge from them, scored from the windows."""
    import csv
    import random

    from engine.services.document_graph import scored_for_documents
    from engine.store.schema import text_signatures

    rng = random.Random(3)
    vocabulary = [f"word{i}" for i in range(400)]
    original = " ".join(rng.choice(vocabulary) for _ in range(900))
    copy = " ".join(w if rng.random() > 0.02 else "changed" for w in original.split())
    other = " ".join(rng.choice(vocabulary) for _ in range(900))
    src = tmp_path / "docs.csv"
    with src.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["text"])
        for row in (original, copy, other, "a short question?"):
            writer.writerow([row])
    project = new_project()
    project.rows.import_table(src, ["text"])
    assert project.vectors.encode().windowed == 3
    with project.store.read() as conn:
        signed = sorted(conn.execute(text_signatures.select()).scalars())
    index = project.vectors.index()
    ids = np.sort(index.ids())
    assert len(signed) == 3 and len(ids) == 4          # the question has no signature
    empty = KnnGraph.from_rows(ids, np.zeros(0), np.zeros(0), np.zeros(0), k=10, floor=0.75)
    graph = scored_for_documents(project.store, project.vectors.model_id(), index.dim, empty,
                                 project.vectors.bulk_reader)
    pairs = {tuple(sorted((int(graph.ids[i]), int(graph.ids[j]))))
             for i in range(len(ids)) for j in graph.indices[graph.indptr[i]:graph.indptr[i + 1]]}
    assert len(pairs) == 1                               # the copies, and nothing else
    assert graph.sims.min() > 0.95


def test_a_pair_with_signatures_scores_the_larger_of_windows_and_jaccard():
    """Near-exact copies share most 5-word runs: their Jaccard counts where the windows
    say less; where the windows say more (a reworded copy), the windows count."""
    windows, vectors = _setup()
    ids = np.array([1, 2, 4])
    graph = KnnGraph.from_rows(ids, np.array([0, 1, 0, 2]), np.array([1, 0, 2, 0]),
                               np.full(4, 0.5, dtype=np.float32), k=2, floor=0.75)
    read_windows, read_vectors = _readers(windows, vectors)
    plain = rescored(graph, np.array([1, 2, 4]), read_windows, read_vectors)
    low = _sim(plain, 1, 4)
    same = np.arange(256, dtype=np.uint64)
    half_same = np.where(np.arange(256) < 230, same, same + 1000)       # Jaccard 0.898
    signatures = {1: same, 2: same + 5000, 4: half_same}                  # 1-2: Jaccard 0
    with_jaccard = rescored(graph, np.array([1, 2, 4]), read_windows, read_vectors,
                            signatures=lambda t: {i: signatures[i] for i in t})
    assert low < 0.5 and _sim(with_jaccard, 1, 4) == np.float32(230 / 256)
    assert _sim(with_jaccard, 1, 2) == _sim(plain, 1, 2) > 0.99   # the windows' score stays
