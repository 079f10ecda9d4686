"""Hard negatives: the nearest texts outside a question's duplicate group, from the pairs and
from a pool of other texts (a project's), with the real model."""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import Cancelled
from engine.progress import CancelToken
from engine.training import LabelledPair
from engine.training.hard_negatives import NegativePool, nearest_non_duplicates

PYTHON = "How do I learn Python quickly?"
PAIRS = [
    LabelledPair(PYTHON, "What is the fastest way to learn Python?", 1),
    LabelledPair("What is the fastest way to learn Python?", "Quickest way to pick up Python?", 1),
    LabelledPair("How do I learn Java quickly?", "What is the best way to learn Java fast?", 1),
    LabelledPair("Why is the sky blue?", "What makes the sky look blue?", 1),
    LabelledPair("How do I bake sourdough bread?", "Why is the sky blue?", 0),
]
GROUP = {PYTHON, "What is the fastest way to learn Python?", "Quickest way to pick up Python?"}


def test_the_nearest_non_duplicate_is_a_close_question_of_another_group(encoder):
    found = nearest_non_duplicates(encoder.model, PAIRS, PAIRS[:1], per_anchor=3)
    negatives = found.negatives[0]
    assert found.candidates == 8  # every distinct text of the pairs
    # Never its own group, linked through the second pair; the Java questions come first,
    # then the less similar ones, most similar first.
    assert not GROUP & set(negatives)
    assert set(negatives[:2]) == {"How do I learn Java quickly?",
                                  "What is the best way to learn Java fast?"}
    assert len(negatives) == 3
    sims = encoder.model.encode([PYTHON, *negatives], normalize_embeddings=True)
    assert np.all(np.diff(sims[1:] @ sims[0]) <= 1e-6)


def test_below_positive_keeps_out_texts_closer_than_the_labelled_duplicate(encoder):
    # The pool's rewording of the Python question is closer to it than its labelled
    # duplicate: on Quora that is most likely a duplicate nobody labelled.
    rewording = "How can I learn Python quickly?"
    pool = NegativePool([rewording, "How do I learn Rust quickly?"])
    loose = nearest_non_duplicates(encoder.model, PAIRS, PAIRS[:1], 1, pool=pool)
    assert loose.negatives[0] == [rewording] and loose.candidates == 10
    strict = nearest_non_duplicates(encoder.model, PAIRS, PAIRS[:1], 1, pool=pool,
                                    below_positive=True)
    negative = strict.negatives[0][0]
    vectors = encoder.model.encode([PYTHON, PAIRS[0].text_b, negative],
                                   normalize_embeddings=True)
    assert negative != rewording and vectors[0] @ vectors[2] < vectors[0] @ vectors[1]


def test_pool_vectors_are_used_as_given_and_pool_texts_dropped_by_text(encoder):
    pool_texts = ["How do I learn Rust quickly?", "Best pizza in Naples?", PYTHON.upper()]
    vectors = encoder.model.encode(pool_texts, normalize_embeddings=True)
    events = []
    found = nearest_non_duplicates(encoder.model, PAIRS, PAIRS[:1], 10,
                                   pool=NegativePool(pool_texts, vectors),
                                   progress=events.append)
    # Only the pairs' 8 texts were encoded; the pool's upper-cased copy of the anchor is the
    # anchor's own text, so it is no candidate: 10 texts, 7 outside the anchor's group.
    assert events[-1].stage == "mining negatives" and events[-1].total == 8
    assert found.candidates == 10
    negatives = found.negatives[0]
    assert len(negatives) == 7 and PYTHON.upper() not in negatives
    assert "How do I learn Rust quickly?" in negatives[:3]
    assert "Best pizza in Naples?" in negatives

    smaller = NegativePool(pool_texts, vectors).without(["best pizza in naples?"])
    assert list(smaller.texts) == [pool_texts[0], pool_texts[2]]
    assert np.array_equal(smaller.vectors, vectors[[0, 2]])
    with pytest.raises(ValueError, match="3 texts but 2 vectors"):
        NegativePool(pool_texts, vectors[:2])


def test_mining_stops_when_cancelled(encoder):
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(Cancelled):
        nearest_non_duplicates(encoder.model, PAIRS, PAIRS[:1], 1, cancel=cancel)
