"""Reading a stored neighbour graph's arrays and checking them before anything indexes with them.

The graph is kept in the project file (`knn/<model>/<k>`, an `np.savez` archive), and a
project may come from someone else. NumPy itself bounds-checks every index, so a crafted
graph cannot make it read out of bounds, but it would fail somewhere deep in a cut or a
review (an IndexError, a wrong cluster) instead of being built again. And `np.load` of a
crafted archive could expand a small compressed member into gigabytes. So before a stored
graph is used, the archive must hold exactly the graph's members, stored uncompressed (as
`np.savez` writes them: no member can be larger than the blob), and the arrays must be
what `KnnGraph` promises: the dtypes and shapes it writes, row starts that rise from 0 to
the number of entries, every neighbour a position of another node, ids ascending and among
the index's labels, similarities finite, within [-1, 1] up to rounding and sorted highest
first in each row, the k it was asked for and a floor it could have. Anything else raises
ValueError, and the caller builds the graph again from the index.
"""

from __future__ import annotations

import io
import math
import zipfile

import numpy as np

ARRAYS = {"ids": np.dtype("<i8"), "indptr": np.dtype("<i8"), "indices": np.dtype("<i4"),
          "sims": np.dtype("<f4")}
SCALARS = {"format": np.dtype("<i8"), "k": np.dtype("<i8"), "floor": np.dtype("<f8")}
_ROUNDING = 1e-3       # a float32 dot product of unit vectors can pass 1 by a few ulps


def read_graph_arrays(data: bytes) -> dict[str, np.ndarray]:
    """The archive's members as arrays; ValueError for anything but the graph's own members,
    stored, each with the dtype and number of dimensions the graph writes."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
        wanted = {f"{name}.npy" for name in (*ARRAYS, *SCALARS)}
        if {info.filename for info in infos} != wanted or len(infos) != len(wanted):
            raise ValueError("the stored neighbour graph holds other members")
        if any(info.compress_type != zipfile.ZIP_STORED or info.file_size > len(data)
               for info in infos):
            raise ValueError("the stored neighbour graph is compressed")
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in (*ARRAYS, *SCALARS)}
    except (zipfile.BadZipFile, OSError, EOFError, KeyError, NotImplementedError,
            RuntimeError) as exc:
        raise ValueError(f"the stored neighbour graph cannot be read ({exc})") from exc
    for names, ndim in ((ARRAYS, 1), (SCALARS, 0)):
        for name, dtype in names.items():
            if arrays[name].dtype != dtype or arrays[name].ndim != ndim:
                raise ValueError(f"the stored neighbour graph's {name} is "
                                 f"{arrays[name].dtype} of {arrays[name].ndim} dimensions")
    return arrays


def check_graph(ids: np.ndarray, indptr: np.ndarray, indices: np.ndarray, sims: np.ndarray,
                k: int, floor: float, *, wanted_k: int | None = None,
                labels: np.ndarray | None = None) -> None:
    """ValueError unless the arrays are a graph `KnnGraph` could have written: `wanted_k`
    neighbours searched (when given), its ids among `labels` (the index's, when given)."""
    n = len(ids)
    if (len(indptr) != n + 1 or len(indices) != len(sims) or indptr[0] != 0
            or indptr[-1] != len(indices)):
        raise ValueError("neighbour graph rows do not match its entries")
    if (np.diff(indptr) < 0).any():
        raise ValueError("neighbour graph rows overlap")
    if n and ((ids[0] < 0) or (np.diff(ids) <= 0).any()):
        raise ValueError("neighbour graph ids are not ascending text ids")
    if labels is not None and not np.isin(ids, labels).all():
        raise ValueError("neighbour graph holds texts its index does not")
    if len(indices):
        if int(indices.min()) < 0 or int(indices.max()) >= n:
            raise ValueError("neighbour graph names a node it does not hold")
        rows = np.repeat(np.arange(n, dtype=np.int32), np.diff(indptr))
        if (indices == rows).any():
            raise ValueError("neighbour graph lists a node as its own neighbour")
        if not np.isfinite(sims).all() or float(np.abs(sims).max()) > 1 + _ROUNDING:
            raise ValueError("neighbour graph similarities are not cosines")
        rising = np.flatnonzero(np.diff(sims) > 0) + 1
        if not np.isin(rising, indptr).all():   # only where a new row starts
            raise ValueError("neighbour graph rows are not sorted by similarity")
    if k < 0 or (wanted_k is not None and k != wanted_k):
        raise ValueError(f"neighbour graph of {k} neighbours per text, not {wanted_k}")
    if math.isnan(floor) or (floor > 1 and floor != math.inf):
        raise ValueError(f"neighbour graph floor {floor}")
