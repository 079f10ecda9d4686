"""What only a server project has: URLs, logins and passwords, "create" in an existing
database, read-only sessions, and errors of a server that cannot be reached."""

from __future__ import annotations

import pytest
from sqlalchemy import insert, text

from devtools.postgres_server import ANALYST, ANALYST_PASSWORD
from engine.errors import InputError, ProjectError
from engine.store.database import Store
from engine.store.location import parse_location
from engine.store.migrations import SCHEMA_VERSION
from engine.store.schema import meta


@pytest.fixture
def database(postgres_server):
    """(server, name) of a fresh empty database owned by the analyst."""
    name = postgres_server.create_database()
    yield postgres_server, name
    postgres_server.drop_database(name)


def test_a_url_names_the_project_without_its_password(database):
    server, name = database
    store = Store.open(server.url(name, password=ANALYST_PASSWORD), create=True)
    try:
        assert store.path is None and not store.is_file and store.name == name
        assert store.url == f"postgresql+psycopg://{ANALYST}@127.0.0.1:{server.port}/{name}"
        assert ANALYST_PASSWORD not in store.url + repr(store)
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
    finally:
        store.close()


def test_a_file_project_keeps_its_path(tmp_path):
    store = Store.open(tmp_path / "q.duplens", create=True)
    try:
        assert store.path == tmp_path / "q.duplens" and store.is_file
        assert store.name == "q.duplens"
        assert store.url == f"sqlite:///{(tmp_path / 'q.duplens').as_posix()}"
    finally:
        store.close()


def test_plain_postgresql_urls_use_psycopg_and_other_databases_are_refused(tmp_path):
    assert parse_location("postgresql://a@h/db").url.drivername == "postgresql+psycopg"
    assert parse_location(f"sqlite:///{tmp_path}/x.duplens").path == tmp_path / "x.duplens"
    with pytest.raises(InputError, match="not in mysql") as caught:
        parse_location("mysql://me:secret@h/db")
    assert "secret" not in str(caught.value)
    with pytest.raises(InputError, match="name the database"):
        parse_location("postgresql+psycopg://me@h:5432")


def test_the_password_can_come_from_pgpassword_or_pgpass(database, tmp_path, monkeypatch):
    server, name = database
    url = server.url(name)                 # no password in it
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "nothing-here"))
    monkeypatch.delenv("PGPASSWORD", raising=False)
    with pytest.raises(ProjectError, match="PGPASSWORD or ~/.pgpass"):
        Store.open(url, create=True)

    monkeypatch.setenv("PGPASSWORD", ANALYST_PASSWORD)
    Store.open(url, create=True).close()

    monkeypatch.delenv("PGPASSWORD")
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"127.0.0.1:{server.port}:{name}:{ANALYST}:{ANALYST_PASSWORD}\n")
    pgpass.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    store = Store.open(url)
    assert store.get_meta("app") == "duplens"
    store.close()


def test_a_wrong_password_is_a_clear_error_that_does_not_repeat_it(database):
    server, name = database
    with pytest.raises(ProjectError, match="password authentication failed") as caught:
        Store.open(server.url(name, password="hunter2-wrong"), create=True)
    assert "hunter2" not in str(caught.value)
    assert str(caught.value).startswith(f"{name}: ")


def test_no_server_and_no_database_are_clear_errors(database):
    server, name = database
    with pytest.raises(ProjectError, match="refused|could not connect|failed"):
        Store.open(f"postgresql+psycopg://{ANALYST}:pw@127.0.0.1:1/{name}")
    with pytest.raises(ProjectError, match='database "nope" does not exist'):
        Store.open(server.url("nope", password=ANALYST_PASSWORD), create=True)


def test_create_fills_an_empty_database_only(database):
    server, name = database
    url = server.url(name, password=ANALYST_PASSWORD)
    with pytest.raises(ProjectError, match="no such project"):
        Store.open(url)                               # empty, and not asked to create
    with pytest.raises(ProjectError, match="no such project"):
        Store.open(url, create=True, read_only=True)
    assert server.sql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'",
                      name) == [(0,)]
    Store.open(url, create=True).close()
    Store.open(url, create=True).close()              # a project already: opened as it is


def test_a_project_created_while_open_looks_is_opened_not_refused(database, monkeypatch):
    # Two analysts create one team project at once: the other's schema commits between the
    # first's two looks at the database (is there a Duplens meta table? any other tables?).
    # Both looks must see the same moment, or the first sees "no project, yet tables" and
    # calls the team's own new project "not a Duplens project".
    import engine.store.postgres as postgres

    server, name = database
    url = server.url(name, password=ANALYST_PASSWORD)
    real, created = postgres.read_version, []

    def other_analyst_creates_it_meanwhile(conn):
        version = real(conn)
        if version is None and not created:
            created.append(True)
            monkeypatch.setattr(postgres, "read_version", real)   # the other's own open
            Store.open(url, create=True).close()
        return version

    monkeypatch.setattr(postgres, "read_version", other_analyst_creates_it_meanwhile)
    store = Store.open(url, create=True)
    with store.read() as conn:
        assert conn.execute(text("SELECT value FROM meta WHERE key = 'schema_version'")
                            ).scalar() == str(SCHEMA_VERSION)
    store.close()


def test_a_database_of_something_else_is_refused_untouched(database):
    server, name = database
    server.sql("CREATE TABLE customers (id integer)", name)
    server.sql(f"ALTER TABLE customers OWNER TO {ANALYST}", name)
    with pytest.raises(ProjectError, match="is not a Duplens project.*customers"):
        Store.open(server.url(name, password=ANALYST_PASSWORD), create=True)
    tables = server.sql("SELECT tablename FROM pg_tables WHERE schemaname = 'public'", name)
    assert tables == [("customers",)]


def test_read_only_sessions_cannot_write_even_with_raw_sql(database):
    server, name = database
    url = server.url(name, password=ANALYST_PASSWORD)
    Store.open(url, create=True).close()
    store = Store.open(url, read_only=True)
    try:
        assert store.get_meta("app") == "duplens"
        with pytest.raises(ProjectError, match="read-only"):
            store.set_meta("x", "y")
        with pytest.raises(Exception, match="read-only transaction"), store.read() as conn:
            conn.execute(insert(meta).values(key="x", value="y"))
    finally:
        store.close()
    assert server.sql("SELECT count(*) FROM meta WHERE key = 'x'", name) == [(0,)]


def test_reads_of_a_writable_project_see_one_snapshot_and_cannot_write(postgres_url):
    store = Store.open(postgres_url, create=True)
    other = Store.open(postgres_url)
    try:
        with store.read() as conn:
            first = conn.execute(text("SELECT count(*) FROM meta")).scalar()
            other.set_meta("added", "meanwhile")    # another process commits a write
            assert conn.execute(text("SELECT count(*) FROM meta")).scalar() == first
            with pytest.raises(Exception, match="read-only transaction"):
                conn.execute(insert(meta).values(key="x", value="y"))
        assert store.get_meta("added") == "meanwhile"
    finally:
        store.close()
        other.close()


def test_a_server_that_goes_away_is_a_project_error(postgres_url, postgres_server):
    store = Store.open(postgres_url, create=True)
    try:
        with store.read() as conn:
            pid = conn.execute(text("SELECT pg_backend_pid()")).scalar()
        postgres_server.sql(f"SELECT pg_terminate_backend({pid})")
        # the pool's pre-ping replaces the dead connection: the next read just works
        assert store.get_meta("app") == "duplens"
        with pytest.raises(ProjectError, match="terminat|closed|connection"), \
                store.write() as conn:
            pid = conn.execute(text("SELECT pg_backend_pid()")).scalar()
            postgres_server.sql(f"SELECT pg_terminate_backend({pid})")
            conn.execute(text("SELECT 1"))
    finally:
        store.close()

