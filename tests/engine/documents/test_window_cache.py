"""The window cache reads a few texts at a time, keeps at most its bound, and keeps the
lowest keys (the soonest anchors) when it must let some go."""

from __future__ import annotations

import numpy as np
import pytest

from engine.documents.window_cache import WindowCache


def _loader(windows_of: dict[int, int]):
    """A loader of sides with the given window counts, recording every call's keys."""
    calls: list[list[int]] = []

    def load(keys):
        calls.append(list(keys))
        return {k: (np.full((windows_of[k], 4), k, dtype=np.float32), None) for k in keys}

    return load, calls


def test_reads_a_few_at_a_time_and_never_twice_while_held():
    load, calls = _loader({k: 2 for k in range(10)})
    cache = WindowCache(load, max_windows=100, read_at_once=3)
    got = cache.sides(list(range(10)))
    assert sorted(got) == list(range(10)) and all(got[k][0][0, 0] == k for k in got)
    assert [len(c) for c in calls] == [3, 3, 3, 1]
    assert cache.held_windows == 20
    again = cache.sides([4, 5, 6])
    assert len(calls) == 4 and again[5] is got[5]        # held: handed out, not read


def test_keeps_at_most_its_bound_and_the_lowest_keys():
    load, calls = _loader({k: 3 for k in range(20)})
    cache = WindowCache(load, max_windows=10, read_at_once=4)
    got = cache.sides([7, 3, 15, 1, 9])
    assert len(got) == 5                                  # all handed out for this chunk
    assert cache.held_windows == 9 <= 10                  # 1, 3, 7 kept; 9 and 15 not
    calls.clear()
    cache.sides([1, 3, 7])
    assert calls == []
    cache.sides([0])                                      # lower than all: 7 makes room
    calls.clear()
    cache.sides([0, 1, 3])
    assert calls == [] and cache.held_windows == 9
    cache.sides([7])
    assert calls == [[7]]


def test_forget_below_frees_what_no_later_chunk_asks_for():
    load, calls = _loader({k: 5 for k in range(6)})
    cache = WindowCache(load, max_windows=20, read_at_once=6)
    cache.sides([0, 1, 2, 3])
    assert cache.held_windows == 20
    cache.sides([4])                                      # full of lower keys: not kept
    assert cache.held_windows == 20
    cache.forget_below(3)
    assert cache.held_windows == 5
    cache.sides([4, 5])
    assert cache.held_windows == 15
    calls.clear()
    cache.sides([3, 4, 5])
    assert calls == []
    assert cache.reads == 4 + 1 + 2                       # 4 was read twice


def test_a_text_larger_than_the_bound_is_handed_out_not_kept():
    load, _ = _loader({0: 50, 1: 2})
    cache = WindowCache(load, max_windows=10, read_at_once=8)
    got = cache.sides([0, 1])
    assert len(got[0][0]) == 50 and cache.held_windows == 2


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError):
        WindowCache(lambda keys: {}, max_windows=10, read_at_once=0)
