"""`engine.index.index_check`: every real file hnswlib writes is accepted and loads exactly as
saved; each kind of damage or crafting is refused before hnswlib reads it; and a project
whose saved index was crafted opens with a notice and an index rebuilt from its embeddings.
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import select, update

from engine.index.hnsw import HnswIndex, HnswParams
from engine.index.index_check import HEADER, Expected, IndexFileError, check_index_file
from engine.index.persist import label_range, load_index, load_saved, save_index
from engine.index.side_file import _identity, folder_for, record_key
from engine.project import Project
from engine.store import embeddings as embedding_store
from engine.store.blobs import put_blob
from engine.store.database import Store
from engine.store.schema import indexes, meta
from tests.engine.index.index_files import (
    DIM,
    Base,
    apply,
    build,
    embed_texts,
    make_bases,
)

BASES = make_bases()
M = HnswParams().M


def _expected(base: Base, **changes) -> Expected:
    first = {"empty": 1, "one": 7, "two": 1, "small": 30, "mid": 100, "big": 2000}[base.name]
    values = dict(dim=DIM, m=M, ef_construction=200, labels=(first, first + 10_000),
                  deleted=frozenset(base.deleted))
    values.update(changes)
    return Expected(**values)


def _check(data: bytes, expected: Expected, tmp_path: Path):
    path = tmp_path / "index.bin"
    path.write_bytes(data)
    return check_index_file(path, expected)


def _upper_lists(base: Base) -> list[tuple[int, int, int]]:
    """(element, level, byte offset of the list's count word) of every upper-level list,
    found by walking the file one element at a time (independently of `index_check`)."""
    found, at = [], base.level0_end
    for element in range(base.count):
        (size,) = struct.unpack_from("<I", base.data, at)
        for level in range(size // (4 * (M + 1))):
            found.append((element, level + 1, at + 4 + level * 4 * (M + 1)))
        at += 4 + size
    return found


def _levels(base: Base) -> np.ndarray:
    levels = np.zeros(base.count, dtype=int)
    for element, level, _ in _upper_lists(base):
        levels[element] = max(levels[element], level)
    return levels


@pytest.mark.parametrize("n, dim, replaced, deleted", [
    (0, 8, 0, 0), (1, 8, 0, 0), (2, 16, 0, 1), (17, 8, 5, 3), (300, 8, 60, 20),
    (3000, 8, 400, 300), (500, 384, 50, 10)])
def test_real_files_are_accepted_and_load_as_they_were_saved(tmp_path, n, dim, replaced,
                                                             deleted):
    index, labels, vectors = build(n, replaced, deleted, first=1, seed=n, dim=dim)
    path = tmp_path / "index.bin"
    index.save(path)
    summary = check_index_file(path, Expected(dim, M, 200, (1, max(n, 1)),
                                              frozenset(index.deleted)))
    assert (summary.count, summary.deleted) == (n, deleted)
    loaded = HnswIndex.load(path, dim, HnswParams(), index.deleted, labels=(1, max(n, 1)))
    assert loaded.deleted == index.deleted and len(loaded) == len(index) == n - deleted
    assert np.array_equal(np.sort(loaded.ids()), labels)
    live = np.setdiff1d(labels, np.fromiter(index.deleted, np.int64))
    # hnswlib hands back what was saved: the same vectors, the same answers
    assert np.array_equal(loaded.vectors(live), index.vectors(live))
    if n:
        queries = vectors[: min(n, 50)]
        for a, b in zip(loaded.query(queries, 5), index.query(queries, 5), strict=True):
            assert np.array_equal(a, b)


def test_the_bases_the_damage_tests_start_from_are_accepted(tmp_path):
    for base in BASES.values():
        assert _check(base.data, _expected(base), tmp_path).count == base.count
    assert _levels(BASES["big"]).max() >= 2   # upper levels to damage


def _header(field: str, value) -> list:
    return ["header", field, value]


MID = BASES["mid"]
BIG = BASES["big"]
_SDE = MID.size_per_element
HEADER_DAMAGE = {
    "offsetLevel0": (_header("offsetLevel0", 4), "offsetLevel0=4"),
    "room below the count": (_header("max_elements", 299), "room for 299"),
    "room that wraps around": (_header("max_elements", 2**64 // _SDE + 1), "room for"),
    "room far above the count": (_header("max_elements", 10**9), "room for"),
    # the 301st record is read from the link-list sizes: it fails wherever it first shows
    "one element more": (_header("cur_element_count", 301), "bytes|label|neighbour|flags"),
    "one element fewer": (_header("cur_element_count", 299),
                          "beyond the 299|bytes|more than its|ends inside"),
    "an element count beyond hnswlib's ids": (_header("cur_element_count", 2**32), "number"),
    "record size": (_header("size_data_per_element", _SDE + 4), "size_data_per_element"),
    "label offset": (_header("label_offset", 4), "label_offset"),
    "data offset": (_header("offsetData", 0), "offsetData"),
    "top level too high": (_header("maxlevel", 7), "top level 7"),
    "no top level": (_header("maxlevel", -1), "entry point"),
    "entry point beyond": (_header("enterpoint_node", 300), "entry point 300"),
    "maxM": (_header("maxM", 64), "maxM=64"),
    "maxM0": (_header("maxM0", 65), "maxM0=65"),
    "M": (_header("M", 16), "M=16"),
    "mult NaN": (_header("mult", float("nan")), "mult=nan"),
    "mult a little off": (_header("mult", 1 / np.log(32) * (1 + 1e-9)), "mult="),
    "ef_construction": (_header("ef_construction", 10**9), "ef_construction"),
}


@pytest.mark.parametrize("ops, message", HEADER_DAMAGE.values(), ids=HEADER_DAMAGE.keys())
def test_each_header_field_that_does_not_add_up_is_refused(tmp_path, ops, message):
    with pytest.raises(IndexFileError, match=message):
        _check(apply(MID, [ops], BASES), _expected(MID), tmp_path)


def test_an_entry_point_below_the_top_level_is_refused(tmp_path):
    levels = _levels(MID)
    low = int(np.flatnonzero(levels < levels.max())[0])
    with pytest.raises(IndexFileError, match="whose level is 0"):
        _check(apply(MID, [_header("enterpoint_node", low)], BASES), _expected(MID), tmp_path)


def _level0(element: int, word: int, value: int) -> list:
    return ["level0", element, word, value]


LEVEL0_DAMAGE = {
    "more neighbours than maxM0": (_level0(5, 0, 2 * M + 1), "65 neighbours"),
    "a count that runs into the vector": (_level0(5, 0, 0xFFFF), "neighbours at level 0"),
    "a neighbour beyond the elements": (_level0(7, 1, 300), "beyond the 300"),
    "a neighbour far beyond": (_level0(7, 3, 2**31), "beyond the 300"),
    "an unused slot beyond": (_level0(9, 2 * M, 2**32 - 1), "beyond the 300"),
    "unknown flags": (_level0(11, 0, 0x20003), "unknown flags"),
    "a label outside the project's texts": (["label", 4, 99], "label 99"),
    "a huge label": (["label", 4, 2**64 - 1], "not a text id"),
    "two elements with one label": (["label", 4, 100 + 5], "two elements"),
}


@pytest.mark.parametrize("ops, message", LEVEL0_DAMAGE.values(), ids=LEVEL0_DAMAGE.keys())
def test_level0_lists_and_labels_that_do_not_add_up_are_refused(tmp_path, ops, message):
    with pytest.raises(IndexFileError, match=message):
        _check(apply(MID, [ops], BASES), _expected(MID), tmp_path)


def test_a_repeated_label_is_refused_whether_text_ids_are_dense_or_sparse(tmp_path):
    repeated = apply(MID, [["label", 4, 100 + 250]], BASES)
    for labels in ((100, 399), (100, 10**9)):   # counted in a table, or sorted
        with pytest.raises(IndexFileError, match="two elements have label 350"):
            _check(repeated, _expected(MID, labels=labels), tmp_path)
    assert _check(MID.data, _expected(MID, labels=(100, 399)), tmp_path).count == 300


def test_deleted_marks_must_be_the_ones_the_project_recorded(tmp_path):
    live = next(i for i in range(MID.count)
                if 100 + i not in MID.deleted)   # labels are 100.. in element order
    first_word = struct.unpack_from("<I", MID.data, HEADER.size + live * _SDE)[0]
    marked = apply(MID, [_level0(live, 0, first_word | 1 << 16)], BASES)
    with pytest.raises(IndexFileError, match="marked deleted"):
        _check(marked, _expected(MID), tmp_path)
    with pytest.raises(IndexFileError, match="marked deleted"):
        _check(MID.data, _expected(MID, deleted=frozenset()), tmp_path)
    with pytest.raises(IndexFileError, match="deleted elements"):
        _check(BASES["empty"].data, _expected(BASES["empty"], deleted=frozenset({3})),
               tmp_path)
    assert _check(MID.data, _expected(MID, deleted=None), tmp_path).deleted == 20


def test_upper_level_lists_that_do_not_add_up_are_refused(tmp_path):
    lists = _upper_lists(BIG)
    levels = _levels(BIG)
    element, _, count_at = next(entry for entry in lists if entry[1] == 1)
    size_at = count_at - 4
    low = int(np.flatnonzero(levels == 0)[0])
    damage = {
        "more than maxM": (["bytes", count_at, struct.pack("<I", M + 1).hex()],
                           "33 neighbours"),
        "count in the high half": (["bytes", count_at, struct.pack("<I", 1 << 16).hex()],
                                   "more than 32"),
        "a neighbour beyond": (["bytes", count_at + 4, struct.pack("<I", 1500).hex()],
                               "beyond the 1500"),
        "a neighbour without that level": (
            ["bytes", count_at + 4, struct.pack("<I", low).hex()], "lower level"),
        "a size that is not whole levels": (
            ["bytes", size_at, struct.pack("<I", 4 * (M + 1) + 4).hex()], "whole number"),
        "a size beyond the file": (["bytes", size_at, struct.pack("<I", 2**32 - 4).hex()],
                                   "whole number|ends inside|more than its"),
        "a level-0 element given a level": (
            ["tail", 0, 4 * (M + 1)], "bytes|whole number|top level|lower level"),
    }
    assert element >= 0
    for name, (op, message) in damage.items():
        with pytest.raises(IndexFileError, match=message):
            _check(apply(BIG, [op], BASES), _expected(BIG), tmp_path)
            pytest.fail(name)


LENGTH_DAMAGE = {
    "one byte short": (["truncate", len(BIG.data) - 1], "misaligned"),
    "one word short": (["truncate", len(BIG.data) - 4], "fewer|ends inside"),
    "inside the upper lists": (["truncate", len(BIG.data) - 4 * (M + 1)],
                               "ends inside|fewer"),
    "only level 0": (["truncate", BIG.level0_end], "too few"),
    "only the header": (["truncate", HEADER.size], "too few"),
    "shorter than the header": (["truncate", 50], "fewer than hnswlib's header"),
    "nothing": (["truncate", 0], "fewer than hnswlib's header"),
    "one byte more": (["extend", "00"], "misaligned"),
    "a zero word more": (["extend", "00000000"], "more"),
    "a link list more": (["extend", (struct.pack("<I", 4 * (M + 1)) + bytes(4 * (M + 1))).hex()],
                         "more than its"),
    "another file's elements after these": (["splice", "mid", len(BIG.data), HEADER.size],
                                             "misaligned|bytes"),
    "another file's header on these": (["splice", "mid", 0, 0], "label 100, not a text id"),
}


@pytest.mark.parametrize("ops, message", LENGTH_DAMAGE.values(), ids=LENGTH_DAMAGE.keys())
def test_a_file_not_exactly_as_long_as_its_header_implies_is_refused(tmp_path, ops, message):
    with pytest.raises(IndexFileError, match=message):
        _check(apply(BIG, [ops], BASES), _expected(BIG), tmp_path)


def test_a_file_made_for_other_settings_or_another_dimension_is_refused(tmp_path):
    with pytest.raises(IndexFileError, match="label_offset=292, expected 324"):
        _check(MID.data, _expected(MID, dim=16), tmp_path)
    with pytest.raises(IndexFileError, match="M=32, expected 16"):
        _check(MID.data, _expected(MID, m=16), tmp_path)
    with pytest.raises(IndexFileError, match="ef_construction=200, expected 400"):
        _check(MID.data, _expected(MID, ef_construction=400), tmp_path)
    with pytest.raises(IndexFileError, match="M=1 is not"):
        _check(MID.data, _expected(MID, m=1), tmp_path)
    with pytest.raises(ValueError, match="not ones Duplens uses"):
        HnswIndex.load(tmp_path / "index.bin", DIM, HnswParams(space="l2"))
    with pytest.raises(IndexFileError, match="cannot be opened"):
        check_index_file(tmp_path / "missing.bin", _expected(MID))


# -- through a project ----------------------------------------------------------------------
@pytest.fixture
def store(tmp_path):
    opened = Store.open(tmp_path / "p.duplens", create=True)
    with opened.write() as conn:
        model = embedding_store.get_or_add_model(conn, name="m", location="default",
                                                 fingerprint="sha256:m", dim=DIM,
                                                 max_seq_length=8)
        embed_texts(conn, model, range(100, 400), DIM)
    yield opened, model
    opened.close()


def test_labels_must_be_texts_the_model_embedded(store):
    opened, model = store
    with opened.read() as conn:
        assert label_range(conn, model) == (100, 399)
        assert label_range(conn, model + 1) == (1, 0)
    inside, _, _ = build(300, first=100)
    outside, _, _ = build(300, first=101)     # its last label, 400, has no embedding
    with opened.write() as conn:
        save_index(conn, model, inside)
    with opened.read() as conn:
        assert len(load_index(conn, model, DIM)[0]) == 300
    with opened.write() as conn:
        save_index(conn, model, outside)
    with opened.read() as conn:
        index, why = load_index(conn, model, DIM)
    assert index is None and "label 400, not a text id of this project (100-399)" in why


@pytest.mark.parametrize("column, value, message", [
    ("deleted", ["x"], "deleted items is malformed"),
    ("deleted", [[1]], "deleted items is malformed"),
    ("deleted", {"a": 1}, "deleted items is malformed"),
    ("size", "big", "record is malformed"),
    ("params", ["M", 32], "record is malformed"),
    ("params", {"M": "32"}, "M='32' is not"),
    ("params", {"ef": 10**9}, "not ones Duplens uses"),
])
def test_a_malformed_record_of_the_index_is_refused_not_a_crash(store, column, value, message):
    opened, model = store
    with opened.write() as conn:
        save_index(conn, model, build(300, first=100)[0])
        conn.execute(update(indexes).values({column: value}))
    with opened.read() as conn:
        index, why = load_index(conn, model, DIM)
    assert index is None and message in why


def _craft(conn, model_id: int, data: bytes) -> None:
    """Replace the project's saved index by `data` with a record that matches it (the
    sha256 beside the blob is in the same file: whoever crafts one writes both)."""
    put_blob(conn, f"hnsw/{model_id}", data)
    conn.execute(update(indexes).where(indexes.c.model_id == model_id).values(
        sha256=hashlib.sha256(data).hexdigest(), size=len(data)))


def test_a_crafted_side_file_is_refused_and_the_blob_loads(tmp_path, store):
    opened, model = store
    with opened.write() as conn:
        save_index(conn, model, build(300, first=100)[0])
    side = folder_for(tmp_path / "p.duplens") / f"hnsw-{model}.bin"
    crafted = apply(MID, [_level0(i, 1, 2**31) for i in range(300)], BASES)
    side.write_bytes(crafted)   # and its record made to match it
    with opened.write() as conn:
        record = json.loads(conn.execute(select(meta.c.value).where(
            meta.c.key == record_key(model))).scalar())
        record.update(_identity(side.stat()))
        conn.execute(update(meta).where(meta.c.key == record_key(model)).values(
            value=json.dumps(record)))
    with opened.read() as conn:
        loaded = load_saved(conn, model, DIM)
    assert loaded.route == "blobs" and len(loaded.index) == 300


def test_a_project_with_a_crafted_index_opens_and_rebuilds_it(open_questions, encoder):
    """The path a crafted `.duplens` from someone else takes: refused before hnswlib, a
    notice, the index rebuilt from the stored embeddings, and the same answers."""
    project = open_questions
    expected = [h.id for h in project.search("how do I fix a flat tire", k=3)]
    path, model = project.path, project.model.id()
    project.close()
    store = Store.open(path)
    with store.write() as conn:
        dim = conn.execute(select(indexes.c.dim)).scalar()
        good, _, _ = build(46, first=1, dim=dim)   # labels 1..46 are the project's texts
        data = bytearray(good.to_bytes())
        sde = struct.unpack_from("<Q", data, 24)[0]
        for element in range(46):   # every first neighbour far outside: hnswlib would crash
            struct.pack_into("<I", data, HEADER.size + element * sde + 4, 2**31)
        _craft(conn, model, bytes(data))
        conn.execute(update(indexes).values(params=asdict(HnswParams()), deleted=[]))
    store.close()
    reopened = Project.open(path)
    try:
        reopened.model.attach(encoder, is_default=True)
        assert [h.id for h in reopened.search("how do I fix a flat tire", k=3)] == expected
        assert any("cannot be read" in n and "beyond the 46 elements" in n
                   and "rebuilding" in n for n in reopened.notices), reopened.notices
    finally:
        reopened.close()
    store = Store.open(path, read_only=True)
    try:
        with store.read() as conn:
            index, why = load_index(conn, model, dim)   # the rebuilt index was saved
    finally:
        store.close()
    assert why == "" and len(index) == 46
