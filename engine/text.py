"""How row cells become one text, and when two texts count as exact duplicates."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence

_SPACES = re.compile(r"\s+")


def join_cells(cells: Sequence[str]) -> str:
    """Join the chosen text columns of a row: non-empty cells, one per line.

    A newline keeps title and body apart for a reader; the tokenizer treats it as a space.
    """
    return "\n".join(c.strip() for c in cells if c and c.strip())


def normalise(text: str) -> str:
    """The form under which texts are "the same": Unicode-compatible, case-folded, single-spaced.

    Deliberately conservative: punctuation and word order still matter, those differences are
    for the model to judge.
    """
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def norm_key(text: str) -> str:
    """A fixed-size key for the normalised text, so the unique index stays small."""
    return hashlib.sha1(normalise(text).encode("utf-8"), usedforsecurity=False).hexdigest()
