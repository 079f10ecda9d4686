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
    from collections.abc import Callable, Sequence

    import numpy as np

    from engine.documents.window_finder import WindowFinder
    from engine.encoding.encoder import SentenceEncoder
    from engine.index.hnsw import HnswIndex
    from engine.store.database import Store


@dataclass(frozen=True)
class SearchHit:
    id: str          # the id column's value, else the source row number
    row: int
    text: str
    score: float     # similarity to the query (a long text: from its windows)
    item_id: int
    source_id: int
    copies: int      # rows sharing this exact (normalised) text, folded into this hit
    # A long text's passage nearest the query: (start, end) characters of `text`.
    passage: tuple[int, int] | None = None

    def matched_text(self) -> str:
        """What the query matched: a long text's passage, else the whole text. A document's
        words against the query are its passage's (the window's ∩, the command line's):
        the thousands of words around it are not what matched."""
        if self.passage is None:
            return self.text
        return self.text[self.passage[0]:self.passage[1]]

    def as_json(self) -> dict:
        out = {"id": self.id, "row": self.row, "text": self.text,
               "score": round(self.score, 6), "item_id": self.item_id,
               "source_id": self.source_id, "copies": self.copies}
        if self.passage is not None:
            out["passage"] = list(self.passage)
        return out


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


# Short queries read close up together (`read_close_up_each`): a 12-word row's 20
# candidates give about 380 stretches of its length, so 32 rows make encode calls of some
# 12,000 short texts (18 MB of vectors), wide enough to keep the bulk encoder's streams
# busy and few enough that a checked file's batch of 4,096 rows reports progress and can be
# cancelled between them.
CLOSE_UP_ROWS = 32
# Where a project holds long texts, this many nearest texts (at least) are scored from their
# windows before the k best are kept: a passage from a document's middle is close to that
# window, but only fairly close to the document's mean vector.
WIDE_CANDIDATES = 50


def search(store: Store, encoder: SentenceEncoder, index: HnswIndex, text: str, k: int,
           windows: Windows | None = None, close_up: int | None = None) -> list[SearchHit]:
    """The k texts nearest to `text`, each as its first row; rows with the same text are
    folded into one hit (`copies`). Texts with no live row left are skipped.

    With `windows` (a project holding texts read in several windows), more candidates are
    taken from the index, the texts holding the windows nearest the query join them
    (`Windows.widen`), and each long one is scored from its windows as the neighbour
    graph scores it (`window_match.pair_similarity`: its best window, or how the query
    covers it, whichever is more), with the best window's span as the hit's passage. A
    short query then reads its first `close_up` long hits close up (`read_close_up_each`;
    None: `CLOSE_UP_CANDIDATES`, 0: none, the search as it was, which
    `benchmarks/document_search.py` runs beside it), and with them the documents holding
    its words (`Windows.by_words`, `engine.documents.word_candidates`)."""
    import numpy as np

    query = encoder.encode([text])
    if windows is None or not windows.any():
        text_ids, sims = index.query(query, k)
        return hits_for(store, text_ids, sims)[0]
    from engine.documents.close_up import CLOSE_UP_CANDIDATES
    from engine.documents.word_candidates import promoted, with_word_hits

    wide = max(1, min(len(index), max(k, WIDE_CANDIDATES)))
    text_ids, sims = index.query(query, wide)
    text_ids, sims = windows.widen(text_ids[0], sims[0], query)
    count = CLOSE_UP_CANDIDATES if close_up is None else close_up
    short = count > 0 and reads_close_up(encoder, [text])[0]
    word_ids = windows.by_words([text])[0] if short else []
    text_ids, sims = with_word_hits(text_ids, sims, word_ids)
    scores, passages = windows.rescore(text_ids, sims, query[0])
    order, moved = promoted(np.argsort(-scores, kind="stable"), text_ids, windows.windowed,
                            word_ids, count)
    # All candidates in order, then the first k live ones: a text whose rows were all
    # deleted keeps its windows until the graph is rebuilt, and is skipped here.
    hits = hits_for(store, text_ids[order][None, :], scores[order][None, :], passages)[0]
    if short:
        hits = read_close_up_each(encoder, [text], query, [hits], [count + moved],
                                  short=[True])[0]
    return hits[:k]


def reads_close_up(encoder: SentenceEncoder, texts: list[str]) -> list[bool]:
    """Which queries a search reads close up: at least `FEWEST_WORDS` words, and at most
    half a window of word pieces (a longer one lies mostly outside any one window's
    stretch of its length, and its windows' cosine is not diluted)."""
    from engine.documents.close_up import FEWEST_WORDS, query_words
    from engine.encoding.windows import STRIDE_SHARE, content_tokens

    asked = [q for q, t in enumerate(texts) if query_words(t) >= FEWEST_WORDS]
    out = [False] * len(texts)
    if asked:
        half = content_tokens(encoder.max_seq_length) * STRIDE_SHARE
        tokens = encoder.token_counts([texts[q] for q in asked])
        for q, n in zip(asked, tokens, strict=True):
            out[q] = n <= half
    return out


def read_close_up_each(encoder: SentenceEncoder, texts: list[str], queries,
                       hits: list[list[SearchHit]],
                       candidates: int | Sequence[int] | None = None,
                       each: Callable[[int], None] | None = None,
                       short: Sequence[bool] | None = None) -> list[list[SearchHit]]:
    """Each query's `hits` (best first) with its first `candidates` long ones (None:
    `CLOSE_UP_CANDIDATES`) scored again on stretches of the query's length around their
    passage (`engine.documents.close_up`), where the query is short: at most half a window,
    so its windows' cosine is diluted by the rest of the window. A hit keeps the larger of
    its two scores, and takes the stretch as its passage where the stretch scored more,
    or where the query lies word for word near that stretch, exactly that
    (`engine.documents.verbatim`); then all are ordered again. Unchanged for a longer
    query, or one of fewer than `FEWEST_WORDS` words.

    Several queries at once (a batch of a checked file's rows, so that a row scores a
    document as the search would score the same text, or one search's query): the stretches
    of `CLOSE_UP_ROWS` short queries encoded together, then `each(queries read so far)`
    (where a caller reports progress or cancels). `candidates` may be one count per
    query (where each read some documents named by its words as well); `short` is
    `reads_close_up`'s answer where the caller has it already."""
    from dataclasses import replace

    from engine.documents.close_up import CLOSE_UP_CANDIDATES, close_up_each, query_words
    from engine.documents.verbatim import verbatim_span

    count = CLOSE_UP_CANDIDATES if candidates is None else candidates
    counts = [count] * len(texts) if isinstance(count, int) else list(count)
    words = [query_words(text) for text in texts]
    long_at = [[i for i, hit in enumerate(row) if hit.passage is not None][:n]
               for row, n in zip(hits, counts, strict=True)]
    wanted = [q for q in range(len(texts)) if long_at[q]]
    if short is None:
        asked = [q for q, yes in zip(wanted,
                                     reads_close_up(encoder, [texts[q] for q in wanted]),
                                     strict=True) if yes]
    else:
        asked = [q for q in wanted if short[q]]
    out = [list(row) for row in hits]
    for at in range(0, len(asked), CLOSE_UP_ROWS):
        chunk = asked[at:at + CLOSE_UP_ROWS]
        found = close_up_each(encoder.encode, [queries[q] for q in chunk],
                              [words[q] for q in chunk],
                              [[(hits[q][i].text, hits[q][i].passage) for i in long_at[q]]
                               for q in chunk])
        for q, nears in zip(chunk, found, strict=True):
            for i, near in zip(long_at[q], nears, strict=True):
                if near is None:
                    continue
                hit = out[q][i]
                # Shown: where the query lies word for word near its best stretch, if it
                # does (a copied sentence), else the stretch where it scored more.
                shown = verbatim_span(hit.text, texts[q], near.span) or (
                    near.span if near.score > hit.score else hit.passage)
                out[q][i] = replace(hit, score=max(hit.score, near.score), passage=shown)
            out[q].sort(key=lambda hit: -hit.score)
        if each is not None:
            each(at + len(chunk))
    return out


class Windows:
    """The windows of a project's long texts, as a search reads them: which texts have
    them (read once per index generation by the caller), a reader of their windows, and
    (for long queries) a reader of other texts' vectors."""

    def __init__(self, windowed, read, vectors=None, signatures=None,
                 finder: Callable[[], WindowFinder] | None = None,
                 words: Callable[[str, int], list[int]] | None = None) -> None:
        import numpy as np

        self.windowed = np.asarray(windowed, dtype=np.int64)
        self._read = read
        self._vectors = vectors
        self._signatures = signatures
        self._finder = finder
        self._words = words
        self._long_set: set[int] | None = None

    def by_words(self, queries: list[str], limit: int | None = None) -> list[list[int]]:
        """Each query's long texts that hold its words best, best first (at most `limit`,
        None: `WORD_CANDIDATES`; `engine.store.text_words`); none without a word search."""
        from engine.documents.word_candidates import WORD_CANDIDATES

        limit = WORD_CANDIDATES if limit is None else limit
        if self._words is None or not self.any() or limit <= 0:
            return [[] for _ in queries]
        # The index holds texts any model read in windows; the active model's long texts
        # are the candidates (a text it read in one window is found by its vector).
        return [[t for t in self._words(q, limit) if t in self._long] for q in queries]

    @property
    def _long(self) -> set[int]:
        if self._long_set is None:
            self._long_set = set(self.windowed.tolist())
        return self._long_set

    def any(self) -> bool:
        return bool(len(self.windowed))

    def finder(self) -> WindowFinder | None:
        """Every window of the long texts (read on first call, once per index generation
        by `Vectors.windows`); None where there is no finder."""
        return self._finder() if self._finder is not None else None

    def without_finder(self) -> Windows:
        """The same reader with candidates from the index alone: the search as it was
        before every window was scanned (`benchmarks/document_search.py` runs both)."""
        return Windows(self.windowed, self._read, self._vectors, self._signatures,
                       words=self._words)

    def without_words(self) -> Windows:
        """The same reader with no candidates named by words: the search as it was before
        (`benchmarks/document_search.py` runs both)."""
        return Windows(self.windowed, self._read, self._vectors, self._signatures,
                       self._finder)

    def widen(self, text_ids, sims, queries, wide: int = WIDE_CANDIDATES
              ) -> tuple[np.ndarray, np.ndarray]:
        """The index's candidates (`text_ids`, `sims`) and, after them, the `wide` texts
        holding the windows nearest any row of `queries` that the index did not name
        (`engine.documents.window_finder`), each with its best window's cosine (`rescore`
        scores every long candidate from its windows). Unchanged without a finder."""
        return self.widen_each([text_ids], [sims], [queries], wide)[0]

    def widen_each(self, text_ids, sims, queries, wide: int = WIDE_CANDIDATES
                   ) -> list[tuple[np.ndarray, np.ndarray]]:
        """`widen` for several queries at once (a batch of a checked file's rows: row i's
        candidates `text_ids[i]`, `sims[i]`, its vectors `queries[i]`), every window
        scanned once for the batch (`WindowFinder.nearest_texts_each`)."""
        import numpy as np

        given = [(np.asarray(t, dtype=np.int64), np.asarray(s, dtype=np.float32))
                 for t, s in zip(text_ids, sims, strict=True)]
        if self._finder is None or not self.any():
            return given
        out = []
        for (ids, scores), (found, best) in zip(
                given, self._finder().nearest_texts_each(list(queries), wide), strict=True):
            new = ~np.isin(found, ids)
            out.append((np.concatenate([ids, found[new]]),
                        np.concatenate([scores, best[new].astype(np.float32)])))
        return out

    def rescore(self, text_ids, sims, query, query_windows=None, query_signature=None
                ) -> tuple[np.ndarray, dict[int, tuple[int, int]]]:
        """The candidates' scores and each long candidate's passage nearest the query.

        `query` is the query's vector; `query_windows` its (spans, window vectors) where it
        was itself read in several windows (a long row of a checked file). A candidate or
        query read in several windows is scored from the windows (`pair_similarity`);
        two single windows keep the index's cosine. With `query_signature` (a long row's
        MinHash), a candidate with a signature scores its Jaccard where that is more, as
        the project's graph scores a pair."""
        import numpy as np

        from engine.documents.window_match import pair_similarity, window_weights

        scores = np.asarray(sims, dtype=np.float32).copy()
        text_ids = np.asarray(text_ids)
        long_at = np.flatnonzero(np.isin(text_ids, self.windowed))
        q = np.asarray(query, dtype=np.float32).reshape(1, -1)
        q_weights = None
        if query_windows is not None:
            q = np.asarray(query_windows[1], dtype=np.float32)
            q_weights = window_weights(query_windows[0])
        rescored = (np.arange(len(text_ids)) if query_windows is not None else long_at)
        read = self._read([int(text_ids[i]) for i in long_at]) if len(long_at) else {}
        passages: dict[int, tuple[int, int]] = {}
        singles = self._singles([int(text_ids[i]) for i in rescored
                                 if int(text_ids[i]) not in read]) \
            if query_windows is not None else {}
        for i in rescored:
            text_id = int(text_ids[i])
            if text_id < 0:
                continue
            found = read.get(text_id)
            if found is not None:
                spans, vectors = found
                vectors = np.asarray(vectors, dtype=np.float32)
                scores[i] = pair_similarity(q, vectors, q_weights, window_weights(spans))
                best = int(np.argmax((vectors @ q.T).max(axis=1)))
                passages[text_id] = (int(spans[best][0]), int(spans[best][1]))
            elif text_id in singles:
                scores[i] = pair_similarity(q, singles[text_id].reshape(1, -1), q_weights,
                                            None)
        if query_signature is not None and self._signatures is not None and len(long_at):
            from engine.documents.minhash import with_jaccard

            theirs = self._signatures([int(text_ids[i]) for i in long_at])
            for i in long_at:
                scores[i] = with_jaccard(float(scores[i]), query_signature,
                                         theirs.get(int(text_ids[i])))
        return scores, passages

    def _singles(self, text_ids: list[int]) -> dict:
        """Vectors of candidates read in one window (a long query is scored against them
        window by window too)."""
        if not text_ids or self._vectors is None:
            return {}
        return dict(zip(text_ids, self._vectors(text_ids), strict=True))


def hits_for(store: Store, text_ids, sims, passages: dict[int, tuple[int, int]] | None = None
             ) -> list[list[SearchHit]]:
    """Each query's neighbours (rows of `index.query`'s answer) as hits, exact copies
    folded; one read of the store for the whole batch of queries. `passages`: a long
    text's passage, by text id, for its hit."""
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
                                  float(s), first["id"], first["source_id"], len(group),
                                  (passages or {}).get(t)))
        out.append(hits)
    return out
