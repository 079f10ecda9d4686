"""Labelled examples for fine-tuning: pairs with a 0–1 label, triplets, and reading them.

A pair carries a key per side naming the question behind the text, so that splitting can keep
every pair about one question on the same side (see `split.py`). By default the key is the
normalised text (`engine.text.norm_key`): identical texts, up to case and spacing, are one
question. A file with id columns (Quora's `qid1`, `qid2`) gives the ids as keys instead.

Labels live in [0, 1]. A file may hold 0/1 verdicts, probabilities, or graded scores such as
the STS benchmark's 0–5: graded scores are divided by the smallest of 5, 10 or 100 that holds
every value (`LABEL_SCALES`), so 0–5 becomes 0–1 and a percentage becomes a fraction. A pair
with a label of 0.5 or more counts as a duplicate where an objective needs a yes or no.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from engine.errors import InputError
from engine.io import detect_format, iter_table, read_columns, require_columns
from engine.text import norm_key

DUPLICATE_AT = 0.5  # labels at or above this are "duplicate" for yes/no objectives and metrics
LABEL_SCALES = (1.0, 5.0, 10.0, 100.0)  # graded scores are divided by the first that holds all

# Column names recognised when the caller names none, first match wins (case-insensitive).
PAIR_TEXT_NAMES = (("question1", "question2"), ("sentence1", "sentence2"),
                   ("text_a", "text_b"), ("text1", "text2"), ("sentence_a", "sentence_b"),
                   ("anchor", "positive"))
LABEL_NAMES = ("is_duplicate", "label", "score", "similarity", "duplicate")
ID_NAMES = (("qid1", "qid2"), ("key_a", "key_b"), ("id_a", "id_b"), ("id1", "id2"))
TRIPLET_NAMES = ("anchor", "positive", "negative")

_TRUE = {"true", "yes"}
_FALSE = {"false", "no"}

# Fewer labelled pairs than this and fine-tuning mostly fits noise.
MIN_PAIRS = 20
# Below this share of the rarer class, the summary warns about imbalance.
MIN_CLASS_SHARE = 0.10


@dataclass(frozen=True)
class LabelledPair:
    """Two texts and how alike they are: 1 duplicate, 0 not, in between for graded scores."""

    text_a: str
    text_b: str
    label: float
    key_a: str = ""  # the question behind text_a; "" means its normalised text
    key_b: str = ""
    row: int | None = None  # data row in the file it came from, for messages

    def __post_init__(self) -> None:
        if not 0.0 <= self.label <= 1.0:
            raise ValueError(f"label must be in [0, 1], not {self.label}")
        if not self.key_a:
            object.__setattr__(self, "key_a", norm_key(self.text_a))
        if not self.key_b:
            object.__setattr__(self, "key_b", norm_key(self.text_b))

    @property
    def is_duplicate(self) -> bool:
        return self.label >= DUPLICATE_AT


@dataclass(frozen=True)
class Triplet:
    """An anchor text, a duplicate of it, and a text that is not."""

    anchor: str
    positive: str
    negative: str

    def to_pairs(self, row: int | None = None) -> list[LabelledPair]:
        """The two labelled pairs a triplet states, so every objective can train on it."""
        return [LabelledPair(self.anchor, self.positive, 1.0, row=row),
                LabelledPair(self.anchor, self.negative, 0.0, row=row)]


@dataclass
class LabelledFile:
    """What `read_labelled_file` found: the pairs, and how they were read, for the wizard."""

    pairs: list[LabelledPair]
    kind: str  # "pairs" or "triplets"
    columns: dict[str, str]  # role ("text_a", "label", "anchor"…) -> column name used
    triplets: list[Triplet] = field(default_factory=list)  # as read, for "triplets" files
    label_scale: float = 1.0  # the labels were divided by this (5 for 0–5 STS scores)
    skipped_rows: list[int] = field(default_factory=list)  # data rows with an empty text

    @property
    def note(self) -> str:
        """One line on how labels were read, "" when there is nothing to say."""
        if self.label_scale == 1.0:
            return ""
        scale = f"{self.label_scale:g}"
        return f"scores run from 0 to {scale}; they were divided by {scale} to lie in 0–1"


@dataclass(frozen=True)
class PairSummary:
    pairs: int
    positives: int  # label >= 0.5
    negatives: int
    graded: int  # labels strictly between 0 and 1
    questions: int  # distinct keys on either side
    warnings: list[str]


def read_labelled_file(path: str | os.PathLike, *,
                       text_columns: tuple[str, str] | None = None,
                       label_column: str | None = None,
                       id_columns: tuple[str, str] | None = None,
                       triplet_columns: tuple[str, str, str] | None = None,
                       sheet: str | None = None, encoding: str | None = None,
                       delimiter: str | None = None) -> LabelledFile:
    """Read labelled pairs, or triplets, from any table file Duplens reads.

    With no columns named, known names are looked for (question1/question2/is_duplicate,
    sentence1/sentence2/score, anchor/positive/negative…, see the constants above); naming
    `triplet_columns` or `text_columns` (with `label_column`) overrides that. Rows with an
    empty text are skipped and listed in `skipped_rows`; a label that is not a number fails.
    """
    path = Path(path)
    fmt = detect_format(path, sheet=sheet, encoding=encoding, delimiter=delimiter)
    available = read_columns(path, fmt)
    roles = _pick_columns(path, available, text_columns, label_column, id_columns,
                          triplet_columns)
    require_columns(path, available, list(roles.values()))
    frame = pd.concat(list(iter_table(path, fmt)), ignore_index=False)
    if "anchor" in roles:
        return _read_triplets(path, frame, roles)
    return _read_pairs(path, frame, roles)


def pairs_from_triplets(triplets: Iterable[Triplet]) -> list[LabelledPair]:
    """(anchor, positive, 1) and (anchor, negative, 0) for each triplet."""
    return [pair for triplet in triplets for pair in triplet.to_pairs()]


def summarise(pairs: Sequence[LabelledPair]) -> PairSummary:
    """Counts, and warnings with advice a person can act on before spending time training."""
    labels = np.array([p.label for p in pairs], dtype=float)
    positives = int(np.sum(labels >= DUPLICATE_AT))
    negatives = len(pairs) - positives
    graded = int(np.sum((labels > 0) & (labels < 1)))
    questions = len({k for p in pairs for k in (p.key_a, p.key_b)})
    warnings: list[str] = []
    if not pairs:
        warnings.append("There are no labelled pairs: add pairs before training.")
    elif len(pairs) < MIN_PAIRS:
        warnings.append(
            f"Only {len(pairs)} labelled pairs: with fewer than {MIN_PAIRS} fine-tuning mostly "
            f"fits noise. Label a few hundred pairs, and keep some aside to measure the result.")
    if pairs and positives == 0:
        warnings.append(
            "No pair is labelled a duplicate: the model cannot learn what a duplicate looks "
            "like. Add pairs labelled 1.")
    elif pairs and negatives == 0:
        warnings.append(
            "Every pair is labelled a duplicate: add pairs labelled 0 (not duplicate), which "
            "measuring the model before and after needs. The mnrl and triplet objectives can "
            "then learn from the duplicates alone, taking other questions as negatives.")
    elif pairs:
        share = min(positives, negatives) / len(pairs)
        if share < MIN_CLASS_SHARE:
            rare = "duplicates" if positives < negatives else "not duplicates"
            warnings.append(
                f"Only {share:.0%} of the pairs are {rare}: the model may learn to answer the "
                f"common verdict. Label more {rare}, or use mnrl, which needs duplicates only.")
    return PairSummary(len(pairs), positives, negatives, graded, questions, warnings)


# -- column choice --------------------------------------------------------------------------


def _pick_columns(path: Path, available: list[str], text_columns: tuple[str, str] | None,
                  label_column: str | None, id_columns: tuple[str, str] | None,
                  triplet_columns: tuple[str, str, str] | None) -> dict[str, str]:
    """Role -> column name, from what the caller named or from the names we know."""
    if triplet_columns is not None:
        return dict(zip(TRIPLET_NAMES, triplet_columns, strict=True))
    if text_columns is None and label_column is None:
        found = _find(available, TRIPLET_NAMES)
        if found is not None:
            return dict(zip(TRIPLET_NAMES, found, strict=True))
    texts = text_columns or _first_found(available, PAIR_TEXT_NAMES)
    found_label = _first_found(available, [(name,) for name in LABEL_NAMES])
    label = label_column or (found_label[0] if found_label else None)
    if texts is None or label is None:
        have = ", ".join(available) if available else "(none)"
        raise InputError(
            f"{path.name}: cannot tell which columns hold the labelled pairs; expected "
            f"question1, question2, is_duplicate (or sentence1, sentence2, score) or anchor, "
            f"positive, negative; columns are: {have}")
    roles = {"text_a": texts[0], "text_b": texts[1], "label": label}
    ids = id_columns or (_first_found(available, ID_NAMES) if text_columns is None else None)
    if ids is not None:
        roles.update(key_a=ids[0], key_b=ids[1])
    return roles


def _find(available: list[str], wanted: Sequence[str]) -> tuple[str, ...] | None:
    """The actual names of `wanted` columns, matched case-insensitively, if all are there."""
    lower = {name.casefold(): name for name in reversed(available)}
    names = tuple(lower.get(w.casefold(), "") for w in wanted)
    return names if all(names) else None


def _first_found(available: list[str], candidates: Sequence[Sequence[str]]
                 ) -> tuple[str, ...] | None:
    for wanted in candidates:
        found = _find(available, wanted)
        if found is not None:
            return found
    return None


# -- rows -----------------------------------------------------------------------------------


def _read_pairs(path: Path, frame: pd.DataFrame, roles: dict[str, str]) -> LabelledFile:
    frame, skipped = _without_empty_texts(frame, [roles["text_a"], roles["text_b"]])
    _require_some(path, frame, skipped)
    raw = _numbers(path, frame, roles["label"])
    scale = _label_scale(path, roles["label"], raw, frame.index)
    labels = raw / scale
    a, b = (frame[roles[side]].str.strip().to_numpy() for side in ("text_a", "text_b"))
    keys = [_id_keys(frame, roles.get(side)) for side in ("key_a", "key_b")]
    pairs = [LabelledPair(a[i], b[i], float(labels[i]), keys[0][i], keys[1][i], int(row))
             for i, row in enumerate(frame.index)]
    return LabelledFile(pairs, "pairs", roles, label_scale=scale, skipped_rows=skipped)


def _read_triplets(path: Path, frame: pd.DataFrame, roles: dict[str, str]) -> LabelledFile:
    frame, skipped = _without_empty_texts(frame, [roles[name] for name in TRIPLET_NAMES])
    _require_some(path, frame, skipped)
    columns = [frame[roles[name]].str.strip().to_numpy() for name in TRIPLET_NAMES]
    triplets: list[Triplet] = []
    pairs: list[LabelledPair] = []
    for i, row in enumerate(frame.index):
        triplet = Triplet(*(column[i] for column in columns))
        triplets.append(triplet)
        pairs.extend(triplet.to_pairs(row=int(row)))
    return LabelledFile(pairs, "triplets", roles, triplets=triplets, skipped_rows=skipped)


def _without_empty_texts(frame: pd.DataFrame, columns: list[str]
                         ) -> tuple[pd.DataFrame, list[int]]:
    """The rows whose texts all have something in them, and the numbers of the others."""
    usable = np.logical_and.reduce([frame[c].str.strip().to_numpy() != "" for c in columns])
    return frame[usable], [int(row) for row in frame.index[~usable]]


def _id_keys(frame: pd.DataFrame, column: str | None) -> list[str]:
    """"id:<value>" keys from an id column; "" (the text decides) where there is no id."""
    if column is None:
        return [""] * len(frame)
    return [f"id:{value}" if value else "" for value in frame[column].str.strip()]


def _require_some(path: Path, frame: pd.DataFrame, skipped: list[int]) -> None:
    if frame.empty:
        raise InputError(f"{path.name}: no usable rows; all {len(skipped)} rows have an empty "
                         f"text")


def _numbers(path: Path, frame: pd.DataFrame, column: str) -> np.ndarray:
    """The label column as floats; true/false and yes/no count as 1/0, anything else fails."""
    cells = frame[column].str.strip()
    lowered = cells.str.casefold()
    cells = cells.mask(lowered.isin(_TRUE), "1").mask(lowered.isin(_FALSE), "0")
    values = pd.to_numeric(cells, errors="coerce")
    bad = values.isna().to_numpy()
    if bad.any():
        first = int(frame.index[bad][0])
        shown = frame[column].to_numpy()[bad][0]
        raise InputError(f"{path.name}: column {column!r} must hold numbers; data row {first} "
                         f"has {shown!r} ({int(bad.sum())} such rows)")
    return values.to_numpy(dtype=float)


def _label_scale(path: Path, column: str, values: np.ndarray, rows: pd.Index) -> float:
    """The smallest of `LABEL_SCALES` holding every label; negative or >100 labels fail."""
    low = int(np.argmin(values))
    if values[low] < 0:
        raise InputError(f"{path.name}: column {column!r} must not be negative; data row "
                         f"{int(rows[low])} has {values[low]:g}")
    top = float(values.max())
    for scale in LABEL_SCALES:
        if top <= scale:
            return scale
    high = int(np.argmax(values))
    raise InputError(f"{path.name}: column {column!r} must hold 0/1 labels or scores up to 100;"
                     f" data row {int(rows[high])} has {top:g}")
