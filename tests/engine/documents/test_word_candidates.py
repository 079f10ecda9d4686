"""`documents.word_candidates`: documents named by a query's words join its candidates
and are read close up beside its first long hits, without changing their order."""

from __future__ import annotations

import numpy as np

from engine.documents.word_candidates import promoted, with_word_hits


def test_named_texts_join_the_candidates_once_unscored():
    ids, sims = with_word_hits(np.array([4, 7]), np.array([0.9, 0.8], np.float32),
                               [7, 9, 9, 2])
    assert ids.tolist() == [4, 7, 9, 2]
    assert sims.tolist() == [np.float32(0.9), np.float32(0.8), 0.0, 0.0]
    same, _ = with_word_hits(np.array([4, 7]), np.array([0.9, 0.8]), [])
    assert same.tolist() == [4, 7]


def test_named_long_texts_move_to_just_after_the_first_long_hits():
    # Candidates 10..15 at positions 0..5, best first 5, 0, 1, 2, 3, 4; 11 is short.
    text_ids = np.array([10, 11, 12, 13, 14, 15])
    windowed = np.array([10, 12, 13, 14, 15])
    order = np.array([5, 0, 1, 2, 3, 4])
    # The first 2 long hits are 15 and 10; 14 (long) and 11 (short) are named by words.
    moved, extra = promoted(order, text_ids, windowed, [14, 11], 2)
    assert extra == 1
    assert text_ids[moved].tolist() == [15, 10, 14, 11, 12, 13]
    # Already among the first long hits, or no close-up at all: nothing moves.
    assert promoted(order, text_ids, windowed, [15], 2)[1] == 0
    kept, none = promoted(order, text_ids, windowed, [14], 0)
    assert none == 0 and kept.tolist() == order.tolist()


def test_only_the_active_models_long_texts_are_named():
    """The word index holds texts any model read in windows; a text the active model read
    in one window (or not at all) is not named: its vector finds it."""
    from engine.keystroke_search import Windows

    asked = []

    def words(query: str, limit: int) -> list[int]:
        asked.append((query, limit))
        return [3, 2, 9]

    windows = Windows([1, 2, 9], read=lambda ids: {}, words=words)
    assert windows.by_words(["a query", "another"], 4) == [[2, 9], [2, 9]]
    assert asked == [("a query", 4), ("another", 4)]
    assert Windows([], read=lambda ids: {}, words=words).by_words(["q"]) == [[]]
    assert windows.without_words().by_words(["q"]) == [[]]
