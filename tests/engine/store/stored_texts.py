"""Texts stored as rows of a project for the store's tests, indexed by their words, and
projects reopened after a schema step."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection

from engine.store import items, text_words
from engine.store import sources as source_store
from engine.store.database import Store
from engine.text import norm_key


def add_texts(store: Store, docs: dict[str, str]) -> dict[str, int]:
    """`docs` ({key: body}) as rows of one source and texts of the store: {key: text id}."""
    with store.write() as conn:
        source = source_store.add_source(conn, file_name="f.csv", file_path="/f.csv",
                                         sha256="s", mapping_key="m", format={},
                                         text_columns=["text"], columns=["text"])
        items.add_rows(conn, source, [items.NewRow(i, key, body, norm_key(body), {})
                                      for i, (key, body) in enumerate(docs.items())])
        ids = items.text_ids_for_keys(conn, [norm_key(b) for b in docs.values()])
    return {key: ids[norm_key(body)] for key, body in docs.items()}


@contextmanager
def indexed(location, docs: dict[str, str]) -> Iterator[tuple[Connection, dict[str, int]]]:
    """A new project at `location` holding `docs`, every one indexed by its words: a read
    connection and {key: text id}."""
    store = Store.open(location, create=True)
    try:
        ids = add_texts(store, docs)
        with store.write() as conn:
            text_words.add_words(conn, list(ids.values()))
        with store.read() as conn:
            yield conn, ids
    finally:
        store.close()


def saved_at_schema(location, version: int) -> None:
    """Mark the project at `location` as saved by a Duplens of schema `version`, so the next
    open runs every step after it again (each step can run on a project that had it)."""
    from sqlalchemy import update

    from engine.store.schema import meta

    store = Store.open(location)
    try:
        with store.write() as conn:
            conn.execute(update(meta).where(meta.c.key == "schema_version")
                         .values(value=str(version)))
    finally:
        store.close()


@contextmanager
def upgraded(location) -> Iterator[Connection]:
    """The project at `location` opened again, which runs any schema step it lacks: a read
    connection, once its version is checked to be the current one."""
    from engine.store.migrations import SCHEMA_VERSION

    store = Store.open(location)
    try:
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
        with store.read() as conn:
            yield conn
    finally:
        store.close()
