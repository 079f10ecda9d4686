"""`duplens eval`: quality measurements of a model on a labelled file.

`eval sts`: Spearman correlation (x100) between cosine similarity and gold scores, the STS
benchmark's metric, with sentence-transformers' own evaluator. `eval pairs`: average precision
and best F1 of cosine similarity as a duplicate detector on labelled pairs, from
`engine.pair_metrics` like every other AP and F1 in Duplens, so the figure printed here is
the one the fine-tuning wizard and the review's plot give for the same pairs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from engine.encoding.encoder import SentenceEncoder
from engine.errors import InputError
from engine.io import detect_format, iter_table, read_columns, require_columns

STS_COLUMNS = ("score", "sentence1", "sentence2")
PAIR_COLUMNS = ("question1", "question2", "is_duplicate")


@dataclass(frozen=True)
class PairsData:
    sentences1: list[str]
    sentences2: list[str]
    values: list[float]


def read_pairs(path: str | os.PathLike, columns: tuple[str, str, str], *,
               value_first: bool = False) -> PairsData:
    """Two text columns and a numeric column from any table file Duplens reads.

    `columns` is (text1, text2, value) or, with `value_first`, (value, text1, text2).
    """
    path = Path(path)
    value_col, a, b = (columns if value_first else (columns[2], columns[0], columns[1]))
    fmt = detect_format(path)
    require_columns(path, read_columns(path, fmt), [a, b, value_col])
    frame = pd.concat(list(iter_table(path, fmt)), ignore_index=False)
    values = pd.to_numeric(frame[value_col].str.strip(), errors="coerce")
    bad = values.isna()
    if bad.all():
        raise InputError(f"{path.name}: column {value_col!r} has no numbers")
    if bad.any():
        first = int(frame.index[bad.to_numpy()][0])
        raise InputError(f"{path.name}: column {value_col!r} is not a number in {int(bad.sum())}"
                         f" rows (first: data row {first})")
    return PairsData(frame[a].tolist(), frame[b].tolist(), values.astype(float).tolist())


def evaluate_sts(encoder: SentenceEncoder, path: str | os.PathLike,
                 columns: tuple[str, str, str] = STS_COLUMNS) -> dict[str, float]:
    """{"spearman": x100, "pearson": x100, "pairs": n} of cosine similarity vs gold scores."""
    from sentence_transformers.sentence_transformer.evaluation import (
        EmbeddingSimilarityEvaluator,
    )

    data = read_pairs(path, columns, value_first=True)
    evaluator = EmbeddingSimilarityEvaluator(
        data.sentences1, data.sentences2, data.values, batch_size=encoder.batch_size,
        main_similarity="cosine", similarity_fn_names=["cosine"], write_csv=False,
    )
    metrics = evaluator(encoder.model)
    return {"spearman": 100 * _metric(metrics, "spearman_cosine"),
            "pearson": 100 * _metric(metrics, "pearson_cosine"),
            "pairs": len(data.values)}


def evaluate_pairs(encoder: SentenceEncoder, path: str | os.PathLike,
                   columns: tuple[str, str, str] = PAIR_COLUMNS) -> dict[str, float]:
    """Average precision, best F1 and its cosine threshold on labelled duplicate pairs."""
    from engine.training.held_out import metrics_from_scores, pair_scores
    from engine.training.pairs import LabelledPair

    data = read_pairs(path, columns)
    labels = [int(v) for v in data.values]
    if set(labels) - {0, 1} or len(set(labels)) < 2:
        raise InputError(f"{Path(path).name}: column {columns[2]!r} must hold 0 and 1 labels, "
                         f"both present")
    pairs = [LabelledPair(a, b, float(label))
             for a, b, label in zip(data.sentences1, data.sentences2, labels, strict=True)]
    return metrics_from_scores(pair_scores(encoder, pairs), labels).as_dict()


def _metric(metrics: dict[str, float], suffix: str) -> float:
    """Evaluators prefix metric names with their `name`; find ours by its suffix."""
    for key, value in metrics.items():
        if key == suffix or key.endswith("_" + suffix):
            return float(value)
    raise KeyError(f"evaluator returned no {suffix}: {sorted(metrics)}")
