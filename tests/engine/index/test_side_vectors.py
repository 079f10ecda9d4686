"""Reading vectors by text id from a saved index file (`engine.index.side_vectors`), and the
project's bulk reader that prefers it to the store (`Vectors.bulk_reader`): real hnswlib
files, real projects."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from sqlalchemy import Engine, event

from engine.index.index_check import HEADER
from engine.index.side_file import folder_for
from engine.index.side_vectors import SideVectors, agrees
from engine.store import embeddings as embedding_store
from tests.engine.index.index_files import build


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.parametrize("n, replaced, deleted", [(1, 0, 0), (300, 60, 20), (1500, 200, 100)])
def test_the_file_gives_what_hnswlib_holds_for_each_id_in_the_order_asked(
        tmp_path, n, replaced, deleted):
    index, labels, vectors = build(n, replaced, deleted, first=50, seed=n)
    path = tmp_path / "index.bin"
    index.save(path)
    absent = np.array([49, labels[-1] + 1, 10**12], dtype=np.int64)
    rng = np.random.default_rng(n)
    asked = np.concatenate([rng.permutation(labels), absent])
    side = SideVectors(path, index.dim)
    try:
        got, found = side.read(asked)
    finally:
        side.close()
    assert found.tolist() == [True] * n + [False] * len(absent)
    # Replaced labels hold their new vectors and deleted ones their last (which hnswlib
    # no longer hands out), normalised as hnswlib keeps them.
    np.testing.assert_allclose(got[:n], _unit(vectors[asked[:n] - 50]), rtol=0, atol=1e-6)
    live = ~np.isin(asked[:n], list(index.deleted))
    np.testing.assert_allclose(got[:n][live], index.vectors(asked[:n][live]), rtol=0,
                               atol=1e-6)


def test_an_empty_index_file_holds_no_id(tmp_path):
    index, _, _ = build(0)
    index.save(tmp_path / "empty.bin")
    side = SideVectors(tmp_path / "empty.bin", index.dim)
    _, found = side.read(np.array([1, 2]))
    assert not found.any() and len(side.sample_ids()) == 0
    side.close()


def _with_header_field(data: bytes, field: int, value: int) -> bytes:
    at = struct.calcsize("<" + "Q" * field)
    return data[:at] + struct.pack("<Q", value) + data[at + 8:]


def test_a_file_whose_records_do_not_fit_is_refused_before_any_read(tmp_path):
    index, _, _ = build(300, seed=4)
    data = index.to_bytes()
    cases = {
        "other-dimension": (data, index.dim * 2),
        "truncated": (data[:HEADER.size + 1000], index.dim),
        "header-only": (data[:40], index.dim),
        "more-elements": (_with_header_field(data, 2, 10**9), index.dim),
        "label-outside-record": (_with_header_field(data, 4, 10**6), index.dim),
    }
    for name, (content, dim) in cases.items():
        path = tmp_path / f"{name}.bin"
        path.write_bytes(content)
        with pytest.raises(ValueError):
            SideVectors(path, dim)


def test_a_file_is_used_only_when_its_sample_agrees_with_the_store(tmp_path):
    index, labels, vectors = build(300, seed=7, first=1)
    index.save(tmp_path / "index.bin")
    side = SideVectors(tmp_path / "index.bin", index.dim)
    try:
        def stored(ids):
            return vectors[np.asarray(ids) - 1] * 3.0       # the model's scale, not unit
        assert agrees(side, stored)

        def other(ids):
            return vectors[(np.asarray(ids) % len(labels))]  # another text's vector
        assert not agrees(side, other)

        def lacking(ids):
            from engine.errors import ProjectError
            raise ProjectError("no embedding for text 1")
        assert not agrees(side, lacking)
    finally:
        side.close()


@pytest.fixture
def embedding_reads():
    """A list that grows by one for every statement that reads the embeddings table (on any
    engine, as `devtools/gui_thread_guard.py` listens), for the test's length."""
    seen: list[str] = []

    def note(conn, cursor, statement, *args):
        if "FROM embeddings" in statement:
            seen.append(statement)
    event.listen(Engine, "before_cursor_execute", note)
    yield seen
    event.remove(Engine, "before_cursor_execute", note)


def test_a_project_reads_its_vectors_from_the_saved_index_file(open_questions, embedding_reads):
    project = open_questions
    model_id, dim = project.vectors.model_id(), project.vectors.index().dim
    ids = np.sort(project.vectors.index().ids())[::-1]
    with project.store.read() as conn:
        expected = embedding_store.read_vectors(conn, model_id, dim, ids)
    reads, before = embedding_reads, len(embedding_reads)
    with project.vectors.bulk_reader(model_id, dim) as read:
        opened = len(reads)                # the sample compared with the store
        got = read(ids)
    assert opened > before and len(reads) == opened   # every vector itself from the file
    np.testing.assert_allclose(_unit(got), _unit(expected), rtol=0, atol=1e-6)
    # a cosine index keeps unit vectors: the graph need not scale them again
    assert read.unit_length
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1, rtol=0, atol=1e-5)


def test_a_file_written_into_is_not_read_and_the_store_answers(open_questions,
                                                               embedding_reads):
    project = open_questions
    model_id, dim = project.vectors.model_id(), project.vectors.index().dim
    ids = np.sort(project.vectors.index().ids())
    with project.store.read() as conn:
        expected = embedding_store.read_vectors(conn, model_id, dim, ids)
    (side,) = folder_for(project.path).glob("hnsw-*.bin")
    with side.open("r+b") as fh:           # vectors spoiled: its identity no longer matches
        fh.seek(HEADER.size + 200)
        fh.write(b"\x7f" * 512)
    reads = embedding_reads
    with project.vectors.bulk_reader(model_id, dim) as read:
        before = len(reads)
        got = read(ids)
    assert len(reads) > before and not read.unit_length
    np.testing.assert_allclose(got, expected, rtol=0, atol=0)
