"""The documents benchmark's corpus: reST to prose, documents cut at paragraph boundaries, and
each constructed case, on small made-up text (no package, no model)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from benchmarks import document_corpus as dc

RST = """\
.. _tut-intro:

*******************
An Informal Heading
*******************

The :keyword:`for` statement iterates over the items of any sequence, in the order
that they appear, see :func:`len <builtins.len>` and ``range`` for *more* details.

.. code-block:: python

   for this in code:
       print("never prose")

Here is an example of a literal block which introduces code that is dropped::

   >>> x = int(input("Please enter an integer: "))
   Please enter an integer: 42

.. function:: spam(eggs)

   Return the spam of **eggs**, a function whose body is prose and kept as a paragraph
   of its own even though it is indented under the directive.

   .. versionadded:: 3.2

Short one.
"""


def test_rst_paragraphs_keep_prose_and_drop_markup_code_and_headings():
    found = dc.rst_paragraphs(RST, min_words=8)
    assert found == [
        "The for statement iterates over the items of any sequence, in the order that they "
        "appear, see len and range for more details.",
        "Here is an example of a literal block which introduces code that is dropped:",
        "Return the spam of eggs, a function whose body is prose and kept as a paragraph of "
        "its own even though it is indented under the directive.",
    ]


WORDS = ["river", "stone", "maple", "cloud", "lantern", "harbor", "violet", "copper", "meadow",
         "ember", "falcon", "quartz", "willow", "signal", "garden", "anchor", "thunder",
         "silver", "orchard", "canyon"]


def made_up(rng: np.random.Generator, paragraphs: int, words: int = 60) -> list[str]:
    return [" ".join(f"{WORDS[int(rng.integers(len(WORDS)))]}{int(rng.integers(1000))}"
                     for _ in range(words)) for _ in range(paragraphs)]


def test_documents_are_cut_at_paragraph_boundaries_within_the_bounds():
    paragraphs = made_up(np.random.default_rng(1), 40, words=50)
    docs = dc.cut_documents(paragraphs, min_words=200, max_words=400,
                            rng=np.random.default_rng(2))
    assert docs
    for doc in docs:
        assert 200 <= sum(len(p.split()) for p in doc) <= 400
    starts = [paragraphs.index(doc[0]) for doc in docs]
    assert starts == sorted(starts)
    for start, doc in zip(starts, docs, strict=True):     # consecutive paragraphs, in order
        assert paragraphs[start:start + len(doc)] == doc


def test_near_duplicates_of_an_earlier_document_are_dropped():
    rng = np.random.default_rng(3)
    one, two = made_up(rng, 5), made_up(rng, 5)
    copy = dc.near_copy(one, np.random.default_rng(4), WORDS)
    docs = [dc.Document("one", one), dc.Document("two", two), dc.Document("copy", copy)]
    kept, dropped = dc.drop_overlapping(docs)
    assert [d.id for d in kept] == ["one", "two"] and dropped == 1


def quora_pairs(n: int) -> list[dc.QuoraPair]:
    return [dc.QuoraPair(f"q{2 * i}", f"q{2 * i + 1}", f"How do I ask question {i} first?",
                         f"What is the way to ask question {i}?", i % 2 == 0)
            for i in range(n)]


@pytest.fixture(scope="module")
def built() -> tuple[dc.Built, list[dc.Document], list[dc.Document]]:
    rng = np.random.default_rng(5)
    base = [dc.Document(f"doc{i}", made_up(rng, int(rng.integers(6, 9)))) for i in range(12)]
    filler = [dc.Document(f"fill{i}", made_up(rng, 7)) for i in range(6)]
    made = dc.build_cases(base, filler, quora_pairs(200), per_kind=2, paraphrase_cases=2,
                          seed=0, pair_range=(6, 8), min_words=40, per_paragraph=3)
    return made, base, filler


def words(text: str) -> list[str]:
    return text.split()


def test_each_kind_is_built_as_documented(built):
    made, base, filler = built
    texts = made.texts
    filler_words = {w for d in filler for w in d.text.split()}
    kinds = Counter(c.kind for c in made.cases)
    assert kinds == {k: 2 for k in dc.KINDS}
    for case in made.cases:
        a, b = texts[case.a], texts[case.b]
        assert case.is_duplicate == (case.kind not in dc.DECOY_KINDS)
        if case.kind == "near_copy":
            changed = sum(x != y for x, y in zip(words(a), words(b), strict=True))
            assert changed == max(1, round(0.02 * len(words(a))))
            assert a.count("\n\n") == b.count("\n\n")
        elif case.kind == "new_intro":
            assert b.endswith(a)
            intro = words(b)[:dc.INTRO_WORDS]
            assert len(words(b)) == len(words(a)) + dc.INTRO_WORDS
            assert set(intro) <= filler_words
        elif case.kind == "reordered":
            assert sorted(a.split("\n\n")) == sorted(b.split("\n\n")) and a != b
        elif case.kind == "inside":
            assert a in b and not b.startswith(a) and not b.endswith(a)
            outside = b.replace(a, "")
            assert set(words(outside)) <= filler_words
        elif case.kind == "decoy":
            assert words(b)[:dc.DECOY_PREFIX_WORDS] == words(a)[:dc.DECOY_PREFIX_WORDS]
            assert len(words(b)) == len(words(a))
            rest = words(b)[dc.DECOY_PREFIX_WORDS:]
            assert set(rest) <= filler_words and rest != words(a)[dc.DECOY_PREFIX_WORDS:]
        else:    # reworded, reworded_decoy: sentence i of B pairs with sentence i of A
            qa = [q for p in a.split("\n\n") for q in p.split("? ")]
            qb = [q for p in b.split("\n\n") for q in p.split("? ")]
            assert len(qa) == len(qb) >= 6
            for x, y in zip(qa, qb, strict=True):
                number = x.split("question ")[1].split()[0].rstrip("?")
                assert y.split("question ")[1].rstrip("?") == number
                assert (int(number) % 2 == 0) == (case.kind == "reworded")
            assert all(p.count("?") <= 3 for p in a.split("\n\n"))


def test_the_table_holds_each_base_document_once_and_no_filler(built):
    made, base, filler = built
    assert [d.id for d in base] == [i for i in made.texts if not i.startswith("quora")
                                     and "~" not in i]
    for d in base:
        assert made.texts[d.id] == d.text
    for d in filler:
        assert d.text not in made.texts.values()
    in_cases = Counter(c.a for c in made.cases)
    assert max(in_cases.values()) == 1
    assert sum(k == "distractor" for k in made.kind_of_group.values()) == 12 - 10
    assert made.duplicate_pairs == {frozenset((c.a, c.b)) for c in made.cases
                                    if c.kind in dc.DUPLICATE_KINDS}
    for case in made.cases:
        assert made.group_of[case.a] == made.group_of[case.b] == case.group == case.a


def test_each_quora_question_is_used_once(built):
    made, _, _ = built
    sentences = [q for c in made.cases if c.kind.startswith("reworded")
                 for d in (c.a, c.b) for q in made.texts[d].replace("\n\n", " ").split("?")
                 if q.strip()]
    assert len(sentences) == len(set(sentences))


def test_split_is_by_base_document_and_per_kind(built):
    made, _, _ = built
    half = dc.split_groups(made, seed=1)
    assert set(half) == set(made.kind_of_group)
    for kind in set(made.kind_of_group.values()):
        groups = [g for g, k in made.kind_of_group.items() if k == kind]
        assert sum(half[g] == "validation" for g in groups) == round(0.4 * len(groups))
    assert half == dc.split_groups(made, seed=1)
