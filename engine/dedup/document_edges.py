"""The neighbour graph's similarity for documents: what two texts share, window by window.

The graph is found with each text's one vector (for a long text, the mean of its windows),
which is the right candidate search but the wrong score for documents: a copy with a new
introduction is diluted by it, and two documents on one topic can be close on average
without sharing a passage. So every edge with a long text at one end (a text read in
several windows) is scored again from the windows (`engine.documents.window_match`): the
share of one document that the other covers, in whichever direction covers more. That is
the one similarity the threshold, the cut, the export and the estimates see. An edge
between two texts read in one window keeps its cosine, which is what the windows give
anyway: a question's similarity stays what it was.

MinHash (`engine.documents.minhash`) is the second signal. Where both texts have a
signature, the similarity is the larger of what the windows share and the estimated share
of 5-word runs the two texts have in common (Jaccard): a near-exact copy (a few words
changed, paragraphs reordered) is a duplicate whatever the vectors make of it, while a
reworded copy, sharing few runs, is found by its windows. Both are similarities on the same
0-1 scale, so the project's one threshold reads both: at 0.75, texts sharing three quarters
of their 5-word runs. LSH candidates (pairs above Jaccard 0.5) join the graph as edges, so
copies are scored even where their vectors did not find each other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from engine.dedup.graph import KnnGraph
from engine.documents.pair_batch import pair_similarities
from engine.documents.window_match import window_weights

# {text id: (spans (n, 2), vectors (n, dim))} of the given texts read in several windows.
WindowReader = Callable[[Sequence[int]], dict[int, tuple[np.ndarray, np.ndarray]]]
# Stored vectors by text id, in that order (the graph's own reader).
VectorReader = Callable[[np.ndarray], np.ndarray]
# {text id: MinHash signature} of the given texts that have one.
SignatureReader = Callable[[Sequence[int]], dict[int, np.ndarray]]


def rescored(graph: KnnGraph, windowed: np.ndarray, windows: WindowReader,
             vectors: VectorReader, candidates: Sequence[tuple[int, int]] = (),
             signatures: SignatureReader | None = None) -> KnnGraph:
    """`graph` with every edge touching a text of `windowed` (ids read in several windows)
    scored from the windows, and the `candidates` pairs (text ids) added where both are in
    the graph. The same graph object when there is nothing to score.

    Idempotent: an edge's score is computed from the windows, never from the score it had,
    so a graph updated after an import can be rescored whole again."""
    ids = graph.ids
    is_long = np.isin(ids, np.asarray(windowed, dtype=np.int64))
    extra = _candidate_positions(ids, candidates)
    if not is_long.any() and not len(extra):
        return graph
    rows = graph.row_of_entries().astype(np.int64)
    cols = graph.indices.astype(np.int64)
    sims = graph.sims.copy()
    if len(extra):
        rows = np.concatenate((rows, extra[:, 0], extra[:, 1]))
        cols = np.concatenate((cols, extra[:, 1], extra[:, 0]))
        sims = np.concatenate((sims, np.full(2 * len(extra), np.nan, dtype=np.float32)))
    touched = is_long[rows] | is_long[cols] | np.isnan(sims)
    lo = np.minimum(rows[touched], cols[touched])
    hi = np.maximum(rows[touched], cols[touched])
    pairs, back = np.unique(np.stack((lo, hi), axis=1), axis=0, return_inverse=True)
    scores = _pair_scores(ids, pairs, is_long, windows, vectors)
    if signatures is not None:
        scores = np.maximum(scores, _jaccards(ids, pairs, signatures))
    sims[touched] = scores[back.ravel()]
    return KnnGraph.from_rows(ids, rows, cols, sims, graph.k, graph.floor)


def _candidate_positions(ids: np.ndarray, candidates: Sequence[tuple[int, int]]
                         ) -> np.ndarray:
    """(m, 2) positions of the candidate pairs whose two texts are both in the graph."""
    if not len(candidates):
        return np.zeros((0, 2), dtype=np.int64)
    pairs = np.asarray(candidates, dtype=np.int64).reshape(-1, 2)
    at = np.clip(np.searchsorted(ids, pairs), 0, max(len(ids) - 1, 0))
    present = (ids[at] == pairs).all(axis=1) & (pairs[:, 0] != pairs[:, 1])
    return at[present]


def _pair_scores(ids: np.ndarray, pairs: np.ndarray, is_long: np.ndarray,
                 windows: WindowReader, vectors: VectorReader) -> np.ndarray:
    """The window similarity of each pair of positions: a text read in one window counts as
    its own single window (its vector). Scored in one batch (`pair_batch`), grouped by
    the pair's first text, not pair by pair."""
    used = np.unique(pairs)
    long_ids = [int(ids[p]) for p in used if is_long[p]]
    short_pos = np.array([p for p in used if not is_long[p]], dtype=np.int64)
    read = windows(long_ids)
    sides: dict[int, tuple[np.ndarray, np.ndarray | None]] = {}
    for text_id, (spans, vecs) in read.items():
        sides[text_id] = (np.asarray(vecs, dtype=np.float32), window_weights(spans))
    if len(short_pos):
        for text_id, vec in zip(ids[short_pos].tolist(), vectors(ids[short_pos]),
                                strict=True):
            sides[int(text_id)] = (vec.reshape(1, -1).astype(np.float32), None)
    return pair_similarities(sides, ids[pairs])


def _jaccards(ids: np.ndarray, pairs: np.ndarray, signatures: SignatureReader) -> np.ndarray:
    """Each pair's estimated Jaccard of 5-word runs; 0 where a text has no signature."""
    from engine.documents.minhash import with_jaccard

    read = signatures([int(ids[p]) for p in np.unique(pairs)])
    return np.array([with_jaccard(0.0, read.get(int(ids[a])), read.get(int(ids[b])))
                     for a, b in pairs], dtype=np.float32)
