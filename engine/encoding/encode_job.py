"""The resumable encode job: embed every text the active model has not embedded yet.

Work is cut into chunks (committed to the store one transaction each) made of batches of
similar token counts (what the model sees). A kill loses at most the chunk in flight; the
next run asks the store what is missing and carries on from there, in any order.

Two things keep the pipeline close to bare encoding speed:

- Batches are sorted by token count, not characters: texts are tokenised once per window
  of a few chunks, and a batch pads to its longest member. sentence-transformers sorts by
  characters, which on Quora questions pads about 50% more tokens than it needs to.
- What follows a commit (`on_committed`: adding the chunk to the HNSW index) runs on a
  background thread while the next chunk encodes. hnswlib and torch both release the GIL
  in their kernels, so the two overlap; the store commit itself stays in the encoding
  thread, so a chunk is on disk before any result of the next one is taken and a kill
  loses at most the chunk in progress.
"""

from __future__ import annotations

import collections
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from engine.encoding.encoder import (
    EncodeBatch,
    EncodedBatch,
    Executor,
    LocalExecutor,
    SentenceEncoder,
)
from engine.progress import CancelToken, Progress, ProgressCallback, RateMeter, no_progress
from engine.store.database import Store
from engine.store.embeddings import add_embeddings, missing_text_ids
from engine.store.items import texts_by_id

CHUNK_TEXTS = 2048
# The first chunk's size; each next one doubles, up to the chunk size. A chunk is searchable
# only once committed, so with 2,048 from the start a new project of 2,247 texts (the shipped
# sample) answered no search until 90% of it was encoded; 256 texts are searchable after
# seconds, and the few smaller transactions at the start cost nothing measurable.
FIRST_CHUNK_TEXTS = 256
# Texts of this many chunks are tokenised and sorted together: a wider window pads less
# (measured on 10k Quora questions: 172k padded tokens with one chunk, 164k with four,
# 160k with all of them, for 157k real ones) at the cost of more texts held at once.
SORT_WINDOW_CHUNKS = 4
# Committed chunks waiting for `on_committed` (indexing) before encoding pauses.
PENDING_CHUNKS = 2


@dataclass
class EncodeReport:
    encoded: int = 0
    truncated: int = 0
    cancelled: bool = False
    remaining: int = 0
    commits: int = 0          # chunk transactions written (each bumps the content change count)


def plan_batches(text_ids: Sequence[int], texts: dict[int, str], batch_size: int,
                 token_counts: dict[int, int] | None = None) -> Iterator[EncodeBatch]:
    """Batches of similar length, so padding wastes little of each forward pass.

    Sorted by token count when `token_counts` is given, else by characters.
    """
    if token_counts is not None:
        ordered = sorted(text_ids, key=lambda t: token_counts[t], reverse=True)
    else:
        ordered = sorted(text_ids, key=lambda t: len(texts[t]), reverse=True)
    for start in range(0, len(ordered), batch_size):
        part = ordered[start:start + batch_size]
        counts = [token_counts[t] for t in part] if token_counts is not None else None
        yield EncodeBatch(part, [texts[t] for t in part], counts)


def encode_missing(store: Store, encoder: SentenceEncoder, model_id: int, *,
                   on_committed: Callable[[EncodedBatch], None] | None = None,
                   progress: ProgressCallback = no_progress, cancel: CancelToken | None = None,
                   executor: Executor | None = None, chunk_texts: int = CHUNK_TEXTS
                   ) -> EncodeReport:
    """Encode what is missing for `model_id`; `on_committed` sees each stored chunk.

    Every batch of every chunk goes through one `executor.map` call, so an executor with
    work in flight (a Ray cluster) keeps encoding while a chunk is committed here. Results
    come back in order; a chunk is committed as soon as its last batch is in.

    `on_committed` gets each committed chunk as one `EncodedBatch`, on one background
    thread, in commit order, overlapping the next chunk's encoding; all of it has run when
    this returns, and an error it raises is raised here (encoding stops after the next
    commit). Cancelling stops after the batch in flight, commits what was encoded, stops
    the executor's pending work and returns a report with `cancelled` set: stopping is an
    outcome, not an error.
    """
    executor = executor or LocalExecutor()
    with store.read() as conn:
        missing = missing_text_ids(conn, model_id)
    total = len(missing)
    report = EncodeReport(remaining=total)
    meter = RateMeter()
    progress(Progress("encoding", 0, total))
    chunk_sizes: collections.deque[int] = collections.deque()
    batches = _planned(store, encoder, missing, chunk_texts, chunk_sizes)
    with _AfterCommit(on_committed) as after:
        results = executor.map(encoder, batches)
        try:
            chunk: list[EncodedBatch] = []
            in_chunk = 0
            for result in results:
                chunk.append(result)
                in_chunk += len(result.text_ids)
                done = report.encoded + in_chunk
                progress(Progress("encoding", done, total, meter.rate(done)))
                if in_chunk == chunk_sizes[0]:
                    chunk_sizes.popleft()
                    after.submit(_commit(store, model_id, chunk, report))
                    chunk, in_chunk = [], 0
                    after.raise_if_failed()
                if cancel is not None and cancel.cancelled:
                    after.submit(_commit(store, model_id, chunk, report))
                    report.cancelled = True
                    break
        finally:
            # Stops what the executor still has pending (a cluster's queued batches).
            close = getattr(results, "close", None)
            if close is not None:
                close()
    return report


def _planned(store: Store, encoder: SentenceEncoder, missing: list[int], chunk_texts: int,
             chunk_sizes: collections.deque[int]) -> Iterator[EncodeBatch]:
    """The batches of every chunk in turn, planned lazily (a window of chunks at a time, as
    the executor asks for more); each chunk's size is appended to `chunk_sizes` before its
    first batch is handed out, so the consumer knows where each chunk ends."""
    for chunk_ids, texts, counts in _chunks(store, encoder, missing, chunk_texts):
        chunk_sizes.append(len(chunk_ids))
        yield from plan_batches(chunk_ids, texts, encoder.batch_size, counts)


def _chunks(store: Store, encoder: SentenceEncoder, missing: list[int], chunk_texts: int
            ) -> Iterator[tuple[list[int], dict[int, str], dict[int, int]]]:
    """(ids, texts, token counts) per chunk: each window of a few chunks is tokenised once
    and cut longest first, so each chunk holds texts of similar length. Chunks grow from
    `FIRST_CHUNK_TEXTS` to `chunk_texts` (`chunk_sizes`)."""
    window = chunk_texts * SORT_WINDOW_CHUNKS
    sizes = chunk_sizes(chunk_texts)
    for start in range(0, len(missing), window):
        window_ids = missing[start:start + window]
        with store.read() as conn:
            texts = texts_by_id(conn, window_ids)
        ids = [t for t in window_ids if t in texts]
        counts = dict(zip(ids, encoder.token_counts([texts[t] for t in ids]), strict=True))
        ids.sort(key=counts.__getitem__, reverse=True)
        part = 0
        while part < len(ids):
            size = next(sizes)
            yield ids[part:part + size], texts, counts
            part += size


def chunk_sizes(chunk_texts: int) -> Iterator[int]:
    """The size of each chunk in turn: `FIRST_CHUNK_TEXTS` (or `chunk_texts`, if smaller),
    doubling up to `chunk_texts`, which the rest keep. The first texts are committed, and so
    searchable, within seconds of the start."""
    size = max(1, min(FIRST_CHUNK_TEXTS, chunk_texts))
    while True:
        yield size
        size = min(size * 2, chunk_texts)


def _commit(store: Store, model_id: int, results: list[EncodedBatch], report: EncodeReport
            ) -> EncodedBatch | None:
    """One transaction for the chunk's embeddings; the report counts them once stored.

    Returns the chunk as one batch (what `on_committed` sees), None when it was empty.
    """
    if not results:
        return None
    chunk = EncodedBatch([t for r in results for t in r.text_ids],
                         np.concatenate([r.vectors for r in results]),
                         [f for r in results for f in r.truncated])
    with store.write() as conn:
        add_embeddings(conn, model_id, chunk.text_ids, chunk.vectors, chunk.truncated)
    report.commits += 1
    report.encoded += len(chunk.text_ids)
    report.truncated += sum(chunk.truncated)
    report.remaining -= len(chunk.text_ids)
    return chunk


class _AfterCommit:
    """Runs `on_committed` over committed chunks on one background thread, in order.

    The queue is bounded, so encoding never runs more than `PENDING_CHUNKS` chunks ahead
    of indexing (memory stays flat). Leaving the `with` block waits for every submitted
    batch, also when encoding failed or was interrupted: what was committed is indexed.
    The first error of `on_committed` is kept and raised in the encoding thread.
    """

    _STOP = object()

    def __init__(self, on_committed: Callable[[EncodedBatch], None] | None) -> None:
        self._fn = on_committed
        self._queue: queue.Queue = queue.Queue(maxsize=PENDING_CHUNKS)
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> _AfterCommit:
        if self._fn is not None:
            self._thread = threading.Thread(target=self._work, name="duplens-after-commit",
                                            daemon=True)
            self._thread.start()
        return self

    def submit(self, chunk: EncodedBatch | None) -> None:
        if self._thread is not None and chunk is not None:
            self._queue.put(chunk)

    def raise_if_failed(self) -> None:
        if self._error is not None:
            raise self._error

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._thread is None:
            return
        self._queue.put(self._STOP)
        self._thread.join()
        if exc is None:
            self.raise_if_failed()

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is self._STOP:
                return
            if self._error is not None:
                continue  # keep draining so the encoding thread never blocks on put
            try:
                self._fn(item)
            except BaseException as exc:  # noqa: BLE001 - handed to the encoding thread
                self._error = exc
