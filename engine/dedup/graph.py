"""The neighbour graph that duplicate clusters are cut from, and how it is built.

Built once from the index and kept, so moving the threshold only re-cuts the graph: no new
search. Every text is searched once for its k nearest others (`engine.dedup.knn_search`);
where a text's k-th neighbour is still at the graph's `floor` or above it may have more
duplicates than k, and those dense neighbourhoods are completed by exact search
(`engine.dedup.dense`). So a row holds as many neighbours as the data has above the floor,
not at most k: on 100k question embeddings with noisy copies, 10 neighbours per text found
85% of the pairs above 0.8, the completed graph 99.9% (benchmarks/mining.py).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, replace

import numpy as np

from engine.dedup.dense import VectorReader, complete_dense
from engine.dedup.graph_check import check_graph, read_graph_arrays
from engine.dedup.knn_search import GRAPH_EF, search_neighbours
from engine.index.hnsw import HnswIndex
from engine.progress import CancelToken, ProgressCallback, no_progress

# Similarity above which the graph holds every pair the search can reach (see `KnnGraph`).
# The slider goes down to 0.5, but a floor that low holds tens of neighbours per text in
# real questions (100k set: 39 per text on average at 0.5, 3.8 at 0.75; a graph that keeps
# them all is neither fast to build nor to cut), while duplicates of all-MiniLM-L6-v2 sit
# above 0.75; below the floor a cut still sees each text's k nearest, as before.
DEFAULT_FLOOR = 0.75
_FORMAT = 2  # the layout to_bytes writes; 1 was (n, k) arrays


@dataclass(frozen=True, eq=False)
class KnnGraph:
    """Each text's neighbours as compressed rows (CSR).

    Node i (text id `ids[i]`) has the neighbours `indices[indptr[i]:indptr[i + 1]]`
    (positions into `ids`) with cosine similarities `sims[...]` in the same places, highest
    first (ties: lower position first); never itself, never twice. A row holds the text's
    k nearest others as the search found them, every text that found it among theirs (the
    graph is symmetric), and every other text at `floor` or above: a cut at a threshold of
    `floor` or more sees all pairs above it, a lower cut at least each text's k nearest.
    """

    ids: np.ndarray       # (n,) int64 text ids, ascending
    indptr: np.ndarray    # (n + 1,) int64 row starts
    indices: np.ndarray   # (e,) int32 positions into ids
    sims: np.ndarray      # (e,) float32 cosine similarity
    k: int                # neighbours searched per text
    floor: float = math.inf   # complete at and above this similarity (inf: nothing promised)
    # (n,) bool: texts read in several windows (documents), whose edges are scored from
    # their windows and whose clusters the cut keeps whole (`engine.dedup.cut`); None when
    # the graph holds none. Derived from the project's windows whenever a graph is made or
    # read (`engine.services.document_graph`), so it is not stored with the graph.
    documents: np.ndarray | None = None

    @classmethod
    def from_rows(cls, ids: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                  sims: np.ndarray, k: int, floor: float = math.inf) -> KnnGraph:
        """The graph of the directed edges rows[e] -> cols[e] (positions), as given: an edge
        listed twice keeps its first similarity; no edge is mirrored here."""
        n, width = len(ids), max(len(ids), 1)
        rows, cols = np.asarray(rows), np.asarray(cols)
        keep = rows != cols
        # Two sorts on int64 keys (a lexsort of three keys took seconds at 100k texts): by
        # (row, col) to drop repeats, keeping the first; then, stably, by (row, similarity
        # descending), so equal similarities stay in column order. The copies made here
        # (the caller keeps its own arrays until this returns) hold rows and columns only
        # in the key meanwhile, and each step's arrays go as soon as the next has them: a
        # dense graph of documents has millions of entries, and holding every step's
        # copies made this the peak of `duplicates` (739 MiB over the graph build's start
        # for 8.4 million entries, 510 since; devtools/graph_peak.py).
        key = rows[keep].astype(np.int64) * width
        key += cols[keep].astype(np.int64)
        sims = np.asarray(sims, dtype=np.float32)[keep]
        del keep, rows, cols
        order = np.argsort(key, kind="stable")
        key = key[order]
        if len(key):
            first = np.r_[True, key[1:] != key[:-1]]
            order, key = order[first], key[first]
            del first
        sims = sims[order]
        del order
        rows = key // width
        cols = (key - rows * width).astype(np.int32)
        del key
        order = np.argsort((rows << 32) | descending_keys(sims), kind="stable")
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
        return cls(np.asarray(ids, dtype=np.int64), indptr, cols[order], sims[order], int(k),
                   float(floor))

    @classmethod
    def from_dense(cls, ids: np.ndarray, nbr: np.ndarray, sim: np.ndarray,
                   floor: float = math.inf) -> KnnGraph:
        """The graph of (n, k) neighbour arrays (-1 = none), as a k-NN search returns them."""
        nbr = np.asarray(nbr)
        n, k = nbr.shape if nbr.ndim == 2 else (len(ids), 0)
        rows = np.repeat(np.arange(n), k)
        valid = nbr.ravel() >= 0
        return cls.from_rows(ids, rows[valid], nbr.ravel()[valid],
                             np.asarray(sim, dtype=np.float32).ravel()[valid], k, floor)

    def with_documents(self, documents: np.ndarray | None) -> KnnGraph:
        """This graph with `documents` (a bool per position) as its documents: itself when
        they are already, so a graph's identity (what a re-cut compares) survives marking
        it twice. No document at all is None."""
        mask = None if documents is None or not np.any(documents) \
            else np.asarray(documents, dtype=bool)
        if mask is not None and len(mask) != len(self.ids):
            raise ValueError(f"{len(mask)} document flags for a graph of {len(self.ids)} texts")
        same = (mask is None and self.documents is None) or (
            mask is not None and self.documents is not None
            and np.array_equal(mask, self.documents))
        return self if same else replace(self, documents=mask)

    # -- views -------------------------------------------------------------------------------
    def degrees(self) -> np.ndarray:
        """Neighbours held per node."""
        return np.diff(self.indptr)

    def row_of_entries(self) -> np.ndarray:
        """For each entry of `indices`, the node whose row it is in."""
        return np.repeat(np.arange(len(self.ids), dtype=np.int32), self.degrees())

    def counts_at(self, threshold: float) -> np.ndarray:
        """Neighbours at `threshold` or above per node (rows are sorted, so a prefix)."""
        counts = np.zeros(len(self.ids), dtype=np.int32)
        held = self.degrees() > 0
        if held.any():
            # Empty rows left out: reduceat sums from one start to the next.
            counts[held] = np.add.reduceat(self.sims >= threshold, self.indptr[:-1][held],
                                           dtype=np.int32)
        return counts

    @property
    def nbr(self) -> np.ndarray:
        """(n, k) int32: each node's k nearest neighbours held, -1 where it has fewer."""
        return self._dense(self.indices, -1)

    @property
    def sim(self) -> np.ndarray:
        """(n, k) float32: the similarities of `nbr`, 0 where it has none."""
        return self._dense(self.sims, 0)

    def _dense(self, values: np.ndarray, fill) -> np.ndarray:
        n = len(self.ids)
        out = np.full((n, self.k), fill, dtype=values.dtype)
        width = np.minimum(self.degrees(), self.k)
        rows = np.repeat(np.arange(n), width)
        cols = np.arange(len(rows)) - np.repeat(np.cumsum(width) - width, width)
        out[rows, cols] = values[self.indptr[rows] + cols]
        return out

    def nearest_similarities(self) -> np.ndarray:
        """Each node's similarity to its nearest other node (NaN if none): the histogram."""
        has = self.degrees() > 0
        first = np.minimum(self.indptr[:-1], max(len(self.sims) - 1, 0))
        nearest = self.sims[first] if len(self.sims) else np.zeros(len(self.ids), np.float32)
        return np.where(has, nearest, np.nan).astype(np.float32)

    # -- storage -----------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        buf = io.BytesIO()
        np.savez(buf, format=np.int64(_FORMAT), ids=self.ids, indptr=self.indptr,
                 indices=self.indices, sims=self.sims, k=np.int64(self.k),
                 floor=np.float64(self.floor))
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes, *, k: int | None = None,
                   labels: np.ndarray | None = None) -> KnnGraph:
        """The graph `to_bytes` wrote; ValueError for anything else (a graph stored by an
        older version, or one crafted or damaged: see `graph_check`), which callers build
        again rather than read. `k`: the neighbours per text it must have been built with;
        `labels`: the index's, which its texts must be among."""
        z = read_graph_arrays(data)
        if int(z["format"]) != _FORMAT:
            raise ValueError(f"neighbour graph format {int(z['format'])}")
        graph = cls(z["ids"], z["indptr"], z["indices"], z["sims"], int(z["k"]),
                    float(z["floor"]))
        check_graph(graph.ids, graph.indptr, graph.indices, graph.sims, graph.k, graph.floor,
                    wanted_k=k, labels=labels)
        return graph


def descending_keys(sims: np.ndarray) -> np.ndarray:
    """float32 similarities as int64 keys in [0, 2**32) that sort highest first."""
    bits = np.asarray(sims, dtype=np.float32).view(np.int32)
    # IEEE floats sort as their bits (signed) when positive and reversed when negative:
    # flipping a negative one's other bits makes the signed bits sort as the floats.
    ordered = bits ^ ((bits >> 31) & 0x7FFFFFFF)
    return (2**31 - 1) - ordered.astype(np.int64)


def build_knn_graph(index: HnswIndex, k: int, ids: np.ndarray | None = None, *,
                    floor: float = DEFAULT_FLOOR, vectors: VectorReader | None = None,
                    progress: ProgressCallback = no_progress,
                    cancel: CancelToken | None = None, ef: int = GRAPH_EF,
                    threads: int | None = None) -> KnnGraph:
    """The neighbour graph of the texts `ids` (default: all indexed) among themselves.

    Each text's k nearest others by the index (`threads`, default every core, search a batch
    side by side; the index is locked per batch, so a live search waits at most one batch),
    mirrored, then completed with every pair at `floor` or above around the texts whose k-th
    neighbour is still above it (exact search inside those neighbourhoods). `floor` above 1
    gives the plain k-NN graph, mirrored.

    `vectors(text_ids)` gives the texts' vectors (default: the index's own, which hnswlib
    hands out slowly; the store's, `engine.store.embeddings.read_vectors`, are 5 times faster).
    """
    ids = np.sort(np.asarray(index.ids() if ids is None else ids, dtype=np.int64))
    read = normalised(vectors or index.vectors)
    nbr, sim = search_neighbours(index, ids, k, read, ef=ef, threads=threads,
                                 progress=progress, cancel=cancel)
    n = len(ids)
    rows = np.repeat(np.arange(n, dtype=np.int32), nbr.shape[1])
    valid = nbr.ravel() >= 0
    rows, cols, sims = rows[valid], nbr.ravel()[valid], sim.ravel()[valid]
    # A text whose k-th neighbour is at the floor may have more above it than k.
    full = (nbr[:, -1] >= 0) if k else np.zeros(n, bool)
    saturated = full & (sim[:, -1] >= floor) if k else full
    extra_rows, extra_cols, extra_sims = complete_dense(
        read, ids, rows, cols, sims, saturated, floor, progress=progress, cancel=cancel)
    # Exact similarities first: where both found a pair, the exact one is kept.
    all_rows = np.concatenate([extra_rows, extra_cols, rows, cols])
    all_cols = np.concatenate([extra_cols, extra_rows, cols, rows])
    all_sims = np.concatenate([extra_sims, extra_sims, sims, sims])
    del extra_rows, extra_cols, extra_sims   # from_rows holds its own copies
    return KnnGraph.from_rows(ids, all_rows, all_cols, all_sims, k,
                              floor if math.isfinite(floor) and floor <= 1 else math.inf)


def row_spans(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Entry positions start..start + length - 1 of each row, one row after another: the
    entries of some rows of a graph (their `indptr` starts, and degrees or a prefix of
    them) without a per-entry array of the whole graph."""
    lengths = np.asarray(lengths, dtype=np.int64)
    return (np.repeat(np.asarray(starts, dtype=np.int64) - np.cumsum(lengths) + lengths,
                      lengths) + np.arange(int(lengths.sum())))


_SCALE_ROWS = 8192


def normalised(read: VectorReader) -> VectorReader:
    """`read`, its rows scaled to length 1: similarities are dot products, as in the index
    (cosine space), whatever the model stored; `read` itself when it says its rows are
    (a `unit_length` attribute, as the project's bulk reader of the index file has)."""
    if getattr(read, "unit_length", False):
        return read

    def normalised(text_ids: np.ndarray) -> np.ndarray:
        v = np.asarray(read(text_ids), dtype=np.float32)
        if v.base is not None or not v.flags.writeable:
            v = v.copy()          # scaled in place below: never the reader's own array
        return unit_rows(v)
    return normalised


def unit_rows(v: np.ndarray) -> np.ndarray:
    """`v` (float32, writeable) with its rows scaled to length 1 in place (zero rows kept).
    In blocks: at 250k vectors of 384 a temporary of the whole array is 384 MB, and
    scaling it at once took 0.17-0.65 s against 0.10 s in blocks."""
    for lo in range(0, len(v), _SCALE_ROWS):
        block = v[lo:lo + _SCALE_ROWS]
        norms = np.linalg.norm(block, axis=1)
        norms[norms == 0] = 1
        block /= norms[:, None]
    return v


def texts_near(graph: KnnGraph, threshold: float) -> list[int]:
    """Ids of the texts with a neighbour at `threshold` or above, and of those neighbours:
    every text a cut at that threshold could put in a cluster."""
    above = graph.sims >= threshold
    rows = np.nonzero(graph.counts_at(threshold) > 0)[0]
    positions = np.union1d(rows, graph.indices[above])
    return graph.ids[positions].tolist()
