"""Getting a model version ready to serve: every live text encoded with it, and its index.

This is the slow half of switching versions, and it touches nothing the active model uses:
embeddings are stored under the new model's id, and its HNSW index is built in memory from a
saved one where there is one, then saved under its own id. The project keeps searching with
the active model meanwhile, and makes the switch only when this returns complete.

Everything is resumable: embeddings are committed chunk by chunk (`encode_missing`), and a
cancelled run saves the index as far as it got, so the next activation of the same version
starts where this one stopped. Going back to a version used before finds its embeddings and
index already there, and only loads them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.encoding.encode_job import CHUNK_TEXTS, encode_missing
from engine.encoding.encoder import EncodedBatch, SentenceEncoder
from engine.index.hnsw import HnswIndex
from engine.index.persist import load_index, save_index
from engine.index.reconcile import STAGE_INDEXING, reconcile
from engine.progress import CancelToken, ProgressCallback, no_progress
from engine.store.database import Store

STAGE_LOADING = "loading model"
STAGE_ENCODING = "encoding"  # the stage `encode_missing` reports
ACTIVATION_STAGES = (STAGE_LOADING, STAGE_ENCODING, STAGE_INDEXING)


@dataclass
class ActivationReport:
    model_id: int
    activated: bool = False  # the version now serves search
    cancelled: bool = False  # stopped; what was encoded is kept for the next try
    already_active: bool = False
    encoded: int = 0  # texts encoded by this call
    remaining: int = 0  # texts still to encode after a cancel
    indexed: int = 0  # texts added to the version's index by this call
    truncated: int = 0  # of those encoded, texts longer than the model reads
    seconds: float = 0.0

    def as_json(self) -> dict:
        return dict(self.__dict__, seconds=round(self.seconds, 3))


def prepare_model_index(store: Store, encoder: SentenceEncoder, model_id: int, *,
                        report: ActivationReport, progress: ProgressCallback = no_progress,
                        cancel: CancelToken | None = None, chunk_texts: int = CHUNK_TEXTS
                        ) -> HnswIndex | None:
    """Encode what `model_id` lacks and build its index; None when cancelled (saved so far).

    Fills `report` (encoded, remaining, indexed, cancelled) as it goes.
    """
    dim = encoder.dim
    with store.read() as conn:
        index, _why = load_index(conn, model_id, dim)
    saved = index is not None
    if index is None:  # none yet, or damaged: rebuilt from the stored embeddings below
        index = HnswIndex(dim)

    def add(batch: EncodedBatch) -> None:
        index.add(np.asarray(batch.text_ids, dtype=np.int64), batch.vectors)
        report.indexed += len(batch.text_ids)

    encoded = encode_missing(store, encoder, model_id, on_committed=add, progress=progress,
                             cancel=cancel, chunk_texts=chunk_texts)
    report.encoded, report.remaining = encoded.encoded, encoded.remaining
    report.truncated = encoded.truncated
    changed = bool(encoded.encoded)
    report.cancelled = encoded.cancelled
    if not encoded.cancelled:
        # Texts embedded earlier but missing from the index (a resumed or rebuilt one), and
        # texts deleted since it was saved.
        result = reconcile(store, index, model_id, progress=progress, cancel=cancel)
        report.indexed += result.added
        changed = changed or result.changed or not result.complete
        report.cancelled = not result.complete
    if changed or not saved:
        with store.write() as conn:
            save_index(conn, model_id, index)
    return None if report.cancelled else index
