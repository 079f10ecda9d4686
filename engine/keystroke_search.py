"""The per-keystroke search: one query encoding plus one index lookup, with a small cache.

Nothing is loaded per call: the encoder and the index are held by the project; the cache
is keyed by the index's generation so it never serves results from before an update.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.store import items as item_store

if TYPE_CHECKING:  # pragma: no cover
    from engine.encoding.encoder import SentenceEncoder
    from engine.index.hnsw import HnswIndex
    from engine.store.database import Store


@dataclass(frozen=True)
class SearchHit:
    id: str          # the id column's value, else the source row number
    row: int
    text: str
    score: float     # cosine similarity to the query
    item_id: int
    source_id: int
    copies: int      # rows sharing this exact (normalised) text, folded into this hit

    def as_json(self) -> dict:
        return {"id": self.id, "row": self.row, "text": self.text,
                "score": round(self.score, 6), "item_id": self.item_id,
                "source_id": self.source_id, "copies": self.copies}


class QueryCache:
    """A thread-safe LRU of recent queries' results."""

    def __init__(self, size: int = 256) -> None:
        self._size = size
        self._data: OrderedDict[tuple, list[SearchHit]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> list[SearchHit] | None:
        with self._lock:
            hits = self._data.get(key)
            if hits is not None:
                self._data.move_to_end(key)
            return hits

    def put(self, key: tuple, hits: list[SearchHit]) -> None:
        with self._lock:
            self._data[key] = hits
            self._data.move_to_end(key)
            while len(self._data) > self._size:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


def search(store: Store, encoder: SentenceEncoder, index: HnswIndex, text: str, k: int
           ) -> list[SearchHit]:
    """The k texts nearest to `text`, each as its first row; rows with the same text are
    folded into one hit (`copies`). Texts with no live row left are skipped."""
    text_ids, sims = index.query(encoder.encode([text]), k)
    return hits_for(store, text_ids, sims)[0]


def hits_for(store: Store, text_ids, sims) -> list[list[SearchHit]]:
    """Each query's neighbours (rows of `index.query`'s answer) as hits, exact copies
    folded; one read of the store for the whole batch of queries."""
    with store.read() as conn:
        rows = item_store.items_for_texts(conn, sorted({int(t) for t in
                                                        text_ids.ravel().tolist()}))
    out = []
    for ids, scores in zip(text_ids.tolist(), sims.tolist(), strict=True):
        hits = []
        for t, s in zip(ids, scores, strict=True):
            group = rows.get(t)
            if not group:
                continue
            first = group[0]
            hits.append(SearchHit(item_store.public_id(first), first["row"], first["text"],
                                  float(s), first["id"], first["source_id"], len(group)))
        out.append(hits)
    return out
