"""Encoding on Ray: a real local Ray (the session's `ray_session`, 2 CPUs), real actors and
the real model; embeddings compared with the local encoder's row by row."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import replace

import numpy as np
import psutil
import pytest

from engine.encoding.encode_job import encode_missing
from engine.encoding.encoder import EncodeBatch, LocalExecutor, SentenceEncoder
from engine.encoding.executors import executor_for, parse_executor, ray_available
from engine.encoding.model_spec import resolve_model
from engine.encoding.ray_executor import RayExecutor
from engine.encoding.ray_worker import pack_model, unpack_model
from engine.errors import ClusterError, InputError
from engine.progress import CancelToken
from engine.store import embeddings as embedding_store
from engine.store.items import texts_by_id


def _encode_workers() -> list[psutil.Process]:
    """This test session's live Ray actor processes that encode (Ray names each process
    after its actor class, and the session's Ray was started by this process)."""
    found = []
    for proc in psutil.Process(os.getpid()).children(recursive=True):
        try:
            title = " ".join(proc.cmdline())
            if title.startswith("ray::EncodeWorker") and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _wait_until(check, seconds: float = 60) -> bool:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return False


def _batches(texts: list[str], size: int) -> list[EncodeBatch]:
    return [EncodeBatch(list(range(i, i + len(texts[i:i + size]))), texts[i:i + size])
            for i in range(0, len(texts), size)]


@pytest.fixture
def questions(data_dir) -> list[str]:
    import csv

    with (data_dir / "questions.csv").open(encoding="utf-8") as fh:
        return [row["question"] for row in csv.DictReader(fh) if row["question"].strip()]


def test_the_option_names_local_ray_or_a_cluster():
    assert parse_executor("local") == ("local", None)
    assert parse_executor("ray") == ("ray", None)
    assert parse_executor("ray=ray://head:10001") == ("ray", "ray://head:10001")
    assert isinstance(executor_for("local"), LocalExecutor)
    assert ray_available()        # the test extra installs duplens[ray]
    for wrong in ("spark", "ray=", "local=x"):
        with pytest.raises(InputError):
            parse_executor(wrong)


@pytest.mark.slow
def test_a_project_encoded_on_ray_holds_the_local_embeddings_row_by_row(
        ray_session, new_project, data_dir, encoder):
    project = new_project()
    project.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
    executor = executor_for("ray")
    try:
        report = project.vectors.encode(executor=executor)
    finally:
        executor.close()
    assert executor.last_plan.count == 2 and executor.last_plan.device == "cpu"
    assert report.encoded == 46 and report.remaining == 0 and not report.cancelled
    model_id = project.model.id()
    with project.store.read() as conn:
        (ids, vectors), = embedding_store.iter_embeddings(conn, model_id, encoder.dim)
        texts = texts_by_id(conn, ids.tolist())
    local = encoder.encode([texts[int(t)] for t in ids])
    cosines = (vectors * local).sum(axis=1)
    assert len(cosines) == 46 and cosines.min() >= 0.9999
    assert len(project.vectors.index()) == 46
    hits = project.search("what is australia's capital city", k=1)
    assert "Australia" in hits[0].text


@pytest.mark.slow
def test_results_come_in_order_with_a_bounded_number_of_batches_in_flight(
        ray_session, questions, encoder):
    batches = _batches(questions, 2)
    pulled = 0

    def source():
        nonlocal pulled
        for batch in batches:
            pulled += 1
            yield batch

    executor = RayExecutor(workers=2, in_flight_per_worker=2)
    seen = []
    for i, result in enumerate(executor.map(encoder, source())):
        assert pulled <= i + 4, "the executor read further ahead than its in-flight bound"
        seen.append(result)
    assert [r.text_ids for r in seen] == [b.text_ids for b in batches]
    local = [encoder.encode_batch(b) for b in batches]
    assert [r.truncated for r in seen] == [r.truncated for r in local]
    cosines = np.concatenate([(a.vectors * b.vectors).sum(1) for a, b in zip(seen, local,
                                                                               strict=True)])
    assert cosines.min() >= 0.9999


@pytest.mark.slow
def test_cancel_commits_what_came_back_and_stops_the_cluster_work(
        ray_session, new_project, data_dir, encoder):
    project = new_project()
    project.rows.import_table(data_dir / "questions.csv", ["question"])
    project.model.configure(batch_size=4)
    model_id = project.model.id()
    cancel, pulled = CancelToken(), []
    workers_while_running = []

    def progress(p):
        if p.done and not cancel.cancelled:
            workers_while_running.extend(_encode_workers())
            cancel.cancel()

    executor = RayExecutor(workers=2)
    small = SentenceEncoder(encoder.model, encoder.spec, "cpu", batch_size=4)
    try:
        report = encode_missing(project.store, small, model_id, progress=progress,
                                cancel=cancel, executor=_Counting(executor, pulled))
    finally:
        executor.close()
    assert report.cancelled and report.encoded == 4 and report.remaining == 42
    assert len(pulled) <= 1 + 2 * 2, "batches kept being sent after the cancel"
    assert len(workers_while_running) == 2
    assert _wait_until(lambda: not _encode_workers()), "the actors outlived the job"
    with project.store.read() as conn:
        assert embedding_store.count_model_embeddings(conn, model_id) == 4
    assert project.vectors.encode().encoded == 42     # resumes where it stopped


class _Counting:
    """An executor that counts the batches the job hands to the one it wraps."""

    def __init__(self, inner, pulled: list) -> None:
        self.inner, self.pulled = inner, pulled

    def map(self, encoder, batches):
        def counted():
            for batch in batches:
                self.pulled.append(batch)
                yield batch
        return self.inner.map(encoder, counted())

    def close(self) -> None:
        self.inner.close()


@pytest.mark.slow
def test_a_worker_killed_mid_batch_is_restarted_and_its_batches_run_again(
        ray_session, questions, encoder):
    # Long texts in big batches: about a second per batch on one thread, so the kill
    # lands while a worker is inside encode_batch.
    texts = [(q + " ") * 12 for q in questions]
    batches = _batches(texts, 12)
    executor = RayExecutor(workers=2)
    stream = executor.map(encoder, batches)
    results = [next(stream)]
    busy = [p for p in _encode_workers() if "encode_batch" in " ".join(p.cmdline())]
    assert busy, "no worker was encoding when the kill was due"
    victim = busy[0].pid
    os.kill(victim, signal.SIGKILL)
    results.extend(stream)
    assert [r.text_ids for r in results] == [b.text_ids for b in batches]
    local = [encoder.encode_batch(b) for b in batches]
    for got, want in zip(results, local, strict=True):
        assert (got.vectors * want.vectors).sum(1).min() >= 0.9999
        assert got.truncated == want.truncated
    assert not psutil.pid_exists(victim) or psutil.Process(victim).status() == "zombie"


@pytest.mark.slow
def test_workers_that_cannot_load_the_model_stop_the_job_with_one_line(ray_session, encoder):
    missing = replace(encoder.spec, location="/nonexistent/duplens-model")
    broken = SentenceEncoder(encoder.model, missing, "cpu", batch_size=8)
    executor = RayExecutor(workers=1)
    with pytest.raises(ClusterError, match="cannot encode with .*not on"):
        list(executor.map(broken, _batches(["a question?"] * 4, 2)))
    assert _wait_until(lambda: not _encode_workers())


def test_a_shipped_model_folder_is_unpacked_once_with_the_same_weights(tmp_path, encoder):
    shipped = pack_model(encoder.spec.location)
    first = unpack_model(encoder.spec.fingerprint, shipped, root=tmp_path)
    again = unpack_model(encoder.spec.fingerprint, {}, root=tmp_path)  # already there
    assert first == again
    assert resolve_model(str(first)).fingerprint == encoder.spec.fingerprint
    assert sorted(p.name for p in first.parent.iterdir()) == [first.name]  # no leftovers


def test_nothing_to_encode_starts_no_worker(ray_session, encoder):
    executor = RayExecutor()
    assert list(executor.map(encoder, iter([]))) == []
    assert executor.last_plan is None      # set before any actor is asked for
