"""The one rule that makes an index hold what it should: every live text embedded with its
model, and nothing else.

Opening a project and activating a model version both need it: a saved index may lack
texts encoded after it was saved (a killed import), and hold texts whose rows were deleted
since. Adding is resumable and can report progress and stop (activation at a million texts
takes a while); marking stale texts deleted is quick and always finishes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.index.hnsw import HnswIndex
from engine.progress import CancelToken, Progress, ProgressCallback, RateMeter, no_progress
from engine.store import change_counters
from engine.store import embeddings as embedding_store
from engine.store import items as item_store
from engine.store.database import Store

STAGE_INDEXING = "indexing"


@dataclass
class Reconciled:
    """What `reconcile` did, and the content change count the index now matches."""

    present: int = 0  # texts the index answered with before
    added: int = 0
    removed: int = 0
    change_count: int = 0
    complete: bool = True  # False: cancelled before every missing text was added

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)


def live_ids(index: HnswIndex) -> np.ndarray:
    """The ids an index answers with: every id added, less those marked deleted."""
    return np.setdiff1d(index.ids(), np.fromiter(index.deleted, np.int64))


def reconcile(store: Store, index: HnswIndex, model_id: int, *,
              progress: ProgressCallback = no_progress, cancel: CancelToken | None = None
              ) -> Reconciled:
    """Add the live texts `model_id` has embedded that `index` lacks, then mark the texts
    no live row uses any more (or without an embedding of the model) as deleted.

    Cancelling stops between batches of additions: what was added stays, and nothing is
    marked deleted then, so a resumed run sees the same state.
    """
    result = Reconciled()
    with store.read() as conn:
        result.change_count = change_counters.read(conn, change_counters.CONTENT)
        embedded = embedding_store.embedded_text_ids(conn, model_id)
        live = np.fromiter(item_store.live_text_ids(conn), dtype=np.int64)
    present = live_ids(index)
    result.present = len(present)
    wanted = np.intersect1d(embedded, live)
    missing = np.setdiff1d(wanted, present)
    if len(missing):
        meter = RateMeter()
        progress(Progress(STAGE_INDEXING, 0, len(missing)))
        with store.read() as conn:
            for ids, vectors in embedding_store.iter_embeddings(conn, model_id, index.dim,
                                                             text_ids=missing.tolist()):
                if cancel is not None and cancel.cancelled:
                    result.complete = False
                    return result
                index.add(ids, vectors)
                result.added += len(ids)
                progress(Progress(STAGE_INDEXING, result.added, len(missing),
                                  meter.rate(result.added)))
    stale = np.setdiff1d(present, wanted)
    if len(stale):
        index.mark_deleted(stale)
        result.removed = len(stale)
    return result
