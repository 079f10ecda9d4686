"""A short query read against its best candidates close up: stretches of the query's own
length, encoded at search time.

A stored window holds about 190 words. A typed sentence or a pasted paragraph of 50 words
is a small part of the window that holds it, and the rest of that window dilutes the
cosine: among documents that read alike (every page of one manual), the document holding
the passage word for word was first for about half the pasted passages and a quarter of
the typed sentences (`benchmarks/document_search.py`). Comparing the query with stretches
of the document as long as itself removes the dilution, but storing every stretch of
every length is out of the question, so the search reads them only for the few
candidates it is about to show, near the window that matched best.

Why stretches of the query's word count, read in two steps (`close_up`): the query then
overlaps the stretch read by at least three quarters wherever it lies, as a passage
overlaps a window (`engine.encoding.windows`), and the work per candidate stays about one
and a half windows' worth of word pieces whatever the query's length. Why around the best
window only, widened by half a stretch each side: windows overlap by half, so a query of
at most half a window lies wholly inside some window, and the best-scoring one holds it or
borders it.

No I/O here: the caller gives the candidates' texts and best windows, and an encode
function (the project's encoder).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

# The long hits read close up per search, so a document its windows ranked below the first
# ten can still rise to the top. Chosen with `WORD_CANDIDATES` (the documents holding the
# query's words, read too) on validation queries by `benchmarks/close_up_choice.py` (the
# rule: the best found-at-1, or, within one point, the fewest documents read): 10 hits and
# 3 named by words found the document first for 92.3% of queries (pasted and typed
# alike), 10 and 5 for 92.6%, 20 and none (the count before words) for 72.9%, at 281, 319
# and 425 ms a pasted passage's search on 2 cores.
CLOSE_UP_CANDIDATES = 10
# The fewest words a stretch holds: a one- or two-word query is matched by its windows.
FEWEST_WORDS = 3

_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class CloseUp:
    """A candidate read close up: the best stretch's cosine with the query and its
    character span [start, end) in the text."""

    score: float
    span: tuple[int, int]


def query_words(text: str) -> int:
    """Words of the query, as stretches count them (runs of non-space characters)."""
    return sum(1 for _ in _WORD.finditer(text))


class _Words:
    """A text's words (character starts and ends) and the stretch of them to read: the
    best window's words widened by half a stretch each side."""

    def __init__(self, text: str, around: tuple[int, int], words: int) -> None:
        found = [(m.start(), m.end()) for m in _WORD.finditer(text)]
        self.starts = np.array([a for a, _ in found], dtype=np.int64)
        self.ends = np.array([b for _, b in found], dtype=np.int64)
        self.words = max(words, 1)
        widen = self.words // 2
        first = int(np.searchsorted(self.ends, around[0], side="right"))
        last = int(np.searchsorted(self.starts, around[1], side="left"))  # one past it
        self.first, self.last = max(0, first - widen), min(len(found), last + widen)

    def begins(self, stride: int) -> list[int]:
        """First words of the stretches one every `stride` words, the last ending at the
        region's last word; empty for a region with no words."""
        if self.last <= self.first:
            return []
        out = list(range(self.first, max(self.first + 1, self.last - self.words + 1),
                         max(1, stride)))
        if out[-1] + self.words < self.last:
            out.append(self.last - self.words)
        return out

    def shifted(self, begin: int) -> list[int]:
        """The stretches half a stretch before and after the one at `begin`, within the
        region (none that it already is)."""
        half = max(1, self.words // 2)
        top = max(self.first, self.last - self.words)
        return sorted({min(max(b, self.first), top) for b in (begin - half, begin + half)}
                      - {begin})

    def span(self, begin: int) -> tuple[int, int]:
        return (int(self.starts[begin]),
                int(self.ends[min(begin + self.words, self.last) - 1]))


def stretches(text: str, around: tuple[int, int], words: int) -> list[tuple[int, int]]:
    """Character spans of the `words`-word stretches of `text` read in the first step: in
    `around` (the best window's span) widened by half a stretch each side, one every
    stretch, the last ending at the region's last word."""
    region = _Words(text, around, words)
    return [region.span(b) for b in region.begins(region.words)]


def close_up(encode: Callable[[list[str]], np.ndarray], query: np.ndarray, words: int,
             candidates: Sequence[tuple[str, tuple[int, int]]]) -> list[CloseUp | None]:
    """Each candidate (its text and best window's span) scored by its stretch nearest the
    query (`query` the query's normalised vector, `words` its word count); None for a
    candidate with no stretch. One query's `close_up_each`."""
    return close_up_each(encode, [query], [words], [candidates])[0]


def close_up_each(encode: Callable[[list[str]], np.ndarray], queries: Sequence[np.ndarray],
                  words: Sequence[int],
                  candidates: Sequence[Sequence[tuple[str, tuple[int, int]]]]
                  ) -> list[list[CloseUp | None]]:
    """`close_up` for several queries at once (a batch of a checked file's rows: query i's
    vector `queries[i]`, word count `words[i]`, candidates `candidates[i]`), so that a row
    is scored as the search scores it, at one encode call per step for the whole batch.

    Two steps, each one encode call for all candidates: stretches end to end, then the two
    stretches half a stretch either side of each candidate's best. Wherever the query
    lies, some first-step stretch holds at least half of it, and one of that stretch and
    its two shifts at least three quarters, as a passage and the windows that overlap by
    half (`engine.encoding.windows`); at about 1.5 windows' worth of word pieces per
    candidate instead of the 2 of stretches every half stretch."""
    owners = [q for q, found in enumerate(candidates) for _ in found]
    flat = [c for found in candidates for c in found]
    vectors = np.stack([np.asarray(q, dtype=np.float32).reshape(-1) for q in queries]) \
        if len(queries) else np.zeros((0, 0), dtype=np.float32)
    regions = [_Words(text, around, words[o])
               for o, (text, around) in zip(owners, flat, strict=True)]
    first = [region.begins(region.words) for region in regions]
    best = _best(encode, vectors, owners, flat, regions, first)
    second = [region.shifted(b[0]) if b is not None else []
              for region, b in zip(regions, best, strict=True)]
    better = _best(encode, vectors, owners, flat, regions, second)
    out: list[list[CloseUp | None]] = [[] for _ in candidates]
    for owner, region, one, two in zip(owners, regions, best, better, strict=True):
        chosen = max((c for c in (one, two) if c is not None), key=lambda c: c[1],
                     default=None)
        out[owner].append(None if chosen is None
                          else CloseUp(chosen[1], region.span(chosen[0])))
    return out


def _best(encode: Callable[[list[str]], np.ndarray], queries: np.ndarray, owners: list[int],
          candidates: Sequence[tuple[str, tuple[int, int]]], regions: list[_Words],
          begins: list[list[int]]) -> list[tuple[int, float] | None]:
    """Each candidate's best stretch among those beginning at `begins`, against its own
    query (`queries[owners[i]]`): (begin, cosine), None where it has none; one encode call
    for all."""
    pieces, whose = [], []
    for (text, _), region, found, owner in zip(candidates, regions, begins, owners,
                                               strict=True):
        for b in found:
            a, e = region.span(b)
            pieces.append(text[a:e])
            whose.append(owner)
    if not pieces:
        return [None] * len(candidates)
    encoded = np.asarray(encode(pieces), dtype=np.float32)
    cosines = np.einsum("ij,ij->i", encoded, queries[np.asarray(whose)])
    out: list[tuple[int, float] | None] = []
    at = 0
    for found in begins:
        if not found:
            out.append(None)
            continue
        part = cosines[at:at + len(found)]
        top = int(np.argmax(part))
        out.append((found[top], float(part[top])))
        at += len(found)
    return out
