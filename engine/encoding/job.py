"""The resumable encode job: embed every text the active model has not embedded yet.

Work is cut into chunks (committed to the store one transaction each) made of length-sorted
batches (what the model sees). A kill loses at most the chunk in flight; the next run asks
the store what is missing and carries on from there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from engine.encoding.encoder import (
    EncodeBatch,
    EncodedBatch,
    Executor,
    LocalExecutor,
    SentenceEncoder,
)
from engine.jobs import CancelToken, Progress, ProgressCallback, RateMeter, no_progress
from engine.store.database import Store
from engine.store.items import texts_by_id
from engine.store.vectors import add_embeddings, missing_text_ids

CHUNK_TEXTS = 2048


@dataclass
class EncodeReport:
    encoded: int = 0
    truncated: int = 0
    cancelled: bool = False
    remaining: int = 0


def plan_batches(text_ids: list[int], texts: dict[int, str], batch_size: int
                 ) -> Iterator[EncodeBatch]:
    """Batches of similar length, so padding wastes little of each forward pass."""
    ordered = sorted(text_ids, key=lambda t: len(texts[t]), reverse=True)
    for start in range(0, len(ordered), batch_size):
        part = ordered[start:start + batch_size]
        yield EncodeBatch(part, [texts[t] for t in part])


def encode_missing(store: Store, encoder: SentenceEncoder, model_id: int, *,
                   on_committed: Callable[[EncodedBatch], None] | None = None,
                   progress: ProgressCallback = no_progress, cancel: CancelToken | None = None,
                   executor: Executor | None = None, chunk_texts: int = CHUNK_TEXTS
                   ) -> EncodeReport:
    """Encode what is missing for `model_id`; `on_committed` sees each stored chunk (indexing).

    Cancelling stops after the batch in flight, commits what was encoded and returns a
    report with `cancelled` set: stopping is an outcome, not an error.
    """
    executor = executor or LocalExecutor()
    with store.read() as conn:
        missing = missing_text_ids(conn, model_id)
    total = len(missing)
    report = EncodeReport(remaining=total)
    meter = RateMeter()
    progress(Progress("encoding", 0, total))
    for start in range(0, total, chunk_texts):
        chunk_ids = missing[start:start + chunk_texts]
        with store.read() as conn:
            texts = texts_by_id(conn, chunk_ids)
        results: list[EncodedBatch] = []
        stopped = False
        for result in executor.map(encoder.encode_batch,
                                   plan_batches(chunk_ids, texts, encoder.batch_size)):
            results.append(result)
            done = report.encoded + sum(len(r.text_ids) for r in results)
            progress(Progress("encoding", done, total, meter.rate(done)))
            if cancel is not None and cancel.cancelled:
                stopped = True
                break
        _commit(store, model_id, results, on_committed, report)
        if stopped:
            report.cancelled = True
            break
    return report


def _commit(store: Store, model_id: int, results: list[EncodedBatch],
            on_committed: Callable[[EncodedBatch], None] | None, report: EncodeReport) -> None:
    if not results:
        return
    with store.write() as conn:
        for r in results:
            add_embeddings(conn, model_id, r.text_ids, r.vectors, r.truncated)
    for r in results:
        report.encoded += len(r.text_ids)
        report.truncated += sum(r.truncated)
        report.remaining -= len(r.text_ids)
        if on_committed is not None:
            on_committed(r)
