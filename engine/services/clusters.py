"""`Clusters`: duplicate clusters cut from the neighbour graph, with the analyst's decisions
laid over them, and the review's plots drawn from the same graph.

The graph (each text's nearest others) is built once per model and index state, kept in
memory and in the project file; moving the threshold re-cuts it without searching or
re-reading (the rows of clustered texts are kept between cuts, `RowsByText`).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from sqlalchemy import select

from engine.dedup.clustered_rows import RowsByText
from engine.dedup.cut import cut_clusters
from engine.dedup.graph import DEFAULT_FLOOR, KnnGraph, build_knn_graph, texts_near
from engine.dedup.row_clusters import DEFAULT_THRESHOLD, Cluster, expand_clusters
from engine.dedup.row_clusters import text_clusters_as_ids as as_ids
from engine.errors import InputError
from engine.progress import CancelToken, ProgressCallback, no_progress
from engine.review.decision_overlay import apply_decisions
from engine.review.histogram import Histogram, similarity_histogram
from engine.review.layout import MAP_SAMPLE, EmbeddingMap, project_2d, sample_ids
from engine.services.vectors import Vectors
from engine.store import decisions as decision_store
from engine.store import embeddings as embedding_store
from engine.store import items as item_store
from engine.store.blobs import get_blob, put_blob
from engine.store.database import Store
from engine.store.dialects import lock
from engine.store.schema import indexes, meta

DEFAULT_NEIGHBOURS = 10
# A cut also reads the rows of texts that would join this much lower: the slider's next
# steps down then read nothing (benchmarks/mining.py times re-cuts 0.05 down and up).
PREFETCH_MARGIN = 0.05


@contextmanager
def _no_gc_pauses() -> Iterator[None]:
    """Defer Python's cyclic garbage collector for a short, allocation-heavy step.

    A cut makes tens of thousands of cluster and member objects while the project keeps
    rows of the clustered texts: the collector's full passes over all of them took about a
    third of a re-cut at 100k rows. What the step frees has no cycles; collection resumes
    right after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Clusters:
    """The neighbour graph, cuts of it at a threshold, decisions over them, review plots."""

    def __init__(self, store: Store, vectors: Vectors, kept_rows: RowsByText) -> None:
        self._store = store
        self._vectors = vectors
        self._kept = kept_rows
        self._graph: KnnGraph | None = None
        self._graph_key: tuple | None = None

    def graph(self, k: int = DEFAULT_NEIGHBOURS, *, progress: ProgressCallback = no_progress,
              cancel: CancelToken | None = None) -> KnnGraph:
        """Each text's k nearest others, completed with every pair at the graph's floor (0.75)
        or above where a text has more than k (`engine.dedup.graph`); cached in memory and in
        the project file, keyed by the saved index it was built from (any change to the index
        makes a new one)."""
        index = self._vectors.index()
        model_id = self._vectors.model_id()
        with self._store.read() as conn:
            signature = conn.execute(
                indexes.select().where(indexes.c.model_id == model_id)).mappings().first()
        stamp = (f"{signature['sha256'] if signature else 'unsaved'}:{len(index)}:{k}"
                 f":{DEFAULT_FLOOR}")
        key = (model_id, stamp)
        if self._graph is not None and self._graph_key == key:
            return self._graph
        name = f"knn/{model_id}/{k}"
        graph = None
        if signature is not None and self._store.get_meta(name) == stamp:
            with self._store.read() as conn:
                data = get_blob(conn, name)
            try:
                graph = KnnGraph.from_bytes(data, k=k, labels=index.ids()) if data else None
            except ValueError:   # another layout, or crafted or damaged: built again
                graph = None
        if graph is None and not self._store.is_file and not self._store.read_only \
                and signature is not None:
            graph = self._build_once_per_team(index, k, name, stamp, progress, cancel)
        if graph is None:
            graph = self._build(index, k, progress, cancel)
            if not self._store.read_only and signature is not None:
                with self._store.write() as conn:
                    put_blob(conn, name, graph.to_bytes())
                    self._store.set_meta(name, stamp, conn)
        self._graph, self._graph_key = graph, key
        return graph

    def _stored_vectors(self, model_id: int, dim: int):
        """The graph's vector reader: the stored blobs, which hnswlib's own `vectors` (Python
        lists) hands out about 5 times slower (engine.store.embeddings.read_vectors)."""
        def read(text_ids: np.ndarray) -> np.ndarray:
            with self._store.read() as conn:
                return embedding_store.read_vectors(conn, model_id, dim, text_ids)
        return read

    def _build(self, index, k: int, progress: ProgressCallback,
               cancel: CancelToken | None) -> KnnGraph:
        with self._store.read() as conn:
            live = np.fromiter(item_store.live_text_ids(conn), dtype=np.int64)
        return build_knn_graph(index, k, np.intersect1d(index.ids(), live),
                               vectors=self._stored_vectors(self._vectors.model_id(),
                                                            index.dim),
                               progress=progress, cancel=cancel)

    def _build_once_per_team(self, index, k: int, name: str, stamp: str,
                             progress: ProgressCallback, cancel: CancelToken | None
                             ) -> KnnGraph:
        """On a server, several analysts opening the review after one import would each
        build the same graph (every text's search, minutes at a million rows). The first
        builds it holding the graph's lock; the others wait for that lock, then read the
        graph it stored instead of building their own."""
        with self._store.write() as conn:
            lock(conn, f"build:{name}")
            stored = conn.execute(select(meta.c.value).where(meta.c.key == name)).scalar()
            if stored == stamp:
                data = get_blob(conn, name)
                try:
                    if data:
                        return KnnGraph.from_bytes(data, k=k, labels=index.ids())
                except ValueError:
                    pass
            graph = self._build(index, k, progress, cancel)
            put_blob(conn, name, graph.to_bytes())
            self._store.set_meta(name, stamp, conn)
            return graph

    def cut(self, threshold: float = DEFAULT_THRESHOLD, k: int = DEFAULT_NEIGHBOURS, *,
            decisions: bool = True, progress: ProgressCallback = no_progress,
            cancel: CancelToken | None = None) -> list[Cluster]:
        """Duplicate clusters at `threshold`, biggest first; re-cutting reuses the graph.

        With `decisions`, the analyst's stored verdicts are laid over the cut (canonical
        choices lead, rows marked "not duplicate" of the canonical are moved out); without,
        the clusters are exactly as cut, which is what `apply_decisions` takes.
        """
        if not 0.0 < threshold <= 1.0:
            raise InputError(f"threshold must be between 0 and 1, not {threshold}")
        graph = self.graph(k, progress=progress, cancel=cancel)
        with _no_gc_pauses():
            text_clusters = as_ids(cut_clusters(graph, threshold), graph.ids)
            clustered = {t for ids, _ in text_clusters for t in ids}
            with self._store.read() as conn:
                self._kept.check(embedding_store.content_version(conn))
                exact = [t for t in self._kept.texts_with_copies(conn) if t not in clustered]
                # Texts that join when the slider moves down a little are read now, with the
                # rest, so that the next re-cut reads nothing (one read instead of two).
                nearby = texts_near(graph, round(threshold - PREFETCH_MARGIN, 6))
                rows = self._kept.rows(conn, [*clustered, *exact], also=nearby)
            clusters = expand_clusters(text_clusters, rows, exact, self._kept.member)
            return self.apply_decisions(clusters) if decisions else clusters

    def apply_decisions(self, clusters: list[Cluster]) -> list[Cluster]:
        """Clusters as cut → clusters as the analyst's stored decisions make them.

        A cluster none of whose rows has a verdict or a canonical choice is already what
        `apply_decisions` would make of it (centre first, the rest by similarity, no
        verdicts), so it is passed on as it is: most clusters, most of the time.
        """
        ids = [i for c in clusters for i in c.item_ids()]
        with self._store.read() as conn:
            labels = decision_store.labels_among(conn, ids)
            chosen = decision_store.canonical_among(conn, ids)
        involved = chosen | {i for pair in labels for i in pair}
        if not involved:
            return clusters
        return [apply_decisions(c, labels, chosen, self._similarities)
                if not involved.isdisjoint(c.item_ids()) else c for c in clusters]

    def _similarities(self, text_id: int, others) -> list[float]:
        vectors = self._vectors.vectors([text_id, *others])
        return (vectors[1:] @ vectors[0]).astype(float).tolist()

    # -- plots -----------------------------------------------------------------------------
    def histogram(self, k: int = DEFAULT_NEIGHBOURS, bins: int = 60) -> Histogram:
        """How similar each text is to its nearest other text, from the cached graph."""
        return similarity_histogram(self.graph(k).nearest_similarities(), bins)

    def map(self, threshold: float = DEFAULT_THRESHOLD, limit: int = MAP_SAMPLE,
            k: int = DEFAULT_NEIGHBOURS) -> EmbeddingMap:
        """A 2-D PCA map of (a sample of) the texts, coloured by cluster at `threshold`."""
        graph = self.graph(k)
        ids = sample_ids(graph.ids, limit)
        xy = (project_2d(self._vectors.vectors(ids)) if len(ids)
              else np.zeros((0, 2), np.float32))
        cluster_of: dict[int, int] = {}
        for number, (text_ids, _) in enumerate(as_ids(cut_clusters(graph, threshold),
                                                      graph.ids), start=1):
            for t in text_ids:
                cluster_of[t] = number
        with self._store.read() as conn:
            texts = item_store.texts_by_id(conn, ids.tolist())
        return EmbeddingMap(xy, ids, [texts.get(int(t), "") for t in ids],
                            np.asarray([cluster_of.get(int(t), 0) for t in ids], np.int64))
