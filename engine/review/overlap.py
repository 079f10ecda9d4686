"""Why two texts match: the words they share, and the content words they do not.

A cosine similarity says how close two texts are in meaning but not why. Next to it, the
share of words both texts use (token Jaccard) tells a reworded match (low overlap) from a
near copy (high overlap), and a content word that only one text has is what a high cosine
hides: "Add two numbers" and "Multiply two numbers" score high with all-MiniLM-L6-v2 while
asking different things. Such a pair is marked, naming the words, for the analyst to look at.

Words are scikit-learn's tokens (what its `CountVectorizer` analyser gives with the pattern
below: the lower-cased text's words, one-letter words kept so "C", "R" and the "D" of
"vitamin D" count), and "content" means not one of its English stop words. Neither imports
scikit-learn (a second and more, with SciPy, on a small machine, which `duplens search` would
pay for every call): the analyser is that pattern's `findall` on the lower-cased text, and the
stop words are read from scikit-learn's own list (`_stop_words`);
tests/engine/review/test_overlap_sources.py checks both against scikit-learn. What is left of
a contraction ("what's", "don't", "I'd") is dropped before the words are cut, so the "s" of
"what's" is no word while the "S" of "Galaxy S" is. Two words are the same when their
case-folded forms are ("Straße", "STRASSE"). The comparison panel
highlights exactly the words named here (`engine.review.diff`), so what the line under it says
differs is what is marked above it.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

# scikit-learn's default pattern drops one-letter tokens; "C" versus "R" is a difference.
_TOKEN_PATTERN = r"(?u)\b\w+\b"
_TOKENS = re.compile(_TOKEN_PATTERN)
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
def _stop_words() -> frozenset[str]:
    return _english_stop_words()


def _english_stop_words() -> frozenset[str]:
    """scikit-learn's `ENGLISH_STOP_WORDS`, read from the file that defines it (a literal
    list, parsed, never run) so that scikit-learn itself is not imported; imported the
    usual way where the file is not where or what it was."""
    spec = importlib.util.find_spec("sklearn")
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            path = Path(folder) / "feature_extraction" / "_stop_words.py"
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"))
                for node in tree.body:
                    if (isinstance(node, ast.Assign) and len(node.targets) == 1
                            and getattr(node.targets[0], "id", "") == "ENGLISH_STOP_WORDS"
                            and isinstance(node.value, ast.Call) and node.value.args):
                        return frozenset(ast.literal_eval(node.value.args[0]))
            except (OSError, SyntaxError, ValueError):
                continue
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def warm_up() -> None:
    """Read the stop words now, off a thread that must not wait."""
    _stop_words()


def words(text: str) -> list[str]:
    """The text's tokens, lower-cased, as the overlap counts them (contractions' ends left
    out): what scikit-learn's `CountVectorizer(token_pattern=_TOKEN_PATTERN)
    .build_analyzer()` returns for the text without them (it lower-cases and takes the
    pattern's matches; no stop words or n-grams by default)."""
    return _TOKENS.findall(_CONTRACTION.sub("", text).lower())


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
