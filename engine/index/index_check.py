"""Checking a saved hnswlib index file before hnswlib reads a byte of it.

hnswlib 0.8.0's `load_index` (`hnswalg.h`, `loadIndex`) trusts the file: it allocates what
the header says, reads each element's link lists where the header implies, and later follows
every neighbour id it finds without a bounds check. Its own check only walks the link-list
sizes to the end of the file. The sha256 stored beside the index is in the same project file,
so it catches damage, not tampering: a crafted `.duplens` received by e-mail could make the
loader or a later search read or write out of bounds. So the same format is parsed here
first, with NumPy views over a memory map (no Python loop per element), and a file is handed
to hnswlib only when every field hnswlib uses adds up with what the project expects; anything
else is refused (`IndexFileError`, a ValueError) and the index is rebuilt from the stored
embeddings, as for a damaged one.

The format, little-endian as hnswlib writes it on x86-64 and arm64 (`saveIndex`):
- a 96-byte header: offsetLevel0, max_elements, cur_element_count, size_data_per_element,
  label_offset, offsetData (u64 each), maxlevel (i32), enterpoint_node (u32), maxM, maxM0,
  M (u64 each), mult (f64), ef_construction (u64);
- cur_element_count level-0 records of size_data_per_element bytes each: a u32 whose low 16
  bits count the neighbours and whose bit 16 marks the element deleted, maxM0 u32 neighbour
  ids, the vector (dim float32), the label (u64);
- for each element in order, a u32 byte size of its upper-level link lists (0 at level 0)
  and those bytes: one list per level above 0, each a u32 count and maxM u32 ids.

What must hold, and why hnswlib needs it (a valid file always satisfies all of it; the tests
in tests/engine/index/test_index_check.py check that against hnswlib on many real files):
- The header's sizes are the ones hnswlib derives from M and the dimension: otherwise the
  vector, label and link offsets it computes point elsewhere, and `dim` (which hnswlib takes
  from the caller, not the file) would read past each record. M, maxM, maxM0, mult and
  ef_construction are what hnswlib sets for the project's M and ef_construction: mult draws
  the level of every element added later (a huge or NaN one gives an absurd level and a
  wrapped allocation size).
- cur_element_count <= max_elements <= max(2 * count, SPARE_ELEMENTS): hnswlib allocates
  max_elements records (and a mutex and a visited slot each) before reading, and
  max_elements * size could wrap around; `HnswIndex` never keeps more room than that.
- The file is exactly as long as the header and the link-list sizes imply: no byte missing
  (hnswlib would read uninitialised memory) and none extra.
- Every level-0 count <= maxM0 and every upper-level count <= maxM (a search reads that many
  ids), every neighbour slot < cur_element_count (searches index the vectors and the visited
  list with it), every upper-level list size a whole number of levels, each neighbour at
  level l an element that has level l (its list there is read next), maxlevel the highest
  level and the entry point an element at it (a search starts there at maxlevel).
- Labels are unique and lie within the project's embedded text ids, and the elements marked
  deleted are exactly the ones the project recorded as deleted.

The vectors themselves are not checked: any 4 bytes are a float, and a NaN or an infinity
only ranks badly. Between this check and hnswlib's read the file must not change: the blob
route loads a private scratch file, and the side file is opened once and read through its
descriptor (`index.side_file`); only a process that can already write the user's files could
swap it in between.
"""

from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass

import numpy as np

HEADER = struct.Struct("<6QiI3QdQ")
NO_ENTRY_POINT = 0xFFFFFFFF          # hnswlib's enterpoint_node_ of an empty index: -1 as u32
DELETE_MARK = 1 << 16                # bit 16 of a level-0 list's first word
MAX_M = 10_000                       # hnswlib caps M there
MAX_EF_CONSTRUCTION = 1_000_000
# `HnswIndex` starts with room for 1024 elements and doubles when full, so a file it wrote
# has max_elements <= max(2 * count, 1024); a little more is allowed, nothing that costs
# memory worth noticing.
SPARE_ELEMENTS = 4096
_FIRST_WINDOW = 256                  # words scanned first for the next upper-level list size
_MAX_WINDOW = 1 << 20                # at most this many words (4 MiB) per scan
_LISTS_PER_BATCH = 1 << 16           # upper-level lists checked per gather


class IndexFileError(ValueError):
    """The file is not an index this project could have written; nothing was loaded."""


@dataclass(frozen=True)
class Header:
    offset_level0: int
    max_elements: int
    count: int
    size_per_element: int
    label_offset: int
    offset_data: int
    max_level: int
    entry_point: int
    max_m: int
    max_m0: int
    m: int
    mult: float
    ef_construction: int


@dataclass(frozen=True)
class Expected:
    """What the project says the index must be. `labels`: the inclusive range every label
    lies in (None: any label that fits an int64); `deleted`: the labels marked deleted,
    exactly (None: not compared)."""

    dim: int
    m: int
    ef_construction: int
    labels: tuple[int, int] | None = None
    deleted: frozenset[int] | None = None


@dataclass(frozen=True)
class Summary:
    """What a file that passed holds."""

    count: int
    deleted: int
    max_level: int


def check_index_file(path: str | os.PathLike, expected: Expected) -> Summary:
    """Raise `IndexFileError` unless the hnswlib index file at `path` is one hnswlib can load
    and search safely and that matches `expected` (see the module's docstring)."""
    _check_expected(expected)
    try:
        fh = open(path, "rb")   # noqa: SIM115 - closed below, after the maps
    except OSError as exc:
        raise IndexFileError(f"the file cannot be opened ({exc.strerror})") from exc
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if size < HEADER.size:
            raise IndexFileError(f"the file has {size} bytes, fewer than hnswlib's header")
        header = Header(*HEADER.unpack(fh.read(HEADER.size)))
        _check_header(header, expected, size)
        if header.count == 0:
            if expected.deleted:
                raise IndexFileError(f"it is empty, the project recorded "
                                     f"{len(expected.deleted)} deleted elements")
            return Summary(0, 0, -1)
        level0_end = HEADER.size + header.count * header.size_per_element
        level0 = np.memmap(fh, dtype="<u4", mode="r", offset=HEADER.size,
                           shape=(header.count, header.size_per_element // 4))
        tail = np.memmap(fh, dtype="<u4", mode="r", offset=level0_end,
                         shape=((size - level0_end) // 4,))
        try:
            deleted = _check_level0(level0, header, expected)
            levels, records, sizes = _check_upper_sizes(tail, header)
            _check_upper_lists(tail, levels, records, sizes, header)
        finally:
            del level0, tail   # unmapped before the file closes
    return Summary(header.count, deleted, header.max_level)


def _check_expected(expected: Expected) -> None:
    """The project's own record of the index (its settings are read from the project file
    too) must be sane before anything is compared with it."""
    def whole(value, low: int, high: int) -> bool:
        return type(value) is int and low <= value <= high

    if not whole(expected.dim, 1, 1 << 20):
        raise IndexFileError(f"the model's dimension {expected.dim!r} is not a usable one")
    if not whole(expected.m, 2, MAX_M):
        raise IndexFileError(f"the index setting M={expected.m!r} is not between 2 and "
                             f"{MAX_M}")
    if not whole(expected.ef_construction, 1, MAX_EF_CONSTRUCTION):
        raise IndexFileError(f"the index setting ef_construction={expected.ef_construction!r}"
                             f" is not between 1 and {MAX_EF_CONSTRUCTION}")
    if expected.labels is not None:
        low, high = expected.labels
        if not (whole(low, 0, 2**63 - 1) and whole(high, 0, 2**63 - 1)):
            raise IndexFileError(f"the range of text ids {expected.labels!r} is not usable")
    if expected.deleted is not None and not all(whole(label, 0, 2**63 - 1)
                                                for label in expected.deleted):
        raise IndexFileError("the saved list of deleted items holds something other than "
                             "text ids")


def _check_header(h: Header, expected: Expected, size: int) -> None:
    m = expected.m
    links0 = 4 * (2 * m + 1)
    data = 4 * expected.dim
    wanted = {
        "offsetLevel0": (h.offset_level0, 0),
        "M": (h.m, m),
        "maxM": (h.max_m, m),
        "maxM0": (h.max_m0, 2 * m),
        "ef_construction": (h.ef_construction, max(expected.ef_construction, m)),
        "offsetData": (h.offset_data, links0),
        "label_offset": (h.label_offset, links0 + data),
        "size_data_per_element": (h.size_per_element, links0 + data + 8),
    }
    for name, (found, want) in wanted.items():
        if found != want:
            raise IndexFileError(f"its header has {name}={found}, expected {want} for M={m} "
                                 f"and dimension {expected.dim}")
    if not math.isclose(h.mult, 1 / math.log(m), rel_tol=1e-12):
        raise IndexFileError(f"its header has mult={h.mult!r}, expected {1 / math.log(m)!r} "
                             f"for M={m}")
    if h.count > NO_ENTRY_POINT:
        raise IndexFileError(f"its header counts {h.count} elements, more than hnswlib can "
                             f"number")
    if not h.count <= h.max_elements <= max(2 * h.count, SPARE_ELEMENTS):
        raise IndexFileError(f"its header has room for {h.max_elements} elements, holding "
                             f"{h.count}")
    level0_end = HEADER.size + h.count * h.size_per_element
    # At least a zero link-list size per element after the level-0 records, in whole words.
    if size < level0_end + 4 * h.count or (size - level0_end) % 4:
        raise IndexFileError(f"the file has {size} bytes, too few or misaligned for its "
                             f"{h.count} elements")
    if h.count == 0:
        if (h.max_level, h.entry_point, size) != (-1, NO_ENTRY_POINT, HEADER.size):
            raise IndexFileError("an empty index with an entry point, a level or data")
    elif h.max_level < 0 or h.entry_point >= h.count:
        raise IndexFileError(f"its entry point {h.entry_point} at level {h.max_level} is not "
                             f"one of its {h.count} elements")


def _check_level0(level0: np.ndarray, h: Header, expected: Expected) -> int:
    """The level-0 lists and the labels; returns how many elements are marked deleted."""
    first = np.ascontiguousarray(level0[:, 0])
    counts = first & 0xFFFF
    _refuse_any(counts > h.max_m0, "element {} lists {} neighbours at level 0, more than "
                f"{h.max_m0}", counts)
    _refuse_any(first >> 16 > 1, "element {} has unknown flags {:#x} at level 0", first >> 16)
    neighbours = level0[:, 1:1 + h.max_m0]
    if neighbours.size and int(neighbours.max()) >= h.count:
        row = int(np.flatnonzero((neighbours >= h.count).any(axis=1))[0])
        raise IndexFileError(f"element {row} names a neighbour beyond the {h.count} elements "
                             f"at level 0")
    word = h.label_offset // 4
    labels = (level0[:, word].astype(np.uint64)
              | (level0[:, word + 1].astype(np.uint64) << np.uint64(32)))
    low, high = expected.labels if expected.labels is not None else (0, 2**63 - 1)
    outside = (labels < np.uint64(low)) | (labels > np.uint64(high))
    _refuse_any(outside, "element {} has label {}, not a text id of this project "
                f"({low}-{high})", labels)
    _refuse_repeats(labels, low, high)
    marked = (first & DELETE_MARK) != 0
    if expected.deleted is not None:
        flagged = np.sort(labels[marked])
        recorded = np.sort(np.fromiter(expected.deleted, dtype=np.uint64,
                                       count=len(expected.deleted)))
        if not np.array_equal(flagged, recorded):
            raise IndexFileError(f"{len(flagged)} elements are marked deleted, the project "
                                 f"recorded {len(recorded)} others or a different number")
    return int(marked.sum())


def _refuse_repeats(labels: np.ndarray, low: int, high: int) -> None:
    """Refuse a label held by two elements. Text ids are dense, so counting each one in a
    table as wide as their range is a fraction of a sort's cost; sparse ones are sorted."""
    span = high - low + 1
    if span <= 8 * len(labels):
        counts = np.bincount((labels - np.uint64(low)).astype(np.int64), minlength=span)
        twice = np.flatnonzero(counts > 1)
        if len(twice):
            raise IndexFileError(f"two elements have label {int(twice[0]) + low}")
        return
    ordered = np.sort(labels)
    _refuse_any(ordered[1:] == ordered[:-1], "two elements have label {1}", ordered[1:])


def _check_upper_sizes(tail: np.ndarray, h: Header
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each element's level from the upper-level list sizes, checked to tile the rest of the
    file exactly; (levels per element, word positions of the non-zero sizes, those sizes)."""
    records, sizes = _nonzero_sizes(tail, h.count)
    list_bytes = 4 * (h.max_m + 1)
    _refuse_any(sizes % list_bytes != 0, "an element's upper link lists take {1} bytes, not a "
                f"whole number of {list_bytes}-byte levels", sizes)
    words = sizes // 4
    elements = records - (np.cumsum(words) - words)
    if len(records) and records[-1] + 1 + words[-1] > len(tail):
        raise IndexFileError("the file ends inside an element's upper link lists")
    extra = len(tail) - int(words.sum()) - h.count
    if extra:
        raise IndexFileError(f"the file has {4 * abs(extra)} bytes "
                             f"{'more' if extra > 0 else 'fewer'} than its elements' link "
                             f"lists")
    levels = np.zeros(h.count, dtype=np.int64)
    levels[elements] = sizes // list_bytes
    top = int(levels.max())
    if top != h.max_level or levels[h.entry_point] != h.max_level:
        raise IndexFileError(f"its header has top level {h.max_level} at element "
                             f"{h.entry_point}, whose level is {int(levels[h.entry_point])} "
                             f"(highest: {top})")
    return levels, records, sizes


def _nonzero_sizes(tail: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Word positions and values of the non-zero link-list sizes, walking the records
    (size word, then size bytes) from the start.

    Most elements have level 0: a zero word, the next record right after it. So instead of
    one Python step per element, each scan takes a window of words, finds its non-zero ones,
    and follows the chain from one non-zero size to the first non-zero word at or after its
    record's end (zeros in between are level-0 records). The window grows with how far a
    scan advanced, so a file of huge records is not scanned twice; at most `count` records
    are followed, so a crafted file cannot make this loop run longer than that.
    """
    total = len(tail)
    positions: list[int] = []
    values: list[int] = []
    at, window = 0, _FIRST_WINDOW
    while at < total:
        end = min(total, at + window)
        segment = np.asarray(tail[at:end])
        found = np.flatnonzero(segment)
        if len(found):
            j, last, top = 0, len(found), int(found[-1])
            while True:
                size = int(segment[found[j]])
                position = at + int(found[j])
                positions.append(position)
                values.append(size)
                if len(positions) > count:
                    raise IndexFileError(f"the file has link lists for more than its {count} "
                                         f"elements")
                ends = position + 1 + size // 4
                # the next non-zero word at or after this record's end (payload words, which
                # are in `found` too, are skipped by the search)
                j = int(found.searchsorted(ends - at)) if ends - at <= top else last
                if j >= last:
                    break
            reached = max(end, ends)
        else:
            reached = end
        window = min(max(2 * (reached - at), _FIRST_WINDOW), _MAX_WINDOW)
        at = reached
    return np.asarray(positions, dtype=np.int64), np.asarray(values, dtype=np.int64)


def _check_upper_lists(tail: np.ndarray, levels: np.ndarray, records: np.ndarray,
                       sizes: np.ndarray, h: Header) -> None:
    """Each upper-level list: count <= maxM, every slot an element, each listed neighbour
    an element that has that level."""
    width = h.max_m + 1
    per_record = sizes // (4 * width)
    if not len(records):
        return
    # One row per list: its element's record, its level (1..), its first word.
    owner = np.repeat(np.arange(len(records)), per_record)
    level = np.arange(len(owner)) - np.repeat(np.cumsum(per_record) - per_record,
                                              per_record) + 1
    starts = records[owner] + 1 + (level - 1) * width
    columns = np.arange(width)
    for lo in range(0, len(starts), _LISTS_PER_BATCH):
        part = slice(lo, lo + _LISTS_PER_BATCH)
        lists = tail[starts[part, None] + columns]
        counts = lists[:, 0]
        _refuse_any(counts > h.max_m, "an upper-level list holds {1} neighbours, more than "
                    f"{h.max_m}", counts)
        ids = lists[:, 1:]
        if int(ids.max()) >= h.count:
            raise IndexFileError(f"an upper-level list names a neighbour beyond the {h.count} "
                                 f"elements")
        used = columns[None, :-1] < counts[:, None]
        needed = np.broadcast_to(level[part, None], used.shape)[used]
        have = levels[ids[used]]
        _refuse_any(have < needed, "a list at level {1} names an element of a lower level",
                    needed)


def _refuse_any(bad: np.ndarray, message: str, values: np.ndarray) -> None:
    """Raise with `message` formatted with the first offending position and value."""
    if bad.any():
        at = int(np.argmax(bad))
        raise IndexFileError(message.format(at, int(values[at])))
