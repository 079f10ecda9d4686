"""`Vectors`: embeddings in, nearest neighbours out — encoding, the index, and search.

Encoding stores every text the active model has not embedded (resumable, chunk by chunk)
and adds each committed chunk to the live index while the next one encodes; search asks
the same index. Both take the encoder and the index that belong together right now
(`serving`), so a search that overlaps a version switch uses the old model and index or
the new ones, never the query of one against the other's index.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

import numpy as np

from engine.dedup.graph import unit_rows
from engine.documents.window_finder import WindowFinder
from engine.encoding.encode_job import CHUNK_TEXTS, EncodeReport, encode_missing
from engine.encoding.encoder import EncodedBatch, Executor, SentenceEncoder
from engine.index import side_file
from engine.index.hnsw import HnswIndex
from engine.index.side_vectors import SideVectors, agrees
from engine.keystroke_search import SearchHit, Windows, search
from engine.progress import CancelToken, ProgressCallback, no_progress
from engine.services.active_model import ActiveModel
from engine.services.live_index import LiveIndex
from engine.store import embeddings as embedding_store
from engine.store.database import Store
from engine.store.saved_indexes import saved_row
from engine.store.text_signatures import signatures_of
from engine.store.text_windows import read_windows, windowed_text_ids
from engine.store.text_words import texts_by_words

INDEX_THREADS = 1  # hnswlib threads for adds that overlap encoding (see `encode`)


class Vectors:
    """Encode, index and search the project's texts with its active model."""

    def __init__(self, store: Store, model: ActiveModel, live: LiveIndex) -> None:
        self._store = store
        self._model = model
        self._live = live
        self._windowed_key: tuple[int, int] | None = None   # (model, index generation)
        self._windowed = np.zeros(0, dtype=np.int64)
        # Every window of the long texts, for the search (read on first need, per key).
        self._finder: tuple[tuple[int, int], WindowFinder] | None = None
        self._finder_lock = threading.Lock()

    def index(self) -> HnswIndex:
        """The active model's index, loaded and checked against the embeddings once (a
        damaged one is rebuilt from them and saved)."""
        return self._live.get(self._model.id())

    def index_source(self) -> str:
        """Where the index in memory was loaded from: "side file" (the copy beside a project
        file, the fast route), "blobs" (the project itself) or "" (built, or not loaded)."""
        return self._live.route

    def model_id(self) -> int:
        """The id of the model whose vectors these are (the active one)."""
        return self._model.id()

    def vectors(self, text_ids) -> np.ndarray:
        """The indexed (normalised) vectors of these texts, in this order."""
        return self.index().vectors(np.asarray(text_ids, dtype=np.int64))

    @contextmanager
    def bulk_reader(self, model_id: int, dim: int
                    ) -> Iterator[Callable[[np.ndarray], np.ndarray]]:
        """A reader of many stored vectors by text id (in that order; their directions,
        which is all the graph uses: normalise them), for the neighbour graph's builds and
        updates.

        It reads them from the saved index file beside a file project when the store says
        that file is the saved index and a sample of it matches the stored embeddings
        (`engine.index.side_vectors`: one gather from the page cache; a week's reads at
        1M took 0.7 s instead of the store rows' 3.3 s), and from the store for every
        text the file lacks, or for all of them on a server, a read-only copy without the
        file, or a file that does not match. hnswlib's own `vectors` (Python lists) is
        slower than either."""
        def stored(text_ids: np.ndarray) -> np.ndarray:
            with self._store.read() as conn:
                return embedding_store.read_vectors(conn, model_id, dim, text_ids)

        with ExitStack() as stack:
            side = self._side_vectors(model_id, dim)
            if side is not None:
                stack.callback(side.close)

            def read(text_ids: np.ndarray) -> np.ndarray:
                if side is None:
                    return stored(text_ids)
                vectors, found = side.read(text_ids)
                if not found.all():
                    missing = np.flatnonzero(~found)
                    from_store = stored(np.asarray(text_ids)[missing])
                    vectors[missing] = unit_rows(np.array(from_store, dtype=np.float32)) \
                        if unit else from_store
                return vectors
            unit = side is not None and _unit_length(side)
            # A cosine index file's vectors are unit length (hnswlib keeps them so; a
            # sample says whether this one's are), and the few the store adds are made so:
            # the graph then need not scale 250,000 of them again (0.1 s of a week's
            # update at 1M).
            read.unit_length = unit   # type: ignore[attr-defined]
            yield read

    def _side_vectors(self, model_id: int, dim: int) -> SideVectors | None:
        """The saved index file's vectors when it is the saved index and agrees with the
        store on a sample; None otherwise (the store is read instead)."""
        with self._store.read() as conn:
            saved = saved_row(conn, model_id)
            if saved is None or saved["sha256"] is None:
                return None
            sha256 = saved["sha256"]
            with side_file.open_matching(conn, model_id, sha256) as path:
                if path is None:
                    return None
                try:
                    side = SideVectors(path, dim)
                except (OSError, ValueError):
                    return None
            if agrees(side, lambda ids: embedding_store.read_vectors(conn, model_id, dim,
                                                                      ids)):
                return side
        side.close()
        return None

    def encode(self, *, progress: ProgressCallback = no_progress,
               cancel: CancelToken | None = None, chunk_texts: int = CHUNK_TEXTS,
               executor: Executor | None = None) -> EncodeReport:
        """Encode and index every text the active model has not seen; resumable. The
        batches run on `executor` (default: in this thread)."""
        encoder = self._model.encoder()
        model_id = self._model.id()
        index = self.index()
        known = self._live.change_count_of(index)

        def add_to_index(batch: EncodedBatch) -> None:
            # Runs on the job's indexing thread while the next chunk encodes: one hnswlib
            # thread, so the two together do not oversubscribe the cores torch uses.
            index.add(np.asarray(batch.text_ids), batch.vectors, threads=INDEX_THREADS)
            self._live.changed()

        try:
            report = encode_missing(self._store, encoder, model_id, on_committed=add_to_index,
                                    progress=progress, cancel=cancel, chunk_texts=chunk_texts,
                                    executor=executor)
        except BaseException:
            self._live.committed(index, None, 0)
            raise
        self._live.committed(index, known, report.commits)
        if report.encoded:
            self._live.save()
        return report

    def save_index(self) -> None:
        self._live.save()

    def search(self, text: str, k: int = 10) -> list[SearchHit]:
        """The k most similar existing rows; rows with the same text are folded into one."""
        if not text or not text.strip():
            return []
        encoder, index, model_id = self.serving()
        key = (text, k, model_id, self._live.generation)
        cached = self._live.cache.get(key)
        if cached is not None:
            return cached
        hits = search(self._store, encoder, index, text, k,
                      self.windows(model_id, self._live.generation, index))
        self._live.cache.put(key, hits)
        return hits

    def windows(self, model_id: int, generation: int, index: HnswIndex) -> Windows:
        """Which texts of the model have windows (read again once per index generation),
        a reader of their windows and one of the index's vectors: for the search and for
        a checked file's rows."""
        dim = index.dim
        key = (model_id, generation)
        if self._windowed_key != key:
            with self._store.read() as conn:
                windowed = windowed_text_ids(conn, model_id)
            self._windowed, self._windowed_key = np.asarray(windowed, dtype=np.int64), key

        def read(text_ids):
            with self._store.read() as conn:
                return read_windows(conn, model_id, dim, text_ids)

        def signatures(text_ids):
            from engine.documents.minhash import from_bytes

            with self._store.read() as conn:
                return {t: from_bytes(b) for t, b in signatures_of(conn, text_ids).items()}

        windowed = self._windowed

        def finder() -> WindowFinder:
            with self._finder_lock:
                if self._finder is None or self._finder[0] != key:
                    old = self._finder
                    self._finder = None   # the old matrix goes before the new one is read
                    if old is not None and old[0][0] == model_id and bool(
                            np.isin(old[1].texts, windowed).all()):
                        # Texts were only added (an import's commit): read theirs alone.
                        added = np.setdiff1d(windowed, old[1].texts)
                        self._finder = (key, old[1].extended(added, read, dim))
                    else:
                        del old
                        self._finder = (key, WindowFinder.load(windowed, read, dim))
                return self._finder[1]

        def by_words(query: str, limit: int) -> list[int]:
            with self._store.read() as conn:
                return texts_by_words(conn, query, limit)

        return Windows(windowed, read,
                       lambda text_ids: index.vectors(np.asarray(text_ids, dtype=np.int64)),
                       signatures, finder, by_words)

    def generation(self) -> int:
        """The live index's generation (it changes with every commit into the index)."""
        return self._live.generation

    def serving(self) -> tuple[SentenceEncoder, HnswIndex, int]:
        """The encoder, index and model id that belong together right now, checked under
        the index lock (a switch changes all three together under it)."""
        while True:
            encoder = self._model.encoder()
            index = self.index()
            with self._live.lock:
                loaded, model_id = self._model.snapshot()
                if (loaded is encoder and self._live.current() is index
                        and self._live.model_id == model_id):
                    return encoder, index, model_id


def _unit_length(side: SideVectors) -> bool:
    """Whether a sample of the index file's vectors all have length 1 (a cosine index)."""
    sample = side.sample_ids()
    if not len(sample):
        return False
    vectors, found = side.read(sample)
    norms = np.linalg.norm(vectors[found], axis=1)
    return bool(found.any()) and bool(np.all(np.abs(norms - 1) < 1e-4))
