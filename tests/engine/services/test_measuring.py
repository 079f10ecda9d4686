"""`project.measuring`: drawn pairs answered by an oracle on tests/data/questions.csv. With
every pair answered the figures are the exact counts; verdicts given elsewhere are reused
only for drawn pairs; a changed project starts a new sample that reuses answers."""

from __future__ import annotations

from itertools import combinations

import pytest

from engine.store import quality_samples as sample_store

GROUPS = [{"q1", "q2", "q3", "q41", "q42"}, {"q4", "q5"}, {"q6", "q7"}, {"q8", "q9"},
          {"q10", "q11"}, {"q12", "q13"}, {"q14", "q15"}, {"q16", "q17"}, {"q18", "q19"},
          {"q20", "q21"}, {"q22", "q23"}, {"q24", "q25"}, {"q26", "q27"}, {"q28", "q29"},
          {"q30", "q31"}, {"q47", "q48"}]
GROUP_OF = {q: i for i, group in enumerate(GROUPS) for q in group}


def _oracle(pair) -> int:
    a, b = GROUP_OF.get(pair.a.public_id), GROUP_OF.get(pair.b.public_id)
    return int(a is not None and a == b)


def _answer_all(project, n: int = 5000, limit: int | None = None) -> int:
    answered = 0
    while True:
        pairs = project.measuring.next_pairs(min(n, limit - answered) if limit else n)
        for p in pairs:
            project.measuring.judge(p.draw_id, _oracle(p))
        answered += len(pairs)
        if not pairs or (limit and answered >= limit):
            return answered


def _text_of(project) -> dict[str, int]:
    """Each row's public id -> its text id."""
    return {r["id"]: _text_id(project, r["item_id"]) for r in project.rows.page(0, 1000)}


def _text_id(project, item_id: int) -> int:
    from engine.store import items as item_store

    with project.store.read() as conn:
        return item_store.items_by_ids(conn, [item_id])[item_id]["text_id"]


@pytest.mark.slow
def test_every_pair_judged_gives_the_exact_counts(open_questions):
    project = open_questions
    n_texts = len(project.clusters.graph().ids)
    assert _answer_all(project) == n_texts * (n_texts - 1) // 2
    text_of = _text_of(project)
    dup_texts = {frozenset((text_of[a], text_of[b])) for group in GROUPS
                 for a, b in combinations(sorted(group), 2) if text_of[a] != text_of[b]}
    for threshold in (0.85, 0.7):
        flagged = set()
        for cluster in project.clusters.cut(threshold, verdicts=False):
            texts = {m.text_id for m in cluster.members}
            flagged |= {frozenset(p) for p in combinations(sorted(texts), 2)}
        tp = len(flagged & dup_texts)
        m = project.measuring.measure(threshold)
        e = m.estimate
        assert m.verdicts == n_texts * (n_texts - 1) // 2 and m.pending == 0
        assert e.flagged == len(flagged)
        assert e.duplicates.value == pytest.approx(len(dup_texts)) == 18
        assert e.precision.value == pytest.approx(tp / len(flagged))
        assert e.recall.value == pytest.approx(tp / len(dup_texts))
        assert e.f1.value == pytest.approx(2 * tp / (len(flagged) + len(dup_texts)))
        # Every row of a duplicate group: q1, q41 and q42 share one text.
        assert e.rows.value == pytest.approx(sum(len(g) for g in GROUPS)) == 35
        for figure in (e.precision, e.recall, e.f1, e.duplicates, e.rows):
            assert figure.low == pytest.approx(figure.value)
            assert figure.high == pytest.approx(figure.value)
    assert m.enough


@pytest.mark.slow
def test_only_drawn_pairs_count_and_earlier_verdicts_on_them_are_reused(open_questions):
    project = open_questions
    first = project.measuring.next_pairs(10)
    for p in first:
        project.measuring.judge(p.draw_id, _oracle(p))
    before = project.measuring.measure().estimate
    # Verdicts in the review on pairs not drawn: the estimate does not move.
    ids = {r["id"]: r["item_id"] for r in project.rows.page(0, 1000)}
    drawn = {frozenset((p.a.item_id, p.b.item_id)) for p in first}
    reviewed = [(ids[a], ids[b]) for a, b in (sorted(g)[:2] for g in GROUPS[1:])
                if frozenset((ids[a], ids[b])) not in drawn][:3]
    assert len(reviewed) == 3
    for a, b in reviewed:
        project.verdicts.set_verdict(a, b, 0)         # even wrong ones
    after = project.measuring.measure().estimate
    assert after.as_json() == before.as_json()
    # Drawing on: a pair judged in the review is answered with that verdict, not shown.
    shown = set()
    while True:
        pairs = project.measuring.next_pairs(50)
        if not pairs:
            break
        shown |= {frozenset((p.a.item_id, p.b.item_id)) for p in pairs}
        for p in pairs:
            project.measuring.judge(p.draw_id, _oracle(p))
    assert not shown & {frozenset(p) for p in reviewed}
    with project.store.read() as conn:
        sample = sample_store.latest_sample(conn)
        reused = [d for d in sample_store.draws(conn, sample["id"]) if d["reused"]]
        by_analyst = sample_store.verdicts_by_analyst(conn, sample["id"])
        assert by_analyst["earlier verdicts"] == len(reused)
    assert len(reused) == len(reviewed)
    assert all(d["verdict"] == 0 for d in reused)


def test_a_verdict_on_a_draw_is_one_on_the_rows_and_can_be_taken_back(open_questions):
    project = open_questions
    pair = project.measuring.next_pairs(1)[0]
    done = project.measuring.judge(pair.draw_id, 1)
    assert project.verdicts.verdict(pair.a.item_id, pair.b.item_id) == 1
    assert {p["origin"] for p in project.verdicts.pairs()} == {"measured"}
    assert project.measuring.measure().verdicts == 1
    assert project.measuring.take_back(done)
    assert project.verdicts.verdict(pair.a.item_id, pair.b.item_id) is None
    assert project.measuring.measure().verdicts == 0
    assert project.measuring.next_pairs(1)[0].draw_id == pair.draw_id   # asked again
    assert not project.measuring.take_back(done)      # nothing left to take back


def test_an_import_starts_a_new_sample_that_reuses_the_verdicts(open_questions, tmp_path):
    project = open_questions
    assert _answer_all(project, 20, limit=60) == 60
    old = project.measuring.measure()
    more = tmp_path / "more.csv"
    more.write_text("qid,question\nm1,How can I learn Python fast?\n"
                    "m2,What is the capital city of Australia?\nm3,How do glaciers move?\n",
                    encoding="utf-8")
    project.rows.import_table(more, ["question"], id_column="qid")
    project.vectors.encode()
    new = project.measuring.measure()
    assert new.changed
    with project.store.read() as conn:
        samples = conn.execute(sample_store.quality_samples.select()).mappings().all()
        latest = sample_store.latest_sample(conn)
        draws = sample_store.draws(conn, latest["id"])
    assert len(samples) == 2 and samples[0]["closed_at"] is not None
    assert latest["closed_at"] is None and latest["design"]["texts"] == 49
    assert len(draws) == 60                               # refilled to the old size
    reused = sum(d["reused"] for d in draws)
    assert reused >= 30, reused                           # the same pairs, mostly
    assert new.verdicts == reused and new.pending == 60 - reused
    assert old.estimate is not None and new.estimate is not None
