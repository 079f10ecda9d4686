"""The review's map: a 2-D picture of the texts, coloured by the clusters of one cut."""

from __future__ import annotations

import numpy as np

from engine.dedup.cut import cut_clusters
from engine.dedup.graph import KnnGraph
from engine.dedup.row_clusters import text_clusters_as_ids as as_ids
from engine.review.layout import EmbeddingMap, project_2d, sample_ids
from engine.services.vectors import Vectors
from engine.store import items as item_store
from engine.store.database import Store


def cluster_map(store: Store, vectors: Vectors, graph: KnnGraph, threshold: float,
                limit: int) -> EmbeddingMap:
    """A PCA map of (a sample of at most `limit` of) the graph's texts, each coloured by its
    text cluster at `threshold` (0: in none)."""
    ids = sample_ids(graph.ids, limit)
    xy = project_2d(vectors.vectors(ids)) if len(ids) else np.zeros((0, 2), np.float32)
    cluster_of: dict[int, int] = {}
    for number, (text_ids, _) in enumerate(as_ids(cut_clusters(graph, threshold), graph.ids),
                                           start=1):
        for t in text_ids:
            cluster_of[t] = number
    with store.read() as conn:
        texts = item_store.texts_by_id(conn, ids.tolist())
    return EmbeddingMap(xy, ids, [texts.get(int(t), "") for t in ids],
                        np.asarray([cluster_of.get(int(t), 0) for t in ids], np.int64))
