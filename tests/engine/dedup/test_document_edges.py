"""Document edges scored from windows, and MinHash candidates joining the graph."""

from __future__ import annotations

import numpy as np
import pytest

from engine.dedup.document_edges import Bounds, rescored
from engine.dedup.graph import KnnGraph
from engine.documents.minhash import on_similarity_scale
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
    # The graph scores pairs in batches, `match_windows` one pair: the same sums over
    # matrices of other shapes, which BLAS may round a float32 ulp apart on some CPUs (an
    # AMD EPYC did). Chunked against all-at-once batches stay bitwise equal (below).
    assert _sim(scored, 1, 2) == _sim(scored, 2, 1)
    assert _sim(scored, 1, 2) == pytest.approx(contained.similarity, abs=1e-6)
    assert _sim(scored, 1, 2) > 0.99
    # A question against a document: its best window, or how the question covers the
    # whole document (each window's cosine, weighted), whichever is more.
    cosines = windows[1][1] @ vectors[3]
    expected = max(cosines.max(), float(window_weights(windows[1][0]) @ cosines))
    assert _sim(scored, 1, 3) == _sim(scored, 3, 1)
    assert _sim(scored, 1, 3) == pytest.approx(expected, abs=1e-6)
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
    half_same = np.where(np.arange(256) < 141, same, same + 1000)       # Jaccard 0.551
    signatures = {1: same, 2: same + 5000, 4: half_same}                  # 1-2: Jaccard 0
    with_jaccard = rescored(graph, np.array([1, 2, 4]), read_windows, read_vectors,
                            signatures=lambda t: {i: signatures[i] for i in t})
    # The Jaccard on the similarity scale: sharing just over half their runs, a duplicate
    # at the documents' threshold 0.75.
    assert low < 0.5 and _sim(with_jaccard, 1, 4) == np.float32(on_similarity_scale(141 / 256))
    assert _sim(with_jaccard, 1, 4) >= 0.75
    assert _sim(with_jaccard, 1, 2) == _sim(plain, 1, 2) > 0.99   # the windows' score stays


def _generated(seed: int, n: int = 70):
    """A dense graph of `n` texts, most of them documents of 2 to 8 windows (float16, as
    stored), some questions; a few edges one-way, ties among the old scores; MinHash
    signatures for most documents, candidate pairs some of which are edges already."""
    rng = np.random.default_rng(seed)
    ids = np.sort(rng.choice(10 * n, n, replace=False)).astype(np.int64)
    long = ids[rng.random(n) < 0.8]
    windows = {}
    for t in long.tolist():
        count = int(rng.integers(2, 9))
        spans = np.array([(i * 60, i * 60 + 120) for i in range(count)])
        windows[t] = (spans, _unit(rng, count).astype(np.float16))
    vectors = {t: _unit(rng, 1)[0] for t in ids.tolist()}
    rows, cols = rng.integers(0, n, n * n // 3), rng.integers(0, n, n * n // 3)
    one_way = rng.random(len(rows)) < 0.05
    rows, cols = np.concatenate((rows, cols[~one_way])), np.concatenate((cols, rows[~one_way]))
    sims = np.round(rng.random(len(rows)), 1).astype(np.float32)
    graph = KnnGraph.from_rows(ids, rows, cols, sims, k=5, floor=0.75)
    candidates = [tuple(int(x) for x in rng.choice(ids, 2)) for _ in range(15)]
    signatures = {t: rng.integers(0, 4, 64).astype(np.uint64) for t in long.tolist()
                  if rng.random() < 0.7}
    return graph, long, windows, vectors, candidates, signatures


def _scored_whole(graph, windowed, windows, vectors, candidates, signatures):
    """The graph scored as before the chunks: every pair at once, every text's windows read
    at once, the graph rebuilt by `from_rows` (the specification the chunks must meet)."""
    from engine.documents.minhash import with_jaccard
    from engine.documents.pair_batch import pair_similarities

    ids, n = graph.ids, len(graph.ids)
    is_long = np.isin(ids, windowed)
    rows, cols = graph.row_of_entries().astype(np.int64), graph.indices.astype(np.int64)
    sims = graph.sims.copy()
    at = np.searchsorted(ids, np.asarray(candidates, dtype=np.int64))
    at = np.clip(at, 0, n - 1)
    keep = (ids[at] == np.asarray(candidates)).all(axis=1) & (at[:, 0] != at[:, 1])
    extra = at[keep]
    rows = np.concatenate((rows, extra[:, 0], extra[:, 1]))
    cols = np.concatenate((cols, extra[:, 1], extra[:, 0]))
    sims = np.concatenate((sims, np.full(2 * len(extra), np.nan, dtype=np.float32)))
    touched = is_long[rows] | is_long[cols] | np.isnan(sims)
    pairs, back = np.unique(np.stack((np.minimum(rows, cols)[touched],
                                      np.maximum(rows, cols)[touched]), axis=1),
                            axis=0, return_inverse=True)
    sides = {t: (np.asarray(v, dtype=np.float32), window_weights(s))
             for t, (s, v) in windows.items()}
    for t in ids[~is_long].tolist():
        sides[t] = (vectors[t].reshape(1, -1).astype(np.float32), None)
    scores = pair_similarities(sides, ids[pairs])
    scores = np.maximum(scores, np.array(
        [with_jaccard(0.0, signatures.get(a), signatures.get(b)) for a, b in ids[pairs]],
        dtype=np.float32))
    sims[touched] = scores[back.ravel()]
    return KnnGraph.from_rows(ids, rows, cols, sims, graph.k, graph.floor)


def _counting(windows):
    """A reader of the windows that records how many texts and windows each call read."""
    calls: list[tuple[int, int]] = []

    def read(text_ids):
        found = {int(t): windows[int(t)] for t in text_ids if int(t) in windows}
        calls.append((len(list(text_ids)), sum(len(v[1]) for v in found.values())))
        return found

    return read, calls


def _same(a: KnnGraph, b: KnnGraph) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f)) and
               getattr(a, f).dtype == getattr(b, f).dtype
               for f in ("ids", "indptr", "indices", "sims")) and (a.k, a.floor) == (b.k, b.floor)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scoring_in_chunks_gives_every_score_of_scoring_at_once_to_the_bit(seed):
    graph, long, windows, vectors, candidates, signatures = _generated(seed)
    _, read_vectors = _readers(windows, vectors)
    whole = _scored_whole(graph, long, windows, vectors, candidates, signatures)
    assert np.isnan(whole.sims).sum() == 0 and len(whole.sims) > len(graph.sims)
    for bounds in (Bounds(), Bounds(pairs_at_once=1, read_at_once=1, cache_windows=0,
                                    entries_at_once=1),
                   Bounds(pairs_at_once=40, read_at_once=5, cache_windows=30,
                          entries_at_once=100)):
        read_windows, _ = _counting(windows)
        chunked = rescored(graph, long, read_windows, read_vectors, candidates,
                           lambda t: {i: signatures[i] for i in t if i in signatures},
                           bounds=bounds)
        assert _same(chunked, whole), bounds


def test_windows_are_read_a_chunk_at_a_time_and_kept_within_the_cache():
    """About 320 documents: the reader is never asked for more than `read_at_once` texts (so at
    most that many texts' windows are read at once); a cache that holds them all reads each
    text once, and one that holds few reads some again and scores the same."""
    graph, long, windows, vectors, _, _ = _generated(5, n=400)
    _, read_vectors = _readers(windows, vectors)
    read_all, calls_all = _counting(windows)
    roomy = rescored(graph, long, read_all, read_vectors)
    assert max(texts for texts, _ in calls_all) <= Bounds().read_at_once < len(long)
    assert sum(texts for texts, _ in calls_all) == len(long)      # each text read once
    small = Bounds(pairs_at_once=500, read_at_once=8, cache_windows=100)
    read_few, calls_few = _counting(windows)
    tight = rescored(graph, long, read_few, read_vectors, bounds=small)
    assert max(texts for texts, _ in calls_few) <= 8
    assert max(w for _, w in calls_few) <= 8 * max(len(v[1]) for v in windows.values())
    assert sum(texts for texts, _ in calls_few) > len(long)       # read again, not kept
    assert _same(tight, roomy)


def test_a_projects_stored_windows_score_the_same_in_chunks(new_project, tmp_path):
    """Long texts imported and encoded for real, their windows read from the store through
    a counting reader: small chunks and a small cache give the default's graph exactly."""
    import csv
    import random

    from engine.store.text_windows import read_windows, windowed_text_ids

    rng = random.Random(11)
    vocabulary = ["river", "stone", "paper", "light", "garden", "window", "music", "letter",
                  "market", "winter", "travel", "school", "bridge", "forest", "engine"]
    texts = [" ".join(rng.choice(vocabulary) for _ in range(rng.randint(300, 600)))
             for _ in range(8)]
    texts += [t.replace("river", "lake") for t in texts[:3]] + ["a short question?"]
    src = tmp_path / "docs.csv"
    with src.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["text"])
        writer.writerows([t] for t in texts)
    project = new_project()
    project.rows.import_table(src, ["text"])
    project.vectors.encode()
    index = project.vectors.index()
    model_id, dim = project.vectors.model_id(), index.dim
    graph = project.clusters.graph()
    with project.store.read() as conn:
        windowed = np.asarray(windowed_text_ids(conn, model_id), dtype=np.int64)
    assert len(windowed) == 11
    asked: list[int] = []

    def stored(text_ids):
        asked.append(len(text_ids))
        with project.store.read() as conn:
            return read_windows(conn, model_id, dim, text_ids)

    with project.vectors.bulk_reader(model_id, dim) as vectors:
        plain = rescored(graph, windowed, stored, vectors)
        once = len(asked)
        tiny = rescored(graph, windowed, stored, vectors,
                        bounds=Bounds(pairs_at_once=2, read_at_once=2, cache_windows=4,
                                      entries_at_once=3))
        chunked_asked = asked[once:]
        again = rescored(plain, windowed, stored, vectors)
    assert max(chunked_asked) <= 2 < max(asked[:once])
    assert _same(tiny, plain)
    assert _same(again, plain)                 # idempotent: scored from windows alone
