"""The neighbour graph scored for documents, from what the project stores: which texts were
read in several windows, their windows, and long texts' MinHash signatures.

`Clusters` calls it on every graph it makes or updates, before the graph is kept, so a cut,
a verdict's join, an estimate and an export all read the one similarity
(`engine.dedup.document_edges`). A project of questions has no windows and no signatures:
the graph comes back unchanged, for the cost of two small reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import numpy as np

from engine.dedup.document_edges import rescored
from engine.dedup.graph import KnnGraph
from engine.store.database import Store
from engine.store.text_signatures import live_signatures, signatures_of
from engine.store.text_windows import read_windows, windowed_text_ids, windowed_text_ids_among

BulkReader = Callable[[int, int], AbstractContextManager[Callable[[np.ndarray], np.ndarray]]]


def scored_for_documents(store: Store, model_id: int, dim: int, graph: KnnGraph,
                         bulk_reader: BulkReader) -> KnnGraph:
    """`graph` with its document edges scored from windows and MinHash candidates added
    (`rescored`); `graph` itself when the project holds no long texts."""
    with store.read() as conn:
        windowed = np.asarray(windowed_text_ids(conn, model_id), dtype=np.int64)
        signatures = live_signatures(conn) if len(windowed) else {}
    if not len(windowed):
        return graph
    candidates = list(_candidates(signatures))
    from engine.documents import minhash

    decoded = {t: minhash.from_bytes(b) for t, b in signatures.items()}

    def windows(text_ids) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        with store.read() as conn:
            return read_windows(conn, model_id, dim, text_ids)

    with bulk_reader(model_id, dim) as vectors:
        return rescored(graph, windowed, windows, vectors, candidates,
                        lambda text_ids: {t: decoded[t] for t in text_ids if t in decoded})


def marked_documents(store: Store, model_id: int, graph: KnnGraph) -> KnnGraph:
    """`graph` with its texts read in several windows marked as documents
    (`KnnGraph.documents`), for a graph read back from the project or from the team's
    store, where the marks are not kept; the same object when they are already right."""
    with store.read() as conn:
        windowed = np.asarray(windowed_text_ids(conn, model_id), dtype=np.int64)
    return graph.with_documents(np.isin(graph.ids, windowed) if len(windowed) else None)


def _candidates(signatures: dict[int, bytes]) -> Iterator[tuple[int, int]]:
    """Pairs of texts MinHash LSH puts together (estimated Jaccard at its threshold)."""
    if len(signatures) < 2:
        return
    from engine.documents import minhash

    ids = sorted(signatures)
    yield from minhash.candidate_pairs(ids, [minhash.from_bytes(signatures[t]) for t in ids])


def similarities_to(store: Store, model_id: int, dim: int, text_id: int, others: list[int],
                    vectors: Callable[[list[int]], np.ndarray]) -> list[float]:
    """The one similarity of `text_id` to each of `others` (a cluster re-measured against
    its new canonical): the cosine of their vectors, or, where either text was read in
    several windows, what their windows share (or their MinHash Jaccard, if more), as the
    graph scores it."""
    from engine.documents.window_match import pair_similarity, window_weights

    ids = [text_id, *others]
    vecs = vectors(ids)
    cosines = (vecs[1:] @ vecs[0]).astype(float).tolist()
    with store.read() as conn:
        windows = read_windows(conn, model_id, dim, ids) if windowed_text_ids_among(
            conn, model_id, ids) else {}
        signatures = signatures_of(conn, ids) if windows else {}
    if not windows:
        return cosines
    from engine.documents import minhash

    first_signature = signatures.get(ids[0])

    def side(n: int) -> tuple[np.ndarray, np.ndarray | None]:
        found = windows.get(ids[n])
        if found is None:
            return vecs[n].reshape(1, -1), None
        return np.asarray(found[1], dtype=np.float32), window_weights(found[0])

    first, first_weights = side(0)
    out = []
    for n in range(1, len(ids)):
        if ids[0] not in windows and ids[n] not in windows:
            out.append(cosines[n - 1])
            continue
        other, other_weights = side(n)
        theirs = signatures.get(ids[n])
        out.append(minhash.with_jaccard(
            pair_similarity(first, other, first_weights, other_weights),
            minhash.from_bytes(first_signature) if first_signature is not None else None,
            minhash.from_bytes(theirs) if theirs is not None else None))
    return out
