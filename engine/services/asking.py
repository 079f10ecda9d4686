"""`Asking`: the pairs the model would most like a verdict on, and the verdicts it gets.

Candidates are the edges of the neighbour graph the duplicate clusters are cut from
(`Clusters.graph`): every pair a cut could join or split. The ones offered sit nearest the
threshold the project cuts at (calibrated on the analyst's verdicts once there are enough,
else 0.8), spread out so that one question or one topic does not fill the list
(`engine.review.picking`). A pair already judged is never offered again. Offers are
remembered (schema v3), and a verdict on an offered pair is stored with origin "asked",
however it comes in, so fine-tuning can say how many of its verdicts were asked for.

With `by_disagreement`, the pairs come where the model and the active version's second
opinion (its judge, `ModelVersions.second_opinion_scores`) disagree, surest disagreement
first (`engine.review.disagreement`), each carrying the judge's probability so the window
shows it without scoring the pair again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from engine.dedup.graph import KnnGraph
from engine.errors import InputError
from engine.progress import CancelToken, ProgressCallback, no_progress
from engine.review.disagreement import disagreement_cost, shortlist
from engine.review.picking import pair_vectors, pick_spread, pick_uncertain
from engine.services.clusters import DEFAULT_NEIGHBOURS, Clusters
from engine.services.project_threshold import Threshold
from engine.services.vectors import Vectors
from engine.services.verdicts import ASKED, Verdicts
from engine.store import items as item_store
from engine.store import pair_verdicts as verdict_store
from engine.store.database import Store


@dataclass(frozen=True)
class AskedRow:
    """One row of a pair on the analyst's screen (Ask me, and Measure quality's draws)."""

    item_id: int
    public_id: str     # what the user calls the row (`engine.store.items.public_id`)
    text: str


@dataclass(frozen=True)
class AskedPair:
    a: AskedRow
    b: AskedRow
    score: float       # the active model's cosine similarity
    threshold: float = 0.0   # the threshold the pair was picked around
    # The second opinion's probability that the pair is a duplicate, when it was asked
    # (pairs picked `by_disagreement`); None otherwise.
    opinion: float | None = None

    def as_json(self) -> dict:
        out = {"a": {"id": self.a.public_id, "text": self.a.text},
               "b": {"id": self.b.public_id, "text": self.b.text},
               "score": round(self.score, 4)}
        if self.opinion is not None:
            out["second_opinion"] = round(self.opinion, 4)
        return out


class Opinions(Protocol):
    """What asking needs of the model versions: whether the active model's second opinion is
    offered (`ModelVersions.second_opinion`, None when not), and its scores of text pairs, in
    order (`ModelVersions.second_opinion_scores`; InputError when none is offered)."""

    def second_opinion(self) -> dict | None: ...

    def second_opinion_scores(self, pairs: Sequence[tuple[str, str]]) -> list[float]: ...


class Asking:
    """Offer uncertain pairs, take the verdicts on them."""

    def __init__(self, store: Store, vectors: Vectors, clusters: Clusters,
                 verdicts: Verdicts, threshold: Threshold,
                 opinions: Opinions | None = None) -> None:
        self._store = store
        self._opinions = opinions
        self._vectors = vectors
        self._clusters = clusters
        self._verdicts = verdicts
        self._threshold = threshold

    def pairs(self, n: int = 20, *, neighbours: int = DEFAULT_NEIGHBOURS,
              threshold: float | None = None, by_disagreement: bool = False,
              progress: ProgressCallback = no_progress,
              cancel: CancelToken | None = None) -> list[AskedPair]:
        """Up to n unjudged pairs near `threshold` (default: the project threshold), spread
        out, most uncertain first; with `by_disagreement`, those the model and its second
        opinion disagree on first (InputError when the active model has none offered)."""
        if n < 1:
            raise InputError(f"ask for at least one pair, not {n}")
        if by_disagreement and (self._opinions is None or self._opinions.second_opinion() is None):
            # Before the graph, which can take minutes on a large project.
            raise InputError("the active model has no second opinion that read its held-out "
                             "pairs better than it did: fine-tune it with a second opinion "
                             "first (see 'duplens models')")
        graph = self._clusters.graph(neighbours, progress=progress, cancel=cancel)
        a, b, scores = _edges(graph)
        judged = {tuple(sorted((p["text_id_a"], p["text_id_b"]))) for p in self._verdicts.pairs()}
        if judged:
            keep = np.fromiter(((int(x), int(y)) not in judged for x, y in zip(a, b, strict=True)),
                               dtype=bool, count=len(a))
            a, b, scores = a[keep], b[keep], scores[keep]
        if len(a) == 0:
            return []
        index = self._vectors.index()
        vectors = pair_vectors(index.vectors(a), index.vectors(b))
        if threshold is None:
            threshold = self._threshold.current().value
        opinions: dict[int, float] = {}
        if by_disagreement:
            chosen, opinions = self._by_disagreement(scores, a, b, threshold, n, vectors)
        else:
            chosen = pick_uncertain(scores, a, b, threshold, n, vectors=vectors)
        wanted = sorted({int(t) for i in chosen for t in (a[i], b[i])})
        with self._store.read() as conn:
            rows = item_store.items_for_texts(conn, wanted)
        out = []
        for i in chosen:
            row_a, row_b = rows.get(int(a[i])), rows.get(int(b[i]))
            if row_a and row_b:   # a row deleted since the graph was built is skipped
                out.append(AskedPair(asked_row(row_a[0]), asked_row(row_b[0]),
                                     float(scores[i]), float(threshold), opinions.get(i)))
        if out and not self._store.read_only:   # a shared read-only file can still be asked
            with self._store.write() as conn:
                verdict_store.record_offers(conn, [(p.a.item_id, p.b.item_id) for p in out])
        return out

    def _by_disagreement(self, scores: np.ndarray, a: np.ndarray, b: np.ndarray,
                         threshold: float, n: int, vectors: np.ndarray
                         ) -> tuple[list[int], dict[int, float]]:
        """Positions of the pairs to ask, disagreements first, and the judge's probability
        of each one scored: the shortlist nearest the threshold is scored, then picked
        spread out as the usual order is (`pick_spread`)."""
        assert self._opinions is not None   # `pairs` refused by_disagreement without one
        short = shortlist(scores, threshold, n)
        ids = sorted({int(t) for i in short for t in (a[i], b[i])})
        with self._store.read() as conn:
            texts = item_store.texts_by_id(conn, ids)
        judged = np.asarray(self._opinions.second_opinion_scores(
            [(texts[int(a[i])], texts[int(b[i])]) for i in short]), dtype=np.float64)
        cost = disagreement_cost(scores[short], threshold, judged)
        picked = pick_spread(cost, a[short], b[short], n, vectors=vectors[short])
        return ([int(short[k]) for k in picked],
                {int(short[k]): float(judged[k]) for k in picked})

    def judge(self, item_a: int, item_b: int, verdict: int | None) -> None:
        """Store the verdict on a pair (1 duplicate, 0 not, None forget): with origin
        "asked" when the pair was offered (`pairs`), else as a review verdict."""
        with self._store.read() as conn:
            offered = verdict_store.was_offered(conn, item_a, item_b)
        self._verdicts.set_verdict(item_a, item_b, verdict, origin=ASKED if offered else "review")


def _edges(graph: KnnGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each neighbour pair once, as text ids (smaller first) and similarity."""
    n, k = graph.nbr.shape
    if n == 0 or k == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.float32)
    rows = np.repeat(np.arange(n), k)
    cols = graph.nbr.ravel().astype(np.int64)
    sims = graph.sim.ravel()
    ok = cols >= 0
    rows, cols, sims = rows[ok], cols[ok], sims[ok]
    low, high = np.minimum(rows, cols), np.maximum(rows, cols)
    _, first = np.unique(low * n + high, return_index=True)
    return graph.ids[low[first]], graph.ids[high[first]], sims[first]


def asked_row(item: dict) -> AskedRow:
    """A stored row (`engine.store.items`) as the screen shows it: its public id and text."""
    return AskedRow(int(item["id"]), item_store.public_id(item), item["text"])
