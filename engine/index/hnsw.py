"""An HNSW index over text embeddings (hnswlib, cosine space) that can grow and be saved.

Parameters: M=32 and ef_construction=200 build a graph that reaches recall@10 >= 0.99
against exact search on 384-dimensional sentence embeddings with ef=128 at query time up to
a few hundred thousand items (measured in benchmarks/query_latency.py); a bigger index
needs a wider beam for the same recall, so the query beam grows with the index
(`HnswIndex.query_ef`). Labels are text ids.

ef_construction 100 would insert 2.28 times as fast, but at 1M items its graph search found
93.0% of the pairs at 0.8 that 200's finds (benchmarks/ef_construction.py; the rule asked
for 97%), so the build keeps 200.
"""

from __future__ import annotations

import os
import tempfile
import threading
from dataclasses import asdict, dataclass

import hnswlib
import numpy as np

from engine.index.index_check import Expected, check_index_file

# hnswlib holds a lock per call, but resizing while another thread searches is not safe,
# and adding in small slices lets a search slip in between them during a long import.
_ADD_SLICE = 512


@dataclass(frozen=True)
class HnswParams:
    M: int = 32
    ef_construction: int = 200
    ef: int = 128        # the query beam up to EF_BASE_ITEMS items; wider above
    space: str = "cosine"


# The live query's beam is params.ef up to this many items, then grows in proportion, up to
# EF_MAX_FACTOR times: at 1M items recall@10 was 0.974 with ef=128 and 0.988 with 256
# (benchmarks/query_latency.py, 1M real and near-copy question embeddings), for 0.3 and
# 0.55 ms of search.
EF_BASE_ITEMS = 250_000
EF_MAX_FACTOR = 4


class HnswIndex:
    """A growable cosine index whose labels are text ids."""

    def __init__(self, dim: int, params: HnswParams | None = None, capacity: int = 1024,
                 _raw: hnswlib.Index | None = None, deleted: set[int] | None = None) -> None:
        self.dim = dim
        self.params = params or HnswParams()
        self._lock = threading.RLock()
        # hnswlib's Python API cannot count or list deleted labels, so we keep them.
        self.deleted: set[int] = set(deleted or ())
        if _raw is None:
            _raw = hnswlib.Index(space=self.params.space, dim=dim)
            _raw.init_index(max_elements=max(capacity, 16), M=self.params.M,
                            ef_construction=self.params.ef_construction,
                            allow_replace_deleted=False)
        _raw.set_ef(self.params.ef)
        self._index = _raw

    # -- size ------------------------------------------------------------------------------
    def __len__(self) -> int:
        """Live (not deleted) elements."""
        return self._index.get_current_count() - len(self.deleted)

    def ids(self) -> np.ndarray:
        """Every label ever added, deleted ones included."""
        with self._lock:
            return np.asarray(self._index.get_ids_list(), dtype=np.int64)

    # -- changes ---------------------------------------------------------------------------
    def add(self, ids: np.ndarray, vectors: np.ndarray, threads: int | None = None) -> None:
        """Add vectors under text ids; adding an id again replaces its vector (hnswlib).

        `threads`: hnswlib's insertion threads (default: every core). hnswlib releases the
        GIL while it inserts, so other Python threads run meanwhile.
        """
        threads = threads or os.cpu_count() or 1
        ids = np.asarray(ids, dtype=np.int64)
        vectors = np.asarray(vectors, dtype=np.float32)
        revived = self.deleted.intersection(ids.tolist())
        if revived:
            with self._lock:
                for label in revived:
                    self._index.unmark_deleted(label)
                self.deleted -= revived
        for start in range(0, len(ids), _ADD_SLICE):
            part_ids = ids[start:start + _ADD_SLICE]
            with self._lock:
                needed = self._index.get_current_count() + len(part_ids)
                if needed > self._index.get_max_elements():
                    self._index.resize_index(max(needed, 2 * self._index.get_max_elements()))
                self._index.add_items(vectors[start:start + _ADD_SLICE], part_ids,
                                      num_threads=threads)

    def mark_deleted(self, ids: np.ndarray) -> None:
        with self._lock:
            for label in np.asarray(ids, dtype=np.int64).tolist():
                if label in self.deleted:
                    continue
                try:
                    self._index.mark_deleted(label)
                except RuntimeError:  # an unknown label: nothing to delete
                    continue
                self.deleted.add(label)

    # -- queries ---------------------------------------------------------------------------
    def query(self, vectors: np.ndarray, k: int, *, ef: int | None = None,
              threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """(ids, cosine similarities) of the k nearest neighbours of each row of `vectors`.

        `ef` (default `params.ef`, never below k) trades recall for speed; `threads` > 1
        spreads a batch of queries over cores (hnswlib releases the GIL), for bulk work
        such as the neighbour graph. Fewer than k live elements gives fewer columns; an
        empty index gives zero columns.
        """
        vectors = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        with self._lock:
            k = min(k, len(self))
            if k <= 0:
                empty = np.empty((len(vectors), 0))
                return empty.astype(np.int64), empty.astype(np.float32)
            self._index.set_ef(max(self.query_ef() if ef is None else ef, k))
            labels, distances = self._index.knn_query(vectors, k=k,
                                                      num_threads=max(1, threads))
        return labels.astype(np.int64), (1.0 - distances).astype(np.float32)

    def query_ef(self) -> int:
        """The beam a query searches with by default: `params.ef`, widened in proportion
        to the index beyond EF_BASE_ITEMS items (at most EF_MAX_FACTOR times)."""
        factor = min(EF_MAX_FACTOR, max(1.0, len(self) / EF_BASE_ITEMS))
        return int(round(self.params.ef * factor))

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        """The stored (normalised) vectors of the given ids."""
        with self._lock:
            return np.asarray(self._index.get_items(np.asarray(ids, dtype=np.int64)),
                              dtype=np.float32)

    # -- persistence -----------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write the index in hnswlib's own file format.

        hnswlib holds the GIL while it writes (about 1 ms per MB here), so callers stream
        the file onwards in chunks rather than reading it whole.
        """
        with self._lock:
            self._index.save_index(os.fspath(path))

    @classmethod
    def load(cls, path: str | os.PathLike, dim: int, params: HnswParams,
             deleted: set[int] | None = None, *,
             labels: tuple[int, int] | None = None) -> HnswIndex:
        """Load a file written by `save`; raises ValueError when it is unusable.

        hnswlib reads only a file that `index_check` found to add up: its sizes and offsets
        those of `dim` and `params`, every link in range, exactly as long as it should be,
        its labels within `labels` (the project's text ids) and the elements marked deleted
        exactly `deleted`. A crafted file never reaches hnswlib's unchecked C++ loader.
        """
        if params.space != "cosine" or type(params.ef) is not int or not 1 <= params.ef <= 10**6:
            raise ValueError(f"the index settings {asdict(params)} are not ones Duplens uses")
        check_index_file(path, Expected(
            dim=dim, m=params.M, ef_construction=params.ef_construction, labels=labels,
            deleted=None if deleted is None else frozenset(deleted)))
        raw = hnswlib.Index(space=params.space, dim=dim)
        try:
            raw.load_index(os.fspath(path), allow_replace_deleted=False)
        except Exception as exc:  # noqa: BLE001 - hnswlib raises RuntimeError or worse
            raise ValueError(f"unreadable index: {exc}") from exc
        return cls(dim, params, _raw=raw, deleted=deleted)

    def to_bytes(self) -> bytes:
        """The index in hnswlib's own file format, whole (small indexes and tests)."""
        with tempfile.TemporaryDirectory(prefix="duplens-index-") as tmp:
            path = os.path.join(tmp, "index.bin")
            self.save(path)
            with open(path, "rb") as fh:
                return fh.read()

    @classmethod
    def from_bytes(cls, data: bytes, dim: int, params: HnswParams,
                   deleted: set[int] | None = None) -> HnswIndex:
        """Load an index saved by `to_bytes`; raises ValueError when the bytes are unusable."""
        with tempfile.TemporaryDirectory(prefix="duplens-index-") as tmp:
            path = os.path.join(tmp, "index.bin")
            with open(path, "wb") as fh:
                fh.write(data)
            return cls.load(path, dim, params, deleted)

    def params_dict(self) -> dict:
        return asdict(self.params)
