"""Reading and writing quality samples: the design, the drawn pairs, their verdicts and who
gave them (schema v6).

A pair is stored as two text ids, smaller first. Several analysts of a team project add to
the one open sample of the current population: it is found (or made) under a lock, each new
draw is numbered under the same lock, and a verdict is one UPDATE of its draw's row.
"""

from __future__ import annotations

import getpass
import secrets
import time
from collections.abc import Sequence

from sqlalchemy import Connection, and_, func, select, update

from engine.store.dialects import lock, upsert
from engine.store.schema import items, meta, pair_labels, quality_draws, quality_samples

_IN_BATCH = 400
SAMPLE_LOCK = "quality-sample"
SEED_KEY = "quality_seed"       # the `meta` key of the project's seed (`project_seed`)


def current_analyst(conn: Connection) -> str:
    """The analyst behind this connection: the PostgreSQL role on a team project (what the
    server knows them by), else the operating system's user name."""
    if conn.dialect.name == "postgresql":
        return str(conn.execute(select(func.current_user())).scalar())
    try:
        return getpass.getuser()
    except (KeyError, OSError):   # no user name in the environment or the password file
        return "unknown"


def open_sample(conn: Connection, signature: str) -> dict | None:
    """The open sample drawn from the population `signature`, if there is one."""
    row = conn.execute(select(quality_samples).where(
        quality_samples.c.signature == signature, quality_samples.c.closed_at.is_(None))
        .order_by(quality_samples.c.id.desc())).mappings().first()
    return dict(row) if row else None


def latest_sample(conn: Connection) -> dict | None:
    """The most recent sample, open or closed (what a project had measured last)."""
    row = conn.execute(select(quality_samples).order_by(quality_samples.c.id.desc())
                       ).mappings().first()
    return dict(row) if row else None


def latest_open_sample(conn: Connection) -> dict | None:
    """The most recent sample if it is still open, whatever population it was drawn from
    (where a verdict given by row, `duplens label --from`, may count)."""
    latest = latest_sample(conn)
    return latest if latest is not None and latest["closed_at"] is None else None


def project_seed(conn: Connection) -> int:
    """The project's seed of permanent random numbers: made once, kept in `meta`, so every
    sample of the project draws its candidate pairs in the same order."""
    value = conn.execute(select(meta.c.value).where(meta.c.key == SEED_KEY)).scalar()
    if value is None:
        value = str(secrets.randbits(48))
        upsert(conn, meta, {"key": SEED_KEY, "value": value}, ["key"])
    return int(value)


def create_sample(conn: Connection, signature: str, design: dict, who: str) -> dict:
    """A new open sample for `signature`; every other open sample is closed (its population
    is gone). Call with `SAMPLE_LOCK` held, after `open_sample` found none."""
    now = time.time()
    conn.execute(update(quality_samples).where(quality_samples.c.closed_at.is_(None))
                 .values(closed_at=now))
    conn.execute(quality_samples.insert().values(signature=signature, design=design,
                                                 created_at=now, created_by=who))
    return open_sample(conn, signature)  # type: ignore[return-value]


def draws(conn: Connection, sample_id: int) -> list[dict]:
    """Every draw of a sample, in drawing order."""
    return [dict(r) for r in conn.execute(
        select(quality_draws).where(quality_draws.c.sample_id == sample_id)
        .order_by(quality_draws.c.seq)).mappings()]


def draw(conn: Connection, draw_id: int) -> dict | None:
    """One draw by its id (None when there is no such draw)."""
    row = conn.execute(select(quality_draws).where(quality_draws.c.id == draw_id)
                       ).mappings().first()
    return dict(row) if row is not None else None


def draw_of_pair(conn: Connection, sample_id: int, text_a: int, text_b: int) -> dict | None:
    """The sample's draw of this pair of texts (smaller id first), if it drew it."""
    row = conn.execute(select(quality_draws).where(
        quality_draws.c.sample_id == sample_id, quality_draws.c.text_a == text_a,
        quality_draws.c.text_b == text_b)).mappings().first()
    return dict(row) if row is not None else None


def add_draws(conn: Connection, sample_id: int, rows: Sequence[dict]) -> None:
    """Append drawn pairs (keys as in `quality_draws`, less sample_id and seq), numbered in
    order after the last. Call with `SAMPLE_LOCK` held."""
    if not rows:
        return
    last = conn.execute(select(func.max(quality_draws.c.seq))
                        .where(quality_draws.c.sample_id == sample_id)).scalar()
    start = 0 if last is None else last + 1
    conn.execute(quality_draws.insert(), [
        {**row, "sample_id": sample_id, "seq": start + i} for i, row in enumerate(rows)])


def set_draw_verdict(conn: Connection, draw_id: int, verdict: int | None, who: str | None, *,
                     reused: bool = False, expected: int | None | str = "any") -> bool:
    """Record (or, with None, take back) the verdict on one draw. With `expected`, only while
    the draw's verdict still is that (an undo never takes back another analyst's verdict);
    False when it was not."""
    condition = quality_draws.c.id == draw_id
    if expected != "any":
        condition = and_(condition, quality_draws.c.verdict.is_(None) if expected is None
                         else quality_draws.c.verdict == expected)
    done = conn.execute(update(quality_draws).where(condition).values(
        verdict=verdict, answered_by=who if verdict is not None else None,
        answered_at=time.time() if verdict is not None else None,
        reused=bool(reused) if verdict is not None else False,
        offered_to=None, offered_at=None))
    return done.rowcount > 0


def offer(conn: Connection, draw_ids: Sequence[int], who: str) -> None:
    """Remember that these draws without a verdict are on `who`'s screen now: another analyst's
    next pairs skip them for a while (`engine.services.measuring.OFFER_HOLD_S`)."""
    now = time.time()
    ids = list(draw_ids)
    for start in range(0, len(ids), _IN_BATCH):
        conn.execute(update(quality_draws).where(
            quality_draws.c.id.in_(ids[start:start + _IN_BATCH]),
            quality_draws.c.verdict.is_(None)).values(offered_to=who, offered_at=now))


def judged_pairs(conn: Connection) -> set[tuple[int, int]]:
    """Every pair of texts (smaller id first) with a verdict on a draw of any sample: what a
    new sample, made when the project changed, takes over (`engine.estimation.carried_draws`)."""
    return {(a, b) for a, b in conn.execute(
        select(quality_draws.c.text_a, quality_draws.c.text_b)
        .where(quality_draws.c.verdict.is_not(None)).distinct())}


def judged_elsewhere(conn: Connection, sample_id: int) -> bool:
    """Whether a pair judged on another sample's draw is one this sample has not drawn (a
    verdict given on a closed sample's draw still on screen; or a pair it cannot carry)."""
    mine = select(quality_draws.c.text_a, quality_draws.c.text_b).where(
        quality_draws.c.sample_id == sample_id)
    mine_pairs = {tuple(r) for r in conn.execute(mine)}
    since = conn.execute(select(quality_samples.c.created_at).where(
        quality_samples.c.id == sample_id)).scalar() or 0.0
    others = conn.execute(select(quality_draws.c.text_a, quality_draws.c.text_b).where(
        quality_draws.c.sample_id != sample_id, quality_draws.c.verdict.is_not(None),
        quality_draws.c.answered_at >= since))
    return any(tuple(r) not in mine_pairs for r in others)


def earlier_verdicts(conn: Connection, text_pairs: set[tuple[int, int]]
                     ) -> dict[tuple[int, int], int]:
    """The latest verdict anyone gave on each of these pairs of texts (smaller id first),
    outside this sample's draws: a verdict in the review or Ask me on two of their rows,
    or a verdict on a draw of an earlier sample. Only pairs that were drawn are looked up,
    so reusing these verdicts does not make the sample any less random."""
    if not text_pairs:
        return {}
    found: dict[tuple[int, int], tuple[float, int]] = {}
    for a, b, verdict, when in conn.execute(
            select(quality_draws.c.text_a, quality_draws.c.text_b, quality_draws.c.verdict,
                   quality_draws.c.answered_at)
            .where(quality_draws.c.verdict.is_not(None), ~quality_draws.c.reused)):
        if (a, b) in text_pairs and (found.get((a, b), (-1.0, 0))[0] < (when or 0)):
            found[(a, b)] = (when or 0.0, verdict)
    a_items, b_items = items.alias("a"), items.alias("b")
    for ta, tb, verdict, when in conn.execute(
            select(a_items.c.text_id, b_items.c.text_id, pair_labels.c.label,
                   pair_labels.c.created_at)
            .join(a_items, a_items.c.id == pair_labels.c.item_a)
            .join(b_items, b_items.c.id == pair_labels.c.item_b)):
        key = (min(ta, tb), max(ta, tb))
        if key in text_pairs and found.get(key, (-1.0, 0))[0] < when:
            found[key] = (when, verdict)
    return {key: verdict for key, (_when, verdict) in found.items()}


def verdicts_by_analyst(conn: Connection, sample_id: int) -> dict[str, int]:
    """How many verdicts each analyst gave in the sample (reused ones apart)."""
    rows = conn.execute(
        select(quality_draws.c.answered_by, quality_draws.c.reused, func.count())
        .where(quality_draws.c.sample_id == sample_id, quality_draws.c.verdict.is_not(None))
        .group_by(quality_draws.c.answered_by, quality_draws.c.reused)).all()
    out: dict[str, int] = {}
    for who, reused, count in rows:
        name = "earlier verdicts" if reused else (who or "unknown")
        out[name] = out.get(name, 0) + count
    return out


def take_lock(conn: Connection) -> None:
    """Be the only process drawing into, or making, a sample until the transaction ends."""
    lock(conn, SAMPLE_LOCK)
