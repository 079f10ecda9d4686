"""Where a short query appears word for word in a document, so that exactly that is shown as
its passage.

A short query's passage is the stretch of its own length that scored best
(`engine.documents.close_up`). Stretches lie on a grid of words, so for a sentence copied
from the document the best one can begin a few words late and end as late: the window
showed "…time to set up proper TestCase…" for a sentence that began two words earlier.
When the query's words appear in that order near the stretch (case and punctuation
aside), that occurrence is the passage, with the punctuation the query has around its
words where the text has it too; a query that is not a copy (reworded, mistyped) keeps
its stretch. Only what is shown moves: the score stays the stretch's.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+")   # letters and digits, as the word index splits
# The fewest words a query needs to be placed word for word: two common words in a row
# occur everywhere.
FEWEST_WORDS = 3


def verbatim_span(text: str, query: str, around: tuple[int, int]) -> tuple[int, int] | None:
    """The character span [start, end) of `query`'s words, in order, in `text` where that
    run overlaps `around` (the stretch that scored best) or lies within the query's length
    of it; the first such run, or None."""
    wanted = [(m.start(), m.end(), m.group().casefold()) for m in _WORD.finditer(query)]
    if len(wanted) < FEWEST_WORDS:
        return None
    words = [w for _, _, w in wanted]
    margin = len(query)
    lo, hi = max(0, around[0] - margin), min(len(text), around[1] + margin)
    while lo > 0 and not text[lo - 1].isspace():   # begin on a word's first character
        lo -= 1
    found = [(m.start(), m.end(), m.group().casefold()) for m in _WORD.finditer(text, lo, hi)]
    tokens = [w for _, _, w in found]
    n = len(words)
    for i in range(len(tokens) - n + 1):
        if tokens[i] != words[0] or tokens[i:i + n] != words:
            continue
        start, end = found[i][0], found[i + n - 1][1]
        head = query[:wanted[0][0]].lstrip()
        tail = query[wanted[-1][1]:].rstrip()
        if head and text[max(0, start - len(head)):start] == head:
            start -= len(head)
        if tail and text.startswith(tail, end):
            end += len(tail)
        return start, end
    return None
