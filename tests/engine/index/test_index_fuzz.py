"""Crafted index files never crash or hang the project's loader (`engine.index.index_check`).

Hypothesis mutates real files hnswlib wrote (header fields, link counts, neighbour ids,
labels, upper-level list sizes, random bytes, truncation, extension, splices of two files)
and a child process plants each one in a real project as its saved index, then opens it
through `persist.load_saved`, the path every open takes; what loads is used as the app would
(searched, added to, deleted from) and compared with the file. Each batch runs in one child,
so a crash is a failed case, not a dead test run, and a hang is a failure too; a failing case
is run again alone and named. The same mutants opened straight with hnswlib show what the
check is for: some crash it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.engine.index.index_files import (
    FIELDS,
    Base,
    interesting_header_values,
    interesting_words,
    make_bases,
    run_cases,
    write_bases,
)

BASES = make_bases()
CASES_PER_CHILD = 150


def _u32(base: Base) -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from(interesting_words(base)), st.integers(0, 2**32 - 1))


@st.composite
def mutation(draw, base: Base) -> list:
    kind = draw(st.sampled_from(["header", "level0", "level0", "tail", "tail", "label",
                                 "bytes", "truncate", "extend", "splice"]))
    sde = base.size_per_element
    if kind == "header":
        field = draw(st.sampled_from(FIELDS))
        return ["header", field, draw(st.sampled_from(interesting_header_values(base, field)))]
    if kind == "level0":
        # word 0: count and deleted mark; 1..64: neighbour slots; the rest: vector and label
        word = draw(st.one_of(st.just(0), st.integers(1, 64), st.integers(0, sde // 4)))
        return ["level0", draw(st.integers(0, 10**6)), word, draw(_u32(base))]
    if kind == "tail":
        return ["tail", draw(st.integers(0, 10**6)), draw(_u32(base))]
    if kind == "label":
        value = draw(st.one_of(st.integers(0, 5000), st.integers(0, 2**64 - 1)))
        return ["label", draw(st.integers(0, 10**6)), value]
    if kind == "bytes":
        raw = draw(st.binary(min_size=1, max_size=16))
        return ["bytes", draw(st.integers(0, 10**7)), raw.hex()]
    if kind == "truncate":
        size = len(base.data)
        cut = draw(st.one_of(st.sampled_from([size - 1, size - 4, size - 8, 95, 96, 100,
                                              base.level0_end, base.level0_end + 4]),
                             st.integers(0, size)))
        return ["truncate", max(cut, 0)]
    if kind == "extend":
        return ["extend", draw(st.one_of(st.sampled_from([b"\0" * 4, b"\0", b"\0" * 132]),
                                         st.binary(min_size=1, max_size=200))).hex()]
    other = BASES[draw(st.sampled_from(sorted(BASES)))]
    points = [0, 96, base.level0_end, len(base.data)]
    cut = draw(st.one_of(st.sampled_from(points), st.integers(0, len(base.data))))
    other_cut = draw(st.one_of(st.sampled_from([0, 96, other.level0_end]),
                               st.integers(0, len(other.data))))
    return ["splice", other.name, cut, other_cut]


@st.composite
def case(draw) -> dict:
    base = BASES[draw(st.sampled_from(sorted(BASES)))]
    ops = draw(st.lists(mutation(base), min_size=1, max_size=3))
    return {"base": base.name, "ops": ops}


def _check_batch(cases: list[dict]) -> dict[str, int]:
    """Open `cases` in a child; fail naming the first case that crashed, hung or disagreed.
    Returns how many were refused and loaded."""
    with tempfile.TemporaryDirectory(prefix="duplens-mutants-") as tmp:
        folder = Path(tmp)
        write_bases(folder, BASES)
        outcome = run_cases(folder, cases, timeout=60 + len(cases))
        if outcome.crashed is not None:
            bad = cases[outcome.crashed]
            alone = run_cases(folder, [bad], timeout=60)
            pytest.fail(f"case {outcome.crashed} ({outcome.how}): {bad}; run alone: "
                        f"{alone.how or alone.results}")
    disagreeing = [(c, r) for c, r in zip(cases, outcome.results, strict=True)
                   if r.startswith("disagree")]
    assert not disagreeing, disagreeing[:3]
    return {kind: sum(r.startswith(kind) for r in outcome.results)
            for kind in ("refused", "loaded")}


_FUZZ = dict(deadline=None, derandomize=False, phases=[Phase.explicit, Phase.generate],
             suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                    HealthCheck.large_base_example])


@settings(max_examples=2, **_FUZZ)
@given(st.lists(case(), min_size=CASES_PER_CHILD, max_size=CASES_PER_CHILD))
def test_crafted_index_files_are_refused_or_load_safely(cases):
    counts = _check_batch(cases)
    assert counts["refused"] + counts["loaded"] == len(cases)


@pytest.mark.slow
@settings(max_examples=20, **_FUZZ)
@given(st.lists(case(), min_size=260, max_size=260))
def test_thousands_of_crafted_index_files_are_refused_or_load_safely(cases):
    counts = _check_batch(cases)
    assert counts["refused"] + counts["loaded"] == len(cases)


def test_the_unmutated_bases_load_through_the_project():
    """The fuzz tests' control: every base file, unchanged, loads and agrees with hnswlib."""
    counts = _check_batch([{"base": name, "ops": []} for name in BASES])
    assert counts == {"refused": 0, "loaded": len(BASES)}


def test_without_the_check_a_crafted_file_crashes_hnswlib():
    """Why the check exists: the same kind of file opened straight with hnswlib kills the
    process (a neighbour id far beyond the elements: the search reads there), while the
    project refuses it and loads nothing."""
    crafted = [{"base": "mid", "ops": [["level0", element, 1, 2**31]
                                       for element in range(300)]}]
    with tempfile.TemporaryDirectory(prefix="duplens-mutants-") as tmp:
        folder = Path(tmp)
        write_bases(folder, BASES)
        raw = run_cases(folder, crafted, "raw", timeout=120)
        checked = run_cases(folder, crafted, timeout=120)
    assert raw.crashed == 0 and raw.how.startswith("exit -"), raw   # killed by a signal
    assert checked.crashed is None and set(checked.results) == {"refused"}
