"""The rows behind model versions (`engine.training.version_folders` owns the folders).

A trained version's id is chosen by the caller (one more than any id and any `v<N>` folder,
so folder and number agree) instead of by the database, which needs two things on a server:
the id sequence moved past it afterwards (PostgreSQL's SERIAL does not notice an explicit
id, and the next model registered would collide with it), and one numbering at a time
across processes (`lock_numbering`).
"""

from __future__ import annotations

from sqlalchemy import Connection, delete, func, insert, or_, select, update

from engine.store.dialects import backend_of, lock
from engine.store.schema import blobs, indexes, meta, models

ACTIVE_MODEL_KEY = "active_model_id"


def lock_numbering(conn: Connection) -> None:
    """Be the only transaction choosing a version number until this one ends."""
    lock(conn, "model-versions")


def model_with_fingerprint(conn: Connection, fingerprint: str) -> int | None:
    return conn.execute(select(models.c.id).where(models.c.fingerprint == fingerprint)
                        ).scalar()


def highest_model_id(conn: Connection) -> int:
    return conn.execute(select(func.max(models.c.id))).scalar() or 0


def add_model_version(conn: Connection, model_id: int, **values) -> None:
    """Insert the `models` row of a version under the id its folder is named after."""
    conn.execute(insert(models).values(id=model_id, **values))
    backend_of(conn).follow_explicit_ids(conn, models)


def active_model_id(conn: Connection) -> str | None:
    return conn.execute(select(meta.c.value).where(meta.c.key == ACTIVE_MODEL_KEY)).scalar()


def child_names(conn: Connection, model_id: int) -> list[str]:
    """Names of the versions trained from `model_id` (a judge, whose parent is its run's,
    goes with its version: `judge_ids`)."""
    return list(conn.execute(select(models.c.name).where(
        models.c.parent_id == model_id, models.c.judge_of.is_(None))).scalars())


def judge_ids(conn: Connection, model_id: int) -> list[int]:
    """The second opinions (judges, schema v9) kept with version `model_id`."""
    return list(conn.execute(select(models.c.id).where(models.c.judge_of == model_id)
                             .order_by(models.c.id)).scalars())


def delete_model(conn: Connection, model_id: int, *, blob_names: list[str],
                 prefix: str) -> None:
    """Delete a model's row (its embeddings and index row go with it), the blobs named
    `blob_names` or starting with `prefix`, and the settings starting with `prefix`."""
    pattern = prefix.replace("%", r"\%").replace("_", r"\_") + "%"
    conn.execute(delete(blobs).where(or_(blobs.c.name.in_(blob_names),
                                         blobs.c.name.like(pattern, escape="\\"))))
    conn.execute(delete(meta).where(meta.c.key.like(pattern, escape="\\")))
    conn.execute(delete(models).where(models.c.id == model_id))  # cascades


def indexed_model_ids(conn: Connection) -> set[int]:
    """Models with a saved index."""
    return set(conn.execute(select(indexes.c.model_id)).scalars())


def set_metrics(conn: Connection, model_id: int, metrics: dict) -> None:
    """Replace a model row's metrics (a version's record grows after training: the check
    of its fast form, `engine.training.fast_form`)."""
    conn.execute(update(models).where(models.c.id == model_id).values(metrics=metrics))
