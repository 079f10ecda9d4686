"""Hard negatives: for a question, the most similar texts that are not its duplicates.

Candidates are the labelled pairs' own texts plus, optionally, other texts of the project (a
`NegativePool`: its texts, and their vectors when the caller has them, such as the project's
index, so that nothing is encoded twice). A candidate is never in the question's duplicate
group: texts joined to it by any chain of duplicate labels, or with the same normalised text.

A close text nobody labelled may still be a duplicate: on Quora many are. With
`below_positive`, a candidate must also be less similar to the question than the question's
own labelled duplicate is (sentence-transformers' `mine_hard_negatives` calls that an
absolute margin of 0), which keeps most unlabelled duplicates out while the negatives stay
hard. sentence-transformers' own `mine_hard_negatives` is not used: it knows no duplicate
groups beyond one anchor's own positives, and encodes without progress or a way to stop.

Similarities are exact (normalised vectors, chunked matrix products): mining is a one-off
before training, a few thousand questions against at most a few hundred thousand texts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from engine.progress import CancelToken, Progress, ProgressCallback, RateMeter, no_progress
from engine.text import norm_key
from engine.training.pairs import LabelledPair

if TYPE_CHECKING:  # pragma: no cover
    from sentence_transformers import SentenceTransformer

STAGE = "mining negatives"
_ENCODE_CHUNK = 256  # texts encoded between progress reports and cancel checks
_SIMILARITY_CELLS = 8_000_000  # anchors x candidates scored at once: 32 MB of float32


@dataclass(frozen=True)
class NegativePool:
    """Texts besides the pairs' own that may serve as negatives, such as a project's rows.

    `vectors`, when given, are the texts' normalised embeddings under the model being
    trained (row i for text i), e.g. read from the project's index; without them the texts
    are encoded first.
    """

    texts: Sequence[str]
    vectors: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.vectors is not None and len(self.vectors) != len(self.texts):
            raise ValueError(f"{len(self.texts)} texts but {len(self.vectors)} vectors")

    def without(self, texts: Sequence[str]) -> NegativePool:
        """The pool less `texts` (compared normalised), with their vectors."""
        gone = {norm_key(t) for t in texts}
        keep = [i for i, t in enumerate(self.texts) if norm_key(t) not in gone]
        return NegativePool([self.texts[i] for i in keep],
                            None if self.vectors is None else self.vectors[keep])


@dataclass(frozen=True)
class MinedNegatives:
    negatives: list[list[str]]  # per anchor, most similar first; may be shorter than asked
    candidates: int  # texts searched


def nearest_non_duplicates(model: SentenceTransformer, pairs: Sequence[LabelledPair],
                           anchors: Sequence[LabelledPair], per_anchor: int = 1, *,
                           pool: NegativePool | None = None, below_positive: bool = False,
                           progress: ProgressCallback = no_progress,
                           cancel: CancelToken | None = None) -> MinedNegatives:
    """Up to `per_anchor` hard negatives for the first text of each pair of `anchors`.

    `pairs` are all the labelled pairs (their texts are candidates, their duplicate labels
    make the groups); `anchors` are some of them. With `below_positive` (anchors labelled
    duplicate), a negative must be less similar to the anchor than the anchor's second text.
    Progress goes to stage "mining negatives" as texts encoded.
    """
    keys, texts, node_of = _nodes(pairs)
    extra: list[str] = []
    extra_rows: list[int] = []
    if pool is not None:
        seen = {norm_key(t) for t in texts}
        for row, text in enumerate(pool.texts):
            key = norm_key(text)
            if text.strip() and key not in seen:
                seen.add(key)
                extra.append(text)
                extra_rows.append(row)
    group = _duplicate_groups(pairs, node_of, len(keys))
    # Pool texts are unlabelled: each is a group of its own.
    group = np.concatenate([group, group.max(initial=-1) + 1 + np.arange(len(extra))])

    given = (pool.vectors[extra_rows] if pool is not None and pool.vectors is not None
             else None)
    to_encode = texts + (extra if given is None else [])
    vectors = _encode(to_encode, model, progress, cancel)
    if given is not None:
        vectors = np.concatenate([vectors, np.asarray(given, dtype=np.float32)])
    anchor_rows = np.array([node_of[p.key_a] for p in anchors], dtype=np.int64)
    ceiling = np.full(len(anchors), np.inf, dtype=np.float32)
    if below_positive:
        positive_rows = np.array([node_of[p.key_b] for p in anchors], dtype=np.int64)
        ceiling = np.einsum("ij,ij->i", vectors[anchor_rows], vectors[positive_rows])
    all_texts = texts + extra
    k = min(per_anchor, len(all_texts))
    chunk = max(1, _SIMILARITY_CELLS // max(1, len(all_texts)))
    found: list[list[str]] = []
    for start in range(0, len(anchor_rows), chunk):
        if cancel is not None:
            cancel.raise_if_cancelled()
        rows = anchor_rows[start:start + chunk]
        sims = vectors[rows] @ vectors.T
        sims[group[rows][:, None] == group[None, :]] = -np.inf
        sims[sims >= ceiling[start:start + chunk, None]] = -np.inf
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k] if k else np.empty((len(rows), 0))
        for i, cols in enumerate(top.astype(np.int64)):
            cols = cols[np.argsort(-sims[i, cols])]
            found.append([all_texts[j] for j in cols if np.isfinite(sims[i, j])])
    return MinedNegatives(found, len(all_texts))


def _nodes(pairs: Sequence[LabelledPair]) -> tuple[list[str], list[str], dict[str, int]]:
    """One node per question: its keys, its texts, and key -> node."""
    node_of: dict[str, int] = {}
    keys: list[str] = []
    texts: list[str] = []
    for p in pairs:
        for key, text in ((p.key_a, p.text_a), (p.key_b, p.text_b)):
            if key not in node_of:
                node_of[key] = len(keys)
                keys.append(key)
                texts.append(text)
    return keys, texts, node_of


def _duplicate_groups(pairs: Sequence[LabelledPair], node_of: dict[str, int], n: int
                      ) -> np.ndarray:
    """The group of each node: joined by duplicate labels, or by the same normalised text."""
    a = [node_of[p.key_a] for p in pairs if p.is_duplicate]
    b = [node_of[p.key_b] for p in pairs if p.is_duplicate]
    first_of_text: dict[str, int] = {}
    for p in pairs:  # the same text under two ids (Quora has some) is one question
        for key, text in ((p.key_a, p.text_a), (p.key_b, p.text_b)):
            same = first_of_text.setdefault(norm_key(text), node_of[key])
            if same != node_of[key]:
                a.append(same)
                b.append(node_of[key])
    links = coo_matrix((np.ones(len(a)), (a, b)), shape=(n, n))
    return connected_components(links, directed=False)[1]


def _encode(texts: list[str], model: SentenceTransformer, progress: ProgressCallback,
            cancel: CancelToken | None) -> np.ndarray:
    meter = RateMeter()
    parts = [np.empty((0, model.get_embedding_dimension()), dtype=np.float32)]
    progress(Progress(STAGE, 0, len(texts)))
    for start in range(0, len(texts), _ENCODE_CHUNK):
        if cancel is not None:
            cancel.raise_if_cancelled()
        chunk = texts[start:start + _ENCODE_CHUNK]
        parts.append(np.asarray(model.encode(chunk, batch_size=32, convert_to_numpy=True,
                                             normalize_embeddings=True,
                                             show_progress_bar=False), dtype=np.float32))
        done = start + len(chunk)
        progress(Progress(STAGE, done, len(texts), meter.rate(done)))
    return np.concatenate(parts)
