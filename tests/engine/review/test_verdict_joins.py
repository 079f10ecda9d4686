"""Every cut obeys every verdict, on random cuts and random verdicts (hypothesis): a cut's
clusters (rows spread over clusters and no cluster at random), each cluster's own verdicts
laid over it (`apply_verdicts`), then the "duplicate" verdicts joining across clusters
(`join_by_verdicts`). No two rows judged "not duplicate" share a cluster; two rows judged
"duplicate" share one unless a "not duplicate" verdict lies between their clusters; the
result does not depend on the order the clusters come in."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.dedup.row_clusters import CANONICAL, Cluster, Member
from engine.review.verdict_joins import join_by_verdicts
from engine.review.verdict_overlay import apply_verdicts
from engine.store.pair_verdicts import ordered


def _member(i: int, score: float) -> Member:
    return Member(item_id=i, id=f"r{i}", row=i, source_id=1, text=f"text {i}", score=score,
                  text_id=100 + i)


@st.composite
def cuts_and_verdicts(draw):
    n = draw(st.integers(2, 14))
    where = draw(st.lists(st.integers(-1, 4), min_size=n, max_size=n))   # -1: no cluster
    clusters = []
    for k in range(5):
        rows = [i for i in range(n) if where[i] == k]
        if len(rows) >= 2:
            scores = [1.0, *sorted(draw(st.lists(st.floats(0.5, 0.99), min_size=len(rows) - 1,
                                                 max_size=len(rows) - 1)), reverse=True)]
            clusters.append(Cluster(f"C{k}", [_member(i, s)
                                              for i, s in zip(rows, scores, strict=True)]))
    clustered = {m.item_id for c in clusters for m in c.members}
    loose = {i: _member(i, 0.0) for i in range(n) if i not in clustered}
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
    judged = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=len(pairs)))
    verdicts = {p: draw(st.sampled_from([0, 1])) for p in judged}
    chosen = set(draw(st.lists(st.integers(0, n - 1), max_size=2)))
    # similarities between texts: symmetric, ties on purpose (few distinct values)
    values = draw(st.lists(st.sampled_from([0.6, 0.7, 0.8, 0.9]), min_size=n * n,
                           max_size=n * n))

    def similarity(t, others):
        return [values[min(t, o) % 100 * n + max(t, o) % 100] for o in others]

    return clusters, loose, verdicts, chosen, similarity


def _cut(clusters, loose, verdicts, chosen, similarity) -> list[Cluster]:
    overlaid = [apply_verdicts(c, verdicts, chosen, similarity) for c in clusters]
    joined = join_by_verdicts(overlaid, loose, verdicts, chosen, similarity)
    return [c for c in (*joined.clusters, *joined.extra) if len(c.members) > 1]


def _where(made: list[Cluster], n: int) -> dict[int, frozenset[int]]:
    """row -> the rows of its cluster ({row} when in none)."""
    out = {i: frozenset({i}) for i in range(n)}
    for c in made:
        rows = frozenset(m.item_id for m in c.members)
        for i in rows:
            out[i] = rows
    return out


@settings(max_examples=500, deadline=None)
@given(cuts_and_verdicts())
def test_every_verdict_is_obeyed_and_not_wins_a_conflict(case):
    clusters, loose, verdicts, chosen, similarity = case
    n = len(loose) + sum(len(c.members) for c in clusters)
    made = _cut(clusters, loose, verdicts, chosen, similarity)
    members = [m.item_id for c in made for m in c.members]
    assert len(members) == len(set(members))                   # a row in one cluster at most
    where = _where(made, n)
    nots = {p for p, v in verdicts.items() if v == 0}
    # no two rows judged "not duplicate" share a cluster
    assert not [(a, b) for a, b in nots if where[a] is where[b] and len(where[a]) > 1]
    # two rows judged "duplicate" share one, unless a "not" lies between their clusters
    for (a, b), v in verdicts.items():
        if v == 1 and where[a] != where[b]:
            assert any(ordered(x, y) in nots for x in where[a] for y in where[b]), (a, b)
    # a row the overlay kept in a cluster is still in one; a chosen row leads its cluster
    overlaid = [apply_verdicts(c, verdicts, chosen, similarity) for c in clusters]
    assert {m.item_id for c in overlaid if len(c.members) > 1 for m in c.members} \
        <= set(members)
    for c in made:
        if chosen & {m.item_id for m in c.members}:
            assert c.canonical.verdict == CANONICAL
        assert [m.score for m in c.members[1:]] == sorted((m.score for m in c.members[1:]),
                                                          reverse=True)


@settings(max_examples=300, deadline=None)
@given(cuts_and_verdicts(), st.randoms(use_true_random=False))
def test_the_result_does_not_depend_on_the_order_clusters_come_in(case, rnd):
    clusters, loose, verdicts, chosen, similarity = case
    shuffled = list(clusters)
    rnd.shuffle(shuffled)

    def shape(made):
        return sorted((c.cluster_id, [(m.item_id, m.score, m.verdict) for m in c.members],
                       sorted(m.item_id for m in c.rejected)) for c in made)

    assert shape(_cut(clusters, loose, verdicts, chosen, similarity)) == \
        shape(_cut(shuffled, loose, verdicts, chosen, similarity))


def _sims(t, others):
    return [0.8] * len(others)


def test_a_duplicate_across_two_clusters_joins_them_into_the_bigger_one():
    big = Cluster("C1", [_member(0, 1.0), _member(1, 0.9), _member(2, 0.85)])
    small = Cluster("C2", [_member(3, 1.0), _member(4, 0.9)])
    joined = join_by_verdicts([small, big], {}, {(2, 4): 1}, set(), _sims)
    assert joined.clusters[0].members == [] and not joined.extra
    host = joined.clusters[1]
    assert host.cluster_id == "C1" and host.canonical.item_id == 0
    assert sorted(m.item_id for m in host.members) == [0, 1, 2, 3, 4]


def test_a_not_between_the_two_clusters_keeps_them_apart():
    big = Cluster("C1", [_member(0, 1.0), _member(1, 0.9)])
    small = Cluster("C2", [_member(3, 1.0), _member(4, 0.9)])
    joined = join_by_verdicts([big, small], {}, {(1, 4): 1, (0, 3): 0}, set(), _sims)
    assert joined.clusters == [big, small]


def test_rows_in_no_cluster_judged_duplicate_make_one_led_by_the_oldest():
    joined = join_by_verdicts([], {7: _member(7, 0.0), 5: _member(5, 0.0)}, {(5, 7): 1},
                              set(), _sims)
    assert [[m.item_id for m in c.members] for c in joined.extra] == [[5, 7]]
    assert joined.extra[0].members[1].verdict == "duplicate"
