"""The real near-duplicate benchmark's table: Django pages read from a source archive without
unpacking it, a page's two releases one case whose kind follows how much changed, unchanged
pages one row, pages in one release distractors, and cross-page pairs told apart."""

from __future__ import annotations

import io
import tarfile

import pytest

from benchmarks import document_revisions as dr
from benchmarks import documents


def _page(topic: str, words: int, seed: int = 0) -> list[str]:
    """A page of `words` distinct-looking words in paragraphs of 100."""
    made = [f"{topic}{(i * 7 + seed) % 997}w{i}" for i in range(words)]
    return [" ".join(made[i:i + 100]) for i in range(0, words, 100)]


def _edited(paragraphs: list[str], every: int) -> list[str]:
    """Every `every`-th word replaced."""
    out = []
    for p in paragraphs:
        words = p.split()
        out.append(" ".join("changed" if i % every == 0 else w for i, w in enumerate(words)))
    return out


def test_changed_share_counts_the_words_that_do_not_align():
    text = " ".join(f"w{i}" for i in range(200))
    assert dr.changed_share(text, text) == 0.0
    assert dr.changed_share(text, " ".join(f"x{i}" for i in range(200))) == 1.0
    half_changed = " ".join(f"w{i}" if i < 100 else f"x{i}" for i in range(200))
    assert dr.changed_share(text, half_changed) == pytest.approx(0.5)
    assert [dr.kind_of(s) for s in (0.01, 0.05, 0.19, 0.2, 0.6)] == [
        "revised_light", "revised", "revised", "revised_heavy", "revised_heavy"]


def test_pages_are_read_from_the_archives_docs_folder_only(tmp_path):
    archive = tmp_path / "Django-9.9.tar.gz"
    files = {
        "Django-9.9/docs/intro.txt": "Title\n=====\n\n" + "word " * 30 + "\n",
        "Django-9.9/docs/ref/models.txt": "Some prose here that is long enough to keep as a "
                                          "paragraph of the page, twelve words or more.\n",
        "Django-9.9/README.txt": "not documentation " * 20,
        "Django-9.9/docs/conf.py": "print('never read')\n",
    }
    with tarfile.open(archive, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    pages = dr.read_pages(archive)
    assert sorted(pages) == ["intro", "ref/models"]
    assert pages["ref/models"] == ["Some prose here that is long enough to keep as a paragraph "
                                   "of the page, twelve words or more."]
    assert not list(tmp_path.glob("Django-9.9"))          # nothing unpacked


def test_a_revised_page_is_a_case_of_its_kind_and_the_rest_are_distractors():
    long = dr.MIN_WORDS + 100
    old = {"light": _page("a", long), "heavy": _page("b", long), "same": _page("c", long),
           "gone": _page("d", long), "short": _page("e", 100)}
    new = {"light": _edited(old["light"], 50), "heavy": _edited(old["heavy"], 3),
           "same": list(old["same"]), "added": _page("f", long), "short": _page("e", 100)}
    built, counts = dr.build_table(old, new, ("1.0", "2.0"))

    assert {(c.kind, c.a, c.b) for c in built.cases} == {
        ("revised_light", "1.0/light", "2.0/light"),
        ("revised_heavy", "1.0/heavy", "2.0/heavy")}
    assert all(c.is_duplicate for c in built.cases)
    assert sorted(built.texts) == ["1.0/gone", "1.0/heavy", "1.0/light", "2.0/added",
                                   "2.0/heavy", "2.0/light", "2.0/same"]
    assert counts == {"unchanged": 1, "only_in_1.0": 1, "only_in_2.0": 1}
    distractors = {g for g, k in built.kind_of_group.items() if k == "distractor"}
    assert distractors == {"same", "1.0/gone", "2.0/added"}
    assert built.details["changed_share"]["light"] == pytest.approx(0.02, abs=0.005)


def test_scoring_names_the_real_kinds_and_lists_cross_page_pairs():
    long = dr.MIN_WORDS + 100
    old = {p: _page(p, long) for p in ("p", "q", "r", "s", "t")}
    new = {p: _edited(ps, 40) for p, ps in old.items()}
    new["t"] = old["p"][:3] + _page("t2", 1200)[3:]          # 2.0's t holds p's opening
    built, _ = dr.build_table(old, new, ("1.0", "2.0"))
    half = {g: "test" for g in built.kind_of_group}
    found = {frozenset(("1.0/p", "2.0/p")), frozenset(("1.0/p", "2.0/t")),
             frozenset(("1.0/q", "2.0/r"))}

    scored = documents.score(found, built, half, "test")
    assert [k for k in scored if k not in ("all", "distractor")] == \
        documents.kinds_of(built)
    assert scored["all"]["found_right"] == 1 and scored["all"]["truth"] == 5
    cross = dr.cross_page(found, built, half)
    assert cross["pairs"] == 2 and cross["sharing_a_fifth_or_more"] == 1
    first = cross["largest"][0]
    assert (first["a"], first["b"]) == ("1.0/p", "2.0/t")
    assert first["a_held_by_b"] > first["b_held_by_a"] > 0     # 3/7 of p, 1/4 of t


def test_missed_cases_are_named_with_how_much_changed():
    long = dr.MIN_WORDS + 100
    old = {p: _page(p, long) for p in ("p", "q")}
    new = {"p": _edited(old["p"], 40), "q": _edited(old["q"], 3)}
    built, _ = dr.build_table(old, new, ("1.0", "2.0"))
    half = {g: "test" for g in built.kind_of_group}
    left = dr.missed({frozenset(("1.0/p", "2.0/p"))}, built, half)
    assert [(m["page"], m["kind"]) for m in left] == [("q", "revised_heavy")]
    assert left[0]["changed_share"] == pytest.approx(1 / 3, abs=0.01)
