"""The verdicts laid over a cut cluster, on random clusters and random verdicts (hypothesis):
no two rows judged "not duplicate" stay together, a row moved out always has a reason, rows
judged "duplicate" move as one, and the canonical leads."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.dedup.row_clusters import CANONICAL, Cluster, Member
from engine.review.verdict_overlay import apply_verdicts
from engine.store.pair_verdicts import ordered


def _member(i: int, score: float) -> Member:
    return Member(item_id=i, id=f"r{i}", row=i, source_id=1, text=f"text {i}", score=score,
                  text_id=100 + i)


@st.composite
def clusters_and_verdicts(draw):
    n = draw(st.integers(2, 9))
    scores = [1.0, *sorted(draw(st.lists(st.floats(0.5, 0.99), min_size=n - 1,
                                         max_size=n - 1)), reverse=True)]
    cluster = Cluster("", [_member(i, s) for i, s in enumerate(scores)])
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
    judged = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=len(pairs)))
    verdicts = {p: draw(st.sampled_from([0, 1])) for p in judged}
    # verdicts on rows of other clusters, as a whole cut's verdicts come: sometimes more of
    # them than the cluster has pairs (the overlay then looks its pairs up, not scans them)
    for k in range(draw(st.integers(0, 40))):
        verdicts[(1000 + k, 2000 + k)] = k % 2
    chosen = set(draw(st.lists(st.integers(0, n - 1), max_size=2)))
    # a similarity from the new canonical to the others: any fixed numbers will do
    sims = draw(st.lists(st.floats(0.3, 0.99), min_size=n * n, max_size=n * n))
    return cluster, verdicts, chosen, (lambda t, others: [sims[(t - 100) * n + (o - 100)]
                                                          for o in others])


def _dup_reach(start: int, rows: set[int], verdicts: dict) -> set[int]:
    """The rows of `rows` tied to `start` by "duplicate" verdicts, through `rows`."""
    seen, todo = {start}, [start]
    while todo:
        a = todo.pop()
        for b in rows - seen:
            if verdicts.get(ordered(a, b)) == 1:
                seen.add(b)
                todo.append(b)
    return seen


@settings(max_examples=400, deadline=None)
@given(clusters_and_verdicts())
def test_every_not_duplicate_verdict_is_obeyed_and_every_move_has_a_reason(case):
    cluster, verdicts, chosen, similarity = case
    made = apply_verdicts(cluster, verdicts, chosen, similarity)
    kept = [m.item_id for m in made.members]
    out = [m.item_id for m in made.rejected]
    everyone = {m.item_id for m in cluster.members}
    # every row once: kept or moved out
    assert sorted(kept + out) == sorted(everyone)
    # the canonical leads: the first chosen row (in the cut's order), else the centre
    lead = next((m.item_id for m in cluster.members if m.item_id in chosen),
                cluster.members[0].item_id)
    assert kept[0] == lead
    assert (made.canonical.verdict == CANONICAL) == (lead in chosen)
    # no two rows judged "not duplicate" stay together
    assert not [p for p, v in verdicts.items() if v == 0 and p[0] in kept and p[1] in kept]
    # a row moved out has a reason: it, or a row tied to it by "duplicate" verdicts among
    # the rows moved out, was judged "not duplicate" of a row that stays
    blamed = {r for r in out if any(verdicts.get(ordered(r, k)) == 0 for k in kept)}
    for r in out:
        assert _dup_reach(r, set(out), verdicts) & blamed, (r, verdicts, kept)


@settings(max_examples=200, deadline=None)
@given(clusters_and_verdicts())
def test_rows_judged_duplicate_stay_together_unless_a_not_forbids_it(case):
    cluster, verdicts, chosen, similarity = case
    made = apply_verdicts(cluster, verdicts, chosen, similarity)
    kept = {m.item_id for m in made.members}
    nots = {p for p, v in verdicts.items() if v == 0}
    for (a, b), v in verdicts.items():
        if v != 1 or (a in kept) == (b in kept):
            continue
        # split apart: only because some "not" verdict touches what the tie would join
        outside = b if a in kept else a
        tied = _dup_reach(outside, {m.item_id for m in cluster.members}, verdicts)
        assert any(x in p for p in nots for x in tied), (a, b, verdicts)


def test_without_verdicts_or_choices_the_cluster_is_as_cut():
    cluster = Cluster("", [_member(0, 1.0), _member(1, 0.9), _member(2, 0.85)])
    made = apply_verdicts(cluster, {}, set(), lambda t, o: [0.0] * len(o))
    assert [m.item_id for m in made.members] == [0, 1, 2] and not made.rejected


def test_a_not_between_two_members_that_do_not_lead_moves_the_less_similar_one_out():
    """What the analyst asked for: `duplens label P A B not` on two members of one cluster,
    neither of them its canonical, parts them."""
    cluster = Cluster("", [_member(0, 1.0), _member(1, 0.95), _member(2, 0.9)])
    made = apply_verdicts(cluster, {(1, 2): 0}, set(), lambda t, o: [0.0] * len(o))
    assert [m.item_id for m in made.members] == [0, 1]
    assert [m.item_id for m in made.rejected] == [2]


def test_not_wins_over_duplicate_when_they_disagree():
    """dup(1, 2), dup(2, 3) and not(1, 3) cannot all hold: 1 and 2 stay together, 3 leaves
    with nothing tying it back."""
    cluster = Cluster("", [_member(0, 1.0), _member(1, 0.95), _member(2, 0.9),
                           _member(3, 0.85)])
    made = apply_verdicts(cluster, {(1, 2): 1, (2, 3): 1, (1, 3): 0}, set(),
                          lambda t, o: [0.0] * len(o))
    assert [m.item_id for m in made.members] == [0, 1, 2]
    assert [m.item_id for m in made.rejected] == [3]
