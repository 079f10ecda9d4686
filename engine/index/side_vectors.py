"""The vectors of a saved index file, read by text id straight from its pages.

The neighbour graph's updates and builds read the vectors of many texts by id: adding a
week's 10,000 rows to a million-item project reads about 250,000 of them (the dense
neighbourhoods the new rows fall into). hnswlib hands its vectors out through nested Python
lists (about 46 µs a vector), and the store's blobs cost a row each through SQLite: about
3 s of the 14 s increment at 1M (profiled with the weekly benchmark's speed part). The index
file beside a file project (`index.side_file`) holds the same vectors as fixed-size level-0
records (`index.index_check` describes the format), so a memory map of it reads them as one
NumPy gather: 250,000 vectors in 0.1-0.3 s from the page cache, which the index's own load
or save has just filled.

What makes it safe to use:
- the file is opened only through `side_file.open_matching`, so it is the index saved with
  the project's recorded blob (sha256 and file identity), not whatever lies in the folder;
- the header's sizes are checked against the model's dimension and the file's length before
  any view is made, so every read stays within the file (NumPy checks the rest);
- a text's vector under a model never changes, so a file saved before later additions is
  still right for every text it holds; the ones it lacks are read from the store;
- a sample of its vectors is compared with the stored embeddings before it is used; a file
  that disagrees is not used at all.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable
from contextlib import suppress

import numpy as np

from engine.errors import ProjectError
from engine.index.index_check import HEADER, Header

# Vectors compared with the store before a file is used, spread over its records.
SAMPLE = 16
_GATHER_ROWS = 16_384      # vectors gathered from the map at once (24 MB at 384 dims)


class SideVectors:
    """Vectors by text id from one saved hnswlib index file, mapped read-only."""

    def __init__(self, path: str | os.PathLike, dim: int) -> None:
        """Map the file at `path` (a path `side_file.open_matching` gave); ValueError when
        its header does not describe `dim`-dimensional records that fit in it."""
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < HEADER.size:
                raise ValueError("the index file is shorter than its header")
            header = Header(*HEADER.unpack(fh.read(HEADER.size)))
            _check(header, dim, size)
            # The map outlives the descriptor: it keeps the file's pages (and its inode, if
            # another save renames a new file over the path) for as long as it is used.
            self._map = (mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                         if header.count else None)
        self.dim = dim
        self.count = header.count
        if not self.count:
            self._records = None
            self._labels = np.zeros(0, dtype=np.int64)
            self._slots = np.zeros(0, dtype=np.int64)
            return
        record = np.dtype({"names": ["vector", "label"],
                           "formats": [("<f4", (dim,)), "<u8"],
                           "offsets": [header.offset_data, header.label_offset],
                           "itemsize": header.size_per_element})
        self._records = np.ndarray((header.count,), dtype=record, buffer=self._map,
                                   offset=HEADER.size)
        labels = self._records["label"].astype(np.int64)
        self._slots = np.argsort(labels, kind="stable")
        self._labels = labels[self._slots]

    def read(self, text_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(vectors, found): a (len, dim) float32 array with the file's vector of each text
        id in that order, and which ids the file holds (the other rows are left unset)."""
        wanted = np.asarray(text_ids, dtype=np.int64)
        out = np.empty((len(wanted), self.dim), dtype=np.float32)
        if not len(self._labels) or not len(wanted):
            return out, np.zeros(len(wanted), dtype=bool)
        at = np.minimum(np.searchsorted(self._labels, wanted), len(self._labels) - 1)
        found = self._labels[at] == wanted
        slots = self._slots[at]
        rows = np.flatnonzero(found)
        # In slot order, so the map is walked forwards (the page cache reads ahead).
        rows = rows[np.argsort(slots[rows], kind="stable")]
        vectors = self._records["vector"]
        for lo in range(0, len(rows), _GATHER_ROWS):
            part = rows[lo:lo + _GATHER_ROWS]
            out[part] = vectors[slots[part]]
        return out, found

    def sample_ids(self) -> np.ndarray:
        """Up to `SAMPLE` text ids spread over the file, to compare with the store."""
        if not len(self._labels):
            return self._labels
        picks = np.unique(np.linspace(0, len(self._labels) - 1, SAMPLE).astype(np.int64))
        return self._labels[picks]

    def close(self) -> None:
        self._records = None
        if self._map is not None:
            # A caller still holding a view: the map closes when that view is collected.
            with suppress(BufferError):
                self._map.close()
            self._map = None


def _check(h: Header, dim: int, size: int) -> None:
    """The records must be as wide as a vector of `dim` and a label need, and all of them
    must lie in the file (hnswlib's link lists follow them)."""
    if not 0 < dim <= 1 << 20:
        raise ValueError(f"the model's dimension {dim!r} is not a usable one")
    if h.size_per_element <= 0 or h.offset_data < 0 or h.label_offset < 0:
        raise ValueError("the index file's record layout is not a usable one")
    if h.offset_data + 4 * dim > h.label_offset or h.label_offset + 8 > h.size_per_element:
        raise ValueError("the index file's records do not hold vectors of this dimension")
    if HEADER.size + h.count * h.size_per_element > size:
        raise ValueError("the index file is shorter than its records")


def agrees(side: SideVectors, stored: Callable[[np.ndarray], np.ndarray]) -> bool:
    """Whether the file's sampled vectors point the same way as the stored embeddings
    (`stored`: text ids -> vectors). hnswlib keeps cosine vectors normalised, the store as
    the model gave them, so both are compared normalised."""
    ids = side.sample_ids()
    if not len(ids):
        return True
    mine, found = side.read(ids)
    try:
        theirs = np.asarray(stored(ids), dtype=np.float32)
    except ProjectError:    # a sampled id the store lacks: not this project's file
        return False
    if not found.all() or not np.isfinite(mine).all():
        return False

    def unit(v: np.ndarray) -> np.ndarray:
        norms = np.linalg.norm(v, axis=1, keepdims=True)
        return v / np.where(norms == 0, 1, norms)
    return bool(np.allclose(unit(mine), unit(theirs), atol=1e-5))
