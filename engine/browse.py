"""Which rows a table shows and in what order, as an array of item ids.

A project can hold millions of rows. A view over it keeps only this array (8 bytes a row)
and reads the rows of the page on screen by id, so sorting or filtering never loads the
rows themselves, and a page costs the same at the end of the table as at its start (paging
with OFFSET re-reads every row before the page).

The database sorts (only ids come back). Spreadsheet cells are stored as strings, so a
sample of the column decides first whether it holds numbers ("9" before "10") or words
(sorted regardless of case).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

SORT_IMPORT = "import"        # import order (the rows' ids)
SORT_TEXT = "text"            # the text that is encoded
SORT_PUBLIC_ID = "public_id"  # the row's own id, else its row number
FILTER_TEXT = None            # filter_column: look at the text only
FILTER_ALL = "*"              # filter_column: the text and every original column


@dataclass(frozen=True)
class RowQuery:
    """What the analyst asked of the table: a filter and one sort key.

    `sort` is SORT_IMPORT, SORT_TEXT, SORT_PUBLIC_ID or an original column's name;
    `filter_column` is FILTER_TEXT, FILTER_ALL or an original column's name.
    """

    sort: str = SORT_IMPORT
    descending: bool = False
    text_filter: str = ""
    filter_column: str | None = FILTER_TEXT

    def filter_columns(self, columns: Sequence[str]) -> list[str] | None:
        """The original columns the filter looks in, besides the text (None: text only)."""
        if self.filter_column is FILTER_TEXT:
            return None
        if self.filter_column == FILTER_ALL:
            return list(columns)
        return [self.filter_column]


NUMBER_SAMPLE = 200


def looks_numeric(values: Sequence[object]) -> bool:
    """True when every sampled value reads as a number: such a column sorts as numbers, so
    "9" comes before "10"."""
    if not values:
        return False
    try:
        for v in values:
            float(str(v).replace(",", "") if isinstance(v, str) else v)
    except ValueError:
        return False
    return True


def sorted_ids(ids: np.ndarray, keys: Sequence[object], descending: bool = False
               ) -> np.ndarray:
    """`ids` reordered by `keys` (one per id), as numbers when they all are, else as
    case-folded text; ties keep the order of `ids`. For small in-memory lists (the labelled
    rows of a review cut); the store sorts whole tables itself."""
    if looks_numeric(keys):
        values: list = [float(str(k).replace(",", "")) for k in keys]
    else:
        values = [str(k).casefold() for k in keys]
    # sorted(reverse=True) keeps equal keys in their original order too
    order = sorted(range(len(values)), key=values.__getitem__, reverse=descending)
    return ids[np.asarray(order, dtype=np.int64)] if order else ids[:0]


def order_by_notes(ids: np.ndarray, notes: Mapping[int, object], descending: bool = False
                   ) -> np.ndarray:
    """`ids` with a note first, ordered by it (e.g. cluster id or verdict), then those
    without; ties keep the order of `ids`.

    For columns that come from the latest review cut rather than from the store: the notes
    cover the clustered rows only, a small share of a big project.
    """
    if not notes:
        return ids
    noted = np.fromiter(notes.keys(), dtype=np.int64, count=len(notes))
    mask = np.isin(ids, noted)
    head = ids[mask]
    keys = [notes[int(i)] for i in head]
    return np.concatenate([sorted_ids(head, keys, descending), ids[~mask]])
