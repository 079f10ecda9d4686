"""Why two texts match: the words they share, the content words they do not, and whether
one of those changes the meaning.

A cosine similarity says how close two texts are in meaning but not why. Next to it, the
share of words both texts use (token Jaccard) tells a reworded match (low overlap) from a
near copy (high overlap), and a word that only one text has is what a high cosine can hide:
"Who was the first emperor of Rome?" and "Who was the last emperor of Rome?" score 0.85 with
all-MiniLM-L6-v2 while asking different things. Such a pair is marked (⚠), naming the words,
for the analyst to look at.

Words are scikit-learn's tokens (what its `CountVectorizer` analyser gives with the pattern
below: the lower-cased text's words, one-letter words kept so "C", "R" and the "D" of
"vitamin D" count), and "content" means not one of its English stop words. Neither imports
scikit-learn (a second and more, with SciPy, on a small machine, which `duplens search` would
pay for every call): the analyser is that pattern's `findall` on the lower-cased text, and the
stop words are read from scikit-learn's own list (`_stop_words`);
tests/engine/review/test_overlap_sources.py checks both against scikit-learn. A contraction's
"n't" is the word "not" ("don't" is "do not", "can't" "can not"), and what is left of another
("what's", "I'd") is dropped before the words are cut, so the "s" of "what's" is no word while
the "S" of "Galaxy S" is. Two words are the same when they share a lemma ("eggs" / "egg",
"learning" / "learn": `engine.review.meaning`), which the overlap counts as shared too.

A word differs when the other text has no form of it. Content words that differ are named
unless the other text's differing words hold a synonym the model agrees on ("quickly" /
"fast"); stop words are named only where they flip the meaning (a number or position,
negation, an opposite: "first" / "last", "not", "before" / "after"). The pair is marked
only for what flips the meaning (`meaning.Flips`): a plain content word that differs is
named and highlighted, but Quora's duplicates differ in one about as often as its other
pairs do (benchmarks/meaning_flags.py). The comparison panel highlights exactly the words
named here (`engine.review.diff`), so what the line under it says differs is what is marked
above it.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from engine.review import meaning
from engine.review.meaning import Flips, lemmas

# scikit-learn's default pattern drops one-letter tokens; "C" versus "R" is a difference.
_TOKEN_PATTERN = r"(?u)\b\w+\b"
_TOKENS = re.compile(_TOKEN_PATTERN)
# The end of a contraction ("what's", "I'll"): no content, and no word of its own.
_CONTRACTION = re.compile(r"(?<=\w)['’](?:s|t|d|ll|re|ve|m)\b", re.IGNORECASE)
# "n't" is "not": "don't" is "do not", and a few stems change ("can't", "won't").
_NOT = re.compile(r"\b(\w*?)n['’]t\b", re.IGNORECASE)
_NOT_STEMS = {"ca": "can", "wo": "will", "sha": "shall", "ai": "is"}


@dataclass(frozen=True)
class Overlap:
    """Lexical agreement of two texts."""

    jaccard: float                  # shared words / words of either (forms of a word one)
    only_a: tuple[str, ...]         # words of a that b lacks and that may matter, a's order
    only_b: tuple[str, ...]
    flips: Flips = Flips()          # what among them changes the meaning

    @property
    def differing(self) -> tuple[str, ...]:
        return self.only_a + self.only_b

    def marked(self, similarity: float, threshold: float) -> bool:
        """A pair the model calls a duplicate although a word that flips the meaning
        differs (a number, negation, an opposite, a name)."""
        return similarity >= threshold and bool(self.flips)

    def note(self) -> str:
        """"overlap 0.60", "overlap 0.60, differs: python / java" or "overlap 0.71, differs:
        first / last (number: first / last)" for a label or a cell."""
        text = f"overlap {self.jaccard:.2f}"
        if self.differing:
            text += f", differs: {_some(self.only_a)} / {_some(self.only_b)}"
        if self.flips:
            text += f" ({'; '.join(self.flips.reasons())})"
        return text


NOTE_WORDS = 12   # differing words a note names per side: two documents differ in hundreds


def _some(words: Sequence[str]) -> str:
    """The first `NOTE_WORDS` words, and how many more ("a b c … +240"); "–" for none. A
    note is one line beside a pair; the full lists stay in `only_a` / `only_b` (and in
    `duplens search --json`)."""
    if not words:
        return "–"
    shown = " ".join(words[:NOTE_WORDS])
    return shown if len(words) <= NOTE_WORDS else f"{shown} … +{len(words) - NOTE_WORDS}"


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
    """Read the stop words, the lemmas and the model's tokenizer now, off a thread that must
    not wait (about a fifth of a second, once)."""
    _stop_words()
    meaning.warm_up()


def words(text: str) -> list[str]:
    """The text's tokens, lower-cased, as the overlap counts them: what scikit-learn's
    `CountVectorizer(token_pattern=_TOKEN_PATTERN).build_analyzer()` returns for
    `_plain(text)` (it lower-cases and takes the pattern's matches; no stop words or n-grams
    by default)."""
    return _TOKENS.findall(_plain(text).lower())


def _plain(text: str) -> str:
    """The text with "n't" written "not" and other contractions' ends left out."""
    return _CONTRACTION.sub("", _NOT.sub(
        lambda m: f"{_NOT_STEMS.get(m.group(1).lower(), m.group(1))} not", text))


def jaccard(a: str, b: str) -> float:
    """Shared distinct words over the distinct words of either text (1.0 for two empty),
    the forms of one word counting as one."""
    return _classes(list(dict.fromkeys(words(a))), list(dict.fromkeys(words(b))))[0]


def overlap(a: str, b: str) -> Overlap:
    """Token Jaccard, the words that only one of the texts has and that may matter (a word
    that only moved, or changed form, is no difference), and what among them flips the
    meaning."""
    la, lb = words(a), words(b)
    da, db = list(dict.fromkeys(la)), list(dict.fromkeys(lb))
    score, ua, ub = _classes(da, db)
    # A number or position the other text lacks ("2" and "two" are one value).
    romans = meaning.romans(a) | meaning.romans(b)
    qa, qb = meaning.replaced(ua, ub, lambda w: meaning.quantity(w, romans))
    # Opposites ("best" / "worst", "before" / "after") are never synonyms.
    opposite = meaning.opposites(ua, ub)
    fixed = set(qa) | set(qb) | {w for pair in opposite for w in pair}
    # Content words with a synonym among the other side's differing words are no change.
    ca, cb = meaning.without_synonyms(
        [w for w in ua if is_content(w) and w not in fixed and not _counted(w, romans)],
        [w for w in ub if is_content(w) and w not in fixed and not _counted(w, romans)])
    names_a, names_b = meaning.names(a), meaning.names(b)
    xa, xb = [w for w in ca if w in names_a], [w for w in cb if w in names_b]
    # Negation on one side only, the negating words shown where the other text lacks them.
    na, nb = meaning.negators(a, words), meaning.negators(b, words)
    negation = None
    if bool(na) != bool(nb):
        negation = (tuple(w for w in dict.fromkeys(na) if w not in db),
                    tuple(w for w in dict.fromkeys(nb) if w not in da))
    flips = Flips(numbers=(tuple(qa), tuple(qb)) if qa and qb else None,
                  names=(tuple(xa), tuple(xb)) if xa and xb else None,
                  opposites=opposite, negation=negation)
    keep_a = set(ca) | set(qa) | {x for x, _ in opposite} | set(negation[0] if negation else ())
    keep_b = set(cb) | set(qb) | {y for _, y in opposite} | set(negation[1] if negation else ())
    return Overlap(score, tuple(w for w in da if w in keep_a),
                   tuple(w for w in db if w in keep_b), flips)


def content_word_differs(a: str, b: str) -> bool:
    """The rule before lemmas and flips, kept to be measured against (benchmarks/
    meaning_flags.py): a content word of either text that the other lacks, compared
    case-folded, the words cut as they were then (every contraction's end dropped)."""
    la, lb = (_TOKENS.findall(_CONTRACTION.sub("", t).lower()) for t in (a, b))
    return bool(_lacked(la, lb) or _lacked(lb, la))


def is_content(word: str) -> bool:
    """Whether `word` (one of `words`' tokens) carries content: not a stop word."""
    return word not in _stop_words()


def _counted(word: str, romans: frozenset[str]) -> bool:
    return meaning.quantity(word, romans) is not None


def _classes(da: list[str], db: list[str]) -> tuple[float, list[str], list[str]]:
    """(Jaccard, a's words b has no form of, b's words a has no form of) over the distinct
    words `da` and `db`, words that share a lemma, or the same case-folded, being one."""
    parent = {w.casefold(): w.casefold() for w in da + db}

    def root(w: str) -> str:
        w = w.casefold()
        while parent[w] != w:
            parent[w] = parent[parent[w]]
            w = parent[w]
        return w

    owner: dict[str, str] = {}
    for w in list(parent):
        for lemma in lemmas(w):
            if lemma in owner:
                parent[root(w)] = root(owner[lemma])
            else:
                owner[lemma] = w
    in_a, in_b = {root(w) for w in da}, {root(w) for w in db}
    union = in_a | in_b
    score = len(in_a & in_b) / len(union) if union else 1.0
    return score, [w for w in da if root(w) not in in_b], [w for w in db if root(w) not in in_a]


def _lacked(own: list[str], other: list[str]) -> tuple[str, ...]:
    """Content words of `own`, in order and once each, that the other text nowhere has
    (compared case-folded)."""
    other_keys = {w.casefold() for w in other}
    return tuple(dict.fromkeys(w for w in own
                               if is_content(w) and w.casefold() not in other_keys))
