"""`project.asking`: offers from the neighbour graph, answers recorded as asked, counted for
fine-tuning; a pair judged in review is never offered."""

from __future__ import annotations

from engine.training.collect import training_input


def test_offers_skip_judged_pairs_and_verdicts_count_as_asked(open_questions):
    project = open_questions
    offered = project.asking.pairs(10)
    assert len(offered) == 10
    first, second = offered[0], offered[1]
    # One judged in review before it was answered, one answered as asked.
    project.verdicts.set_verdict(first.a.item_id, first.b.item_id, 1)
    project.asking.judge(second.a.item_id, second.b.item_id, 0)
    review_only = project.rows.by_public_id("q1")["item_id"], \
        project.rows.by_public_id("q50")["item_id"]
    project.asking.judge(*review_only, 0)          # never offered: a review verdict
    assert project.verdicts.asked() == 1
    origins = {(p["item_a"], p["item_b"]): p["origin"] for p in project.verdicts.pairs()}
    assert sorted(origins.values()) == ["asked", "review", "review"]
    assert training_input(project.verdicts.pairs()).asked == 1

    again = {frozenset((p.a.item_id, p.b.item_id)) for p in project.asking.pairs(30)}
    assert frozenset((first.a.item_id, first.b.item_id)) not in again
    assert frozenset((second.a.item_id, second.b.item_id)) not in again
    project.asking.judge(second.a.item_id, second.b.item_id, None)   # forgotten
    assert project.verdicts.asked() == 0
