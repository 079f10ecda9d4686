"""Word-level differences between two texts, for the side-by-side comparison.

Words are compared case-insensitively and without surrounding punctuation, so "Python?" and
"python" count as the same word; the original spelling and spacing are kept for display.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import NamedTuple

_TOKEN = re.compile(r"\S+\s*|\s+")
_EDGE_PUNCT = re.compile(r"^\W+|\W+$")


class Span(NamedTuple):
    text: str        # the original characters, trailing whitespace included
    changed: bool    # not in the other text (at this place)


def word_diff(a: str, b: str) -> tuple[list[Span], list[Span]]:
    """Both texts cut into words, each flagged when it differs from the other text."""
    ta, tb = _TOKEN.findall(a), _TOKEN.findall(b)
    ka, kb = [_key(t) for t in ta], [_key(t) for t in tb]
    changed_a, changed_b = [True] * len(ta), [True] * len(tb)
    for block in SequenceMatcher(None, ka, kb, autojunk=False).get_matching_blocks():
        for i in range(block.size):
            changed_a[block.a + i] = False
            changed_b[block.b + i] = False
    return ([Span(t, c and bool(k)) for t, c, k in zip(ta, changed_a, ka, strict=True)],
            [Span(t, c and bool(k)) for t, c, k in zip(tb, changed_b, kb, strict=True)])


def _key(token: str) -> str:
    word = token.strip()
    return _EDGE_PUNCT.sub("", word).casefold() or word
