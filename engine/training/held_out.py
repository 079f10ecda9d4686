"""How well a model tells duplicates apart on held-out pairs, before and after training.

The numbers come from `engine.pair_metrics`, as every AP and F1 in Duplens does: average
precision and best F1 in percent, with the cosine threshold that reaches that F1, so a
fine-tuned model's result reads the same as `duplens eval pairs` and the review's plot.
Scores are kept per pair, so a caller can show which pairs a new model judges differently
(`changed_verdicts`), and the precision-recall curve is kept for plotting.

A pair counts as a duplicate when its label is 0.5 or more; a model calls it one when its
cosine similarity is at or above the threshold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from engine.errors import InputError
from engine.pair_metrics import sampled_points, threshold_curve
from engine.progress import CancelToken, Progress, ProgressCallback, RateMeter, no_progress
from engine.training.pairs import LabelledPair

if TYPE_CHECKING:  # pragma: no cover
    from sentence_transformers import SentenceTransformer

    from engine.encoding.encoder import SentenceEncoder

MAX_CURVE_POINTS = 200  # enough for a smooth plot of any number of pairs
_CHUNK_TEXTS = 512  # texts encoded between progress reports and cancel checks


@dataclass(frozen=True)
class CurvePoint:
    threshold: float  # cosine similarity at or above which pairs are called duplicates
    precision: float  # 0-1
    recall: float  # 0-1


@dataclass(frozen=True)
class PairMetrics:
    average_precision: float  # percent, as evaluate_pairs reports it
    f1: float  # best F1 over thresholds, percent
    threshold: float  # the cosine similarity reaching that F1
    precision: float  # at that threshold, percent
    recall: float  # at that threshold, percent
    pairs: int
    positives: int
    curve: list[CurvePoint]  # by rising threshold, at most MAX_CURVE_POINTS
    scores: np.ndarray  # cosine similarity of each pair, in the order given

    def as_dict(self) -> dict[str, float]:
        """The same keys and units as `engine.evaluation.evaluate_pairs`."""
        return {"average_precision": self.average_precision, "f1": self.f1,
                "threshold": self.threshold, "precision": self.precision,
                "recall": self.recall, "pairs": self.pairs, "positives": self.positives}


@dataclass(frozen=True)
class VerdictChange:
    """A pair one model calls duplicate and the other does not."""

    index: int  # position in the pairs given
    pair: LabelledPair
    before_score: float
    after_score: float
    before_duplicate: bool
    after_duplicate: bool

    @property
    def fixed(self) -> bool:
        """True when the new verdict agrees with the label (the old one, then, did not)."""
        return self.after_duplicate == self.pair.is_duplicate


def pair_scores(model: SentenceTransformer | SentenceEncoder, pairs: Sequence[LabelledPair],
                batch_size: int = 32, *, progress: ProgressCallback = no_progress,
                cancel: CancelToken | None = None, stage: str = "measuring") -> np.ndarray:
    """Cosine similarity of each pair; each distinct text is encoded once.

    Texts are encoded in chunks, reporting `stage` progress (texts done of total) and
    checking `cancel` between chunks: measuring thousands of held-out pairs takes minutes
    on a CPU, and a wizard must be able to show that and stop it (raises `Cancelled`).
    """
    texts = list(dict.fromkeys(t for p in pairs for t in (p.text_a, p.text_b)))
    if not texts:
        return np.zeros(0, dtype=np.float32)
    vectors = encode_texts(model, texts, batch_size, progress=progress, cancel=cancel,
                           stage=stage)
    row = {text: i for i, text in enumerate(texts)}
    a = vectors[[row[p.text_a] for p in pairs]]
    b = vectors[[row[p.text_b] for p in pairs]]
    return np.sum(a * b, axis=1)


def held_out_metrics(model: SentenceTransformer | SentenceEncoder,
                     pairs: Sequence[LabelledPair], batch_size: int = 32, *,
                     progress: ProgressCallback = no_progress,
                     cancel: CancelToken | None = None, stage: str = "measuring"
                     ) -> PairMetrics:
    """Encode the pairs with `model` and measure it; see `metrics_from_scores`."""
    return metrics_from_scores(pair_scores(model, pairs, batch_size, progress=progress,
                                           cancel=cancel, stage=stage),
                               [p.is_duplicate for p in pairs])


def metrics_from_scores(scores: Sequence[float] | np.ndarray,
                        labels: Sequence[bool] | np.ndarray) -> PairMetrics:
    """Average precision, best F1 and its threshold, and the precision-recall curve.

    Raises InputError unless both duplicates and non-duplicates are present: with one class
    there is nothing to rank.
    """
    scores = np.asarray(scores, dtype=float)
    labels = np.asarray(labels, dtype=int)
    curve = threshold_curve(scores, labels)
    if not curve.usable:
        raise InputError(f"measuring needs pairs labelled duplicate and not duplicate; the "
                         f"{len(labels)} held-out pairs have {curve.positives} duplicates")
    points = [CurvePoint(float(curve.thresholds[i]), float(curve.precision[i]),
                         float(curve.recall[i]))
              for i in sampled_points(curve, MAX_CURVE_POINTS)]
    return PairMetrics(
        average_precision=100 * curve.average_precision, f1=100 * curve.best_f1,
        threshold=float(curve.best_threshold), precision=100 * curve.best_precision,
        recall=100 * curve.best_recall, pairs=curve.pairs, positives=curve.positives,
        curve=points, scores=scores,
    )


def changed_verdicts(before_scores: Sequence[float] | np.ndarray,
                     after_scores: Sequence[float] | np.ndarray,
                     before_threshold: float, after_threshold: float,
                     pairs: Sequence[LabelledPair], limit: int | None = 20
                     ) -> list[VerdictChange]:
    """Pairs whose verdict differs between two models, biggest change in score first.

    Each model is judged at its own threshold (its best-F1 one, as a user would set it).
    `limit=None` returns them all.
    """
    before = np.asarray(before_scores, dtype=float)
    after = np.asarray(after_scores, dtype=float)
    if not len(before) == len(after) == len(pairs):
        raise ValueError(f"{len(before)} before and {len(after)} after scores for "
                         f"{len(pairs)} pairs")
    was, now = before >= before_threshold, after >= after_threshold
    changed = np.flatnonzero(was != now)
    order = changed[np.argsort(-np.abs(after[changed] - before[changed]), kind="stable")]
    if limit is not None:
        order = order[:limit]
    return [VerdictChange(int(i), pairs[i], float(before[i]), float(after[i]), bool(was[i]),
                          bool(now[i])) for i in order]


def encode_texts(model: SentenceTransformer | SentenceEncoder, texts: list[str],
                 batch_size: int = 32, *, progress: ProgressCallback = no_progress,
                 cancel: CancelToken | None = None, stage: str = "measuring") -> np.ndarray:
    """Normalised embeddings of `texts`, in chunks: `stage` progress (texts done of total)
    and `cancel` checked between them, as `pair_scores` explains."""
    meter = RateMeter()
    parts = []
    progress(Progress(stage, 0, len(texts)))
    for start in range(0, len(texts), _CHUNK_TEXTS):
        if cancel is not None:
            cancel.raise_if_cancelled()
        parts.append(_encode(model, texts[start:start + _CHUNK_TEXTS], batch_size))
        done = min(start + _CHUNK_TEXTS, len(texts))
        progress(Progress(stage, done, len(texts), meter.rate(done)))
    return np.concatenate(parts)


def _encode(model: SentenceTransformer | SentenceEncoder, texts: list[str],
            batch_size: int) -> np.ndarray:
    """Normalised embeddings; a SentenceEncoder is used as Duplens uses it (clipping, lock).

    A SentenceEncoder is the one the project searches with, and it lets one call at a time
    through: it is called one batch at a time, so a live search waits for a batch at most.
    """
    from engine.encoding.encoder import SentenceEncoder

    if isinstance(model, SentenceEncoder):
        step = max(1, model.batch_size)
        return np.concatenate([model.encode(texts[start:start + step])
                               for start in range(0, len(texts), step)])
    vectors = model.encode(texts, batch_size=batch_size, convert_to_numpy=True,
                           normalize_embeddings=True, show_progress_bar=False)
    return np.asarray(vectors, dtype=np.float32)
