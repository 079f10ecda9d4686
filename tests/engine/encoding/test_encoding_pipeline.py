"""The encode job's pipeline: chunk commits in the encoding thread, indexing on another one,
batches sorted by token count; kills, errors and resumes keep whole chunks."""

import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from engine.encoding import encode_job
from engine.encoding.encode_job import CHUNK_TEXTS, chunk_sizes, encode_missing, plan_batches
from engine.encoding.encoder import EncodeBatch, LocalExecutor
from engine.project import Project
from engine.store import embeddings as embedding_store


def _questions(n: int) -> list[str]:
    topics = ["python", "the gym", "paris", "tax returns", "guitar", "bread", "a bicycle"]
    return [f"How do I get better at {topics[i % 7]} (question {i})?"
            + " Please explain in detail." * (i % 5) for i in range(n)]


@pytest.fixture
def many(new_project, tmp_path):
    project = new_project()
    src = tmp_path / "many.csv"
    src.write_text("text\n" + "\n".join(_questions(300)) + "\n", encoding="utf-8")
    project.rows.import_table(src, ["text"])
    return project


def _count(project) -> int:
    with project.store.read() as conn:
        return embedding_store.count_model_embeddings(conn, project.model.id())


def test_every_chunk_is_committed_and_indexed_off_the_encoding_thread(many, encoder):
    model_id = many.model.id()
    seen, threads, progress = [], set(), []

    def on_committed(chunk):
        threads.add(threading.get_ident())
        with many.store.read() as conn:  # already on disk when indexing sees it
            stored = set(embedding_store.embedded_text_ids(conn, model_id).tolist())
        assert set(chunk.text_ids) <= stored
        seen.append(list(chunk.text_ids))

    report = encode_missing(many.store, encoder, model_id, on_committed=on_committed,
                            progress=progress.append, chunk_texts=64)
    assert report.encoded == 300 and report.commits == 5 and not report.cancelled
    assert [len(c) for c in seen] == [64, 64, 64, 64, 44]
    assert sorted(t for c in seen for t in c) == sorted(set(t for c in seen for t in c))
    assert threads and threading.get_ident() not in threads
    assert _count(many) == 300
    done = [p.done for p in progress]
    assert done == sorted(done) and done[-1] == 300 and progress[-1].total == 300


def test_tokens_are_counted_a_few_texts_at_a_time(many, encoder, monkeypatch):
    """The tokenizer keeps every word piece of a call until it returns: a sort window of
    8,192 long documents counted at once held about a gigabyte. Counted in small calls, the
    job encodes the same."""
    asked: list[int] = []
    counts = encoder.token_counts

    def counted(texts):
        asked.append(len(texts))
        return counts(texts)

    monkeypatch.setattr(encoder, "token_counts", counted)
    monkeypatch.setattr(encode_job, "COUNTED_AT_ONCE", 40)
    report = encode_missing(many.store, encoder, many.model.id(), chunk_texts=64)
    assert report.encoded == 300 and _count(many) == 300
    assert max(asked) == 40 and sum(asked) == 300


def test_chunks_start_small_and_grow_to_the_chunk_size():
    sizes = chunk_sizes(CHUNK_TEXTS)
    assert [next(sizes) for _ in range(6)] == [256, 512, 1024, 2048, 2048, 2048]
    small = chunk_sizes(64)
    assert [next(small) for _ in range(3)] == [64, 64, 64]


@pytest.mark.slow
def test_a_new_project_answers_searches_long_before_its_first_encode_ends(many):
    """The first encode of a new project at the default chunk size: its first texts are
    searchable while the rest still encode (the shipped sample's 2,247 texts were not,
    until 2,048 of them were done)."""
    found: list = []

    def search_meanwhile(p) -> None:
        if p.done < 288 or found:   # the first chunk (256) is committed by now
            return
        deadline = time.monotonic() + 20   # its indexing runs on another thread
        while time.monotonic() < deadline and not found:
            found.extend(many.search("How do I get better at the gym?", 3))
            time.sleep(0.05)
        found.append(p.done)

    report = many.vectors.encode(progress=search_meanwhile)
    assert report.encoded == 300 and report.commits == 2
    assert found[-1] < 300 and len(found) > 1, "nothing was searchable during the encode"
    assert "the gym" in found[0].text


def test_an_indexing_error_is_raised_by_the_job_and_only_whole_chunks_are_stored(many, encoder):
    model_id = many.model.id()
    calls = []

    def on_committed(chunk):
        calls.append(len(chunk.text_ids))
        if len(calls) == 2:
            raise RuntimeError("index is full")

    with pytest.raises(RuntimeError, match="index is full"):
        encode_missing(many.store, encoder, model_id, on_committed=on_committed,
                       chunk_texts=64)
    stored = _count(many)
    assert 128 <= stored < 300 and stored % 64 == 0


class _DiesAfter(LocalExecutor):
    """Stands in for a crash in the middle of a chunk: raises after `n` batches."""

    def __init__(self, n: int) -> None:
        self.n = n

    def map(self, encoder, batches):
        for batch in super().map(encoder, batches):
            if self.n == 0:
                raise KeyboardInterrupt
            self.n -= 1
            yield batch


def test_a_stop_mid_chunk_loses_only_that_chunk_and_resume_finishes(many, encoder):
    model_id = many.model.id()
    indexed = []
    with pytest.raises(KeyboardInterrupt):
        # batch size 32, chunk 64: the 5th batch is the first half of the 3rd chunk
        encode_missing(many.store, encoder, model_id, executor=_DiesAfter(5),
                       on_committed=lambda c: indexed.extend(c.text_ids), chunk_texts=64)
    assert _count(many) == 128 and len(indexed) == 128  # what was committed was indexed
    rest = many.vectors.encode()
    assert rest.encoded == 172 and _count(many) == 300
    assert len(many.vectors.index()) == 300


def test_a_killed_process_keeps_its_committed_chunks_and_reopening_indexes_them(
        many, tmp_path, encoder):
    path = many.path
    many.vectors.encode()                         # a saved, stamped index of 300 texts
    src = tmp_path / "more.csv"
    src.write_text("text\n" + "\n".join(f"A brand new question number {i} about cheese?"
                                        for i in range(200)) + "\n", encoding="utf-8")
    many.rows.import_table(src, ["text"])
    many.close()
    script = textwrap.dedent(f"""
        import os
        from engine.project import Project
        project = Project.open({str(path)!r})
        project.model.configure(batch_size=16)
        def progress(p):
            if p.done >= 100:
                os._exit(9)               # no cleanup, no index save: a kill
        project.vectors.encode(progress=progress, chunk_texts=32)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 9, done.stderr
    reopened = Project.open(path)
    reopened.model.attach(encoder, is_default=True)
    try:
        with reopened.store.read() as conn:
            model_id = int(reopened.model.row()["id"])
            stored = embedding_store.count_model_embeddings(conn, model_id)
        assert 300 + 64 <= stored <= 300 + 100 and (stored - 300) % 32 == 0
        assert len(reopened.vectors.index()) == stored  # reconciled: the saved index had 300
        assert reopened.vectors.encode().encoded == 500 - stored
        assert len(reopened.vectors.index()) == 500
    finally:
        reopened.close()


def test_batches_follow_token_counts_and_carry_them():
    ids = [1, 2, 3, 4]
    texts = {1: "aaaaaaaaaaaaaaaaaaaa", 2: "b", 3: "c c c c", 4: "dd"}
    counts = {1: 3, 2: 9, 3: 6, 4: 4}    # characters and tokens disagree on purpose
    batches = list(plan_batches(ids, texts, 2, counts))
    assert [b.text_ids for b in batches] == [[2, 3], [4, 1]]
    assert batches[0].token_counts == [9, 6]
    by_chars = list(plan_batches(ids, texts, 2))
    assert [b.text_ids for b in by_chars] == [[1, 3], [4, 2]]


def test_truncation_flags_from_planned_counts_match_tokenising_again(encoder):
    texts = ["short question?", "word " * 400, "x" * 5_000_000, "é" * 300]
    counts = encoder.token_counts(texts)
    planned = encoder.encode_batch(EncodeBatch([1, 2, 3, 4], texts, counts))
    plain = encoder.encode_batch(EncodeBatch([1, 2, 3, 4], texts))
    assert planned.truncated == plain.truncated == encoder.truncation_flags(texts)
    assert planned.truncated[:3] == [False, True, True]
    assert np.allclose(planned.vectors, plain.vectors, atol=1e-6)
