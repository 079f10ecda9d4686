"""The store on both dialects (`store_location`: a .duplens file, then a PostgreSQL
database), and what only a file has (WAL, file modes, foreign files)."""

import os
import sqlite3
import stat
from pathlib import Path

import pytest
from sqlalchemy import select, update

from engine.errors import ProjectError
from engine.store.blobs import get_blob, put_blob
from engine.store.database import Store
from engine.store.migrations import SCHEMA_VERSION
from engine.store.schema import meta
from tests.required import needs_unprivileged_user


def test_create_records_schema_version_and_uses_wal(store_location):
    path = store_location
    store = Store.open(path, create=True)
    assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
    assert store.get_meta("app") == "duplens"
    store.close()
    if isinstance(path, Path):    # a file project; a server has no journal mode to check
        con = sqlite3.connect(path)
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        con.close()
    reopened = Store.open(path)
    assert reopened.get_meta("schema_version") == str(SCHEMA_VERSION)
    reopened.close()


def test_missing_project_is_a_clear_error(tmp_path):
    with pytest.raises(ProjectError, match="no such project"):
        Store.open(tmp_path / "nope.duplens")


def test_text_file_is_not_a_project_and_is_left_alone(tmp_path):
    path = tmp_path / "notes.duplens"
    path.write_text("just some notes\n")
    with pytest.raises(ProjectError, match="is not a Duplens project"):
        Store.open(path, create=True)
    assert path.read_text() == "just some notes\n"


def test_foreign_sqlite_database_is_not_a_project(tmp_path):
    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE customers (id INTEGER)")
    con.commit()
    con.close()
    before = path.read_bytes()
    with pytest.raises(ProjectError, match="is not a Duplens project"):
        Store.open(path, create=True)
    assert path.read_bytes() == before


def test_project_from_a_newer_version_is_refused(store_location):
    path = store_location
    store = Store.open(path, create=True)
    with store.write() as conn:
        conn.execute(update(meta).where(meta.c.key == "schema_version").values(value="999"))
    store.close()
    with pytest.raises(ProjectError, match="newer Duplens"):
        Store.open(path)


@pytest.mark.unprivileged
def test_read_only_project_refuses_writes_but_reads(tmp_path):
    needs_unprivileged_user()
    path = tmp_path / "ro.duplens"
    Store.open(path, create=True).close()
    path.chmod(stat.S_IRUSR)
    with pytest.raises(ProjectError, match="read-only"):
        Store.open(path)
    store = Store.open(path, read_only=True)
    assert store.get_meta("app") == "duplens"
    with pytest.raises(ProjectError, match="read-only"):
        store.set_meta("x", "y")
    store.close()


@pytest.mark.unprivileged
def test_no_project_is_made_in_a_read_only_folder(tmp_path):
    needs_unprivileged_user()
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with pytest.raises(ProjectError, match=r"^new\.duplens: cannot create a project in "
                                               r".*shared \(read-only folder\)$"):
            Store.open(folder / "new.duplens", create=True)
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(stat.S_IRWXU)


def test_read_only_open_never_writes(tmp_path):
    path = tmp_path / "ro.duplens"
    Store.open(path, create=True).close()
    before = path.read_bytes()
    store = Store.open(path, read_only=True)
    assert store.get_meta("app") == "duplens"
    with pytest.raises(ProjectError, match="read-only"):
        store.set_meta("x", "y")
    store.close()
    assert path.read_bytes() == before


def test_failed_write_rolls_back_everything(store_location):
    store = Store.open(store_location, create=True)
    with pytest.raises(RuntimeError), store.write() as conn:
        store.set_meta("half", "written", conn)
        raise RuntimeError("boom")
    with store.read() as conn:
        keys = set(conn.execute(select(meta.c.key)).scalars())
    assert "half" not in keys
    store.close()


def test_blobs_are_chunked_and_reassembled(store_location):
    store = Store.open(store_location, create=True)
    data = os.urandom(10_000)
    with store.write() as conn:
        put_blob(conn, "big", data, chunk_bytes=3_000)
    with store.read() as conn:
        n = conn.exec_driver_sql("SELECT count(*) FROM blobs WHERE name='big'").scalar()
        assert n == 4
        assert get_blob(conn, "big") == data
        assert get_blob(conn, "absent") is None
    store.close()


def test_a_first_schema_project_is_upgraded_on_open(store_location):
    """A project of schema 1 (no canonical_items table) gains what later versions added."""
    from sqlalchemy import inspect

    from engine.store.dialects import backend
    from engine.store.location import parse_location
    from engine.store.migrations import MIGRATIONS

    where = parse_location(store_location)
    engine = backend(where.dialect).make_engine(where)
    with engine.begin() as conn:
        MIGRATIONS[0](conn)
        conn.execute(meta.insert(), [{"key": "app", "value": "duplens"},
                                     {"key": "schema_version", "value": "1"}])
        assert not inspect(conn).has_table("canonical_items")
    engine.dispose()
    told: list[tuple[str, int]] = []
    store = Store.open(store_location, on_upgrade=lambda *heard: told.append(heard))
    try:
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
        with store.read() as conn:
            assert inspect(conn).has_table("canonical_items")
    finally:
        store.close()
    assert told == [(where.name, 1)]                   # before its steps ran, once
    Store.open(store_location, on_upgrade=lambda *heard: told.append(heard)).close()
    assert len(told) == 1                              # a current project: nothing to tell


def test_a_schema_3_project_gains_batches_and_cluster_ids(store_location):
    """Before schema 4 `sources` had no `imported_by` / `removed_at` and there were no
    cluster id tables: opening adds them and keeps the rows."""
    from sqlalchemy import inspect, text

    from engine.store.dialects import backend
    from engine.store.location import parse_location
    from engine.store.migrations import MIGRATIONS
    from engine.store.schema import sources

    where = parse_location(store_location)
    engine = backend(where.dialect).make_engine(where)
    with engine.begin() as conn:
        for step in MIGRATIONS[:3]:
            step(conn)
        for column in ("imported_by", "removed_at"):
            conn.execute(text(f"ALTER TABLE sources DROP COLUMN {column}"))
        conn.execute(text(
            "INSERT INTO sources (file_name, file_path, sha256, mapping_key, format, "
            "text_columns, columns, rows_read, rows_imported, rows_empty, bad_lines, "
            "imported_at) VALUES ('old.csv', '/x/old.csv', 'a', 'b', '{}', '[]', '[]', 1, 1, "
            "0, '[]', 1.0)"))
        conn.execute(meta.insert(), [{"key": "app", "value": "duplens"},
                                     {"key": "schema_version", "value": "3"}])
    engine.dispose()
    store = Store.open(store_location)
    try:
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
        with store.read() as conn:
            names = {c["name"] for c in inspect(conn).get_columns("sources")}
            assert {"imported_by", "removed_at"} <= names
            assert all(inspect(conn).has_table(t)
                       for t in ("cluster_ids", "item_clusters", "cluster_history"))
            row = conn.execute(sources.select()).mappings().one()
        assert row["file_name"] == "old.csv" and row["removed_at"] is None
    finally:
        store.close()


def test_a_schema_6_project_gains_the_canonical_rows_of_its_cluster_ids(store_location):
    """Before schema 7 `cluster_ids` had no `canonical_item` and there was no
    `canonical_history`: opening adds them, the ids kept, their leads not known (NULL)."""
    from sqlalchemy import inspect, text

    from engine.store.dialects import backend
    from engine.store.location import parse_location
    from engine.store.migrations import MIGRATIONS
    from engine.store.schema import cluster_ids

    where = parse_location(store_location)
    engine = backend(where.dialect).make_engine(where)
    with engine.begin() as conn:
        for step in MIGRATIONS[:6]:
            step(conn)
        conn.execute(text("ALTER TABLE cluster_ids DROP COLUMN canonical_item"))
        conn.execute(text(
            "INSERT INTO cluster_ids (id, anchor_item, retired, created_batch, changed_batch, "
            "created_at) VALUES (7, 1, false, 1, 1, 1.0)"))
        conn.execute(meta.insert(), [{"key": "app", "value": "duplens"},
                                     {"key": "schema_version", "value": "6"}])
    engine.dispose()
    store = Store.open(store_location)
    try:
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
        with store.read() as conn:
            assert "canonical_item" in {c["name"] for c in inspect(conn).get_columns(
                "cluster_ids")}
            assert inspect(conn).has_table("canonical_history")
            row = conn.execute(cluster_ids.select()).mappings().one()
        assert (row["id"], row["anchor_item"], row["canonical_item"]) == (7, 1, None)
    finally:
        store.close()


def test_a_schema_8_project_gains_judges_and_lists_its_versions(store_location):
    """Before schema 9 `models` had no `judge_of`: opening adds it, every model kept as an
    encoder (NULL), and its versions list as before, with no second opinion."""
    from sqlalchemy import MetaData, Table, inspect, text

    from engine.store.dialects import backend
    from engine.store.location import parse_location
    from engine.store.migrations import MIGRATIONS
    from engine.store.schema import models
    from engine.training.version_list import list_versions

    where = parse_location(store_location)
    engine = backend(where.dialect).make_engine(where)
    with engine.begin() as conn:
        for step in MIGRATIONS[:8]:
            step(conn)
        if where.dialect == "sqlite":   # SQLite drops no column a foreign key names
            conn.execute(text("DROP TABLE models"))   # (empty: nothing refers to a row)
            before = MetaData()
            Table("models", before, *(c._copy() for c in models.columns if c.name != "judge_of"))
            before.create_all(conn)
        else:
            conn.execute(text("ALTER TABLE models DROP COLUMN judge_of"))
        conn.execute(text(
            "INSERT INTO models (id, name, location, fingerprint, dim, max_seq_length, "
            "parent_id, objective, metrics, created_at) VALUES (1, 'base', 'default', "
            "'sha256:aa', 384, 256, NULL, NULL, '{}', 1.0), (2, 'base v2', "
            "'p.models/v2', 'sha256:bb', 384, 256, 1, 'contrastive', '{}', 2.0)"))
        conn.execute(meta.insert(), [{"key": "app", "value": "duplens"},
                                     {"key": "schema_version", "value": "8"}])
    engine.dispose()
    store = Store.open(store_location)
    try:
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
        with store.read() as conn:
            assert "judge_of" in {c["name"] for c in inspect(conn).get_columns("models")}
            rows = conn.execute(models.select().order_by(models.c.id)).mappings().all()
        assert [(r["id"], r["judge_of"]) for r in rows] == [(1, None), (2, None)]
        listed = list_versions(store, 1)
        assert [(v["id"], v["second_opinion"]) for v in listed] == [(1, None), (2, None)]
    finally:
        store.close()
