"""Reading and writing the analyst's verdicts on pairs of items, their canonical choices, and
which pairs were offered to them (the `pair_labels`, `canonical_items` and `offered_pairs`
tables).

A pair is stored once, smaller item id first, so (a, b) and (b, a) are the same pair.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from sqlalchemy import Connection, and_, delete, func, or_, select

from engine.store.dialects import insert_missing, lock, upsert
from engine.store.schema import canonical_items, items, offered_pairs, pair_labels

_IN_BATCH = 400


def ordered(item_a: int, item_b: int) -> tuple[int, int]:
    return (item_a, item_b) if item_a <= item_b else (item_b, item_a)


def get_verdict(conn: Connection, item_a: int, item_b: int) -> int | None:
    a, b = ordered(item_a, item_b)
    return conn.execute(select(pair_labels.c.label).where(
        pair_labels.c.item_a == a, pair_labels.c.item_b == b)).scalar()


def set_verdict(conn: Connection, item_a: int, item_b: int, verdict: int | None,
                origin: str = "review") -> None:
    """Store (or with None, forget) the verdict on a pair.

    One upsert: two analysts judging the same pair at once both succeed, the later verdict
    stays (a delete then an insert would fail on the unique pair for one of them)."""
    a, b = ordered(item_a, item_b)
    pair_lock(conn, a, b)
    if verdict is None:
        conn.execute(delete(pair_labels).where(pair_labels.c.item_a == a,
                                               pair_labels.c.item_b == b))
        return
    upsert(conn, pair_labels, {"item_a": a, "item_b": b, "label": int(verdict),
                               "origin": origin, "created_at": time.time()},
           ["item_a", "item_b"])


def pair_lock(conn: Connection, item_a: int, item_b: int) -> None:
    """Be the only writer of this pair's verdict until the transaction ends (all processes),
    so that `replace_verdict`'s read and write are one step for every other writer."""
    a, b = ordered(item_a, item_b)
    lock(conn, f"pair:{a}:{b}")


def replace_verdict(conn: Connection, item_a: int, item_b: int, expected: int | None,
                    verdict: int | None) -> bool:
    """Set the verdict only while it still is `expected`; False (nothing written) when
    someone changed it since: what an undo writes, so it never undoes another's verdict."""
    pair_lock(conn, item_a, item_b)
    if get_verdict(conn, item_a, item_b) != expected:
        return False
    set_verdict(conn, item_a, item_b, verdict)
    return True


def verdicts_among(conn: Connection, item_ids: Sequence[int]) -> dict[tuple[int, int], int]:
    """Verdicts on pairs with both items in `item_ids` (one cluster's worth, or all of them).

    Analysts judge hundreds or thousands of pairs, while every cluster at once holds tens of
    thousands of rows: then the whole table is one cheap read instead of many IN batches.
    """
    wanted = set(item_ids)
    out: dict[tuple[int, int], int] = {}
    if conn.execute(select(func.count()).select_from(pair_labels)).scalar_one() <= len(wanted):
        for a, b, verdict in conn.execute(select(pair_labels.c.item_a, pair_labels.c.item_b,
                                                 pair_labels.c.label)):
            if a in wanted and b in wanted:
                out[(a, b)] = verdict
        return out
    ids = list(wanted)
    for start in range(0, len(ids), _IN_BATCH):
        batch = ids[start:start + _IN_BATCH]
        rows = conn.execute(select(pair_labels.c.item_a, pair_labels.c.item_b,
                                   pair_labels.c.label).where(
            or_(pair_labels.c.item_a.in_(batch), pair_labels.c.item_b.in_(batch)))).all()
        for a, b, verdict in rows:
            if a in wanted and b in wanted:
                out[(a, b)] = verdict
    return out


def all_verdicts(conn: Connection) -> list[dict]:
    """Every judged pair of live items, with both texts: the fine-tuning data (the verdict
    is the row's `label`, the column's name)."""
    a_items = items.alias("a")
    b_items = items.alias("b")
    rows = conn.execute(
        select(pair_labels.c.item_a, pair_labels.c.item_b, pair_labels.c.label,
               pair_labels.c.origin, a_items.c.text.label("text_a"),
               b_items.c.text.label("text_b"), a_items.c.text_id.label("text_id_a"),
               b_items.c.text_id.label("text_id_b"))
        .join(a_items, a_items.c.id == pair_labels.c.item_a)
        .join(b_items, b_items.c.id == pair_labels.c.item_b)
        .where(and_(~a_items.c.deleted, ~b_items.c.deleted))
        .order_by(pair_labels.c.id)
    ).mappings().all()
    return [dict(r) for r in rows]


def canonical_among(conn: Connection, item_ids: Sequence[int]) -> set[int]:
    """Which of `item_ids` the analyst chose as canonical (the whole table when smaller)."""
    if (conn.execute(select(func.count()).select_from(canonical_items)).scalar_one()
            <= len(item_ids)):
        wanted = set(item_ids)
        return {i for i in conn.execute(select(canonical_items.c.item_id)).scalars()
                if i in wanted}
    out: set[int] = set()
    ids = list(item_ids)
    for start in range(0, len(ids), _IN_BATCH):
        batch = ids[start:start + _IN_BATCH]
        out.update(conn.execute(select(canonical_items.c.item_id).where(
            canonical_items.c.item_id.in_(batch))).scalars())
    return out


def set_canonical(conn: Connection, clear: Sequence[int], chosen: Sequence[int]) -> None:
    """Forget the choice on `clear`, then mark `chosen` as canonical."""
    lock(conn, "canonical")
    ids = list(clear)
    for start in range(0, len(ids), _IN_BATCH):
        conn.execute(delete(canonical_items).where(
            canonical_items.c.item_id.in_(ids[start:start + _IN_BATCH])))
    if chosen:   # one another analyst chose at the same time stays chosen, once
        now = time.time()
        insert_missing(conn, canonical_items,
                       [{"item_id": i, "created_at": now} for i in dict.fromkeys(chosen)],
                       ["item_id"])


def replace_canonical(conn: Connection, item_ids: Sequence[int], expected: Sequence[int],
                      chosen: Sequence[int]) -> bool:
    """Make `chosen` the canonical rows among `item_ids` only while the choice among them
    still is `expected`; False (nothing written) when someone changed it since."""
    lock(conn, "canonical")
    if canonical_among(conn, item_ids) != set(expected):
        return False
    set_canonical(conn, item_ids, chosen)
    return True


def count_verdicts(conn: Connection) -> dict[int, int]:
    """How many pairs carry each verdict (1 duplicate, 0 not duplicate)."""
    return dict(conn.execute(select(pair_labels.c.label, func.count())
                             .group_by(pair_labels.c.label)).all())


def count_by_origin(conn: Connection, origin: str) -> int:
    """How many verdicts came from `origin` ("asked": the model asked for them)."""
    return conn.execute(select(func.count()).select_from(pair_labels)
                        .where(pair_labels.c.origin == origin)).scalar_one()


def record_offers(conn: Connection, pairs: Sequence[tuple[int, int]]) -> None:
    """Remember that these pairs of items were offered to the analyst (`was_offered`)."""
    now = time.time()
    rows = {ordered(a, b): None for a, b in pairs}
    insert_missing(conn, offered_pairs, [{"item_a": a, "item_b": b, "offered_at": now}
                                         for a, b in rows], ["item_a", "item_b"])


def was_offered(conn: Connection, item_a: int, item_b: int) -> bool:
    a, b = ordered(item_a, item_b)
    return conn.execute(select(func.count()).select_from(offered_pairs).where(
        offered_pairs.c.item_a == a, offered_pairs.c.item_b == b)).scalar_one() > 0


def fingerprint(conn: Connection) -> tuple:
    """Changes whenever a verdict or a canonical choice is written or removed (the count
    moves, or a later time is stamped): cuts kept between imports are decided again then."""
    verdicts = conn.execute(select(func.count(), func.max(pair_labels.c.created_at))
                            .select_from(pair_labels)).one()
    chosen = conn.execute(select(func.count(), func.max(canonical_items.c.created_at))
                          .select_from(canonical_items)).one()
    return (*verdicts, *chosen)


def duplicate_pairs(conn: Connection) -> list[tuple[int, int, int, int]]:
    """Every pair of live items judged duplicate, as (item_a, item_b, text_a, text_b): the
    verdicts that join clusters after a cut (`engine.review.verdict_joins`), wherever the
    cut put their rows."""
    return [(a, b, ta, tb) for a, b, ta, tb, _ in _live_verdicts(conn, only=1)]


def text_verdicts(conn: Connection) -> list[tuple[int, int, int]]:
    """Every verdict on two live items as (text_a, text_b, verdict), without the texts: what
    the quality estimate counts against the cut (`engine.estimation.cut_scope`) each time it
    is measured, so it reads ids only."""
    return [(ta, tb, v) for _, _, ta, tb, v in _live_verdicts(conn)]


def _live_verdicts(conn: Connection, only: int | None = None
                   ) -> list[tuple[int, int, int, int, int]]:
    """(item_a, item_b, text_a, text_b, verdict) of every verdict on two live items (of one
    verdict where `only` says which), in item order."""
    a_items = items.alias("a")
    b_items = items.alias("b")
    live = and_(~a_items.c.deleted, ~b_items.c.deleted)
    rows = conn.execute(
        select(pair_labels.c.item_a, pair_labels.c.item_b, a_items.c.text_id,
               b_items.c.text_id, pair_labels.c.label)
        .join(a_items, a_items.c.id == pair_labels.c.item_a)
        .join(b_items, b_items.c.id == pair_labels.c.item_b)
        .where(live if only is None else and_(live, pair_labels.c.label == only))
        .order_by(pair_labels.c.item_a, pair_labels.c.item_b)).all()
    return [(int(a), int(b), int(ta), int(tb), int(v)) for a, b, ta, tb, v in rows]
