"""Real hnswlib index files, ways to damage them, and a child process that opens the damaged
ones through the project's loading path: what the tests of `engine.index.index_check` use.

A mutation is a JSON-able list (`apply`), so a batch of them can be handed to a child process
and a failing one named in a test's message and re-run alone. Positions in a mutation are
taken modulo the file's sizes, so any integer names a place in any base file.
"""

from __future__ import annotations

import json
import math
import os
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from engine.index.hnsw import HnswIndex, HnswParams
from engine.index.index_check import HEADER

ROOT = Path(__file__).resolve().parents[3]
DIM = 8
FIRST_LABEL = 1
LAST_LABEL = 4000          # the child's project embeds texts 1..LAST_LABEL
FIELDS = ("offsetLevel0", "max_elements", "cur_element_count", "size_data_per_element",
          "label_offset", "offsetData", "maxlevel", "enterpoint_node", "maxM", "maxM0", "M",
          "mult", "ef_construction")
FORMATS = "QQQQQQiIQQQdQ"
_OFFSETS = [struct.calcsize("<" + FORMATS[:i]) for i in range(len(FORMATS))]

# (elements, replaced, deleted, first label, seed): real files hnswlib wrote, small to large.
BASES = {
    "empty": (0, 0, 0, 1, 0),
    "one": (1, 0, 0, 7, 1),
    "two": (2, 0, 1, 1, 2),
    "small": (17, 5, 2, 30, 3),
    "mid": (300, 60, 20, 100, 4),
    "big": (1500, 200, 100, 2000, 5),
}


@dataclass(frozen=True)
class Base:
    """A real index file and what the project records beside it."""

    name: str
    data: bytes
    deleted: list[int]
    count: int

    @property
    def size_per_element(self) -> int:
        return struct.unpack_from("<Q", self.data, _OFFSETS[3])[0]

    @property
    def level0_end(self) -> int:
        return HEADER.size + self.count * self.size_per_element


def build(n: int, replaced: int = 0, deleted: int = 0, first: int = FIRST_LABEL,
          seed: int = 0, dim: int = DIM) -> tuple[HnswIndex, np.ndarray, np.ndarray]:
    """An index of n random vectors under labels first.., `replaced` of them added again
    with new vectors (hnswlib updates those in place) and `deleted` marked deleted; with
    its labels and current vectors. One insertion thread, so the same file every time."""
    rng = np.random.default_rng(seed)
    labels = np.arange(first, first + n, dtype=np.int64)
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    index = HnswIndex(dim)
    if n:
        index.add(labels, vectors, threads=1)
    if replaced:
        pick = rng.choice(n, size=replaced, replace=False)
        vectors[pick] = rng.normal(size=(replaced, dim)).astype(np.float32)
        index.add(labels[pick], vectors[pick], threads=1)
    if deleted:
        index.mark_deleted(rng.choice(labels, size=deleted, replace=False))
    return index, labels, vectors


@lru_cache(maxsize=1)
def make_bases() -> dict[str, Base]:
    """The base files, built once per process (the tests only read them)."""
    bases = {}
    for name, (n, replaced, deleted, first, seed) in BASES.items():
        index, _, _ = build(n, replaced, deleted, first, seed)
        bases[name] = Base(name, index.to_bytes(), sorted(index.deleted), n)
    return bases


def write_bases(folder: Path, bases: dict[str, Base]) -> None:
    for base in bases.values():
        (folder / f"{base.name}.bin").write_bytes(base.data)
    (folder / "bases.json").write_text(json.dumps(
        {b.name: {"deleted": b.deleted, "count": b.count} for b in bases.values()}))


def read_bases(folder: Path) -> dict[str, Base]:
    meta = json.loads((folder / "bases.json").read_text())
    return {name: Base(name, (folder / f"{name}.bin").read_bytes(), m["deleted"], m["count"])
            for name, m in meta.items()}


# -- mutations ------------------------------------------------------------------------------
def apply(base: Base, ops: list[list], bases: dict[str, Base]) -> bytes:
    """The base file's bytes changed by each op in turn:
    ["header", field, value]         set a header field (as its own type)
    ["level0", element, word, value] set a u32 word of an element's level-0 record
    ["tail", word, value]            set a u32 word after the level-0 records
    ["label", element, value]        set an element's u64 label
    ["bytes", offset, hex]           overwrite bytes anywhere
    ["truncate", length]             keep only the first length bytes
    ["extend", hex]                  append bytes
    ["splice", other, cut, other_cut]  this file up to cut, then another from other_cut
    """
    data = bytearray(base.data)
    sde = base.size_per_element
    for op in ops:
        kind = op[0]
        if kind == "header":
            field = FIELDS.index(op[1])
            fmt = "<" + FORMATS[field]
            value = op[2]
            if fmt[1] in "QI":
                value %= 1 << (64 if fmt[1] == "Q" else 32)
            elif fmt[1] == "i":
                value = (value + 2**31) % 2**32 - 2**31
            if len(data) >= _OFFSETS[field] + struct.calcsize(fmt):
                struct.pack_into(fmt, data, _OFFSETS[field], value)
        elif kind == "level0" and base.count:
            element, word = op[1] % base.count, op[2] % (sde // 4)
            _put(data, HEADER.size + element * sde + 4 * word, "<I", op[3] % 2**32)
        elif kind == "tail":
            words = (len(data) - base.level0_end) // 4
            if words > 0:
                _put(data, base.level0_end + 4 * (op[1] % words), "<I", op[2] % 2**32)
        elif kind == "label" and base.count:
            element = op[1] % base.count
            _put(data, HEADER.size + element * sde + sde - 8, "<Q", op[2] % 2**64)
        elif kind == "bytes" and data:
            raw = bytes.fromhex(op[2])
            at = op[1] % len(data)
            data[at:at + len(raw)] = raw[:len(data) - at]
        elif kind == "truncate":
            del data[op[1] % (len(data) + 1):]
        elif kind == "extend":
            data += bytes.fromhex(op[1])
        elif kind == "splice":
            other = bases[op[1]].data
            data = data[:op[2] % (len(data) + 1)] + other[op[3] % (len(other) + 1):]
    return bytes(data)


def _put(data: bytearray, at: int, fmt: str, value: int) -> None:
    if at + struct.calcsize(fmt) <= len(data):
        struct.pack_into(fmt, data, at, value)


def interesting_words(base: Base) -> list[int]:
    """u32 values near the limits hnswlib relies on, for this base."""
    n, m = base.count, HnswParams().M
    list_bytes = 4 * (m + 1)
    return sorted({0, 1, 2, max(n - 1, 0), n, n + 1, m, m + 1, 2 * m, 2 * m + 1, 0xFFFF,
                   0x10000, 0x10001, 0x1FFFF, 0x20000, 2**31 - 1, 2**31, 2**32 - 1,
                   list_bytes, 2 * list_bytes, 3 * list_bytes, 9 * list_bytes,
                   list_bytes + 4, list_bytes - 4, 4, 8})


def interesting_header_values(base: Base, field: str) -> list:
    n = base.count
    current = struct.unpack_from("<" + FORMATS[FIELDS.index(field)], base.data,
                                 _OFFSETS[FIELDS.index(field)])[0]
    if field == "mult":
        return [0.0, -1.0, math.nan, math.inf, 1e300, current * (1 + 1e-9), 1 / math.log(16),
                1 / math.log(33)]
    values = {0, 1, 2, max(n - 1, 0), n, n + 1, 2 * n, 4096, 4097, 2**31 - 1, 2**32 - 1,
              current - 1, current + 1, current + 4, current - 4, 2 * current}
    if field == "maxlevel":
        return sorted(v for v in values | {-1, -2, -(2**31)} if -(2**31) <= v < 2**31)
    values |= {2**32, 2**63 - 1, 2**64 - 1, (2**64) // max(base.size_per_element, 1) + 1}
    return sorted(v for v in values if v >= 0)


# -- opening mutants in a child process -----------------------------------------------------
@dataclass
class Outcome:
    """What happened to each case of a batch: "refused", "loaded" or "disagree: ...";
    `crashed`: the case a child died or hung in (None: it finished), with how it ended."""

    results: list[str]
    crashed: int | None = None
    how: str = ""


def run_cases(folder: Path, cases: list[dict], mode: str = "project", *,
              timeout: float = 300.0) -> Outcome:
    """Open every case in one child process (`python -m tests.engine.index.index_files`).
    `mode` "project": through a real project's loading path (`persist.load_saved`);
    "raw": straight with hnswlib, no check (what the check is for)."""
    (folder / "cases.json").write_text(json.dumps(cases))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONFAULTHANDLER": ""}
    started = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "tests.engine.index.index_files",
                               str(folder), mode], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=timeout)
        out, code, hung = done.stdout, done.returncode, False
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        code, hung = None, True
    results: list[str] = []
    current = None
    for line in out.splitlines():
        word, _, rest = line.partition(" ")
        if word == "start":
            current = int(rest)
        elif word == "end":
            results.append(rest.partition(" ")[2])
            current = None
    if not hung and code == 0 and len(results) == len(cases):
        return Outcome(results)
    how = (f"hung for {time.monotonic() - started:.0f} s" if hung
           else f"exit {code}: {(done.stderr or '')[-600:]}")
    return Outcome(results, current if current is not None else len(results), how)


def embed_texts(conn, model_id: int, ids, dim: int) -> None:
    """Texts `ids` and an embedding of each by `model_id` (zeros): an index's labels must be
    texts its model has embedded (`index_check`), so tests that save made-up indexes into a
    project store these first."""
    from engine.store import embeddings as embedding_store
    from engine.store.schema import texts

    ids = [int(i) for i in ids]
    conn.execute(texts.insert(), [{"id": i, "norm_key": f"t{i}", "text": f"t{i}"}
                                  for i in ids])
    embedding_store.add_embeddings(conn, model_id, ids, np.zeros((len(ids), dim), np.float32),
                                   [False] * len(ids))


def _project(folder: Path):
    """A project file that embeds texts FIRST_LABEL..LAST_LABEL with a DIM model."""
    from engine.store import embeddings as embedding_store
    from engine.store.database import Store

    store = Store.open(folder / f"mutants-{os.getpid()}.duplens", create=True)
    with store.write() as conn:
        model = embedding_store.get_or_add_model(conn, name="m", location="default",
                                                 fingerprint="sha256:m", dim=DIM,
                                                 max_seq_length=8)
        embed_texts(conn, model, range(FIRST_LABEL, LAST_LABEL + 1), DIM)
    return store, model


def plant(store, model: int, data: bytes, deleted: list[int]) -> None:
    """Make `data` the project's saved index, as a crafted project file would hold it: the
    blob, and a record whose size and sha256 match it."""
    import hashlib
    from dataclasses import asdict

    from engine.index import side_file
    from engine.index.persist import blob_name
    from engine.store.blobs import put_blob_chunks
    from engine.store.dialects import upsert
    from engine.store.schema import indexes

    with store.write() as conn:
        put_blob_chunks(conn, blob_name(model),
                        [data[i:i + 65536] for i in range(0, max(len(data), 1), 65536)])
        upsert(conn, indexes, dict(model_id=model, dim=DIM, params=asdict(HnswParams()),
                                   deleted=deleted, count=0,
                                   sha256=hashlib.sha256(data).hexdigest(), size=len(data),
                                   saved_at=0.0), ["model_id"])
        side_file.forget(conn, model)


def parse(data: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(labels, vectors, deleted marks) of an index file, read independently of hnswlib and
    of `index_check` (trusting the layout: only for files the check accepted)."""
    fields = HEADER.unpack_from(data)
    count, sde, label_offset, offset_data = fields[2], fields[3], fields[4], fields[5]
    records = np.frombuffer(data, np.uint8, count * sde, HEADER.size).reshape(count, sde)
    labels = records[:, label_offset:label_offset + 8].copy().view("<u8").ravel()
    vectors = records[:, offset_data:label_offset].copy().view("<f4")
    marks = (records[:, 2] & 1).astype(bool)
    return labels.astype(np.int64), vectors, marks


def _exercise(index: HnswIndex, data: bytes, rng: np.random.Generator) -> str:
    """Use a loaded index as the app would; "" when hnswlib agrees with the file."""
    labels, vectors, marks = parse(data)
    ids = np.sort(index.ids())
    if not np.array_equal(ids, np.sort(labels)):
        return "hnswlib lists other labels than the file holds"
    if index.deleted != set(labels[marks].tolist()):
        return "hnswlib's deleted elements differ from the file's marks"
    live = ~marks
    # (a NaN stays a NaN, though not always with the same bits: hnswlib hands out Python floats)
    if live.any() and not np.array_equal(index.vectors(labels[live]), vectors[live],
                                         equal_nan=True):
        return "hnswlib returns other vectors than the file holds"
    added = np.arange(LAST_LABEL + 1, LAST_LABEL + 41)
    queries = rng.normal(size=(4, DIM)).astype(np.float32)
    try:
        index.query(queries, 10)
        index.add(added, rng.normal(size=(40, DIM)), threads=1)
        index.mark_deleted(ids[:3])
        found, _ = index.query(queries, 10, threads=2)
    except RuntimeError as exc:   # hnswlib's own refusal (a graph too sparse for k), no crash
        return f"loaded; then hnswlib raised {exc}"
    if len(found) and not np.isin(found, np.r_[ids, added]).all():
        return "disagree: a search answered with a label the index does not hold"
    return ""


def _open_case(mode: str, folder: Path, data: bytes, base: Base, project, rng) -> str:
    if mode == "raw":
        import hnswlib

        path = folder / f"raw-{os.getpid()}.bin"
        path.write_bytes(data)
        raw = hnswlib.Index(space="cosine", dim=DIM)
        try:
            raw.load_index(str(path))
        except Exception:  # noqa: BLE001 - hnswlib's own refusal
            return "refused"
        try:
            raw.set_ef(32)
            count = raw.get_current_count()
            if count:
                raw.knn_query(rng.normal(size=(4, DIM)).astype(np.float32), k=min(5, count))
            raw.resize_index(count + 8)
            raw.add_items(rng.normal(size=(8, DIM)).astype(np.float32),
                          np.arange(LAST_LABEL + 1, LAST_LABEL + 9))
        except RuntimeError as exc:
            return f"loaded; then hnswlib raised {exc}"
        return "loaded"
    from engine.index.persist import load_saved

    store, model = project
    plant(store, model, data, base.deleted)
    with store.read() as conn:
        loaded = load_saved(conn, model, DIM)
    if loaded.index is None:
        return "refused"
    problem = _exercise(loaded.index, data, rng)
    if problem.startswith("loaded") or problem.startswith("disagree"):
        return problem
    return f"disagree: {problem}" if problem else "loaded"


def main(folder: Path, mode: str) -> None:
    bases = read_bases(folder)
    cases = json.loads((folder / "cases.json").read_text())
    project = _project(folder) if mode == "project" else None
    rng = np.random.default_rng(0)
    for i, case in enumerate(cases):
        print(f"start {i}", flush=True)
        base = bases[case["base"]]
        result = _open_case(mode, folder, apply(base, case["ops"], bases), base, project, rng)
        print(f"end {i} {result}", flush=True)
    if project is not None:
        project[0].close()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
