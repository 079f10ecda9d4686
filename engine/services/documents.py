"""Documents side by side: what two rows' texts share, passage by passage.

The compare pane and the exports ask it about a pair of rows. Where neither text was read in
several windows (two questions) there is nothing to show beyond the word diff, and `pair`
says None. Otherwise it matches the two texts' windows (`engine.documents.window_match`) at
the project threshold, the one threshold every view uses: the passages of A and B whose
windows match at it or above, and the share of each document that the other holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.dedup.row_clusters import Cluster
from engine.documents import minhash
from engine.documents.window_match import Passage, match_windows
from engine.services.project_threshold import Threshold
from engine.services.vectors import Vectors
from engine.store import items as item_store
from engine.store.database import Store
from engine.store.text_signatures import signatures_of
from engine.store.text_windows import read_windows, windowed_text_ids


@dataclass(frozen=True)
class DocumentPair:
    """What two rows' texts share. Spans are character offsets into `text_a` and
    `text_b`, the texts as read (a row whose text differs from an earlier row's only in
    case or spacing shares that row's text, and is shown as it)."""

    text_a: str
    text_b: str
    similarity: float        # the one similarity (the graph's, the cut's): windows or MinHash
    held_a: float            # share of A's text whose windows match into B at the threshold
    held_b: float            # share of B's text held in A
    passages: tuple[Passage, ...]   # matching passages, best first
    windows_a: int
    windows_b: int
    threshold: float
    # The estimated share of 5-word runs the two texts have in common (MinHash Jaccard),
    # where both have a signature: the other signal, shown beside the passages so the
    # analyst sees which one the similarity came from. None: one of them has no signature.
    runs_shared: float | None = None

    def as_json(self) -> dict:
        return {"similarity": round(self.similarity, 6), "held_a": round(self.held_a, 4),
                "held_b": round(self.held_b, 4), "windows_a": self.windows_a,
                "windows_b": self.windows_b, "threshold": self.threshold,
                "runs_shared": None if self.runs_shared is None
                else round(self.runs_shared, 4),
                "passages": [{"a": [p.a_start, p.a_end], "b": [p.b_start, p.b_end],
                              "similarity": round(p.similarity, 6)} for p in self.passages]}


class Documents:
    """Pairs of long texts compared window by window."""

    def __init__(self, store: Store, vectors: Vectors, threshold: Threshold) -> None:
        self._store = store
        self._vectors = vectors
        self._threshold = threshold

    def pair(self, item_a: int, item_b: int, threshold: float | None = None
             ) -> DocumentPair | None:
        """The two rows' texts matched window by window at `threshold` (default: the
        project's); None where neither was read in several windows, or a row is gone."""
        found = self.pairs([(item_a, item_b)], threshold)
        return found[0]

    def pairs(self, item_pairs: Sequence[tuple[int, int]], threshold: float | None = None
              ) -> list[DocumentPair | None]:
        """`pair` for many pairs of rows at once (an export's), reading each text's windows
        once."""
        if threshold is None:
            threshold = self._threshold.current().value
        model_id = self._vectors.model_id()
        wanted = sorted({i for pair in item_pairs for i in pair})
        with self._store.read() as conn:
            rows = item_store.items_by_ids(conn, wanted)
            text_of = {i: int(r["text_id"]) for i, r in rows.items()}
            texts = item_store.texts_by_id(conn, sorted(set(text_of.values())))
            windows = read_windows(conn, model_id, self._dim(), sorted(texts))
            signatures = signatures_of(conn, sorted(windows))
        singles_needed = sorted({t for t in text_of.values() if t not in windows})
        singles = dict(zip(singles_needed, self._vectors.vectors(singles_needed), strict=True)) \
            if singles_needed and windows else {}
        out: list[DocumentPair | None] = []
        for a, b in item_pairs:
            ta, tb = text_of.get(a), text_of.get(b)
            if ta is None or tb is None or (ta not in windows and tb not in windows):
                out.append(None)
                continue
            spans_a, vecs_a = self._side(ta, windows, singles, texts[ta])
            spans_b, vecs_b = self._side(tb, windows, singles, texts[tb])
            match = match_windows(vecs_a, spans_a, vecs_b, spans_b, cutoff=threshold)
            signed = {t: minhash.from_bytes(signatures[t]) for t in (ta, tb)
                      if t in signatures}
            similarity = minhash.with_jaccard(match.similarity, signed.get(ta),
                                              signed.get(tb))   # as the graph scores it
            runs = (minhash.jaccard(signed[ta], signed[tb]) if ta in signed and tb in signed
                    else None)
            out.append(DocumentPair(texts[ta], texts[tb], similarity, match.held_ab,
                                    match.held_ba, match.passages, len(spans_a),
                                    len(spans_b), threshold, runs))
        return out

    def export_shares(self, clusters: Sequence[Cluster], threshold: float
                      ) -> dict[int, tuple[float, float, float]] | None:
        """For an export: each non-canonical row of a cluster holding a long text, against
        its canonical, as (resemblance, share of the row in the canonical, share of the
        canonical in the row); None where the active model read no text in several windows
        (a project of questions: the export keeps its columns)."""
        with self._store.read() as conn:
            windowed = set(windowed_text_ids(conn, self._vectors.model_id()))
        if not windowed:
            return None
        pairs = [(c.canonical.item_id, m.item_id) for c in clusters
                 if any(m.text_id in windowed for m in c.members)
                 for m in c.members if m.item_id != c.canonical.item_id]
        out: dict[int, tuple[float, float, float]] = {}
        for (_, member), found in zip(pairs, self.pairs(pairs, threshold), strict=True):
            if found is None:
                continue
            size_a, size_b = len(found.text_a), len(found.text_b)
            both = (found.held_a * size_a + found.held_b * size_b) / max(size_a + size_b, 1)
            out[member] = (both, found.held_b, found.held_a)
        return out

    def _dim(self) -> int:
        return self._vectors.index().dim

    @staticmethod
    def _side(text_id: int, windows: dict, singles: dict, text: str
              ) -> tuple[np.ndarray, np.ndarray]:
        """A text's (spans, vectors): its windows, or the whole text as one window."""
        if text_id in windows:
            spans, vectors = windows[text_id]
            return spans, vectors.astype(np.float32)
        return (np.array([[0, len(text)]], dtype=np.int32),
                np.asarray(singles[text_id], dtype=np.float32).reshape(1, -1))
