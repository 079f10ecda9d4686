"""Stretches of a query's length around a candidate's best window: where they lie, and that
the search reads the best one (the real model's search is in
tests/engine/services/test_passage_search.py)."""

from __future__ import annotations

import numpy as np

from engine.documents.close_up import close_up, close_up_each, query_words, stretches

TEXT = " ".join(f"w{i}" for i in range(100))


def _words_at(text: str, span: tuple[int, int]) -> list[str]:
    return text[span[0]:span[1]].split()


def _span_of_words(first: int, last: int) -> tuple[int, int]:
    """Characters of words first..last (inclusive) of TEXT."""
    start = TEXT.index(f"w{first} ") if first < 99 else TEXT.index(f"w{first}")
    word = f"w{last}"
    end = TEXT.index(word + " ") + len(word) if last < 99 else len(TEXT)
    return start, end


def test_first_step_stretches_lie_end_to_end_around_the_window():
    window = _span_of_words(40, 59)
    found = stretches(TEXT, window, 6)
    firsts = [int(_words_at(TEXT, s)[0][1:]) for s in found]
    assert all(len(_words_at(TEXT, s)) == 6 for s in found)
    assert firsts[0] == 37                                   # widened by half a stretch
    assert int(_words_at(TEXT, found[-1])[-1][1:]) == 62     # on both sides
    assert np.all(np.diff(firsts)[:-1] == 6)                 # end to end


def test_the_second_step_finds_three_quarters_of_the_query_wherever_it_lies():
    """With an encoder whose cosine grows with the words a stretch shares with the query,
    the stretch read holds at least three quarters of it at every offset in the window."""
    vocab = TEXT.split()

    def encode(pieces: list[str]) -> np.ndarray:
        out = np.zeros((len(pieces), len(vocab)))
        for i, piece in enumerate(pieces):
            for word in piece.split():
                out[i, vocab.index(word)] = 1.0
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    for q in range(40, 54):
        query = " ".join(vocab[q:q + 6])
        near, = close_up(encode, encode([query])[0], 6, [(TEXT, _span_of_words(40, 59))])
        held = set(_words_at(TEXT, near.span)) & set(query.split())
        assert len(held) >= 4.5, (q, near)


def test_stretches_stop_at_the_text_edges_and_a_short_text_is_one_stretch():
    assert _words_at(TEXT, stretches(TEXT, _span_of_words(0, 9), 6)[0])[0] == "w0"
    assert _words_at(TEXT, stretches(TEXT, _span_of_words(90, 99), 6)[-1])[-1] == "w99"
    assert stretches("one two", (0, 7), 6) == [(0, 7)]
    assert stretches("   ", (0, 3), 6) == []
    assert query_words("  a typed\tquery\n") == 3


def test_close_up_keeps_each_candidates_best_stretch():
    texts = [("alpha beta gamma delta epsilon zeta", (0, 36)), ("", (0, 0))]

    def encode(pieces: list[str]) -> np.ndarray:
        """One axis per word: a stretch's vector is its normalised word count."""
        vocab = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
        out = np.array([[p.split().count(w) for w in vocab] for p in pieces], float)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    query = encode(["gamma delta"])[0]
    near, empty = close_up(encode, query, 2, texts)
    assert empty is None
    assert texts[0][0][near.span[0]:near.span[1]] == "gamma delta"
    assert abs(near.score - 1.0) < 1e-6


def test_queries_read_together_score_as_each_read_alone():
    """A checked file's rows are read close up in one batch (`close_up_each`): each row's
    candidates are scored against that row's own query, as the search scores it alone, and
    the encoder is called once per step for the batch."""
    vocab = TEXT.split()
    calls = []

    def encode(pieces: list[str]) -> np.ndarray:
        calls.append(len(pieces))
        out = np.zeros((len(pieces), len(vocab)))
        for i, piece in enumerate(pieces):
            for word in piece.split():
                out[i, vocab.index(word)] = 1.0
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    asked = [(" ".join(vocab[44:50]), 6, [(TEXT, _span_of_words(40, 59)),
                                          (TEXT, _span_of_words(70, 89))]),
             (" ".join(vocab[75:79]), 4, [(TEXT, _span_of_words(70, 89))]),
             (" ".join(vocab[10:16]), 6, [])]
    alone = [close_up(encode, encode([q])[0], w, c) for q, w, c in asked]
    calls.clear()
    together = close_up_each(encode, [encode([q])[0] for q, _, _ in asked],
                             [w for _, w, _ in asked], [c for _, _, c in asked])
    assert len(calls) == 3 + 2                               # the queries, then two steps
    assert together == alone
    assert together[2] == []
