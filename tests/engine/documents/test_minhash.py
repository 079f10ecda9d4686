"""MinHash finds near copies, prefixed and reordered copies, and flags no decoy that shares
only its opening with a text."""

from __future__ import annotations

import numpy as np
import pytest
from datasketch import MinHash

from engine.documents.minhash import (
    MIN_WORDS_FOR_MINHASH,
    NUM_PERM,
    SCHEME,
    SEED,
    candidate_pairs,
    from_bytes,
    jaccard,
    on_similarity_scale,
    shingles,
    signature,
    to_bytes,
    wants_signature,
    with_jaccard,
)

VOCABULARY = [f"word{i}" for i in range(3000)]


def random_words(rng: np.random.Generator, n: int) -> list[str]:
    return list(rng.choice(VOCABULARY, n))


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    rng = np.random.default_rng(0)
    original = random_words(rng, 1000)
    near = list(original)
    for i in rng.choice(1000, 20, replace=False):  # 2% of the words changed
        near[i] = "changed" + near[i]
    paragraphs = [original[i:i + 100] for i in range(0, 1000, 100)]
    order = rng.permutation(10)
    decoy = original[:300] + random_words(rng, 700)
    return {"original": " ".join(original),
            "near": " ".join(near),
            "reordered": "\n\n".join(" ".join(paragraphs[i]) for i in order),
            "prefixed": " ".join(random_words(rng, 150) + original),
            "unrelated": " ".join(random_words(rng, 1000)),
            "decoy": " ".join(decoy)}


@pytest.fixture(scope="module")
def pairs(texts) -> list[tuple[int, int]]:
    names = list(texts)
    sigs = [signature(texts[name]) for name in names]
    return [(names[a], names[b]) for a, b in candidate_pairs(range(len(names)), sigs)]


def test_a_near_copy_is_a_candidate(pairs):
    assert ("original", "near") in pairs


def test_reordered_paragraphs_and_a_new_opening_are_candidates(pairs):
    assert ("original", "reordered") in pairs
    assert ("original", "prefixed") in pairs


def test_an_unrelated_text_and_a_decoy_sharing_its_first_300_words_are_not(texts, pairs):
    assert not [p for p in pairs if "unrelated" in p or "decoy" in p]
    # Not a near miss: 296 shared shingles of about 1,700 in all.
    assert jaccard(signature(texts["original"]), signature(texts["decoy"])) < 0.3


def test_each_pair_once_smaller_id_first():
    rng = np.random.default_rng(1)
    text = " ".join(random_words(rng, 200))
    sig = signature(text)
    assert candidate_pairs([7, 3, 5], [sig, sig, sig]) == [(3, 5), (3, 7), (5, 7)]
    assert candidate_pairs([], []) == []
    with pytest.raises(ValueError):
        candidate_pairs([1, 1], [sig, sig])


def test_signature_is_datasketchs_minhash_of_the_shingles(texts):
    sig = signature(texts["original"])
    assert sig.dtype == np.uint64 and sig.shape == (NUM_PERM,)
    reference = MinHash(num_perm=NUM_PERM, seed=SEED, scheme=SCHEME)
    reference.update_batch(shingles(texts["original"]))
    assert np.array_equal(sig, reference.hashvalues)
    other = MinHash(num_perm=NUM_PERM, seed=SEED, scheme=SCHEME)
    other.update_batch(shingles(texts["near"]))
    assert jaccard(sig, signature(texts["near"])) == reference.jaccard(other)


def test_bytes_round_trip_and_jaccard_of_identical(texts):
    sig = signature(texts["original"])
    blob = to_bytes(sig)
    assert len(blob) == NUM_PERM * 8
    assert blob == sig.astype("<u8").tobytes()
    back = from_bytes(blob)
    assert back.dtype == np.uint64 and np.array_equal(back, sig)
    assert jaccard(sig, back) == 1.0
    with pytest.raises(ValueError):
        from_bytes(blob[:-8])


def test_shingles():
    assert shingles("") == set() and shingles("  ,. ") == set()
    assert shingles("Hello, World!") == {b"hello world"}
    assert shingles("a b c d e f") == {b"a b c d e", b"b c d e f"}
    assert shingles("A B C D E. a b c d e") == {b"a b c d e", b"b c d e a", b"c d e a b",
                                                b"d e a b c", b"e a b c d"}


def test_runs_are_taken_within_paragraphs():
    """A blank line (or U+2029) ends a paragraph and no run spans two; a line break alone,
    as in a text wrapped at a fixed width, does not."""
    two = "a b c d e f\n \t\r\n g h i j k"
    assert shingles(two) == {b"a b c d e", b"b c d e f", b"g h i j k"}
    assert shingles("a b c d e f\u2029g h i j k") == shingles(two)
    assert shingles("Title\n\na b c d e") == {b"title", b"a b c d e"}
    wrapped = "a b c\nd e f"
    assert shingles(wrapped) == {b"a b c d e", b"b c d e f"}
    across = shingles(two, across_paragraphs=True)
    assert across == shingles("a b c d e f g h i j k")
    assert len(across) == 7


def test_reordered_paragraphs_keep_every_run(texts):
    """The reordered text's runs are exactly the original's when both keep their paragraph
    breaks; taken across paragraphs, every moved edge costs runs."""
    paragraphs = texts["reordered"].split("\n\n")
    by_start = {p.split()[0]: p for p in paragraphs}
    in_order = [by_start[w] for w in texts["original"].split()[::100]]
    original = "\n\n".join(in_order)
    assert signature(original).tolist() == signature(texts["reordered"]).tolist()
    assert jaccard(signature(original, across_paragraphs=True),
                   signature(texts["reordered"], across_paragraphs=True)) < 0.97


def test_only_texts_of_enough_words_want_a_signature():
    assert not wants_signature("How do I learn Python quickly?")
    assert not wants_signature("word " * (MIN_WORDS_FOR_MINHASH - 1))
    assert wants_signature("word " * MIN_WORDS_FOR_MINHASH)


def test_jaccard_on_the_similarity_scale():
    """Jaccard 0.5, the LSH threshold, reads as 0.75, the documents' default threshold; the
    ends stay where they are and the order of any two Jaccards is kept."""
    assert on_similarity_scale(0.5) == pytest.approx(0.75, abs=1e-12)
    assert on_similarity_scale(0.0) == 0.0 and on_similarity_scale(1.0) == 1.0
    grid = np.linspace(0.0, 1.0, 257)
    scaled = np.array([on_similarity_scale(j) for j in grid])
    assert (np.diff(scaled) > 0).all()
    assert (scaled >= grid).all()                          # never lower than the Jaccard


def test_a_copy_sharing_just_over_half_its_runs_reaches_the_threshold(texts):
    """A text with 7% of its words edited here and there keeps about half its 5-word runs:
    read as the Jaccard itself it scored far under 0.75 where its windows said little; on
    the similarity scale it is a duplicate at 0.75. The decoy sharing only its first 300 words
    stays well under, whatever its windows say."""
    rng = np.random.default_rng(5)
    words = texts["original"].split()
    edited = list(words)
    for i in rng.choice(len(words), 70, replace=False):
        edited[i] = "edited" + edited[i]
    original, copy = signature(texts["original"]), signature(" ".join(edited))
    assert 0.5 <= jaccard(original, copy) < 0.75
    assert with_jaccard(0.2, original, copy) >= 0.75
    assert with_jaccard(0.2, original, signature(texts["decoy"])) < 0.6
    assert with_jaccard(0.9, original, signature(texts["decoy"])) == 0.9   # windows' is more
    assert with_jaccard(0.2, original, None) == 0.2                        # no signature
