"""Gathering the training pairs of a project: review verdicts, plus an optional labelled file.

Review verdicts are keyed by the text id behind each row ("text:<id>"), so the split keeps
every pair about one question on one side even when the question was imported twice; file
pairs keep their own keys (ids or normalised texts), and the split joins the two wherever
the texts are the same. A pair given by both sources counts once, with the review's verdict:
the analyst judged it in this project, and a file is often older.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from engine.text import norm_key
from engine.training.pairs import LabelledPair, read_labelled_file


def review_pairs(rows: Iterable[dict]) -> list[LabelledPair]:
    """`Project.labelled_pairs()` rows as `LabelledPair`s; a row paired with an exact copy of
    itself is left out, as it says nothing a model could learn."""
    pairs = []
    for row in rows:
        if row["text_id_a"] == row["text_id_b"]:
            continue
        pairs.append(LabelledPair(row["text_a"], row["text_b"], float(row["label"]),
                                  key_a=f"text:{row['text_id_a']}",
                                  key_b=f"text:{row['text_id_b']}"))
    return pairs


def file_pairs(path: str | os.PathLike, **file_options) -> list[LabelledPair]:
    """The pairs of a labelled file; `file_options` are `read_labelled_file`'s keywords."""
    return read_labelled_file(path, **file_options).pairs


def merge_pairs(*sources: Sequence[LabelledPair]) -> list[LabelledPair]:
    """All pairs in order, each pair of texts (either way round) once, the first one kept."""
    seen: set[tuple[str, str]] = set()
    merged = []
    for source in sources:
        for pair in source:
            key = tuple(sorted((norm_key(pair.text_a), norm_key(pair.text_b))))
            if key in seen:
                continue
            seen.add(key)
            merged.append(pair)
    return merged
