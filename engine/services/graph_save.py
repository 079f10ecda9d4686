"""Writing the neighbour graph into the project on a thread of its own, while the cut that
needs it goes on (`engine.services.clusters.Clusters` starts it and waits for it)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import suppress

import numpy as np

from engine.dedup.graph import KnnGraph
from engine.errors import DiskFull
from engine.store.blobs import get_blob, put_blob
from engine.store.database import Store, meta_value
from engine.store.dialects import lock


class GraphSave:
    """Writing a graph into the project on its own thread, while the cut that needs it goes
    on: at a million texts the graph is about 190 MB, and serialising, writing and
    committing it took about 1.1 s of a week's 8.7 s update (the weekly benchmark's speed
    case, timed step by step).
    SQLite and zlib do that work without the GIL, so on a second core it overlaps the cut's
    Python walk. The cut (or `graph`) waits for it before returning (`_then_saved`), so
    nothing is left running behind a caller, and the ids the cut records wait for the write
    lock as they would have. On a full disk the review goes on from memory, as before."""

    def __init__(self, store: Store, name: str, stamp: str, graph: KnnGraph) -> None:
        self._store, self._name, self._stamp, self._graph = store, name, stamp, graph
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="duplens-graph-save",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            with suppress(DiskFull), self._store.write() as conn:
                put_blob(conn, self._name, self._graph.to_bytes())
                self._store.set_meta(self._name, self._stamp, conn)
        except BaseException as exc:   # noqa: BLE001 - raised again on the caller's thread
            self._error = exc

    def wait(self) -> None:
        self._thread.join()
        if self._error is not None:
            raise self._error


def build_once_per_team(store: Store, name: str, stamp: str, k: int, labels: np.ndarray,
                        make: Callable[[], KnnGraph]) -> KnnGraph:
    """On a server, several analysts opening the review after one import would each build
    the same graph (every text's search, minutes at a million rows). The first builds (or
    updates) it with `make` holding the graph's lock, and stores it under `name` with
    `stamp`; the others wait for that lock, then read the graph it stored (checked against
    `k` and the index's `labels`) instead of making their own."""
    with store.write() as conn:
        lock(conn, f"build:{name}")
        if meta_value(conn, name) == stamp:
            data = get_blob(conn, name)
            try:
                if data:
                    return KnnGraph.from_bytes(data, k=k, labels=labels)
            except ValueError:
                pass
        graph = make()
        put_blob(conn, name, graph.to_bytes())
        store.set_meta(name, stamp, conn)
        return graph
