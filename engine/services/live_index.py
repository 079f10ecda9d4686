"""`LiveIndex`: the active model's HNSW index in memory, and what it is known to match.

It owns the index, the model it belongs to, the content change count it matches (so that a
save can be stamped and the next open skip reconciling), the lock every reader and writer
of the index takes, and the generation that search caches are keyed by. Loading checks the
saved index against the stored embeddings and repairs it from them, never trusting it
blindly; every change to what the index holds goes through here, so the bookkeeping rule
("the index matches change count c") is written once (`_follow`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np

from engine.errors import DiskFull, ProjectError
from engine.index.hnsw import HnswIndex
from engine.index.persist import (
    Loaded,
    adopt_side_file,
    current_change_count,
    load_saved,
    save_index,
    write_stamp,
)
from engine.index.reconcile import reconcile
from engine.keystroke_search import QueryCache
from engine.store import change_counters
from engine.store import embeddings as embedding_store
from engine.store.database import Store
from engine.store.version_rows import active_model_id

# How often a loaded index asks whether another process changed the project (one tiny read
# of `meta`): another analyst's import shows up in this one's searches within about this
# long, and a burst of keystrokes costs one read, not one each.
FOLLOW_SECONDS = 1.0


class LiveIndex:
    """The in-memory index of one model at a time, loaded on demand and kept consistent."""

    def __init__(self, store: Store, notice: Callable[[str], None]) -> None:
        self._store = store
        self._notice = notice
        self.lock = threading.RLock()
        self._index: HnswIndex | None = None
        self._model_id: int | None = None
        # The content change count the index is known to match (None: unknown); saved with
        # it, so that the next open can skip reconciling it with every embedding.
        self._change_count: int | None = None
        # The content change count the index was last brought up to date with, and when
        # that was asked (`_catch_up`): what lets a long-lived process follow other writers.
        self._seen: int | None = None
        self._asked_at = 0.0
        self._following = False   # a catch-up is running (`_catch_up`)
        # Bumped whenever the change count the index matches is set, so that a catch-up that ran
        # without the lock does not overwrite what a change meanwhile decided.
        self._edits = 0
        self._told_active: int | None = None   # another's activation, said once
        self.generation = 0
        self.cache = QueryCache()
        # Where the last load came from ("side file", "blobs", "" when built): what tells
        # a slow open (the blob route) from a fast one.
        self.route = ""

    @property
    def model_id(self) -> int | None:
        return self._model_id

    def current(self) -> HnswIndex | None:
        """The index in memory, if any; never loads."""
        return self._index

    def get(self, model_id: int) -> HnswIndex:
        """`model_id`'s index, loaded and checked against the embeddings once, then kept up
        to date with what other processes write (`_catch_up`)."""
        with self.lock:
            if self._index is not None and self._model_id == model_id:
                index, behind = self._index, self._behind()
            else:
                return self._load(model_id)
        if behind:
            self._catch_up(index, model_id)
        return index

    def _load(self, model_id: int) -> HnswIndex:
        """Load `model_id`'s saved index. A damaged or missing one is rebuilt from the stored
        embeddings (with a notice) and saved; one whose stamp still holds is used as it is."""
        with self.lock:
            with self._store.read() as conn:
                model = embedding_store.get_model_row(conn, model_id)
                loaded = load_saved(conn, model_id, model["dim"],
                                    refresh=not self._store.read_only)
                index, why = loaded.index, loaded.why
                self.route = loaded.route if index is not None else ""
                # Same snapshot as the load: a matching stamp means nothing to reconcile.
                count = (current_change_count(conn, model_id, index) if index is not None
                         else None)
            self._adopt(model_id, loaded)
            if index is None:
                if why != "no saved index":
                    self._notice(f"{self._store.name}: {why}; rebuilding it from the "
                                 f"stored embeddings (nothing is lost)")
                index = HnswIndex(model["dim"])
            stamped, changed = count is not None, False
            if not stamped:
                result = reconcile(self._store, index, model_id)
                changed, count = result.changed, result.change_count
                if result.added and result.present:
                    self._notice(f"{self._store.name}: added {result.added} encoded "
                                 f"items missing from the saved index")
            self._index, self._model_id, self._change_count = index, model_id, count
            self._seen, self._asked_at = count, time.monotonic()
            try:
                if not self._store.read_only and changed:
                    self._save(index, model_id)
                elif not self._store.read_only and not stamped and why == "":
                    with self._store.write() as conn:  # the saved bytes are right; note it
                        write_stamp(conn, model_id, count)
            except DiskFull:
                # Reading must go on on a full disk: the index is right in memory, and the
                # saved one stays as it was (its stamp no longer holds), so the next open
                # with room to spare reconciles it again and saves it.
                self._notice(f"{self._store.name}: the disk is full, so the index brought "
                             f"up to date here is not saved; it is saved the next time the "
                             f"project opens with room to spare")
            self.changed()
            return index

    def _behind(self) -> bool:
        """Whether another process changed the project since the index was last brought up
        to date; True claims the catch-up for the caller (`_catch_up`). Under `lock`.

        At most once per `FOLLOW_SECONDS` it reads the counter (one tiny read of `meta`);
        while a catch-up runs, others do not start another one and search what is there.
        """
        now = time.monotonic()
        if self._following or now - self._asked_at < FOLLOW_SECONDS:
            return False
        self._asked_at = now
        with self._store.read() as conn:
            count = change_counters.read(conn, change_counters.CONTENT)
            active = active_model_id(conn)
        self._note_other_model(active, self._model_id)
        if count == self._seen or count == self._change_count:
            return False
        self._following = True
        return True

    def _adopt(self, model_id: int, loaded: Loaded) -> None:
        """The blob route also wrote the bytes beside the project: make that the side file
        the next open loads. A busy or full disk only costs the next open its speed."""
        if loaded.pending is None:
            return
        try:
            with self._store.write() as conn:
                adopt_side_file(conn, model_id, loaded)
        except ProjectError:
            pass
        finally:
            loaded.pending.unlink(missing_ok=True)   # gone already when it was adopted

    def _catch_up(self, index: HnswIndex, model_id: int) -> None:
        """Bring the loaded index up to date with what other processes wrote since.

        Another analyst's import adds embeddings and bumps the content change count; a
        process that keeps its index in memory for hours would otherwise never answer with
        those rows.
        `reconcile` adds the embeddings the index lacks and marks the texts no longer live
        (only the difference, never a rebuild). It runs without `lock`, so searches meanwhile
        interleave with its batches of 500 additions instead of waiting for a whole import
        (hnswlib's add_items is not safe beside knn_query; `HnswIndex` takes its own lock
        per slice of 512) and see the rows added so far. The index is claimed to match the
        new change count only once every addition and deletion is in, and only if nothing
        else changed what the index holds meanwhile (an older claim than the truth only costs a
        reconcile on the next open).
        The index is not saved here: the process that wrote the rows saves it, so two
        processes never both write the same index for the same change.
        """
        with self.lock:
            edits = self._edits
        result = None
        try:
            # Each batch is searchable at once: cached answers without it are stale.
            result = reconcile(self._store, index, model_id,
                               progress=lambda _p: self.changed())
        finally:
            with self.lock:
                self._following = False
                if result is not None:
                    self._seen = result.change_count
                    if result.complete and self._index is index and self._edits == edits:
                        self._change_count = result.change_count
                self.changed()

    def _note_other_model(self, active: str | None, model_id: int) -> None:
        """Another process made another model active: say so, once. This one goes on with
        the model and index it has (they match each other); following the switch would
        load a model and its index (seconds) inside someone's keystroke, so opening the
        project again is what switches."""
        if active is None or int(active) in (model_id, self._told_active):
            return
        self._told_active = int(active)
        self._notice(f"{self._store.name}: someone else made model version {active} the "
                     f"active one; searches here use version {model_id} until the project "
                     f"is opened again")

    # -- changes to what the index holds ---------------------------------------------------
    def change_count_of(self, index: HnswIndex) -> int | None:
        """The content change count `index` is known to match, if it is the one in memory."""
        with self.lock:
            return self._change_count if self._index is index else None

    def committed(self, index: HnswIndex, known: int | None, commits: int) -> None:
        """`commits` transactions of ours (each bumping the content change count once) were
        added to `index` since it matched `known`; or, with `known` None, it is unknown."""
        with self.lock:
            if self._index is index:
                with self._store.read() as conn:
                    now = change_counters.read(conn, change_counters.CONTENT)
                self._change_count = self._follow(known, commits, now)
                self._edits += 1

    def revive(self, text_ids: list[int], count: int | None) -> None:
        """Texts that had no live row come back (a re-import): add them again."""
        with self.lock:
            index, model_id = self._index, self._model_id
            if index is None:
                return
            with self._store.read() as conn:
                for ids, vecs in embedding_store.iter_embeddings(conn, model_id, index.dim,
                                                              text_ids=text_ids):
                    index.add(ids, vecs)
            self._change_count = self._follow(self._change_count, 1, count)
            self._edits += 1
            self.changed()

    def forget(self, text_ids: set[int], count: int | None) -> None:
        """Texts no live row uses any more leave the index (marked deleted), which is saved."""
        with self.lock:
            if self._index is not None and text_ids:
                self._index.mark_deleted(np.fromiter(text_ids, np.int64))
                self._change_count = self._follow(self._change_count, 1, count)
                self._edits += 1
                self._save(self._index, self._model_id)
            self.changed()

    def install(self, model_id: int, index: HnswIndex) -> None:
        """Serve `index` for `model_id` from now on (activating a version), completed with
        rows added or deleted while it was prepared. Callers switch the encoder in the same
        step, holding `lock`."""
        with self.lock:
            if reconcile(self._store, index, model_id).changed:
                self._save(index, model_id)  # not yet ours: saved unstamped
            self._index, self._model_id = index, model_id
            self._change_count = None  # saved unstamped: the next open reconciles once
            self.changed()

    def drop_unless(self, model_id: int) -> None:
        """Another model serves now: the index of the previous one leaves memory."""
        with self.lock:
            if self._model_id != model_id:
                self._index, self._model_id, self._change_count = None, None, None
                self.changed()

    def changed(self) -> None:
        """What the index answers has changed: cached searches are stale."""
        self.generation += 1
        self.cache.clear()

    # -- saving ----------------------------------------------------------------------------
    def save(self) -> None:
        with self.lock:
            if self._index is not None and not self._store.read_only:
                self._save(self._index, self._model_id)

    def _save(self, index: HnswIndex, model_id: int) -> None:
        count = self._change_count if index is self._index else None
        with self._store.write() as conn:
            save_index(conn, model_id, index, change_count=count)

    @staticmethod
    def _follow(known: int | None, steps: int, now: int | None) -> int | None:
        """The change count an index matches after `steps` bumps of our own: exact only
        when every bump since `known` was ours (another writer's would be missing)."""
        if known is None or now is None or now != known + steps:
            return None
        return now
