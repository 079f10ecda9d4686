"""The `Project` facade: everything the CLI and the window do to a project goes through here.

It owns the store, the loaded encoder, the in-memory HNSW index of the active model and the
cached neighbour graph, and keeps them consistent: the index is checked against the stored
embeddings when loaded and repaired from them, never trusted blindly.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.browse import NUMBER_SAMPLE, SORT_IMPORT, RowQuery, looks_numeric
from engine.dedup.clusters import cut_clusters
from engine.dedup.duplicates import (
    DEFAULT_THRESHOLD,
    Cluster,
    expand_clusters,
    public_id,
    text_clusters_as_ids,
)
from engine.dedup.graph import KnnGraph, build_knn_graph, texts_near
from engine.dedup.rows import RowsByText
from engine.encoding.backends import backend_for_row
from engine.encoding.encoder import Executor, SentenceEncoder
from engine.encoding.job import CHUNK_TEXTS, EncodeReport, encode_missing
from engine.encoding.loading import load_encoder, load_stored_encoder
from engine.encoding.models import DEFAULT_MODEL, ModelSpec
from engine.errors import InputError, ModelError, ProjectError
from engine.importer import ImportReport, import_table
from engine.index.hnsw import HnswIndex
from engine.index.persist import current_version, load_index, save_index, write_stamp
from engine.io import export_table
from engine.jobs import CancelToken, Progress, ProgressCallback, no_progress
from engine.review.decisions import apply_decisions
from engine.review.layout import MAP_SAMPLE, EmbeddingMap, project_2d, sample_ids
from engine.review.metrics import Histogram, ThresholdCurve, similarity_histogram, threshold_curve
from engine.search import QueryCache, SearchHit
from engine.store import decisions as decision_store
from engine.store import items as item_store
from engine.store import vectors as vector_store
from engine.store.blobs import get_blob, put_blob
from engine.store.database import Store
from engine.store.migrations import SCHEMA_VERSION
from engine.store.schema import indexes

if TYPE_CHECKING:  # pragma: no cover
    from engine.training.activation import ActivationReport
    from engine.training.finetune import TrainingOptions
    from engine.training.pairs import LabelledPair
    from engine.training.session import FinetuneReport

log = logging.getLogger("duplens")

__all__ = ["DEFAULT_NEIGHBOURS", "DEFAULT_THRESHOLD", "Project"]

DEFAULT_NEIGHBOURS = 10
# A cut also reads the rows of texts that would join this much lower: the slider's next
# steps down then read nothing (benchmarks/mining.py times re-cuts 0.05 down and up).
PREFETCH_MARGIN = 0.05
INDEX_THREADS = 1  # hnswlib threads for adds that overlap encoding (see `encode`)
XLSX_MAX_ROWS = 1_048_575


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


class Project:
    """An open Duplens project file; use `Project.open`, and `close()` (or `with`) after."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.notices: list[str] = []     # things the user should hear about (index rebuilt…)
        self.device_preference = "auto"
        self.batch_size = 64
        # None: keep the backend the active model's embeddings were made with (torch unless
        # a quantised one); a name: load models with it from now on (engine.encoding.backends).
        self.backend_preference: str | None = None
        # The window types queries key by key: it asks for the faster single-query runtime
        # (`SentenceEncoder.prepare_fast_queries`), prepared where the model is loaded.
        self.fast_queries = False
        self._encoder: SentenceEncoder | None = None
        self._encoder_lock = threading.Lock()
        self._index: HnswIndex | None = None
        self._index_model_id: int | None = None
        self._index_lock = threading.RLock()
        # The content version the in-memory index is known to match (None: unknown); saved
        # with it, so that the next open can skip reconciling it with every embedding.
        self._index_version: int | None = None
        self._generation = 0
        self._cache = QueryCache()
        self._graph: KnnGraph | None = None
        self._graph_key: tuple | None = None
        # Rows of the texts clusters were cut from, kept between re-cuts (moving the
        # threshold reads no row twice); dropped when rows change (`_rows_changed`).
        self._rows = RowsByText()
        self._active_id: int | None = None
        # The last model loaded but not serving (the previous active one after a switch, or a
        # version just trained), so that switching straight back needs no load from disk.
        self._spare: tuple[int, SentenceEncoder] | None = None
        self._activation_lock = threading.Lock()  # one activation at a time

    @classmethod
    def open(cls, path: str | os.PathLike, *, create: bool = False, read_only: bool = False
             ) -> Project:
        return cls(Store.open(path, create=create, read_only=read_only))

    @property
    def path(self) -> Path:
        return self.store.path

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Project:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def _notice(self, message: str) -> None:
        log.warning(message)
        self.notices.append(message)

    # -- models ----------------------------------------------------------------------------
    def active_model(self) -> dict | None:
        model_id = self.store.get_meta("active_model_id")
        if model_id is None:
            return None
        with self.store.read() as conn:
            return vector_store.get_model_row(conn, int(model_id))

    def use_model(self, model: str | None = None, *, device: str | None = None,
                  batch_size: int | None = None, backend: str | None = None
                  ) -> SentenceEncoder:
        """Load a model (default, folder or hub name) and make it the project's active one;
        with a quantised `backend` it is a model of its own (its rows are encoded again)."""
        encoder = load_encoder(model, device=device or self.device_preference,
                               batch_size=batch_size or self.batch_size,
                               backend=backend or self.backend_preference)
        self.attach_encoder(encoder, is_default=model in (None, "", DEFAULT_MODEL))
        return encoder

    def reload_model(self, backend: str | None = None) -> SentenceEncoder:
        """Load the active model again through `backend` (say, after the user picked a
        faster one), keeping which model is active: a fine-tuned version stays the model.
        A quantised backend makes it a model of its own whose rows are encoded again."""
        active = self.active_model()
        if backend is not None:
            self.backend_preference = backend
        source = self.model_source(active["location"]) if active else None
        return self.use_model(source, backend=self.backend_preference)

    def uses_default_model(self) -> bool:
        """True when the project's active model is the bundled default (or none is set)."""
        active = self.active_model()
        return active is None or active["location"] == DEFAULT_MODEL

    def attach_encoder(self, encoder: SentenceEncoder, *, is_default: bool) -> None:
        """Make an already loaded encoder the active model (tests and the GUI share one)."""
        from engine.training.versions import location_for

        spec = encoder.spec
        location = DEFAULT_MODEL if is_default else location_for(self.path, spec.location)
        with self.store.write() as conn:
            model_id = vector_store.get_or_add_model(
                conn, name=spec.name, location=location,
                fingerprint=spec.fingerprint, dim=encoder.dim,
                max_seq_length=encoder.max_seq_length,
            )
            self.store.set_meta("active_model_id", str(model_id), conn)
            self.store.set_meta("last_device", encoder.device, conn)
        if self.fast_queries:
            encoder.prepare_fast_queries()
        with self._encoder_lock:
            self._encoder = encoder
            self._active_id = model_id
        if self._index_model_id != model_id:
            self._drop_index_cache()

    def encoder(self) -> SentenceEncoder:
        """The active model, loaded on first use (the default model for a new project)."""
        with self._encoder_lock:
            encoder = self._encoder
        if encoder is not None:
            return encoder
        active = self.active_model()
        if self.store.read_only:
            if active is None:
                raise ProjectError(f"{self.path.name}: has no encoded items yet")
            encoder = load_stored_encoder(
                self.model_source(active["location"]), active["fingerprint"],
                device=self.device_preference, batch_size=self.batch_size,
                backend=self.backend_preference, check_weights=False)
            if self.fast_queries:
                encoder.prepare_fast_queries()
            with self._encoder_lock:
                self._encoder = encoder
            return encoder
        backend = self.backend_preference
        if active is not None:
            # Opening keeps the embeddings the project has: a quantised preference applies
            # when a model is chosen (`use_model`), never by re-encoding on open.
            backend = backend_for_row(active["fingerprint"], backend).name
        return self.use_model(self.model_source(active["location"]) if active else None,
                              backend=backend)

    def model_source(self, location: str) -> str | None:
        """A stored model location as `load_encoder` takes it: the project's own versions
        are stored relative to the project file, so they are found wherever it moved."""
        from engine.training.versions import model_source

        return model_source(self.path, location)

    def _active_model_id(self) -> int:
        """Cached: the per-keystroke search asks for it on every call."""
        if self._active_id is not None:
            return self._active_id
        active = self.active_model()
        if active is None:
            self.encoder()
            active = self.active_model()
        self._active_id = int(active["id"])
        return self._active_id

    # -- import and encode -----------------------------------------------------------------
    def import_table(self, path: str | os.PathLike, text_columns: list[str], **options
                     ) -> ImportReport:
        """Store the rows of a spreadsheet (see `engine.importer.import_table`); no encoding.

        Rows whose text was embedded before but had no live row any more bring that text
        back into the loaded index at once (it was marked deleted there).
        """
        try:
            report = import_table(self.store, path, text_columns, **options)
        finally:
            self._rows.clear()
        if report.revived_texts:
            self._revive_texts(report.revived_texts, report.content_version)
        return report

    def _revive_texts(self, text_ids: list[int], version: int | None) -> None:
        with self._index_lock:
            index, model_id = self._index, self._index_model_id
            if index is None:
                return
            with self.store.read() as conn:
                for ids, vecs in vector_store.iter_embeddings(conn, model_id, index.dim,
                                                              text_ids=text_ids):
                    index.add(ids, vecs)
            known = self._index_version
            self._index_version = version if known is not None and version == known + 1 else None
            self._changed()

    def encode(self, *, progress: ProgressCallback = no_progress,
               cancel: CancelToken | None = None, chunk_texts: int = CHUNK_TEXTS,
               executor: Executor | None = None) -> EncodeReport:
        """Encode and index every text the active model has not seen; resumable. The
        batches run on `executor` (default: in this thread)."""
        encoder = self.encoder()
        model_id = self._active_model_id()
        index = self.index()
        with self._index_lock:
            known = self._index_version if self._index is index else None

        def add_to_index(batch) -> None:
            # Runs on the job's indexing thread while the next chunk encodes: one hnswlib
            # thread, so the two together do not oversubscribe the cores torch uses.
            index.add(np.asarray(batch.text_ids), batch.vectors, threads=INDEX_THREADS)
            self._changed()

        try:
            report = encode_missing(self.store, encoder, model_id, on_committed=add_to_index,
                                    progress=progress, cancel=cancel, chunk_texts=chunk_texts,
                                    executor=executor)
        except BaseException:
            with self._index_lock:
                if self._index is index:
                    self._index_version = None
            raise
        with self._index_lock:
            if self._index is index:
                # Exact only when every version bump since `known` was one of our commits.
                with self.store.read() as conn:
                    now = vector_store.content_version(conn)
                exact = known is not None and now == known + report.commits
                self._index_version = now if exact else None
        if report.encoded:
            self.save_index()
        return report

    # -- index -----------------------------------------------------------------------------
    def index(self) -> HnswIndex:
        """The active model's index, loaded and checked against the embeddings once."""
        model_id = self._active_model_id()
        with self._index_lock:
            if self._index is not None and self._index_model_id == model_id:
                return self._index
            with self.store.read() as conn:
                model = vector_store.get_model_row(conn, model_id)
                index, why = load_index(conn, model_id, model["dim"])
                # Same snapshot as the load: a matching stamp means nothing to reconcile.
                version = current_version(conn, model_id, index) if index is not None else None
            if index is None:
                if why != "no saved index":
                    self._notice(f"{self.path.name}: {why}; rebuilding it from the stored "
                                 f"embeddings (nothing is lost)")
                index = HnswIndex(model["dim"])
            stamped, changed = version is not None, False
            if not stamped:
                changed, version = self._reconcile(index, model_id)
            self._index, self._index_model_id = index, model_id
            self._index_version = version
            if not self.store.read_only and changed:
                self._save(index, model_id)
            elif not self.store.read_only and not stamped and why == "":
                with self.store.write() as conn:  # the saved bytes are right; note it
                    write_stamp(conn, model_id, version)
            self._changed()
            return index

    def _sync_index(self, index: HnswIndex, model_id: int) -> bool:
        """Add embedded texts the index lacks and delete texts no row uses; True if changed."""
        return self._reconcile(index, model_id)[0]

    def _reconcile(self, index: HnswIndex, model_id: int) -> tuple[bool, int]:
        """`_sync_index`, also returning the content version it made the index match."""
        with self.store.read() as conn:
            version = vector_store.content_version(conn)
            embedded = vector_store.embedded_text_ids(conn, model_id)
            live = np.fromiter(item_store.live_text_ids(conn), dtype=np.int64)
            wanted = np.intersect1d(embedded, live)
            present = np.setdiff1d(index.ids(), np.fromiter(index.deleted, np.int64))
            missing = np.setdiff1d(wanted, present)
            stale = np.setdiff1d(present, wanted)
            dim = index.dim
            for ids, vecs in vector_store.iter_embeddings(conn, model_id, dim,
                                                          text_ids=missing.tolist()):
                index.add(ids, vecs)
        if len(stale):
            index.mark_deleted(stale)
        if len(missing) and len(present):
            self._notice(f"{self.path.name}: added {len(missing)} encoded items missing from "
                         f"the saved index")
        return bool(len(missing) or len(stale)), version

    def save_index(self) -> None:
        with self._index_lock:
            if self._index is not None and not self.store.read_only:
                self._save(self._index, self._index_model_id)

    def _save(self, index: HnswIndex, model_id: int) -> None:
        version = self._index_version if index is self._index else None
        with self.store.write() as conn:
            save_index(conn, model_id, index, version=version)

    def _changed(self) -> None:
        self._generation += 1
        self._cache.clear()

    def _drop_index_cache(self) -> None:
        with self._index_lock:
            self._index, self._index_model_id = None, None
            self._index_version = None
            self._graph, self._graph_key = None, None
            self._changed()

    # -- search ----------------------------------------------------------------------------
    def search(self, text: str, k: int = 10) -> list[SearchHit]:
        """The k most similar existing entries; rows with the same text are folded into one."""
        if not text or not text.strip():
            return []
        encoder, index, model_id = self._serving()
        key = (text, k, model_id, self._generation)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        vector = encoder.encode([text])
        text_ids, sims = index.query(vector, k)
        ids = text_ids[0].tolist()
        with self.store.read() as conn:
            rows = item_store.items_for_texts(conn, ids)
        hits = []
        for t, s in zip(ids, sims[0].tolist(), strict=True):
            group = rows.get(t)
            if not group:
                continue
            first = group[0]
            hits.append(SearchHit(public_id(first), first["row"], first["text"], float(s),
                                  first["id"], first["source_id"], len(group)))
        self._cache.put(key, hits)
        return hits

    def _serving(self) -> tuple[SentenceEncoder, HnswIndex, int]:
        """The encoder, index and model id that belong together right now.

        Taken under both locks, so a search that overlaps a version switch uses the old
        model and index or the new ones, never the query of one against the other's index.
        """
        while True:
            encoder = self.encoder()
            index = self.index()
            with self._index_lock, self._encoder_lock:
                if (self._encoder is encoder and self._index is index
                        and self._index_model_id == self._active_id):
                    return encoder, index, self._index_model_id

    # -- duplicates ------------------------------------------------------------------------
    def neighbour_graph(self, k: int = DEFAULT_NEIGHBOURS, *,
                        progress: ProgressCallback = no_progress,
                        cancel: CancelToken | None = None) -> KnnGraph:
        """Each text's k nearest others; cached in memory and in the project file."""
        index = self.index()
        model_id = self._index_model_id
        with self.store.read() as conn:
            signature = conn.execute(
                indexes.select().where(indexes.c.model_id == model_id)).mappings().first()
        stamp = f"{signature['sha256'] if signature else 'unsaved'}:{len(index)}:{k}"
        key = (model_id, stamp)
        if self._graph is not None and self._graph_key == key:
            return self._graph
        name = f"knn/{model_id}/{k}"
        graph = None
        if signature is not None and self.store.get_meta(name) == stamp:
            with self.store.read() as conn:
                data = get_blob(conn, name)
            try:
                graph = KnnGraph.from_bytes(data) if data else None
            except (ValueError, KeyError, OSError):
                graph = None
        if graph is None:
            with self.store.read() as conn:
                live = np.fromiter(item_store.live_text_ids(conn), dtype=np.int64)
            graph = build_knn_graph(index, k, np.intersect1d(index.ids(), live),
                                    progress=progress, cancel=cancel)
            if not self.store.read_only and signature is not None:
                with self.store.write() as conn:
                    put_blob(conn, name, graph.to_bytes())
                    self.store.set_meta(name, stamp, conn)
        self._graph, self._graph_key = graph, key
        return graph

    def duplicates(self, threshold: float = DEFAULT_THRESHOLD, k: int = DEFAULT_NEIGHBOURS,
                   *, decisions: bool = True, progress: ProgressCallback = no_progress,
                   cancel: CancelToken | None = None) -> list[Cluster]:
        """Duplicate clusters at `threshold`, biggest first; re-cutting reuses the graph.

        With `decisions`, the analyst's stored verdicts are laid over the cut (canonical
        choices lead, rows marked "not duplicate" of the canonical are moved out); without,
        the clusters are exactly as cut, which is what `apply_decisions` takes.
        """
        if not 0.0 < threshold <= 1.0:
            raise InputError(f"threshold must be between 0 and 1, not {threshold}")
        graph = self.neighbour_graph(k, progress=progress, cancel=cancel)
        with _no_gc_pauses():
            return self._cut(graph, threshold, decisions)

    def _cut(self, graph: KnnGraph, threshold: float, decisions: bool) -> list[Cluster]:
        text_clusters = text_clusters_as_ids(cut_clusters(graph, threshold), graph.ids)
        clustered = {t for ids, _ in text_clusters for t in ids}
        with self.store.read() as conn:
            self._rows.check(vector_store.content_version(conn))
            exact = [t for t in self._rows.texts_with_copies(conn) if t not in clustered]
            # Texts that join when the slider moves down a little are read now, with the
            # rest, so that the next re-cut reads nothing (one read instead of two).
            nearby = texts_near(graph, round(threshold - PREFETCH_MARGIN, 6))
            rows = self._rows.rows(conn, [*clustered, *exact], also=nearby)
        clusters = expand_clusters(text_clusters, rows, exact, self._rows.member)
        return self.apply_decisions(clusters) if decisions else clusters

    # -- review decisions ------------------------------------------------------------------
    def apply_decisions(self, clusters: list[Cluster]) -> list[Cluster]:
        """Clusters as cut → clusters as the analyst's stored decisions make them.

        A cluster none of whose rows has a verdict or a canonical choice is already what
        `apply_decisions` would make of it (centre first, the rest by similarity, no
        verdicts), so it is passed on as it is: most clusters, most of the time.
        """
        ids = [i for c in clusters for i in c.item_ids()]
        with self.store.read() as conn:
            labels = decision_store.labels_among(conn, ids)
            chosen = decision_store.canonical_among(conn, ids)
        involved = chosen | {i for pair in labels for i in pair}
        if not involved:
            return clusters
        return [apply_decisions(c, labels, chosen, self._similarities)
                if not involved.isdisjoint(c.item_ids()) else c for c in clusters]

    def _similarities(self, text_id: int, others) -> list[float]:
        index = self.index()
        vectors = index.vectors(np.asarray([text_id, *others], dtype=np.int64))
        return (vectors[1:] @ vectors[0]).astype(float).tolist()

    def pair_label(self, item_a: int, item_b: int) -> int | None:
        with self.store.read() as conn:
            return decision_store.get_label(conn, item_a, item_b)

    def set_pair_label(self, item_a: int, item_b: int, label: int | None) -> None:
        """Store the analyst's verdict on two rows (1 duplicate, 0 not, None forget)."""
        if label not in (0, 1, None):
            raise InputError(f"a pair label is 0 or 1, not {label!r}")
        with self.store.write() as conn:
            decision_store.set_label(conn, item_a, item_b, label)

    def canonical_choices(self, item_ids: list[int]) -> set[int]:
        with self.store.read() as conn:
            return decision_store.canonical_among(conn, item_ids)

    def set_canonical_choices(self, clear: list[int], chosen: list[int]) -> None:
        with self.store.write() as conn:
            decision_store.set_canonical(conn, clear, chosen)

    def labelled_pairs(self) -> list[dict]:
        """Every labelled pair of live rows (`text_a`, `text_b`, `label`, ids…): training data."""
        with self.store.read() as conn:
            return decision_store.all_labels(conn)

    def label_counts(self) -> dict[str, int]:
        with self.store.read() as conn:
            counts = decision_store.count_labels(conn)
        return {"duplicate": counts.get(1, 0), "not_duplicate": counts.get(0, 0)}

    # -- review plots ----------------------------------------------------------------------
    def similarity_histogram(self, k: int = DEFAULT_NEIGHBOURS, bins: int = 60) -> Histogram:
        """How similar each text is to its nearest other text, from the cached graph."""
        return similarity_histogram(self.neighbour_graph(k).nearest_similarities(), bins)

    def label_curve(self) -> ThresholdCurve:
        """Precision and recall of each threshold on the analyst's labelled pairs, scored
        by the active model (pairs whose texts are not encoded yet are left out)."""
        pairs = self.labelled_pairs()
        index = self.index()
        # Asked after every review decision: a vectorised membership test, not a Python set
        # of every indexed id.
        live = np.setdiff1d(index.ids(), np.fromiter(index.deleted, np.int64))
        a_ids = np.asarray([p["text_id_a"] for p in pairs], dtype=np.int64)
        b_ids = np.asarray([p["text_id_b"] for p in pairs], dtype=np.int64)
        keep = np.isin(a_ids, live) & np.isin(b_ids, live)
        usable = [p for p, ok in zip(pairs, keep.tolist(), strict=True) if ok]
        if not usable:
            return threshold_curve(np.zeros(0), np.zeros(0))
        a = index.vectors(np.asarray([p["text_id_a"] for p in usable], dtype=np.int64))
        b = index.vectors(np.asarray([p["text_id_b"] for p in usable], dtype=np.int64))
        scores = np.einsum("ij,ij->i", a, b)
        return threshold_curve(scores, np.asarray([p["label"] for p in usable]))

    def embedding_map(self, threshold: float = DEFAULT_THRESHOLD, limit: int = MAP_SAMPLE,
                      k: int = DEFAULT_NEIGHBOURS) -> EmbeddingMap:
        """A 2-D PCA map of (a sample of) the texts, coloured by cluster at `threshold`."""
        graph = self.neighbour_graph(k)
        ids = sample_ids(graph.ids, limit)
        index = self.index()
        xy = project_2d(index.vectors(ids)) if len(ids) else np.zeros((0, 2), np.float32)
        cluster_of: dict[int, int] = {}
        text_clusters = text_clusters_as_ids(cut_clusters(graph, threshold), graph.ids)
        for number, (text_ids, _) in enumerate(text_clusters, start=1):
            for t in text_ids:
                cluster_of[t] = number
        with self.store.read() as conn:
            texts = item_store.texts_by_id(conn, ids.tolist())
        return EmbeddingMap(xy, ids, [texts.get(int(t), "") for t in ids],
                            np.asarray([cluster_of.get(int(t), 0) for t in ids], np.int64))

    def delete_items(self, item_ids: list[int]) -> int:
        """Remove rows from the project; texts no row uses leave the index (marked deleted)."""
        try:
            with self.store.write() as conn:
                orphaned = item_store.mark_items_deleted(conn, item_ids)
                version = vector_store.bump_content_version(conn) if orphaned else None
        finally:
            self._rows.clear()
        with self._index_lock:
            if self._index is not None and orphaned:
                self._index.mark_deleted(np.fromiter(orphaned, np.int64))
                known = self._index_version
                self._index_version = (version if known is not None and version == known + 1
                                       else None)
                self._save(self._index, self._index_model_id)
            self._graph, self._graph_key = None, None
            self._changed()
        return len(orphaned)

    def export_clusters(self, path: str | os.PathLike, clusters: list[Cluster]) -> int:
        """Write cluster members with their original columns; returns rows written."""
        path = Path(path)
        members = [(c, m) for c in clusters for m in (*c.members, *c.rejected)]
        if path.suffix.lower() == ".xlsx" and len(members) > XLSX_MAX_ROWS:
            raise InputError(f"{path.name}: {len(members)} rows do not fit in an XLSX sheet; "
                             f"export to .csv instead")
        with self.store.read() as conn:
            full = item_store.items_by_ids(conn, [m.item_id for _, m in members])
            sources = {s["id"]: s for s in item_store.list_sources(conn)}
        columns = _source_columns(list(sources.values()))
        records = []
        for cluster, m in members:
            item = full[m.item_id]
            row = dict(item["extra"])
            id_column = sources[item["source_id"]]["id_column"]
            if id_column:
                row[id_column] = item["ext_id"] or ""
            row.update({"cluster_id": cluster.cluster_id, "canonical_id": cluster.canonical.id,
                        "similarity": round(m.score, 4), "is_canonical": m is cluster.canonical,
                        "decision": m.decision or "unreviewed"})
            records.append(row)
        extra_cols = ["cluster_id", "canonical_id", "similarity", "is_canonical", "decision"]
        import pandas as pd  # only export needs it; keeps opening the window fast

        frame = pd.DataFrame.from_records(records, columns=[*columns, *extra_cols])
        export_table(frame, path)
        return len(frame)

    # -- fine-tuning and model versions ----------------------------------------------------
    def training_pairs(self, extra_file: str | os.PathLike | None = None, **file_options
                       ) -> list[LabelledPair]:
        """The pairs labelled in review, plus those of a labelled file (`read_labelled_file`
        keywords in `file_options`); a pair in both counts once, with the review's label."""
        from engine.training.collect import file_pairs, merge_pairs, review_pairs

        pairs = review_pairs(self.labelled_pairs())
        if extra_file is None:
            return pairs
        return merge_pairs(pairs, file_pairs(extra_file, **file_options))

    def finetune(self, objective: str | None = None, *,
                 pairs: Sequence[LabelledPair] | None = None,
                 extra_file: str | os.PathLike | None = None,
                 file_options: dict | None = None, options: TrainingOptions | None = None,
                 held_out: float = 0.5, seed: int = 0, min_pairs: int | None = None,
                 progress: ProgressCallback = no_progress, cancel: CancelToken | None = None
                 ) -> FinetuneReport:
        """Train the active model on labelled pairs and save the result as a new version.

        `pairs` defaults to `training_pairs(extra_file, **file_options)`; given, the file's
        pairs are added to them. `objective` defaults to `DEFAULT_OBJECTIVE`. The pairs are
        split without sharing questions (`held_out` of them measured, not trained on), the
        active model is measured, a copy trained and measured, and the copy saved as version
        N in `<project>.models/vN/` with its `models` row. The version is not activated
        (`activate_model`). Too few pairs, or one verdict only, raise InputError with advice
        before any model is loaded; `cancel` raises `Cancelled`; either way, and on any
        error, nothing is saved and the active model is untouched. Progress stages:
        `engine.training.session.FINETUNE_STAGES`. Searching goes on meanwhile.
        """
        from engine.training.collect import file_pairs, merge_pairs
        from engine.training.objectives import DEFAULT_OBJECTIVE
        from engine.training.pairs import MIN_PAIRS
        from engine.training.session import check_pairs, run_finetune

        if self.store.read_only:
            raise ProjectError(f"{self.path.name}: the project is open read-only")
        objective = objective or DEFAULT_OBJECTIVE
        min_pairs = MIN_PAIRS if min_pairs is None else min_pairs
        if pairs is None:
            pairs = self.training_pairs(extra_file, **(file_options or {}))
        elif extra_file is not None:
            pairs = merge_pairs(pairs, file_pairs(extra_file, **(file_options or {})))
        check_pairs(pairs, objective, min_pairs)  # before the slow model load
        encoder = self.encoder()
        parent = self.active_model()
        report, trained = run_finetune(
            self.store, self.path, encoder, parent, pairs, objective, options=options,
            held_out=held_out, seed=seed, min_pairs=min_pairs, progress=progress,
            cancel=cancel)
        self._keep_spare(report.version_id, trained, encoder)
        return report

    def _keep_spare(self, model_id: int, model, like: SentenceEncoder) -> None:
        """Keep a just-trained model loaded, served as the active one is (fp16 on CUDA)."""
        with self.store.read() as conn:
            row = vector_store.get_model_row(conn, model_id)
        if like.device.startswith("cuda"):
            model.half()
        spec = ModelSpec(row["name"], str(self.path.parent / row["location"]),
                         row["fingerprint"], True)
        self._spare = (model_id, SentenceEncoder(model, spec, like.device, like.batch_size))

    def model_versions(self) -> list[dict]:
        """Every model the project has used, oldest first: id, name, location, folder,
        available, parent_id, objective, metrics (before/after for trained versions),
        created_at, active, encoded (live texts embedded with it), texts, indexed. Cheap:
        loads no model."""
        from engine.training.versions import list_versions

        active = self.active_model()
        return list_versions(self.store, self.path, active["id"] if active else None)

    def activate_model(self, version_id: int, *, progress: ProgressCallback = no_progress,
                       cancel: CancelToken | None = None, chunk_texts: int = CHUNK_TEXTS
                       ) -> ActivationReport:
        """Make a model version the one search, duplicates and plots use.

        Loads it, encodes every live text it has not encoded yet (resumable), completes and
        saves its index, and only then switches, in one step: search keeps answering with
        the current model until then, from any thread. Cancelling (`cancel`) returns a report
        with `cancelled` set, the current model still active and what was encoded kept, so
        activating again resumes. A version used before switches back without encoding.
        Progress stages: `engine.training.activation.ACTIVATION_STAGES`.
        """
        from engine.training.activation import ActivationReport, prepare_model_index

        if self.store.read_only:
            raise ProjectError(f"{self.path.name}: the project is open read-only")
        with self._activation_lock:
            started = time.perf_counter()
            with self.store.read() as conn:
                row = vector_store.get_model_row(conn, int(version_id))
            if row is None:
                raise InputError(f"{self.path.name}: has no model version {version_id} "
                                 f"(see 'duplens models')")
            report = ActivationReport(row["id"])
            active = self.active_model()
            if active is not None and active["id"] == row["id"]:
                self.encoder()
                report.activated = report.already_active = True
                return report
            encoder = self._load_version(row, progress)
            if cancel is not None and cancel.cancelled:
                report.cancelled = True
                self._spare = (row["id"], encoder)
                return report
            index = prepare_model_index(self.store, encoder, row["id"], report=report,
                                        progress=progress, cancel=cancel,
                                        chunk_texts=chunk_texts)
            if index is None:
                self._spare = (row["id"], encoder)
            else:
                self._switch_to(row["id"], encoder, index)
                report.activated = True
            report.seconds = time.perf_counter() - started
            return report

    def _load_version(self, row: dict, progress: ProgressCallback) -> SentenceEncoder:
        """The version's encoder: the spare one when it is that version, else from disk,
        after checking the folder still holds the weights the version was recorded with."""
        from engine.training.activation import STAGE_LOADING
        from engine.training.versions import model_folder

        spare = self._spare
        if spare is not None and spare[0] == row["id"]:
            return spare[1]
        folder = model_folder(self.path, row["location"])
        if folder is not None and not folder.is_dir():
            raise ModelError(f"{row['name']}: its folder {folder} is missing")
        progress(Progress(STAGE_LOADING, 0, 1))
        encoder = load_stored_encoder(
            self.model_source(row["location"]), row["fingerprint"],
            device=self.device_preference, batch_size=self.batch_size,
            backend=self.backend_preference)
        progress(Progress(STAGE_LOADING, 1, 1))
        return encoder

    def _switch_to(self, model_id: int, encoder: SentenceEncoder, index: HnswIndex) -> None:
        """Serve `model_id` from now on: the stored active model and the in-memory encoder
        and index change together, under the locks search takes."""
        with self._index_lock:
            if self._sync_index(index, model_id):  # rows deleted or added meanwhile
                self._save(index, model_id)
            with self.store.write() as conn:
                self.store.set_meta("active_model_id", str(model_id), conn)
                self.store.set_meta("last_device", encoder.device, conn)
            with self._encoder_lock:
                previous = (self._active_id, self._encoder)
                self._encoder, self._active_id = encoder, model_id
            self._index, self._index_model_id = index, model_id
            self._index_version = None  # saved unstamped: the next open reconciles once
            self._graph, self._graph_key = None, None
            self._changed()
        if previous[0] is not None and previous[1] is not None:
            self._spare = (previous[0], previous[1])

    def export_model(self, version_id: int, folder: str | os.PathLike) -> Path:
        """Copy a version's model folder to `folder` (new or empty), loadable with plain
        `SentenceTransformer(folder)`; the bundled default model is copied from its package."""
        from engine.training.versions import export_folder, model_folder

        with self.store.read() as conn:
            row = vector_store.get_model_row(conn, int(version_id))
        if row is None:
            raise InputError(f"{self.path.name}: has no model version {version_id} "
                             f"(see 'duplens models')")
        source = model_folder(self.path, row["location"])
        if source is None:
            raise ModelError(f"{row['name']}: is a Hugging Face Hub model, not stored on this "
                             f"computer; there is no folder to export")
        return export_folder(source, Path(folder))

    def delete_model(self, version_id: int) -> str:
        """Delete a trained version that is not active and no other version came from (the
        wizard's "Discard"): its folder, row, embeddings and index; returns its name."""
        from engine.training.versions import delete_version

        if self.store.read_only:
            raise ProjectError(f"{self.path.name}: the project is open read-only")
        with self._activation_lock:  # never while that version is being activated
            name = delete_version(self.store, self.path, int(version_id))
            if self._spare is not None and self._spare[0] == int(version_id):
                self._spare = None
        return name

    # -- browsing --------------------------------------------------------------------------
    def count_items(self) -> int:
        with self.store.read() as conn:
            return item_store.count_items(conn)

    def item_columns(self) -> list[str]:
        """The imported files' own columns that the table shows beside the text: every
        column but the text and id columns, in first-seen order."""
        with self.store.read() as conn:
            sources = item_store.list_sources(conn)
        used = {c for s in sources for c in (*s["text_columns"], s["id_column"]) if c}
        return [c for c in _source_columns(sources) if c not in used]

    def row_order(self, query: RowQuery | None = None) -> np.ndarray:
        """Ids of the live rows `query` keeps, in its order (`engine.browse`); the default
        is every row in import order. Reads one or two columns, never whole rows."""
        query = query or RowQuery()
        with self.store.read() as conn:
            condition = item_store.row_filter(
                query.text_filter, query.filter_columns(self.item_columns()))
            if query.sort == SORT_IMPORT:
                ids = item_store.filtered_item_ids(conn, condition)
                return ids[::-1].copy() if query.descending else ids
            sample = item_store.sample_sort_values(conn, query.sort, condition, NUMBER_SAMPLE)
            return item_store.sorted_item_ids(conn, query.sort, condition,
                                              numeric=looks_numeric(sample),
                                              descending=query.descending)

    def items_by_ids(self, item_ids: Sequence[int]) -> list[dict]:
        """The rows with these ids, in this order, in `items_page`'s form; ids of deleted
        or unknown rows are left out."""
        with self.store.read() as conn:
            found = item_store.items_by_ids(conn, [int(i) for i in item_ids])
        return [_browse_row(found[i]) for i in map(int, item_ids)
                if i in found and not found[i]["deleted"]]

    def items_page(self, offset: int, limit: int) -> list[dict]:
        """Rows `offset`..`offset+limit` in import order: `id` (public), `row`, `text`,
        `item_id`, `source_id` and the original columns under `extra`."""
        with self.store.read() as conn:
            rows = item_store.items_page(conn, offset, limit)
        return [_browse_row(r) for r in rows]

    # -- summary ---------------------------------------------------------------------------
    def info(self) -> dict:
        """Counts and state, cheap: no model or index is loaded to answer."""
        with self.store.read() as conn:
            active = self.active_model()
            model_id = active["id"] if active else None
            index_row = None
            if model_id is not None:
                index_row = conn.execute(
                    indexes.select().where(indexes.c.model_id == model_id)).mappings().first()
            return {
                "project": str(self.path),
                "schema_version": SCHEMA_VERSION,
                "items": item_store.count_items(conn),
                "texts": item_store.count_texts(conn),
                "encoded": vector_store.count_embeddings(conn, model_id) if model_id else 0,
                "truncated": vector_store.count_truncated(conn, model_id) if model_id else 0,
                "model": active["name"] if active else None,
                "model_location": active["location"] if active else None,
                "index_items": index_row["count"] if index_row else 0,
                "device": self.store.get_meta("last_device"),
                "sources": [
                    {"file_name": s["file_name"], "rows_imported": s["rows_imported"],
                     "rows_empty": s["rows_empty"], "bad_lines": len(s["bad_lines"])}
                    for s in item_store.list_sources(conn)
                ],
            }


def _browse_row(r: dict) -> dict:
    """A stored row as tables show it: `id` (public), `row`, `text`, `item_id`,
    `source_id` and the original columns under `extra`."""
    return {"id": public_id(r), "row": r["row"], "text": r["text"], "item_id": r["id"],
            "source_id": r["source_id"], "extra": r["extra"]}


def _source_columns(sources: list[dict]) -> list[str]:
    """The union of all imported files' columns, in first-seen order."""
    return list(dict.fromkeys(c for s in sources for c in s["columns"]))
