"""`project.asking`: offers from the neighbour graph, answers recorded as asked, counted for
fine-tuning; a pair judged in review is never offered."""

from __future__ import annotations

import pytest

from engine.errors import InputError
from engine.review.disagreement import SCORED_PER_PAIR, disagrees
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


def test_by_disagreement_the_pairs_the_judge_disagrees_on_come_first(open_questions,
                                                                     monkeypatch):
    """A stand-in judge that calls every pair sharing no first word a duplicate: where the
    model calls such a pair not one (and the reverse), the pair is asked first, with the
    judge's probability on it; the pairs both agree on come after, never left out."""
    project = open_questions
    with pytest.raises(InputError, match="no second opinion"):   # none offered: refused
        project.asking.pairs(5, by_disagreement=True)
    scored: list[int] = []

    def judge(pairs):
        scored.append(len(pairs))
        return [0.9 if a.split()[0] != b.split()[0] else 0.1 for a, b in pairs]

    monkeypatch.setattr(project.versions, "second_opinion_scores", judge)
    monkeypatch.setattr(project.versions, "second_opinion", lambda: {"id": 2, "offered": True})
    asked = project.asking.pairs(8, by_disagreement=True)
    assert len(scored) == 1 and scored[0] <= 8 * SCORED_PER_PAIR   # the shortlist only
    assert len(asked) == 8 and all(p.opinion in (0.9, 0.1) for p in asked)
    flags = [disagrees(p.score, p.threshold, p.opinion) for p in asked]
    assert any(flags) and flags == sorted(flags, reverse=True), flags
    assert asked[0].as_json()["second_opinion"] == asked[0].opinion
    # The usual order carries no opinion and asks the judge nothing.
    assert all(p.opinion is None for p in project.asking.pairs(8)) and len(scored) == 1
