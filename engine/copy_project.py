"""Copy a whole project between a `.duplens` file and a PostgreSQL database, either way.

Every table is copied row for row with its ids, in one write transaction of the
destination: rows, texts, embeddings, the saved index and neighbour graphs (blob chunks as
they are), verdicts, canonical choices, models and settings, so an interrupted copy leaves
the destination as empty as it was. The destination must be a new project (an empty file
or database); a copy never merges into one that holds rows.

Model versions are folders beside a project file (`<file>.models/v<N>`), and a server has
no "beside". Going to a server, each version's folder travels inside the database as one
tar blob (`store.folder_blobs`, the form a server project keeps its own versions in);
coming back to a file, those blobs become folders beside the new file again and the
versions' locations are rewritten to name them.

A source saved by an older Duplens is upgraded in place first, as opening it anywhere else
would do: the copy reads tables in this version's schema, so it cannot read the old one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from sqlalchemy import Connection, Table, delete, func, insert, select, update

from engine.errors import NeedsUpgrade, ProjectError
from engine.store import text_words
from engine.store.database import Store
from engine.store.dialects import backend_of
from engine.store.folder_blobs import (
    folder_blob_name,
    get_folder,
    put_folder,
    tar_folder,
    untar_folder,
)
from engine.store.schema import blobs, items, metadata, models, texts
from engine.training.version_folders import model_folder, models_folder, stored_location

BATCH_ROWS = 1000            # rows per INSERT: bounded memory, few round trips


def copy_project(source: str | os.PathLike, destination: str | os.PathLike, *,
                 on_table: Callable[[str, int], None] = lambda name, rows: None,
                 on_upgrade: Callable[[str, int], None] = lambda name, version: None
                 ) -> dict:
    """Copy the project at `source` into a new project at `destination`; rows per table.

    `on_table(name, rows)` is told as each table is done, `on_upgrade(name, version)` before an old
    source is upgraded. Raises `ProjectError` when the destination already holds a project
    with rows, or a model version's folder is missing.
    """
    src = _open_source(source, on_upgrade)
    try:
        dst = Store.open(destination, create=True)
        try:
            return _copy(src, dst, on_table)
        finally:
            dst.close()
    finally:
        src.close()


def _open_source(source: str | os.PathLike, on_upgrade: Callable[[str, int], None]
                 ) -> Store:
    """The source, read-only once it is in this version's schema."""
    try:
        return Store.open(source, read_only=True)
    except NeedsUpgrade:
        pass
    Store.open(source, on_upgrade=on_upgrade).close()     # the schema steps, one transaction
    return Store.open(source, read_only=True)


def _copy(src: Store, dst: Store, on_table: Callable[[str, int], None]) -> dict:
    counts: dict[str, int] = {}
    with src.read() as read, dst.write() as write:
        for table in (texts, items, models):
            if write.execute(select(func.count()).select_from(table)).scalar_one():
                raise ProjectError(f"{dst.name}: already holds a project; copy into a new "
                                   f"file or an empty database")
        write.execute(delete(metadata.tables["meta"]))   # the new project's own settings
        for table in metadata.sorted_tables:
            counts[table.name] = _copy_table(read, write, table)
            if "id" in table.c:
                backend_of(write).follow_explicit_ids(write, table)
            on_table(table.name, counts[table.name])
        # The word index is the database's own (FTS5 or tsvector), not a table the copy
        # reads: the destination builds it from the copied texts.
        text_words.fill(write)
        _move_version_folders(src, dst, read, write)
    return counts


def _copy_table(read: Connection, write: Connection, table: Table) -> int:
    done = 0
    for batch in _batches(read, table):
        write.execute(insert(table), batch)
        done += len(batch)
    return done


def _batches(read: Connection, table: Table) -> Iterator[list[dict]]:
    """The table's rows in primary-key order, `BATCH_ROWS` at a time, streamed."""
    result = read.execution_options(yield_per=BATCH_ROWS).execute(
        select(table).order_by(*table.primary_key.columns))
    for part in result.mappings().partitions(BATCH_ROWS):
        yield [dict(row) for row in part]


def _versions(conn: Connection) -> list[tuple[int, str]]:
    """(id, location) of the models that are folders of the project's own versions."""
    return [(model_id, location) for model_id, location in conn.execute(
        select(models.c.id, models.c.location).where(models.c.parent_id.is_not(None)))]


def _move_version_folders(src: Store, dst: Store, read: Connection, write: Connection
                          ) -> None:
    for model_id, location in _versions(read):
        if src.is_file and dst.is_file:
            data = tar_folder(_own_folder(src, location, model_id))
        elif src.is_file:
            put_folder(write, model_id, _own_folder(src, location, model_id))
            continue
        else:
            data = get_folder(read, model_id)
        if not dst.is_file:
            continue          # server to server: the blob rows were copied with the rest
        if data is None:
            raise ProjectError(f"{src.name}: model version {model_id} has no stored folder")
        folder = models_folder(dst.path) / Path(location).name
        untar_folder(data, folder)
        # Every row of the version's folder: the version's, and its backends' (its fast form,
        # `engine.training.fast_form`), which share its location.
        write.execute(update(models).where(models.c.location == location).values(
            location=stored_location(dst.path, folder)))
        write.execute(delete(blobs).where(blobs.c.name == folder_blob_name(model_id)))


def _own_folder(store: Store, location: str, model_id: int) -> Path:
    folder = model_folder(store.path, location)
    if folder is None or not folder.is_dir():
        raise ProjectError(f"{store.name}: the folder of model version {model_id} "
                           f"({location}) is missing; it cannot be copied")
    return folder

