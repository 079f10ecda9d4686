"""Held-out splits share no question with training."""

from __future__ import annotations

import pytest

from engine.errors import InputError
from engine.text import norm_key
from engine.training import LabelledPair, read_labelled_file, split_pairs


def questions(pairs):
    """Everything that names a question: keys and normalised texts."""
    return ({p.key_a for p in pairs} | {p.key_b for p in pairs}
            | {norm_key(t) for p in pairs for t in (p.text_a, p.text_b)})


def assert_no_leakage(split):
    assert not questions(split.train) & questions(split.held_out)


@pytest.fixture
def labelled(data_dir):
    return read_labelled_file(data_dir / "labelled_pairs.csv").pairs


@pytest.mark.parametrize("fraction", [0.2, 0.5, 0.7])
def test_split_has_no_leakage_and_about_the_requested_fraction(labelled, fraction):
    split = split_pairs(labelled, held_out=fraction, seed=3)
    assert_no_leakage(split)
    assert len(split.train) + len(split.held_out) == len(labelled) and not split.dropped
    assert split.held_out_fraction == len(split.held_out) / len(labelled)
    assert abs(split.held_out_fraction - fraction) <= 0.1
    assert split.components == 8 and split.largest_component == 5
    # Both sides keep duplicates and non-duplicates, so both can be trained on and measured.
    for side in (split.train, split.held_out):
        assert 0 < sum(p.is_duplicate for p in side) < len(side)


def test_split_is_deterministic_for_a_seed(labelled):
    first = split_pairs(labelled, 0.5, seed=1)
    assert split_pairs(labelled, 0.5, seed=1) == first
    others = {tuple(p.row for p in split_pairs(labelled, 0.5, seed=s).held_out)
              for s in range(2, 8)}
    assert len(others) > 1


def test_identical_texts_under_different_ids_stay_together():
    pairs = [LabelledPair("How do I learn Python?", "Best way to learn Python?", 1, "id:1", "id:2"),
             LabelledPair("how do I  learn python?", "Why is the sky blue?", 0, "id:9", "id:3")]
    pairs += [LabelledPair(f"question {i}", f"other {i}", i % 2) for i in range(8)]
    for seed in range(10):
        split = split_pairs(pairs, 0.5, seed=seed)
        assert_no_leakage(split)
        sides = [pairs[0] in split.train, pairs[1] in split.train]
        assert sides[0] == sides[1]


def test_a_giant_component_is_cut_and_the_cut_pairs_dropped():
    # One hub question labelled against 30 others, chained: all pairs form one component.
    chain = [LabelledPair(f"q{i}", f"q{i + 1}", float(i % 3 == 0)) for i in range(30)]
    hub = [LabelledPair("hub", f"q{i}", float(i % 2)) for i in range(0, 30, 10)]
    pairs = chain + hub + [LabelledPair(f"lone {i}", f"single {i}", i % 2) for i in range(4)]
    split = split_pairs(pairs, 0.5, seed=0)
    assert_no_leakage(split)
    assert split.dropped and len(split.dropped) <= 6
    assert abs(split.held_out_fraction - 0.5) <= 0.1
    assert len(split.train) + len(split.held_out) + len(split.dropped) == len(pairs)
    assert "left out" in split.note


def test_pairs_about_the_same_two_questions_cannot_be_split():
    pairs = [LabelledPair("a", "b", 1.0), LabelledPair("A", "b ", 0.0)]
    with pytest.raises(InputError, match="all about the same questions"):
        split_pairs(pairs)
    with pytest.raises(InputError, match="at least 2"):
        split_pairs(pairs[:1])
    with pytest.raises(ValueError):
        split_pairs(pairs, held_out=1.0)
