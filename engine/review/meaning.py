"""Which differing words change what a question asks, and which differ only in form.

`engine.review.overlap` names the words one text has and the other lacks. Many of them
change nothing ("learn" / "learning", "quickly" / "fast"), while some that change the most
are stop words a content filter drops ("first" / "last", "not", "before" / "after"). This
module tells them apart, for the ⚠ beside a close pair:

- Forms of one word are one word: two words match when they share a lemma (LemmInflect's
  dictionary lemmas for every part of speech, so "learning" is "learn", "eggs" is "egg").
  LemmInflect is English only, ships its dictionary in its wheel (under 1 MB) and answers in
  microseconds.
- Synonyms the model agrees on are no difference: two differing words whose vectors in the
  bundled model's own word-piece embedding table (all-MiniLM-L6-v2's input embeddings, the
  mean over a word's pieces) have a cosine of at least `SYNONYM_COSINE` ("quickly" / "fast"
  0.55, "buy" / "purchase" 0.75; "add" / "multiply" 0.19, "Python" / "Java" 0.26). The table
  is memory-mapped from the model's safetensors file, so nothing is loaded up front and a
  word costs microseconds; running the encoder on each differing word instead would cost
  milliseconds a hit, on every keystroke of the search.
- What flips a meaning is never excused as a synonym (`Flips`): a number or position
  replaced by another (digits, number words, ordinals such as "first" / "last", Roman
  numerals; "two" and "2" are one value), negation on one side only ("not", "never", "no",
  "n't", "without"…, but not the open "or not" / "why not"), opposites from a small curated
  list ("best" / "worst", "gain" / "lose", "before" / "after", "add" / "multiply"), and a
  name replaced by another (a capitalised word not at a sentence's start, in a text that is
  not written in title case; "Alaska" / "Maine").

A number, position or name on one side only is named among the differing words but does
not mark the pair: "How to lose weight" / "How to lose 10 kg in 2017" asks the same thing
more precisely. benchmarks/meaning_flags.py measures these rules on Quora validation pairs.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

# Word-piece embedding cosine at or above which two differing words count as synonyms.
SYNONYM_COSINE = 0.5

# Number words and ordinals by the value they name ("one" is left out: mostly a pronoun).
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    ["zero", "_", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
     "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
     "nineteen", "twenty"]) if w != "_"}
_NUMBER_WORDS.update({"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60",
                      "seventy": "70", "eighty": "80", "ninety": "90", "hundred": "100",
                      "thousand": "1000", "million": "1000000", "billion": "1000000000",
                      "dozen": "12", "half": "0.5"})
_ORDINALS = {w: str(i + 1) for i, w in enumerate(
    ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
     "tenth", "eleventh", "twelfth"])}
_ORDINALS.update({"twentieth": "20", "hundredth": "100", "last": "last", "final": "last",
                  "penultimate": "penultimate", "next": "next", "previous": "previous"})
NEGATIONS = frozenset(
    ["not", "no", "never", "without", "none", "nobody", "nothing", "neither", "nor", "nowhere",
     "noone", "cannot", "cant", "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent",
     "wont", "wouldnt", "shouldnt", "couldnt", "hasnt", "havent", "hadnt"])
# "Is it safe or not?", "(or shouldn't)", "Why not?": a question left open, not a negation.
_OPEN_QUESTION = re.compile(r"\bor\s*\(?\s*(?:not|no|\w+n['’]?t)\b|\bwhy\s+not\b",
                            re.IGNORECASE)
_ROMAN = re.compile(r"M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})")
_ROMAN_DIGITS = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
_CAPITALS = re.compile(r"(?u)\b\w+\b|[.?!:;]")
# Opposites, by lemma: each group's members are opposite to one another.
_OPPOSITE_GROUPS = """
good bad | best worst | better worse | pro con | advantage disadvantage | positive negative
rich poor | increase decrease reduce | gain lose | buy sell | win lose | profit loss
old new young | big small little | large small | high low | cheap expensive | easy hard
easy difficult | fast slow | hot cold | male female | man woman | boy girl | husband wife
father mother | son daughter | brother sister | love hate | like dislike | true false
start stop end finish | begin end | open close | before after | above below | up down
over under | more less fewer | most least | always never | maximum minimum | max min
import export | input output | internal external | legal illegal | possible impossible
agree disagree | accept reject | pass fail | success failure | strong weak | heavy light
long short | early late | past future present | yesterday today tomorrow | day night
north south | east west | left right | top bottom | inside outside | push pull
send receive | give take | private public | online offline | free paid | upload download
encrypt decrypt | add remove | add subtract multiply divide | plus minus | odd even
same different | true fake | real fake | safe dangerous unsafe | happy sad
"""


def _opposites() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for group in _OPPOSITE_GROUPS.replace("\n", "|").split("|"):
        members = group.split()
        for word in members:
            table.setdefault(word, set()).update(m for m in members if m != word)
    return {w: frozenset(o) for w, o in table.items()}


_OPPOSITE = _opposites()


REASON_WORDS = 6   # words a reason names per side ("name: rome paris … +12 / …")


@dataclass(frozen=True)
class Flips:
    """What in two texts' differing words changes the meaning; each entry is one
    replacement ("first", "last") or, for negation, the negating words of each side."""

    numbers: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    names: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    opposites: tuple[tuple[str, str], ...] = ()
    negation: tuple[tuple[str, ...], tuple[str, ...]] | None = None

    def __bool__(self) -> bool:
        return bool(self.numbers or self.names or self.opposites or self.negation)

    def reasons(self) -> list[str]:
        """"number: first / last", "negation: not / –", … for a label."""
        def side(words: tuple[str, ...]) -> str:   # a few a side: documents have hundreds
            if len(words) > REASON_WORDS:
                return f"{' '.join(words[:REASON_WORDS])} … +{len(words) - REASON_WORDS}"
            return " ".join(words) or "–"

        out = [f"opposite: {x} / {y}" for x, y in self.opposites]
        for what, pair in (("number", self.numbers), ("name", self.names),
                           ("negation", self.negation)):
            if pair:
                out.append(f"{what}: {side(pair[0])} / {side(pair[1])}")
        return out


@lru_cache(maxsize=65536)
def lemmas(word: str) -> frozenset[str]:
    """The word (lower case) and its dictionary lemmas for every part of speech."""
    from lemminflect import getAllLemmas

    found = {word}
    for forms in getAllLemmas(word).values():
        found.update(forms)
    return frozenset(found)


def quantity(word: str, romans: frozenset[str] = frozenset()) -> str | None:
    """The number or position a word (lower case) names, None for other words: its digits
    ("25kg" and "25" are 25, "d1300" and "1300d" 1300), a number word's, an ordinal's or (in
    `romans`) a Roman numeral's value ("two", "ii" and "2" are 2, "first" and "1st" 1), or
    the position ("last", "next")."""
    if any(c.isdigit() for c in word):
        return ",".join(re.findall(r"\d+", word)) or word
    if word in romans:
        return str(_roman_value(word))
    return _NUMBER_WORDS.get(word) or _ORDINALS.get(word)


def romans(text: str) -> frozenset[str]:
    """Roman numerals written in capitals, two letters or more ("II", "XIV"), lower-cased."""
    return frozenset(t.lower() for t in re.findall(r"\b[IVXLCDM]{2,}\b", text)
                     if _ROMAN.fullmatch(t))


def _roman_value(numeral: str) -> int:
    values = [_ROMAN_DIGITS[c] for c in numeral.upper()]
    return sum(-v if i + 1 < len(values) and v < values[i + 1] else v
               for i, v in enumerate(values))


def negators(text: str, words) -> list[str]:
    """The negating words of a text (`words`: a function giving its tokens, where "n't" is
    "not"), leaving out those of an open question ("or not", "why not")."""
    return [w for w in words(_OPEN_QUESTION.sub(" ", text)) if w in NEGATIONS]


def names(text: str) -> frozenset[str]:
    """Capitalised words not at a sentence's start, lower-cased; none where most words are
    capitalised (a title-cased question names nothing by its case)."""
    found, capitals, seen, start = set(), 0, 0, True
    for token in _CAPITALS.findall(re.sub(r"(?<=\w)['’]\w+\b", "", text)):
        if token in ".?!:;":
            start = True
            continue
        if not start and token[0].isalpha():
            seen += 1
            if token[0].isupper():
                capitals += 1
                if token != "I":
                    found.add(token.lower())
        start = False
    return frozenset() if capitals * 2 > seen > 2 else frozenset(found)


def opposites(only_a: list[str], only_b: list[str]) -> tuple[tuple[str, str], ...]:
    """Pairs (a word of a, a word of b) whose lemmas are listed as opposites."""
    found = []
    for x in only_a:
        for y in only_b:
            if any(_OPPOSITE.get(lx, frozenset()) & lemmas(y) for lx in lemmas(x)):
                found.append((x, y))
    return tuple(found)


def replaced(only_a: list[str], only_b: list[str], value) -> tuple[list[str], list[str]]:
    """The words of each side whose `value` (not None) the other side's words lack."""
    va = {w: value(w) for w in only_a}
    vb = {w: value(w) for w in only_b}
    return ([w for w, v in va.items() if v is not None and v not in vb.values()],
            [w for w, v in vb.items() if v is not None and v not in va.values()])


def without_synonyms(only_a: list[str], only_b: list[str]) -> tuple[list[str], list[str]]:
    """Each side's words less those with a synonym among the other side's."""
    return ([w for w in only_a if not any(similar(w, v) for v in only_b)],
            [w for w in only_b if not any(similar(w, v) for v in only_a)])


def similar(a: str, b: str) -> bool:
    """Whether the model's word-piece embeddings call two words synonyms."""
    va, vb = word_vector(a), word_vector(b)
    return va is not None and vb is not None and float(va @ vb) >= SYNONYM_COSINE


@lru_cache(maxsize=65536)
def word_vector(word: str) -> np.ndarray | None:
    """The unit mean of the word's pieces' input embeddings in the bundled model."""
    table = _embedding_table()
    if table is None:
        return None
    tokenizer, matrix = table
    ids = tokenizer.encode(word, add_special_tokens=False).ids
    if not ids:
        return None
    vector = np.asarray(matrix[ids], dtype=np.float32).mean(axis=0)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else None


@lru_cache(maxsize=1)
def _embedding_table():
    """(tokenizer, the word-piece embedding matrix memory-mapped from the bundled model's
    safetensors file), or None where the model or its tokenizer cannot be read."""
    try:
        from tokenizers import Tokenizer

        from engine.encoding.model_spec import default_model_path

        folder = default_model_path()
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        path = folder / "model.safetensors"
        with path.open("rb") as fh:
            size = struct.unpack("<Q", fh.read(8))[0]
            header = json.loads(fh.read(size))
        entry = next(v for k, v in header.items() if k.endswith("word_embeddings.weight"))
        if entry["dtype"] != "F32":
            return None
        start = entry["data_offsets"][0]
        matrix = np.memmap(path, dtype="<f4", mode="r", offset=8 + size + start,
                           shape=tuple(entry["shape"]))
        return tokenizer, matrix
    except Exception:  # noqa: BLE001 - without the table no pair of words counts as synonyms
        return None


def warm_up() -> None:
    """Read the lemma dictionary and the tokenizer now (a fraction of a second, once)."""
    lemmas("warming")
    word_vector("warm")
