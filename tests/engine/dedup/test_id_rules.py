"""The stable-id rules on their own (no store): each rule, and a threshold moved back and
forth giving back the same ids."""

from engine.dedup.id_rules import (
    KEPT,
    MERGED,
    NEW,
    REVIVED,
    SPLIT,
    CutCluster,
    apply,
    assign,
    label,
    number,
)
from engine.store.id_records import Before


def cut(*items: int, canonical: int | None = None, chosen: bool = False) -> CutCluster:
    return CutCluster(tuple(items), items[0] if canonical is None else canonical, chosen)


def start(*cuts: CutCluster) -> tuple[Before, list[int]]:
    """The assignment of a first cut (every cluster new), recorded."""
    empty = Before({}, {}, 1)
    result = assign(list(cuts), empty)
    assert result.how == [NEW] * len(cuts)
    return apply(empty, result), result.ids


def test_ids_read_as_short_labels_and_back():
    assert label(123) == "C000123" and number("C000123") == 123
    assert label(1_234_567) == "C1234567"


def test_the_first_cut_numbers_clusters_from_one():
    _, ids = start(cut(1, 2), cut(3, 4, 5))
    assert ids == [1, 2]


def test_a_row_that_joins_takes_the_clusters_id():
    before, ids = start(cut(1, 2), cut(3, 4))
    result = assign([cut(1, 2, 9), cut(3, 4)], before)
    assert result.ids == ids and result.how == [KEPT, KEPT]
    assert result.changed == {9: (None, ids[0])}
    assert not result.minted and not result.retired


def test_a_merge_keeps_the_older_id_and_retires_the_other():
    before, (a, b) = start(cut(1, 2), cut(3, 4))
    result = assign([cut(3, 4, 1, 2)], before)   # the younger's anchor leads
    assert result.ids == [a] and result.how == [MERGED]
    assert result.retired == {b: a}
    assert result.changed == {3: (b, a), 4: (b, a)}


def test_a_split_keeps_the_id_with_the_canonical_and_gives_the_rest_a_new_one():
    before, (a,) = start(cut(1, 2, 3, 4))
    result = assign([cut(3, 4), cut(1, 2)], before)
    assert result.ids[1] == a and result.how[1] == KEPT
    assert result.how[0] == SPLIT and result.minted == {result.ids[0]: a}
    assert result.ids[0] == a + 1


def test_a_cluster_that_lost_its_canonical_keeps_the_id_by_most_of_its_rows():
    before, (a,) = start(cut(1, 2, 3, 4))
    before.dead.add(1)                      # the canonical row was deleted
    del before.members[1]
    result = assign([cut(2, 3, 4)], before)
    assert result.ids == [a] and result.anchors == {a: 2}
    # half of the rows left is not most: a new id
    before2, (b,) = start(cut(1, 2, 3, 4))
    before2.dead.add(1)
    del before2.members[1]
    result = assign([cut(2, 7), cut(3, 4, 8, 9)], before2)   # 1 of 3 and 2 of 3
    assert result.ids[1] == b and result.how[0] == SPLIT


def test_new_clusters_get_numbers_never_used_even_after_retirements():
    before, (a, b) = start(cut(1, 2), cut(3, 4))
    merged = assign([cut(1, 2, 3, 4)], before)
    before = apply(before, merged)
    result = assign([cut(1, 2, 3, 4), cut(7, 8)], before)
    assert result.ids == [a, 3]


def test_a_threshold_moved_down_then_up_gives_back_the_same_ids():
    # at 0.85: {1,2} and {3,4}; at 0.80 they merge around a new centre 3; back at 0.85.
    before, ids = start(cut(1, 2), cut(3, 4))
    down = assign([cut(3, 1, 2, 4)], before)
    before = apply(before, down)
    up = assign([cut(1, 2), cut(3, 4)], before)
    assert up.ids == ids and up.how == [KEPT, REVIVED]
    before = apply(before, up)
    again = assign([cut(3, 1, 2, 4)], before)
    assert again.ids == [ids[0]]


def test_a_threshold_moved_up_then_down_gives_back_the_same_ids():
    before, (a,) = start(cut(1, 2, 3, 4))
    up = assign([cut(1, 2), cut(3, 4)], before)      # the split makes a new id once
    before = apply(before, up)
    down = assign([cut(1, 2, 3, 4)], before)
    assert down.ids == [a] and down.retired == {up.ids[1]: a}
    before = apply(before, down)
    up_again = assign([cut(1, 2), cut(3, 4)], before)
    assert up_again.ids == up.ids and not up_again.minted


def test_a_cluster_that_dissolves_and_comes_back_keeps_its_id():
    before, (a, b) = start(cut(1, 2, 3), cut(5, 6))
    gone = assign([cut(5, 6)], before)              # at a higher threshold 1..3 are alone
    assert gone.changed == {1: (a, None), 2: (a, None), 3: (a, None)}
    before = apply(before, gone)
    back = assign([cut(1, 2, 3), cut(5, 6)], before)
    assert back.ids == [a, b]


def test_the_anchor_follows_the_analysts_canonical_choice():
    before, (a,) = start(cut(1, 2, 3))
    chosen = assign([cut(1, 2, 3, canonical=3, chosen=True)], before)
    assert chosen.ids == [a] and chosen.anchors == {a: 3}
    before = apply(before, chosen)
    result = assign([cut(1, 2), cut(3, 4)], before)
    assert result.ids[1] == a


def test_an_id_whose_rows_are_all_deleted_is_retired_for_good():
    before, (a, b) = start(cut(1, 2), cut(3, 4))
    before.dead.update({1})
    for i in (1, 2):
        del before.members[i]
    result = assign([cut(3, 4)], before)
    assert result.retired == {a: None}


def test_only_the_changed_clusters_are_looked_at_in_an_incremental_cut():
    before, (a, b, c) = start(cut(1, 2), cut(3, 4), cut(5, 6))
    result = assign([cut(3, 4, 9)], before, every_cluster=False)
    assert result.ids == [b] and result.changed == {9: (None, b)}
    full = assign([cut(1, 2), cut(3, 4, 9), cut(5, 6)], before)
    assert full.changed == result.changed and full.ids[1] == b


def test_the_row_that_leads_is_noted_apart_from_the_anchor_which_stays():
    before, (a, b) = start(cut(1, 2, 3), cut(4, 5))
    assert [before.records[i].canonical for i in (a, b)] == [1, 4]
    result = assign([cut(1, 2, 3, canonical=2), cut(4, 5)], before)   # a new centre
    assert result.ids == [a, b] and result.canonicals == {a: (1, 2)}
    assert not result.anchors and not result.changed and not result.writes_nothing
    after = apply(before, result)
    assert (after.records[a].anchor, after.records[a].canonical) == (1, 2)
    assert assign([cut(1, 2, 3, canonical=2), cut(4, 5)], after).writes_nothing
    merged = assign([cut(4, 5, 1, 2, 3)], after)                      # b's lead leads
    assert merged.ids == [a] and merged.canonicals == {a: (2, 4)}
    assert apply(after, merged).records[b].canonical == 4             # kept while retired
