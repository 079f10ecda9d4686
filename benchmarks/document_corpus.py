"""The documents benchmark's corpus: long public documents, and near-duplicates of them built
from them with a seeded random generator (`benchmarks/documents.py` measures the methods).

The corpus is never committed. It is read from Debian's `python3.11-doc` package (the Python
3.11 documentation, PSF licence): `apt-get download python3.11-doc` into
`~/.cache/duplens-bench/python3.11-doc/` (`$DUPLENS_BENCH_CACHE` moves the folder), unpacked
with `dpkg-deb -x`; the reST sources `usr/share/doc/python3.11/html/_sources/**/*.rst.txt`
are read, `whatsnew/` (release notes that restate the library pages) and the licence pages
left out. The package's version and the .deb's SHA-256 go into the results. When the
package cannot be downloaded the benchmark says so and measures nothing: there is no
stand-in corpus.

**From reST to prose** (`rst_paragraphs`), roughly: headings (a title and its adornment
lines), comments, targets and the bodies of code-like directives (`code-block`, `index`,
`toctree`, tables, `doctest`, ... everything not in `PROSE_DIRECTIVES`) are dropped, as are
literal blocks (the indented block after a `::`), `>>>` sessions and tables; the bodies of
prose directives (`function`, `class`, `note`, `versionchanged`, ...) are kept without
their directive line. Inline markup is reduced to its text (`:func:`len`` -> len,
``x`` -> x, `link <url>`_ -> link, *x* -> x). A paragraph is a block between blank lines;
one is kept when it has at least `MIN_PARAGRAPH_WORDS` words, most of them words of letters.

**Documents** (`cut_documents`): each source file's paragraphs, in order, are cut at
paragraph boundaries into documents of 600 to 1,500 words (a document is closed once it
reaches a length drawn uniformly from 600 to 1,500, seeded by the file's name, or when the
next paragraph would take it past 1,500; a remainder under 600 words, or a paragraph over
1,500, is dropped). Documents whose word 5-gram sets overlap
an earlier document's with Jaccard >= `NEAR_DUPLICATE_JACCARD` are dropped, so no two
documents of the corpus are near-duplicates of each other before any is built
(`drop_overlapping`). A seeded shuffle then takes the *base* documents (the ones in the
table) and, from the rest, *filler* documents: the text the constructions borrow. Each
filler document is used by one construction only and never enters the table as itself, so
no two documents of the table share borrowed text.

**Cases** (`build_cases`), each a pair (a, b, kind, is_duplicate); every base document is in
at most one case, its kind dealt round-robin over the shuffled base documents (`reordered`
first takes those with at least 3 paragraphs):

- `near_copy` (duplicate): b is a with 2% of its words (at least one) replaced, each by a
  word drawn from the corpus' vocabulary (every word of every document, so by frequency)
  other than the one replaced;
- `new_intro` (duplicate): b is a new 300-word introduction (the first 300 words of a filler
  document, its paragraph breaks kept) followed by a;
- `reordered` (duplicate): b is a's paragraphs shuffled (never in a's order);
- `inside` (duplicate): b is a placed inside a longer document: a filler document cut at
  the paragraph boundary nearest its middle, a between its two halves;
- `decoy` (NOT a duplicate): b is a's first 300 words followed by a filler document's text
  (from its start, as a new paragraph) up to a's length in words: same opening, different
  document;
- `reworded` (duplicate): same content, every sentence paraphrased, from Quora's labelled
  pairs (`shared/data/quora/pairs.tsv.gz`): document A is the first questions of 60 to 120
  pairs labelled duplicate (more, up to 120, while either side has under 600 words),
  paragraphs of 6 questions; document B is the pairs' second questions in the same order,
  so each sentence of B is one Quora's annotators judged the same question as the matching
  sentence of A;
- `reworded_decoy` (NOT a duplicate): built exactly as `reworded` but from pairs labelled
  NOT duplicate: the two documents have the same shape and, sentence by sentence, questions
  that Quora users put side by side (often on the same topic) yet annotators judged
  different questions. A document-level "not duplicate" that differs from `reworded` only
  in its labels.

Each Quora pair is used once, and no question (by Quora's qid) is in two pairs used. Base
documents left without a case stay in the table as unrelated distractors. Every document
of every case (each base document once, each constructed variant) is one row of one table
(id, text); the truth is the set of duplicate pairs (by id), with every case's pair and
kind, the decoys' pairs being known non-duplicates.

**Split** (`split_groups`): the cases are split by base document (a case, with both its
documents, belongs to its a; a distractor to itself) into validation (40%) and test
(60%), seeded, per kind, so each kind has its share in both halves.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import subprocess
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

PACKAGE = "python3.11-doc"
SOURCES = Path("usr/share/doc/python3.11/html/_sources")
LEFT_OUT = ("whatsnew/", "license.rst.txt", "copyright.rst.txt")

MIN_PARAGRAPH_WORDS = 12
MIN_WORDS, CLOSE_AT, MAX_WORDS = 600, 1000, 1500
NEAR_DUPLICATE_JACCARD = 0.2
SHINGLE = 5

REPLACED_SHARE = 0.02
INTRO_WORDS = 300
DECOY_PREFIX_WORDS = 300
PARAPHRASE_PAIRS = (60, 120)
PARAPHRASE_MIN_WORDS = 600
QUESTIONS_PER_PARAGRAPH = 6
VALIDATION_SHARE = 0.4

DUPLICATE_KINDS = ("near_copy", "new_intro", "reordered", "inside", "reworded")
DECOY_KINDS = ("decoy", "reworded_decoy")
KINDS = ("near_copy", "new_intro", "reordered", "inside", "decoy", "reworded",
         "reworded_decoy")
# Kinds built from one base document of the Python docs, dealt in this order.
DOC_KINDS = ("near_copy", "new_intro", "reordered", "inside", "decoy")
# Kinds that borrow a filler document.
FILLED = ("new_intro", "inside", "decoy")

# Directives whose body is prose (kept without the directive line); every other directive,
# comment and target is dropped with its body.
PROSE_DIRECTIVES = {
    "note", "warning", "important", "tip", "caution", "attention", "hint", "danger",
    "admonition", "seealso", "versionadded", "versionchanged", "deprecated",
    "deprecated-removed", "impl-detail", "topic", "sidebar", "glossary", "describe",
    "function", "method", "class", "attribute", "data", "exception", "decorator",
    "decoratormethod", "classmethod", "staticmethod", "abstractmethod", "coroutinefunction",
    "coroutinemethod", "awaitablefunction", "awaitablemethod", "option", "cmdoption",
    "envvar", "opcode", "pdbcommand", "2to3fixer", "c:function", "c:macro", "c:type",
    "c:member", "c:var", "c:struct", "c:data", "c:enum", "c:enumerator", "index-entry",
    "availability", "only", "currentmodule",
}


class CorpusUnavailable(RuntimeError):
    """The package could not be downloaded or read: the benchmark measures nothing."""


# -- the package -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Package:
    deb: Path
    version: str
    sha256: str
    sources: Path          # the unpacked _sources folder


def fetch_package(cache: Path) -> Package:
    """`python3.11-doc`'s .deb in `cache` (downloaded with `apt-get download` when not there
    yet) and its unpacked reST sources. Raises `CorpusUnavailable` saying why."""
    cache.mkdir(parents=True, exist_ok=True)
    debs = sorted(cache.glob(f"{PACKAGE}_*.deb"))
    if not debs:
        try:
            done = subprocess.run(["apt-get", "download", PACKAGE], cwd=cache,
                                  capture_output=True, text=True, check=False, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CorpusUnavailable(f"`apt-get download {PACKAGE}` could not run: {exc}") \
                from exc
        debs = sorted(cache.glob(f"{PACKAGE}_*.deb"))
        if done.returncode != 0 or not debs:
            said = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise CorpusUnavailable(f"`apt-get download {PACKAGE}` failed "
                                    f"({done.returncode}): {' / '.join(said)}")
    deb = debs[-1]
    sha = hashlib.sha256(deb.read_bytes()).hexdigest()
    try:
        version = subprocess.run(["dpkg-deb", "-f", str(deb), "Version"], capture_output=True,
                                 text=True, check=True).stdout.strip()
        unpacked = cache / f"unpacked-{sha[:12]}"
        if not (unpacked / SOURCES).is_dir():
            subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], capture_output=True,
                           check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise CorpusUnavailable(f"{deb.name} could not be unpacked with dpkg-deb: {exc}") \
            from exc
    sources = unpacked / SOURCES
    if not sources.is_dir():
        raise CorpusUnavailable(f"{deb.name} has no {SOURCES}")
    return Package(deb=deb, version=version, sha256=sha, sources=sources)


def source_files(sources: Path) -> list[Path]:
    """The .rst.txt files read, sorted, without the ones `LEFT_OUT` names."""
    return [p for p in sorted(sources.rglob("*.rst.txt"))
            if not any(p.relative_to(sources).as_posix().startswith(x) for x in LEFT_OUT)]


# -- reST to prose ---------------------------------------------------------------------------
_ADORNMENT = re.compile(r"^([=\-`:'\"~^_*+#<>.])\1{2,}\s*$")
_SIMPLE_TABLE = re.compile(r"^\s*=+(\s+=+)+\s*$")
_GRID_TABLE = re.compile(r"^\s*(\+[-=+]+\+|\|.*\|)\s*$")
_DIRECTIVE = re.compile(r"^\.\.(?:\s+([\w:.+-]+)::|\s|$)")
_FIELD = re.compile(r"^:([^:`]+):(\s|$)")
_BULLET = re.compile(r"^(?:[-*+•]|#\.|\d+\.|\(?[a-z0-9]\))\s+")
_ROLE = re.compile(r"(?::[\w.+-]+)+:`([^`]*)`")
_LITERAL = re.compile(r"``(.+?)``")
_LINK = re.compile(r"`([^`<]*?)\s*(?:<[^`>]*>)?`__?")
_DEFAULT_ROLE = re.compile(r"`([^`]+)`")
_STRONG = re.compile(r"\*\*(.+?)\*\*")
_EMPHASIS = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")
_FOOTNOTE = re.compile(r"\s*\[(?:#\w*|\d+|\*)\]_")
_SUBSTITUTION = re.compile(r"\|([\w -]+)\|")
_LETTERS = re.compile(r"^[A-Za-z][A-Za-z'’-]*[.,;:!?)]*$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _role_text(match: re.Match) -> str:
    text = match.group(1)
    if text.endswith(">") and "<" in text:
        shown = text[:text.index("<")].strip()
        text = shown or text[text.index("<") + 1:-1]
    return text.lstrip("~!")


def inline_text(text: str) -> str:
    """A paragraph's inline markup reduced to its text, whitespace collapsed."""
    text = _FOOTNOTE.sub("", text)
    text = _ROLE.sub(_role_text, text)
    text = _LITERAL.sub(r"\1", text)
    text = _LINK.sub(lambda m: m.group(1), text)
    text = _DEFAULT_ROLE.sub(r"\1", text)
    text = _STRONG.sub(r"\1", text)
    text = _EMPHASIS.sub(r"\1", text)
    text = _SUBSTITUTION.sub(r"\1", text)
    text = text.replace("\\ ", "").replace("\\", "")
    return " ".join(text.split())


def rst_paragraphs(text: str, min_words: int = MIN_PARAGRAPH_WORDS) -> list[str]:
    """The prose paragraphs of a reST source, markup stripped (see the module docstring)."""
    paragraphs: list[str] = []
    current: list[str] = []
    skip_deeper_than: int | None = None     # drop lines indented more than this (and blanks)
    drop_block = False                      # drop the current block up to the next blank
    after_directive = False                 # option lines (":noindex:") follow a directive

    def close() -> None:
        nonlocal drop_block
        if current and not drop_block:
            paragraph = inline_text(" ".join(current))
            if _is_prose(paragraph, min_words):
                paragraphs.append(paragraph)
        current.clear()
        drop_block = False

    for raw in text.replace("\t", "        ").splitlines():
        line = raw.rstrip()
        stripped = line.strip()
        if skip_deeper_than is not None:
            if not stripped or _indent(line) > skip_deeper_than:
                continue
            skip_deeper_than = None
        if not stripped:
            close()
            after_directive = False
            continue
        if after_directive and _FIELD.match(stripped):
            continue
        after_directive = False
        directive = _DIRECTIVE.match(stripped)
        if directive:
            close()
            if directive.group(1) in PROSE_DIRECTIVES:
                after_directive = True
            else:
                skip_deeper_than = _indent(line)
            continue
        if _ADORNMENT.match(stripped):
            if len(current) == 1 or not current:     # a title's under- or overline
                current.clear()
            else:
                drop_block = True
            continue
        if _SIMPLE_TABLE.match(line) or _GRID_TABLE.match(line):
            drop_block = True
            continue
        if stripped.startswith(">>>"):
            drop_block = True
            continue
        if stripped.endswith("::"):
            body = stripped[:-2].rstrip()
            if body:
                current.append(body + ":")
            skip_deeper_than = _indent(line)
            close()
            continue
        stripped = _FIELD.sub("", stripped, count=1)
        stripped = _BULLET.sub("", stripped, count=1)
        if _bullet_starts(line) and current:
            close()                                 # each list item its own paragraph
        current.append(stripped)
    close()
    return paragraphs


def _bullet_starts(line: str) -> bool:
    return bool(_BULLET.match(line.strip())) and line.strip()[:1] in "-*+•#"


def _is_prose(paragraph: str, min_words: int) -> bool:
    words = paragraph.split()
    if len(words) < min_words:
        return False
    return sum(bool(_LETTERS.match(w)) for w in words) >= 0.6 * len(words)


# -- documents -------------------------------------------------------------------------------
@dataclass
class Document:
    id: str
    paragraphs: list[str]
    source: str = ""

    @property
    def text(self) -> str:
        return "\n\n".join(self.paragraphs)

    @property
    def words(self) -> int:
        return sum(len(p.split()) for p in self.paragraphs)


def cut_documents(paragraphs: Sequence[str], min_words: int = MIN_WORDS,
                  max_words: int = MAX_WORDS, rng: np.random.Generator | None = None
                  ) -> list[list[str]]:
    """`paragraphs` in order, cut at paragraph boundaries into documents of `min_words` to
    `max_words` words: each closed once it reaches its length (drawn uniformly between the
    two with `rng`, else `CLOSE_AT`), or when the next paragraph would take it past
    `max_words`; a remainder under `min_words`, or a paragraph over `max_words`, is
    dropped."""
    def length() -> int:
        return int(rng.integers(min_words, max_words + 1)) if rng is not None else CLOSE_AT

    out: list[list[str]] = []
    current: list[str] = []
    count = 0
    close_at = length()
    for paragraph in paragraphs:
        n = len(paragraph.split())
        if n > max_words:
            if count >= min_words:
                out.append(current)
            current, count = [], 0
            continue
        if count + n > max_words:
            if count >= min_words:
                out.append(current)
            current, count = [], 0
        current.append(paragraph)
        count += n
        if count >= close_at:
            out.append(current)
            current, count = [], 0
            close_at = length()
    if count >= min_words:
        out.append(current)
    return out


def shingles(text: str, n: int = SHINGLE) -> set[str]:
    """Word `n`-grams of `text`, lowercased, words being runs of letters and digits."""
    tokens = [t for t in re.split(r"\W+", text.lower()) if t]
    return {" ".join(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def drop_overlapping(docs: Sequence[Document], threshold: float = NEAR_DUPLICATE_JACCARD
                     ) -> tuple[list[Document], int]:
    """`docs` without those whose 5-gram Jaccard with an earlier kept one reaches
    `threshold` (exact, through an inverted index), and how many were dropped."""
    sets = [shingles(d.text) for d in docs]
    holders: dict[str, list[int]] = defaultdict(list)
    kept: list[int] = []
    for i, s in enumerate(sets):
        shared: Counter = Counter()
        for g in s:
            for j in holders.get(g, ()):
                shared[j] += 1
        if any(c / (len(s) + len(sets[j]) - c) >= threshold for j, c in shared.items()):
            continue
        kept.append(i)
        for g in s:
            holders[g].append(i)
    return [docs[i] for i in kept], len(docs) - len(kept)


def read_documents(sources: Path) -> tuple[list[Document], dict]:
    """Every document of the package's prose, near-duplicates of each other dropped, with
    counts of what was read."""
    docs: list[Document] = []
    paragraphs = 0
    files = source_files(sources)
    for path in files:
        rel = path.relative_to(sources).as_posix().removesuffix(".rst.txt")
        found = rst_paragraphs(path.read_text(encoding="utf-8", errors="replace"))
        paragraphs += len(found)
        rng = np.random.default_rng(zlib.crc32(rel.encode()))
        for k, part in enumerate(cut_documents(found, rng=rng)):
            docs.append(Document(id=f"{rel}#{k + 1}", paragraphs=part, source=rel))
    kept, dropped = drop_overlapping(docs)
    return kept, {"files_read": len(files), "paragraphs": paragraphs,
                  "documents_600_1500_words": len(docs), "near_duplicates_dropped": dropped,
                  "documents": len(kept)}


# -- constructions ---------------------------------------------------------------------------
def first_words(paragraphs: Sequence[str], n: int) -> list[str]:
    """The first `n` words of `paragraphs`, their paragraph breaks kept."""
    out, left = [], n
    for p in paragraphs:
        words = p.split()
        if left <= 0:
            break
        out.append(" ".join(words[:left]))
        left -= len(words)
    return out


def near_copy(paragraphs: Sequence[str], rng: np.random.Generator, vocabulary: Sequence[str],
              share: float = REPLACED_SHARE) -> list[str]:
    """`paragraphs` with `share` of their words (at least one) replaced by vocabulary words."""
    words = [p.split() for p in paragraphs]
    where = [(i, j) for i, ws in enumerate(words) for j in range(len(ws))]
    k = max(1, round(share * len(where)))
    for pick in rng.choice(len(where), size=k, replace=False):
        i, j = where[pick]
        while True:
            word = vocabulary[int(rng.integers(len(vocabulary)))]
            if word != words[i][j]:
                break
        words[i][j] = word
    return [" ".join(ws) for ws in words]


def new_intro(paragraphs: Sequence[str], filler: Sequence[str],
              words: int = INTRO_WORDS) -> list[str]:
    return first_words(filler, words) + list(paragraphs)


def reordered(paragraphs: Sequence[str], rng: np.random.Generator) -> list[str]:
    if len(paragraphs) < 3:
        raise ValueError("reordered needs at least 3 paragraphs")
    order = rng.permutation(len(paragraphs))
    if (order == np.arange(len(paragraphs))).all():
        order = np.roll(order, 1)
    return [paragraphs[i] for i in order]


def inside(paragraphs: Sequence[str], filler: Sequence[str]) -> list[str]:
    """`paragraphs` between the two halves of `filler`, cut at the paragraph boundary nearest
    its middle word (by words when it has one paragraph)."""
    if len(filler) == 1:
        words = filler[0].split()
        half = len(words) // 2
        return [" ".join(words[:half]), *paragraphs, " ".join(words[half:])]
    sizes = np.cumsum([len(p.split()) for p in filler])
    cut = int(np.argmin(np.abs(sizes[:-1] - sizes[-1] / 2))) + 1
    return [*filler[:cut], *paragraphs, *filler[cut:]]


def decoy(paragraphs: Sequence[str], filler: Sequence[str],
          prefix: int = DECOY_PREFIX_WORDS) -> list[str]:
    """The first `prefix` words of `paragraphs`, then `filler`'s words up to the length of
    `paragraphs` (as many as `filler` has, when it has fewer)."""
    total = sum(len(p.split()) for p in paragraphs)
    return first_words(paragraphs, prefix) + first_words(filler, max(total - prefix, 1))


# -- Quora paraphrases -----------------------------------------------------------------------
@dataclass(frozen=True)
class QuoraPair:
    qid1: str
    qid2: str
    question1: str
    question2: str
    is_duplicate: bool


def read_quora(path: Path) -> list[QuoraPair]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        next(fh)
        rows = [line.rstrip("\n").split("\t") for line in fh]
    return [QuoraPair(r[0], r[1], r[2].strip(), r[3].strip(), r[4] == "1") for r in rows]


def paraphrase_documents(pairs: Sequence[QuoraPair], duplicate: bool, cases: int,
                         rng: np.random.Generator, used: set[str],
                         pair_range: tuple[int, int] = PARAPHRASE_PAIRS,
                         min_words: int = PARAPHRASE_MIN_WORDS,
                         per_paragraph: int = QUESTIONS_PER_PARAGRAPH
                         ) -> list[tuple[list[str], list[str], int]]:
    """`cases` document pairs (A's paragraphs, B's, pairs used) of questions from pairs
    labelled `duplicate`: A the first questions, B the second ones in the same order. A pair
    whose qid is in `used` (which this extends) or whose two questions are the same text is
    skipped."""
    pool = [p for p in pairs if p.is_duplicate == duplicate]
    order = iter(rng.permutation(len(pool)))
    out = []
    for _ in range(cases):
        target = int(rng.integers(pair_range[0], pair_range[1] + 1))
        chosen: list[QuoraPair] = []
        words_a = words_b = 0
        while len(chosen) < pair_range[1] and (
                len(chosen) < target or min(words_a, words_b) < min_words):
            try:
                pair = pool[int(next(order))]
            except StopIteration:
                raise ValueError("not enough Quora pairs for the paraphrase cases") from None
            if (pair.qid1 in used or pair.qid2 in used or pair.qid1 == pair.qid2
                    or " ".join(pair.question1.lower().split())
                    == " ".join(pair.question2.lower().split())):
                continue
            used.update((pair.qid1, pair.qid2))
            chosen.append(pair)
            words_a += len(pair.question1.split())
            words_b += len(pair.question2.split())

        def paragraphs(questions: list[str]) -> list[str]:
            return [" ".join(questions[i:i + per_paragraph])
                    for i in range(0, len(questions), per_paragraph)]

        out.append((paragraphs([p.question1 for p in chosen]),
                    paragraphs([p.question2 for p in chosen]), len(chosen)))
    return out


# -- the cases -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    kind: str
    a: str
    b: str
    is_duplicate: bool
    group: str            # the base document the case belongs to (its a)


@dataclass
class Built:
    """One table of documents and what is known of it."""

    texts: dict[str, str]                              # id -> text, the table's rows
    cases: list[Case]
    group_of: dict[str, str]                           # document id -> its base document
    kind_of_group: dict[str, str]                      # base document -> kind or distractor
    details: dict = field(default_factory=dict)

    @property
    def duplicate_pairs(self) -> set[frozenset[str]]:
        return {frozenset((c.a, c.b)) for c in self.cases if c.is_duplicate}

    def pairs_of(self, kind: str) -> list[tuple[str, str]]:
        return [(c.a, c.b) for c in self.cases if c.kind == kind]


def build_cases(base: Sequence[Document], filler: Sequence[Document],
                quora: Sequence[QuoraPair], per_kind: int, paraphrase_cases: int,
                seed: int, **quora_options) -> Built:
    """The table: `per_kind` cases of each kind built from `base` documents (the rest are
    distractors), each filled kind borrowing its own `filler` document, and
    `paraphrase_cases` cases each of `reworded` and `reworded_decoy` from `quora`."""
    rng = np.random.default_rng(seed)
    vocabulary = [w for d in [*base, *filler] for p in d.paragraphs for w in p.split()]
    needed = per_kind * len(DOC_KINDS)
    if needed > len(base):
        raise ValueError(f"{len(base)} base documents, {needed} needed")
    if per_kind * len(FILLED) > len(filler):
        raise ValueError(f"{len(filler)} filler documents, {per_kind * len(FILLED)} needed")
    order = [base[i] for i in rng.permutation(len(base))]
    kind_of: dict[str, str] = {}
    long_enough = [d for d in order if len(d.paragraphs) >= 3][:per_kind]
    if len(long_enough) < per_kind:
        raise ValueError("too few base documents with 3 paragraphs for `reordered`")
    for d in long_enough:
        kind_of[d.id] = "reordered"
    others = [k for k in DOC_KINDS if k != "reordered"]
    rest = [d for d in order if d.id not in kind_of]
    for i, d in enumerate(rest):
        kind_of[d.id] = others[i % len(others)] if i < per_kind * len(others) else "distractor"
    fillers = iter(filler[i] for i in rng.permutation(len(filler)))

    texts: dict[str, str] = {}
    cases: list[Case] = []
    group_of: dict[str, str] = {}
    kind_of_group: dict[str, str] = {}
    variant_words: dict[str, list[int]] = defaultdict(list)
    for d in base:                                        # the table in the corpus' order
        kind = kind_of[d.id]
        texts[d.id] = d.text
        group_of[d.id] = d.id
        kind_of_group[d.id] = kind
        if kind == "distractor":
            continue
        if kind == "near_copy":
            made = near_copy(d.paragraphs, rng, vocabulary)
        elif kind == "reordered":
            made = reordered(d.paragraphs, rng)
        else:
            borrowed = next(fillers).paragraphs
            made = {"new_intro": new_intro, "inside": inside, "decoy": decoy}[kind](
                d.paragraphs, borrowed)
        b = f"{d.id}~{kind}"
        texts[b] = "\n\n".join(made)
        group_of[b] = d.id
        variant_words[kind].append(sum(len(p.split()) for p in made))
        cases.append(Case(kind, d.id, b, kind not in DECOY_KINDS, d.id))

    used: set[str] = set()
    quora_pairs_used = {}
    for kind, duplicate in (("reworded", True), ("reworded_decoy", False)):
        made = paraphrase_documents(quora, duplicate, paraphrase_cases, rng, used,
                                    **quora_options)
        quora_pairs_used[kind] = sum(n for _, _, n in made)
        for k, (pa, pb, _) in enumerate(made):
            a, b = f"quora-{kind}-{k + 1}a", f"quora-{kind}-{k + 1}b"
            texts[a], texts[b] = "\n\n".join(pa), "\n\n".join(pb)
            group_of[a] = group_of[b] = a
            kind_of_group[a] = kind
            variant_words[kind] += [sum(len(p.split()) for p in pa),
                                    sum(len(p.split()) for p in pb)]
            cases.append(Case(kind, a, b, duplicate, a))
    details = {"quora_pairs_used": quora_pairs_used,
               "variant_words": {k: _spread(v) for k, v in variant_words.items()}}
    return Built(texts, cases, group_of, kind_of_group, details)


def split_groups(built: Built, seed: int, validation_share: float = VALIDATION_SHARE
                 ) -> dict[str, str]:
    """Each base document -> "validation" or "test", seeded, `validation_share` of each kind
    (distractors being a kind here) in validation."""
    rng = np.random.default_rng(seed)
    by_kind: dict[str, list[str]] = defaultdict(list)
    for group, kind in sorted(built.kind_of_group.items()):
        by_kind[kind].append(group)
    half = {}
    for kind in sorted(by_kind):
        groups = [by_kind[kind][i] for i in rng.permutation(len(by_kind[kind]))]
        n = round(validation_share * len(groups))
        for i, g in enumerate(groups):
            half[g] = "validation" if i < n else "test"
    return half


def _spread(values: Iterable[int]) -> dict:
    values = sorted(values)
    if not values:
        return {}
    return {"n": len(values), "min": values[0], "median": values[len(values) // 2],
            "max": values[-1]}


def word_spread(texts: Iterable[str]) -> dict:
    """n, min, median, max and total words of `texts`."""
    counts = [len(t.split()) for t in texts]
    return {**_spread(counts), "total": sum(counts)}
