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

from engine.documents import minhash
from engine.encoding.encoder import (
    EncodeBatch,
    EncodedBatch,
    Executor,
    LocalExecutor,
    SentenceEncoder,
)
from engine.encoding.windows import SPECIAL_TOKENS, plans_for_long
from engine.progress import CancelToken, Progress, ProgressCallback, RateMeter, no_progress
from engine.store.database import Store
from engine.store.embeddings import add_embeddings, missing_text_ids
from engine.store.items import texts_by_id
from engine.store.text_signatures import add_signatures
from engine.store.text_windows import add_windows
from engine.store.text_words import add_words

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
# Texts whose tokens are counted in one call. The tokenizer keeps every word piece of a call
# (ids, offsets, strings) until it returns: a sort window of 8,192 documents of 1,000 words
# counted at once held about a gigabyte (the import of 10,000 such documents peaked at 2.7 GB,
# of 3,000 at 1.7 GB); only the counts are kept.
COUNTED_AT_ONCE = 256


@dataclass
class EncodeReport:
    encoded: int = 0
    truncated: int = 0        # texts read from their start only (past `MAX_WINDOWS`)
    windowed: int = 0         # texts longer than one window, read whole as several
    windows: int = 0          # the windows those were read in
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


@dataclass
class ChunkPlan:
    """One chunk's texts and the pieces they are encoded as.

    A piece is a text read in one window, or one window of a longer text; pieces are
    numbered from `first` on, a text's windows consecutively, and the batches handed to
    the executor carry those numbers as their ids (any executor encodes a piece as it
    would a text). `starts[i]` is text i's first piece, `starts[i + 1]` one past its last.
    """

    text_ids: list[int]
    first: int
    starts: np.ndarray                          # (texts + 1,) piece offsets
    spans: dict[int, np.ndarray]                # text position -> (windows, 2) spans
    cut_short: set[int]                         # positions read from their start only
    signatures: dict[int, bytes]                # text position -> MinHash signature

    @property
    def pieces(self) -> int:
        return int(self.starts[-1])


def encode_missing(store: Store, encoder: SentenceEncoder, model_id: int, *,
                   on_committed: Callable[[EncodedBatch], None] | None = None,
                   progress: ProgressCallback = no_progress, cancel: CancelToken | None = None,
                   executor: Executor | None = None, chunk_texts: int = CHUNK_TEXTS
                   ) -> EncodeReport:
    """Encode what is missing for `model_id`; `on_committed` sees each stored chunk.

    A text longer than the model's window is read whole, as overlapping windows
    (`engine.encoding.windows`): each window is encoded as a text of its own, the text's
    embedding is the normalised mean of its windows', and the windows are stored beside it
    (`engine.store.text_windows`), with the text's MinHash signature
    (`engine.documents.minhash`, `engine.store.text_signatures`): the near-exact signal
    that finds copies the vectors miss. A text that fits in one window is encoded as
    before and gets no signature (MinHash on a question is noise).

    Every batch of every chunk goes through one `executor.map` call, so an executor with
    work in flight (a Ray cluster) keeps encoding while a chunk is committed here. Results
    come back in order; a chunk is committed as soon as its last batch is in.

    Progress counts texts, but its time left comes from windows (a 1,000-word document
    costs about ten questions): the windows left, planned or estimated from the texts
    planned so far, at the rate windows have been encoded.

    `on_committed` gets each committed chunk as one `EncodedBatch` (texts, not windows), on
    one background thread, in commit order, overlapping the next chunk's encoding; all of
    it has run when this returns, and an error it raises is raised here (encoding stops
    after the next commit). Cancelling stops after the batch in flight, commits the texts
    whose every window was encoded, stops the executor's pending work and returns a report
    with `cancelled` set: stopping is an outcome, not an error.
    """
    executor = executor or LocalExecutor()
    with store.read() as conn:
        missing = missing_text_ids(conn, model_id)
    total = len(missing)
    report = EncodeReport(remaining=total)
    meter = RateMeter()
    progress(Progress("encoding", 0, total))
    plans: collections.deque[ChunkPlan] = collections.deque()
    planned = _Planned()
    batches = _planned(store, encoder, missing, chunk_texts, plans, planned)
    with _AfterCommit(on_committed) as after:
        results = executor.map(encoder, batches)
        try:
            chunk: list[EncodedBatch] = []
            in_chunk = 0
            for result in results:
                chunk.append(result)
                in_chunk += len(result.text_ids)
                planned.encoded += len(result.text_ids)
                done = report.encoded + _texts_complete(plans[0], chunk)
                progress(Progress("encoding", done, total, meter.rate(done),
                                  seconds_left=planned.seconds_left(meter, total)))
                if in_chunk == plans[0].pieces:
                    after.submit(_commit(store, model_id, plans.popleft(), chunk, report))
                    chunk, in_chunk = [], 0
                    after.raise_if_failed()
                if cancel is not None and cancel.cancelled:
                    if chunk:
                        after.submit(_commit(store, model_id, plans[0], chunk, report))
                    report.cancelled = True
                    break
        finally:
            # Stops what the executor still has pending (a cluster's queued batches).
            close = getattr(results, "close", None)
            if close is not None:
                close()
    return report


@dataclass
class _Planned:
    """Pieces planned and encoded so far, for the time left."""

    texts: int = 0
    pieces: int = 0
    encoded: int = 0

    def seconds_left(self, meter: RateMeter, total_texts: int) -> float | None:
        rate = meter.rate(self.encoded)
        if rate <= 0 or not self.texts:
            return None
        per_text = self.pieces / self.texts
        left = (self.pieces - self.encoded) + (total_texts - self.texts) * per_text
        return max(0.0, left / rate)


def _texts_complete(plan: ChunkPlan, results: list[EncodedBatch]) -> int:
    """Texts of the chunk whose every piece is among `results`."""
    if not results:
        return 0
    got = np.zeros(plan.pieces, dtype=bool)
    for r in results:
        got[np.asarray(r.text_ids, dtype=np.int64) - plan.first] = True
    return int(np.logical_and.reduceat(got, plan.starts[:-1]).sum()) if plan.pieces else 0


def _planned(store: Store, encoder: SentenceEncoder, missing: list[int], chunk_texts: int,
             plans: collections.deque[ChunkPlan], planned: _Planned) -> Iterator[EncodeBatch]:
    """The batches of every chunk in turn, planned lazily (a window of chunks at a time, as
    the executor asks for more); each chunk's plan is appended to `plans` before its first
    batch is handed out, so the consumer knows where each chunk ends."""
    serial = 0
    for chunk_ids, texts, counts in _chunks(store, encoder, missing, chunk_texts):
        plan, pieces, piece_counts = _plan_chunk(encoder, chunk_ids, texts, counts, serial)
        serial += plan.pieces
        planned.texts += len(chunk_ids)
        planned.pieces += plan.pieces
        plans.append(plan)
        yield from plan_batches(list(pieces), pieces, encoder.batch_size, piece_counts)


def _plan_chunk(encoder: SentenceEncoder, text_ids: list[int], texts: dict[int, str],
                counts: dict[int, int], first: int
                ) -> tuple[ChunkPlan, dict[int, str], dict[int, int]]:
    """The chunk's pieces: (plan, {piece: text}, {piece: tokens}). A text longer than the
    model's window is cut into windows where the tokenizer gives offsets; otherwise (a slow
    tokenizer) it is read from its start, as it always was."""
    window = encoder.max_seq_length
    long_at = [i for i, t in enumerate(text_ids) if counts[t] > window]
    plans_of = plans_for_long([texts[t] for t in text_ids], long_at, encoder.token_spans,
                              window)
    pieces: dict[int, str] = {}
    piece_counts: dict[int, int] = {}
    starts = np.zeros(len(text_ids) + 1, dtype=np.int64)
    spans: dict[int, np.ndarray] = {}
    cut_short: set[int] = set()
    signatures: dict[int, bytes] = {}
    serial = first
    for i, text_id in enumerate(text_ids):
        text = texts[text_id]
        plan = plans_of.get(i)
        if plan is None:
            pieces[serial], piece_counts[serial] = text, counts[text_id]
            serial += 1
        else:
            limit = len(text)
            for w in plan.windows:
                pieces[serial] = text[min(w.start, limit):min(w.end, limit)]
                piece_counts[serial] = w.tokens + SPECIAL_TOKENS
                serial += 1
            spans[i] = np.array([(w.start, w.end) for w in plan.windows], dtype=np.int32)
            if plan.cut_short:
                cut_short.add(i)
            if minhash.wants_signature(text):
                signatures[i] = minhash.to_bytes(minhash.signature(text))
        starts[i + 1] = serial - first
    return (ChunkPlan(text_ids, first, starts, spans, cut_short, signatures), pieces,
            piece_counts)


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
        counts: dict[int, int] = {}
        for part in (ids[i:i + COUNTED_AT_ONCE] for i in range(0, len(ids), COUNTED_AT_ONCE)):
            counts.update(zip(part, encoder.token_counts([texts[t] for t in part]),
                              strict=True))
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


def _commit(store: Store, model_id: int, plan: ChunkPlan, results: list[EncodedBatch],
            report: EncodeReport) -> EncodedBatch | None:
    """One transaction for the chunk's texts whose every piece is in `results` (all of
    them, unless encoding was cancelled): their embeddings, and the windows of those read
    in several; the report counts them once stored.

    Returns the committed texts as one batch (what `on_committed` sees), None when none."""
    if not results:
        return None
    dim = results[0].vectors.shape[1]
    vectors = np.zeros((plan.pieces, dim), dtype=np.float32)
    flags = np.zeros(plan.pieces, dtype=bool)
    got = np.zeros(plan.pieces, dtype=bool)
    for r in results:
        at = np.asarray(r.text_ids, dtype=np.int64) - plan.first
        vectors[at] = r.vectors
        flags[at] = r.truncated
        got[at] = True
    ids: list[int] = []
    rows: list[np.ndarray] = []
    truncated: list[bool] = []
    windowed: list[int] = []
    window_spans: list[np.ndarray] = []
    window_vectors: list[np.ndarray] = []
    signed: list[int] = []
    signatures: list[bytes] = []
    for i, text_id in enumerate(plan.text_ids):
        lo, hi = int(plan.starts[i]), int(plan.starts[i + 1])
        if not got[lo:hi].all():
            continue
        ids.append(text_id)
        if i in plan.spans:
            mean = vectors[lo:hi].mean(axis=0)
            rows.append((mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float32))
            truncated.append(i in plan.cut_short)
            windowed.append(text_id)
            window_spans.append(plan.spans[i])
            window_vectors.append(vectors[lo:hi].astype(np.float16))
            if i in plan.signatures:
                signed.append(text_id)
                signatures.append(plan.signatures[i])
        else:
            rows.append(vectors[lo])
            truncated.append(bool(flags[lo]))
    if not ids:
        return None
    chunk = EncodedBatch(ids, np.stack(rows), truncated)
    with store.write() as conn:
        add_windows(conn, model_id, windowed, window_spans, window_vectors)
        add_words(conn, windowed)
        add_signatures(conn, signed, signatures)
        add_embeddings(conn, model_id, chunk.text_ids, chunk.vectors, chunk.truncated)
    report.commits += 1
    report.encoded += len(ids)
    report.truncated += sum(truncated)
    report.windowed += len(windowed)
    report.windows += sum(len(s) for s in window_spans)
    report.remaining -= len(ids)
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
