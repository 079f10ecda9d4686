"""Silver pairs: which unlabelled pairs the second opinion labels, and labelling them.

Augmented SBERT (Thakur et al., NAACL 2021) trains a bi-encoder on the analyst's verdicts
("gold") plus pairs a cross-encoder judged ("silver", `engine.training.cross_encoder`). The
paper samples the pairs to label by semantic search with the bi-encoder itself; Duplens
already holds that search as the neighbour graph (`engine.dedup.graph.KnnGraph`), so the
candidates are the graph's pairs, each unordered pair once.

Only pairs whose bi-encoder similarity lies within `band` of the threshold are taken,
closest first. Far above the threshold the bi-encoder already calls a pair a duplicate and
the judge mostly agrees; far below, the same for "not a duplicate": a label there teaches
little and changes no decision. Around the threshold the bi-encoder is unsure, its verdicts
flip with small moves, and a second opinion there moves pairs across the line the analyst
sees. Closest first also means a small `limit` spends the judge's time where it matters.

Pairs touching any text of the held-out pairs are never taken. The held-out AP measures the
fine-tuned bi-encoder against the analyst's verdicts on texts it never trained on; silver
about those texts would carry the judge's reading of them (the judge itself learnt from the
analyst's verdicts) into training, and the held-out figure would then measure how well the
bi-encoder copies the judge near the held-out texts, not how well it generalises. Pairs the
analyst already judged are skipped too: gold outranks silver.

A silver label is the judge's probability, kept as it is (0..1, a soft label): a pair at 0.55
is an unsure duplicate, and the objectives that read labels as numbers (cosine) learn that;
those that need a yes or no read it at 0.5 (`LabelledPair.is_duplicate`). Each silver pair's
keys are its text ids ("text:<id>", as review verdicts key theirs, `collect.review_pairs`),
so splitting by question groups (validation, `split.py`) keeps it with the gold pairs about
the same texts.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from engine.progress import CancelToken, ProgressCallback, no_progress
from engine.training.pairs import LabelledPair

if TYPE_CHECKING:  # pragma: no cover
    from sentence_transformers import CrossEncoder

    from engine.dedup.graph import KnnGraph

DEFAULT_BAND = 0.15  # cosine similarity either side of the threshold
# Similarities are float32: a pair exactly at the band's edge may be stored a hair beyond it.
_EDGE = 1e-6


@dataclass(frozen=True)
class SilverCandidate:
    """An unlabelled pair of the neighbour graph: two text ids (id_a < id_b) and the
    bi-encoder's cosine similarity between them."""

    id_a: int
    id_b: int
    similarity: float


def silver_candidates(graph: KnnGraph, threshold: float, *, band: float = DEFAULT_BAND,
                      limit: int, exclude_keys: Collection[int] = frozenset(),
                      labelled: Collection[tuple[int, int]] = frozenset()
                      ) -> list[SilverCandidate]:
    """The graph's pairs within `band` of `threshold`, closest to it first, at most `limit`.

    `exclude_keys`: text ids (the held-out pairs' texts) no returned pair may touch.
    `labelled`: pairs of text ids already judged, either way round, which are skipped. Each
    unordered pair comes once (a pair held in both texts' rows with two similarities takes
    the higher). Ties in closeness go by (id_a, id_b): the same graph gives the same list.
    """
    if band < 0 or limit < 0:
        raise ValueError(f"band and limit must not be negative, not {band} and {limit}")
    ids = np.asarray(graph.ids, dtype=np.int64)
    n = len(ids)
    if n > 1 and np.any(np.diff(ids) <= 0):
        raise ValueError("a neighbour graph's text ids ascend (KnnGraph)")
    rows = graph.row_of_entries().astype(np.int64)
    cols = np.asarray(graph.indices, dtype=np.int64)
    sims = np.asarray(graph.sims, dtype=np.float32)
    distance = np.abs(sims.astype(np.float64) - threshold)
    keep = (distance <= band + _EDGE) & (rows != cols)
    excluded = _positions(ids, np.fromiter(exclude_keys, dtype=np.int64, count=-1))
    if len(excluded):
        banned = np.zeros(n, dtype=bool)
        banned[excluded] = True
        keep &= ~banned[rows] & ~banned[cols]
    low, high = np.minimum(rows, cols)[keep], np.maximum(rows, cols)[keep]
    sims, distance = sims[keep], distance[keep]
    # ids ascend, so positions order as ids do: one int64 key per unordered pair.
    key = low * max(n, 1) + high
    first = np.lexsort((-sims, key))  # each pair's highest similarity first
    key, low, high, sims, distance = (a[first] for a in (key, low, high, sims, distance))
    once = np.r_[True, key[1:] != key[:-1]] if len(key) else np.zeros(0, dtype=bool)
    once &= ~np.isin(key, _labelled_keys(ids, labelled))
    key, low, high, sims, distance = (a[once] for a in (key, low, high, sims, distance))
    order = np.lexsort((key, distance))[:limit]
    return [SilverCandidate(int(ids[low[i]]), int(ids[high[i]]), float(sims[i]))
            for i in order]


def label_silver(model: CrossEncoder, candidates: Sequence[SilverCandidate],
                 text_of: Callable[[int], str], batch_size: int = 64, *,
                 progress: ProgressCallback = no_progress,
                 cancel: CancelToken | None = None,
                 prior: Callable[[Sequence[tuple[str, str]]], np.ndarray] | None = None
                 ) -> list[LabelledPair]:
    """The candidates as labelled pairs, labelled with the judge's probability (0..1).

    `text_of(text_id)` gives a text. Keys are "text:<id>", as review verdicts' are. Progress
    and cancel as `cross_encoder.score_pairs` reports and honours them. `prior`: a residual
    judge's prior logits of text pairs (`second_opinion.PriorLogits`).
    """
    from engine.training.cross_encoder import score_pairs

    texts = [(text_of(c.id_a), text_of(c.id_b)) for c in candidates]
    probabilities = score_pairs(model, texts, batch_size, progress=progress, cancel=cancel,
                                prior=prior(texts) if prior is not None and texts else None)
    return [LabelledPair(a, b, float(p), key_a=f"text:{c.id_a}", key_b=f"text:{c.id_b}")
            for (a, b), p, c in zip(texts, probabilities, candidates, strict=True)]


def _positions(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Positions in `ids` (ascending) of those of `wanted` it holds."""
    at = np.searchsorted(ids, wanted)
    found = at < len(ids)
    found[found] = ids[at[found]] == wanted[found]
    return at[found]


def _labelled_keys(ids: np.ndarray, labelled: Collection[tuple[int, int]]) -> np.ndarray:
    """The pair keys (as in `silver_candidates`) of the labelled pairs whose two texts are
    both in the graph."""
    if not labelled:
        return np.zeros(0, dtype=np.int64)
    pairs = np.array([(int(a), int(b)) for a, b in labelled], dtype=np.int64).reshape(-1, 2)
    a, b = np.searchsorted(ids, pairs[:, 0]), np.searchsorted(ids, pairs[:, 1])
    n = len(ids)
    inside = (a < n) & (b < n)
    inside[inside] = (ids[a[inside]] == pairs[inside, 0]) & (ids[b[inside]] == pairs[inside, 1])
    a, b = a[inside], b[inside]
    return np.minimum(a, b) * max(n, 1) + np.maximum(a, b)
