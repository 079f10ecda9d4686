"""Why two texts match: the words they share, and the content words they do not.

A cosine similarity says how close two texts are in meaning but not why. Next to it, the
share of words both texts use (token Jaccard) tells a reworded match (low overlap) from a
near copy (high overlap), and a content word that only one text has is what a high cosine
hides: "Add two numbers" and "Multiply two numbers" score high with all-MiniLM-L6-v2 while
asking different things. Such a pair is marked, naming the words, for the analyst to look at.

Words are scikit-learn's tokens (its `CountVectorizer` analyser, lower-cased, one-letter
words kept so "C", "R" and the "D" of "vitamin D" count), and "content" means not one of its
English stop words. What is left of a contraction ("what's", "don't", "I'd") is dropped before
the words are cut, so the "s" of "what's" is no word while the "S" of "Galaxy S" is. Two words
are the same when their case-folded forms are ("Straße", "STRASSE"). The comparison panel
highlights exactly the words named here (`engine.review.diff`), so what the line under it says
differs is what is marked above it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

# scikit-learn's default pattern drops one-letter tokens; "C" versus "R" is a difference.
_TOKEN_PATTERN = r"(?u)\b\w+\b"
# The end of a contraction ("what's", "don't", "I'll"): no content, and no word of its own.
_CONTRACTION = re.compile(r"(?<=\w)['’](?:s|t|d|ll|re|ve|m)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Overlap:
    """Lexical agreement of two texts."""

    jaccard: float                  # shared words / words of either, 0–1
    only_a: tuple[str, ...]         # content words of a that b lacks, in a's order
    only_b: tuple[str, ...]

    @property
    def differing(self) -> tuple[str, ...]:
        return self.only_a + self.only_b

    def marked(self, similarity: float, threshold: float) -> bool:
        """A pair the model calls a duplicate although a content word differs."""
        return similarity >= threshold and bool(self.differing)

    def note(self) -> str:
        """"overlap 0.60" or "overlap 0.60, differs: add / multiply" for a label or a cell."""
        text = f"overlap {self.jaccard:.2f}"
        if self.differing:
            text += f", differs: {' '.join(self.only_a) or '–'} / {' '.join(self.only_b) or '–'}"
        return text


@lru_cache(maxsize=1)
def _analyser() -> Callable[[str], list[str]]:
    # Imported here: scikit-learn takes about a second, and the window imports this module.
    from sklearn.feature_extraction.text import CountVectorizer

    return CountVectorizer(token_pattern=_TOKEN_PATTERN).build_analyzer()


@lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def warm_up() -> None:
    """Import the tokeniser now (a second of scikit-learn), off a thread that must not wait."""
    _analyser()
    _stop_words()


def words(text: str) -> list[str]:
    """The text's tokens, lower-cased, as the overlap counts them (contractions' ends left
    out)."""
    return _analyser()(_CONTRACTION.sub("", text))


def jaccard(a: str, b: str) -> float:
    """Shared distinct words over the distinct words of either text (1.0 for two empty)."""
    wa, wb = set(words(a)), set(words(b))
    union = wa | wb
    return len(wa & wb) / len(union) if union else 1.0


def overlap(a: str, b: str) -> Overlap:
    """Token Jaccard and the content words that only one of the texts has (a word that only
    moved is no difference)."""
    la, lb = words(a), words(b)
    wa, wb = set(la), set(lb)
    union = wa | wb
    score = len(wa & wb) / len(union) if union else 1.0
    return Overlap(score, _lacked(la, lb), _lacked(lb, la))


def is_content(word: str) -> bool:
    """Whether `word` (one of `words`' tokens) carries content: not a stop word."""
    return word not in _stop_words()


def _lacked(own: list[str], other: list[str]) -> tuple[str, ...]:
    """Content words of `own`, in order and once each, that the other text nowhere has
    (compared case-folded)."""
    other_keys = {w.casefold() for w in other}
    return tuple(dict.fromkeys(w for w in own
                               if is_content(w) and w.casefold() not in other_keys))
