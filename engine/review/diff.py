"""Which words of two texts differ, for the side-by-side comparison.

A word is marked when it holds a content word the other text lacks anywhere: exactly the
words `engine.review.overlap` names under the comparison ("differs: add / multiply"), so the
highlighting and that line never disagree. Words both texts use are never marked, even where
they stand in another place or order ("rain forecast" / "forecast of rain"): a moved word is
no difference in meaning, and marking it would point the analyst at the wrong words. The
original spelling and spacing are kept for display.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from engine.review.overlap import overlap, words

_TOKEN = re.compile(r"\S+\s*|\s+")


class Span(NamedTuple):
    text: str        # the original characters, trailing whitespace included
    changed: bool    # holds a content word the other text lacks


def word_diff(a: str, b: str) -> tuple[list[Span], list[Span]]:
    """Both texts cut into words, each flagged when it holds a differing content word."""
    found = overlap(a, b)
    return _flagged(a, found.only_a), _flagged(b, found.only_b)


def _flagged(text: str, differing: tuple[str, ...]) -> list[Span]:
    keys = {w.casefold() for w in differing}
    return [Span(t, any(w.casefold() in keys for w in words(t)))
            for t in _TOKEN.findall(text)]
