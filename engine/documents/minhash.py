"""Near-exact copies by MinHash: the signal that needs no model.

Two documents that share most of their 5-word runs ("shingles") are copies of each other,
whatever an embedding makes of them: a near copy with a few words changed, the same text
with a new first paragraph, the same paragraphs in another order. MinHash estimates the
Jaccard similarity of two shingle sets from 256 hash values a document, and locality-
sensitive hashing (LSH) finds the pairs above a Jaccard threshold without comparing every
pair. The issue's measurement: MinHash alone (datasketch, 5-word shingles, 256
permutations, Jaccard >= 0.5) puts every near-copy, prefixed and reordered pair together,
with no decoy flagged (a decoy sharing its first 300 words of 1,000 has Jaccard about 0.17).

The MinHash itself is datasketch's (2.0.0) in its default scheme, "affine32": 32-bit hash
values, kept as uint64 (the width of datasketch's other schemes) and stored as little-endian
uint64, so a BLOB is always NUM_PERM x 8 bytes (2 KiB a document). Why not "affine64":
datasketch keeps it for sets of about 100 million shingles, where 32-bit hashes collide; a
document has thousands, and affine64 made signatures 2.5 times slower here (3.4 ms against
1.4 ms for 1,000 words: numpy's 64-bit multiply of every shingle by every permutation).
Signatures are comparable only when made with the same SHINGLE_WORDS, NUM_PERM, SEED,
SCHEME and paragraph rule: change any of them and every stored signature must be computed
again (schema v11 did so for the paragraph rule, `engine.store.migrations`).

**Runs are taken within paragraphs.** A paragraph ends at a blank line (or U+2029); a run
never spans two. Reordering a document's paragraphs cuts its runs at every moved
paragraph's edges: taken across paragraphs, the documents benchmark's reordered pairs
shared as little as 72% of their runs (a Jaccard just under the threshold, so two of them
were missed on validation and one on test), and within paragraphs they share all of them.
What else a run spanning paragraphs holds is little: the last words of one paragraph and
the first of the next. Chosen on the documents benchmark's validation half
(`benchmarks/shingle_choice.py`). A line break alone is not a paragraph's end: a text
wrapped at a fixed width has one every dozen words, and a copy wrapped at another width
would share few runs (a Jaccard of 0.46 for 1,000 words wrapped at 12 and at 10 words a
line, were each line its own paragraph). A text without blank lines is one paragraph,
shingled as before.

datasketch is imported where it is used, not at the top: it imports scipy.integrate (about
half a second), which a module that only reads or writes stored signatures should not pay.

Speed: `signature` makes about 700 signatures a second of 1,000-word texts (1.4 ms each,
best of ten runs) on one core of a 2-core Sapphire Rapids, and about 500 a second (2.0 ms)
while other work kept both cores busy. Two thirds of it is shingling and datasketch's SHA-1
of each shingle, a third the 256 permutations as one numpy product. Reusing the permutations
saves about 0.1 ms a text in datasketch 2.0.0 (it draws affine permutations in one numpy
call; the legacy scheme drew them in a Python loop, 0.9 ms).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from itertools import islice

import numpy as np

SHINGLE_WORDS = 5
NUM_PERM = 256
LSH_THRESHOLD = 0.5
SEED = 1
SCHEME = "affine32"

# A question of ten words has six 5-word shingles: one changed word moves its Jaccard from
# 1 to 0.2, and two unrelated questions that open alike share half their shingles. On texts
# that short MinHash is noise, and the embedding already judges them (one window is the
# whole text). Fifty words give 46 shingles, enough for a Jaccard to mean something.
MIN_WORDS_FOR_MINHASH = 50

_WORD = re.compile(r"\w+")
# A paragraph's end: a blank line (spaces, tabs or \r between the two line breaks) or the
# Unicode paragraph separator.
_PARAGRAPH_END = re.compile(r"\n\s*\n|\u2029")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def wants_signature(text: str) -> bool:
    """Whether `text` is long enough (MIN_WORDS_FOR_MINHASH words) for a MinHash signature;
    stops counting at that many words, so a long document costs no more than a short one."""
    found = islice(_WORD.finditer(text), MIN_WORDS_FOR_MINHASH)
    return sum(1 for _ in found) >= MIN_WORDS_FOR_MINHASH


def shingles(text: str, *, across_paragraphs: bool = False) -> set[bytes]:
    """The text's runs of SHINGLE_WORDS consecutive words within each paragraph: lowercased
    \\w+ words joined by one space, UTF-8. A paragraph of fewer words is one shingle of all
    of them; no words, none. `across_paragraphs` takes runs over the whole text as before
    schema v11, for the benchmark that chose between the two only."""
    parts = [text] if across_paragraphs else _PARAGRAPH_END.split(text)
    out: set[bytes] = set()
    for part in parts:
        words = _words(part)
        if len(words) < SHINGLE_WORDS:
            if words:
                out.add(" ".join(words).encode())
            continue
        out.update(" ".join(words[i:i + SHINGLE_WORDS]).encode()
                   for i in range(len(words) - SHINGLE_WORDS + 1))
    return out


@functools.cache
def _permutations() -> np.ndarray:
    """The NUM_PERM permutations, drawn once and shared by every MinHash: datasketch draws
    them again for each MinHash made without `permutations=` (0.14 ms, against 1.4 ms for
    the whole signature of a 1,000-word text)."""
    from datasketch import MinHash

    return MinHash(num_perm=NUM_PERM, seed=SEED, scheme=SCHEME).permutations


def signature(text: str, *, across_paragraphs: bool = False) -> np.ndarray:
    """The text's MinHash: NUM_PERM uint64 hash values of its `shingles`. A text with no
    words gives the empty set's signature (every value the maximum); see
    `wants_signature`."""
    from datasketch import MinHash

    minhash = MinHash(num_perm=NUM_PERM, seed=SEED, scheme=SCHEME,
                      permutations=_permutations())
    minhash.update_batch(shingles(text, across_paragraphs=across_paragraphs))
    return np.asarray(minhash.hashvalues, dtype=np.uint64)


def to_bytes(sig: np.ndarray) -> bytes:
    """A signature as a database BLOB: NUM_PERM little-endian uint64, whatever the machine."""
    return np.asarray(sig, dtype="<u8").tobytes()


def from_bytes(blob: bytes) -> np.ndarray:
    """A signature read back from `to_bytes`; a BLOB of another length is refused rather than
    compared wrongly."""
    if len(blob) != NUM_PERM * 8:
        raise ValueError(f"a MinHash signature is {NUM_PERM * 8} bytes, got {len(blob)}")
    return np.frombuffer(blob, dtype="<u8").astype(np.uint64)


def jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
    """Estimated Jaccard similarity of the two shingle sets: the share of equal hash values
    (what datasketch's MinHash.jaccard computes, without building two MinHash objects)."""
    a, b = np.asarray(sig_a), np.asarray(sig_b)
    if a.shape != b.shape:
        raise ValueError(f"signatures of {a.shape} and {b.shape} values cannot be compared")
    return float(np.count_nonzero(a == b)) / len(a)


# Where the Jaccard of 5-word runs sits on the similarity scale: a pair's Jaccard J reads as
# J ** JACCARD_POWER, so that Jaccard 0.5 (MinHash LSH's threshold, the bar for a
# near-exact copy) reads as 0.75, the default threshold for documents. Why not J itself:
# one changed word breaks five runs, so a text with one word in fifteen edited here and
# there keeps about half of its runs, and read as itself that is far under any threshold a
# reader of meaning would set. Chosen on the validation halves of both document benchmarks
# (`benchmarks/jaccard_scale_choice.py`): the Jaccard that reads as 0.75 was tried at 0.75
# (J itself), 0.7, 0.65, 0.6, 0.55, 0.5, 0.45 and 0.4; the constructed documents did not
# move at any of them, and Django's pages in two releases gained pair F1 from 0.65 down
# (0.967 at J itself and 0.7, 0.976 at 0.65 and 0.6, 0.984 from 0.55 to 0.4). 0.5 lies inside that
# best stretch, not at its edge, and is the LSH threshold, so every pair LSH proposes is a
# duplicate at the default threshold. A decoy sharing its first 300 words of 1,000
# (Jaccard about 0.17) reads as 0.48. A power keeps 0 at 0 and 1 at 1 and the order of any
# two Jaccards, so the larger of it and the windows' score is still a similarity.
JACCARD_POWER = float(np.log(0.75) / np.log(LSH_THRESHOLD))


def on_similarity_scale(jaccard_value: float) -> float:
    """A Jaccard of 5-word runs as a similarity the project's threshold reads (see
    JACCARD_POWER): 0.5 reads as 0.75, 1 as 1, 0 as 0."""
    return float(jaccard_value) ** JACCARD_POWER


def with_jaccard(score: float, sig_a: np.ndarray | None, sig_b: np.ndarray | None) -> float:
    """The one similarity of two long texts: their windows' `score`, or their Jaccard of
    5-word runs put on the similarity scale (`on_similarity_scale`) where both have a
    signature and it is more (`engine.dedup.document_edges` says why). The graph, the
    comparison, Check a file, a search and a re-measured cluster all combine the two
    signals here."""
    if sig_a is None or sig_b is None:
        return score
    return max(score, on_similarity_scale(jaccard(sig_a, sig_b)))


def candidate_pairs(ids: Sequence[int], signatures: Sequence[np.ndarray],
                    threshold: float = LSH_THRESHOLD) -> list[tuple[int, int]]:
    """Pairs (id_a, id_b), id_a < id_b, each once and sorted, that datasketch's MinHashLSH
    puts in one bucket and whose estimated Jaccard is at least `threshold`.

    LSH alone lets through some pairs below the threshold (its banding is a probability
    curve, not a step); the Jaccard check on the full signatures removes them.
    """
    from datasketch import LeanMinHash, MinHashLSH

    if len(ids) != len(signatures):
        raise ValueError(f"{len(ids)} ids but {len(signatures)} signatures")
    if len(set(ids)) != len(ids):
        raise ValueError("ids must be unique")
    lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
    sketches = [LeanMinHash(seed=SEED, hashvalues=np.asarray(sig, dtype=np.uint64),
                            scheme=SCHEME) for sig in signatures]
    with lsh.insertion_session() as session:
        for key, sketch in zip(ids, sketches, strict=True):
            session.insert(key, sketch, check_duplication=False)
    by_id = dict(zip(ids, signatures, strict=True))
    pairs: set[tuple[int, int]] = set()
    for key, sketch in zip(ids, sketches, strict=True):
        for other in lsh.query(sketch):
            if other != key:
                pairs.add((key, other) if key < other else (other, key))
    return sorted(p for p in pairs if jaccard(by_id[p[0]], by_id[p[1]]) >= threshold)
