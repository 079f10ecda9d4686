"""Gathering the training pairs of a project: review verdicts, plus an optional labelled file.

Review verdicts are keyed by the text id behind each row ("text:<id>"), so the split keeps
every pair about one question on one side even when the question was imported twice; file
pairs keep their own keys (ids or normalised texts), and the split joins the two wherever
the texts are the same. A pair given by both sources counts once, with the review's verdict:
the analyst judged it in this project, and a file is often older.

Verdicts given while checking a file whose rows are not added yet (`duplens`'s File → Check
a file; `engine.store.pending_verdicts`) are pairs as sound as review verdicts: the analyst
judged a known text (the checked row) against a known item. They come after the review's
and before a file's; the checked row has no text id yet, so its key is its normalised text,
which the split joins with the same text anywhere else. Once the rows are added, the
verdicts are review-like labels (origin "match") and no longer come from here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.errors import InputError
from engine.text import norm_key
from engine.training.pairs import (
    MIN_PAIRS,
    LabelledFile,
    LabelledPair,
    PairSummary,
    read_labelled_file,
    summarise,
)


@dataclass(frozen=True)
class TrainingInput:
    """What a fine-tuning run would learn from, and whether it may start: a wizard's first
    page. The pairs are those a run given `pairs=` trains on, so what is shown is what is
    used."""

    pairs: list[LabelledPair]  # review verdicts, checked files' verdicts, the file's new pairs
    review: int  # pairs from the review screen
    file: LabelledFile | None  # as read, with its columns and notes
    file_path: Path | None
    file_added: int  # of the file's pairs, those review had not judged already
    summary: PairSummary  # counts, class balance and advice on all the pairs
    problem: str  # why training would be refused ("" when it can start)
    asked: int = 0  # of the review pairs, those the model asked for (`duplens ask`, Ask me)
    checked: int = 0  # pairs from verdicts on checked files' rows not added yet

    @property
    def can_train(self) -> bool:
        return not self.problem


def review_pairs(rows: Iterable[dict]) -> list[LabelledPair]:
    """`Project.verdicts.pairs()` rows as `LabelledPair`s; a row paired with an exact copy of
    itself is left out, as it says nothing a model could learn."""
    pairs = []
    for row in rows:
        if row["text_id_a"] == row["text_id_b"]:
            continue
        pairs.append(LabelledPair(row["text_a"], row["text_b"], float(row["label"]),
                                  key_a=f"text:{row['text_id_a']}",
                                  key_b=f"text:{row['text_id_b']}"))
    return pairs


def checked_pairs(rows: Iterable[dict]) -> list[LabelledPair]:
    """`Matching.pending_pairs()` rows (a checked file's row against an existing row) as
    `LabelledPair`s; a row whose text is the item's own (normalised) is left out."""
    pairs = []
    for row in rows:
        if norm_key(row["text_a"]) == norm_key(row["text_b"]):
            continue
        pairs.append(LabelledPair(row["text_a"], row["text_b"], float(row["label"]),
                                  key_b=f"text:{row['text_id_b']}"))
    return pairs


def file_pairs(path: str | os.PathLike, **file_options) -> list[LabelledPair]:
    """The pairs of a labelled file; `file_options` are `read_labelled_file`'s keywords."""
    return read_labelled_file(path, **file_options).pairs


def merge_pairs(*sources: Sequence[LabelledPair]) -> list[LabelledPair]:
    """All pairs in order, each pair of texts (either way round) once, the first one kept."""
    seen: set[tuple[str, ...]] = set()
    merged = []
    for source in sources:
        for pair in source:
            key = _text_pair(pair)
            if key in seen:
                continue
            seen.add(key)
            merged.append(pair)
    return merged


def extend_pairs(pairs: Sequence[LabelledPair], more: Sequence[LabelledPair]
                 ) -> list[LabelledPair]:
    """`pairs` as they are, then the pairs of `more` whose two texts (either way round) are
    in neither `pairs` nor earlier in `more`."""
    seen = {_text_pair(p) for p in pairs}
    out = list(pairs)
    for pair in more:
        key = _text_pair(pair)
        if key not in seen:
            seen.add(key)
            out.append(pair)
    return out


def _text_pair(pair: LabelledPair) -> tuple[str, ...]:
    return tuple(sorted((norm_key(pair.text_a), norm_key(pair.text_b))))


def training_input(review_rows: Iterable[dict], extra_file: str | os.PathLike | None = None,
                   *, min_pairs: int = MIN_PAIRS, checked_rows: Iterable[dict] = (),
                   **file_options) -> TrainingInput:
    """Gather review verdicts (`Project.verdicts.pairs()` rows), the verdicts on checked
    files' rows not added yet (`Project.matching.pending_pairs()` rows) and an optional
    labelled file as `ModelVersions.training_pairs` does, and say whether
    `ModelVersions.finetune` would accept them.

    A file that cannot be read raises `InputError` with the reader's message: the caller
    shows it and keeps the review pairs. The refusal is `session.check_pairs`' own message,
    so the wizard and the engine never disagree about what is enough.
    """
    from engine.training.objectives import DEFAULT_OBJECTIVE
    from engine.training.session import check_pairs

    review_rows = list(review_rows)
    review = review_pairs(review_rows)
    asked = sum(1 for row in review_rows if row.get("origin") == "asked"
                and row["text_id_a"] != row["text_id_b"])
    labelled = None
    pairs = extend_pairs(review, checked_pairs(checked_rows))
    checked = len(pairs) - len(review)
    if extra_file is not None:
        labelled = read_labelled_file(extra_file, **file_options)
        pairs = merge_pairs(pairs, labelled.pairs)
    try:
        check_pairs(pairs, DEFAULT_OBJECTIVE, min_pairs)
        problem = ""
    except InputError as exc:
        problem = str(exc)
    return TrainingInput(pairs, len(review), labelled,
                         Path(extra_file) if extra_file is not None else None,
                         len(pairs) - len(review) - checked, summarise(pairs), problem, asked,
                         checked)
