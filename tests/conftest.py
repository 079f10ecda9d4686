"""Shared fixtures: the real default model, loaded once per test session, on the CPU."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Before any test module imports onnxruntime or huggingface_hub: no telemetry, the Hub
# offline, as in the app (engine/offline.py); processes the tests start inherit it.
import engine.offline  # noqa: F401

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session", autouse=True)
def private_folders(tmp_path_factory):
    """Backend exports (ONNX files and the like), the log file and approved model locations
    go to folders of this test session, never to the user's cache, log or config folder."""
    names = {"DUPLENS_CACHE_DIR": "export-cache", "DUPLENS_LOG_DIR": "logs",
             "DUPLENS_CONFIG_DIR": "config"}
    old = {name: os.environ.get(name) for name in names}
    for name, folder in names.items():
        os.environ[name] = str(tmp_path_factory.mktemp(folder))
    yield
    for name, value in old.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def encoder():
    """The bundled all-MiniLM-L6-v2 on CPU: loading it once keeps the suite fast."""
    from engine.encoding.encoder import SentenceEncoder
    from engine.encoding.model_spec import load_model, resolve_model

    spec = resolve_model(None)
    return SentenceEncoder(load_model(spec, "cpu"), spec, "cpu", batch_size=32)


@pytest.fixture
def data_dir() -> Path:
    return DATA


@pytest.fixture
def new_project(tmp_path, encoder):
    """A fresh project with the session's encoder attached; closed after the test."""
    from engine.project import Project

    opened = []

    def make(name: str = "test.duplens"):
        project = Project.open(tmp_path / name, create=True)
        project.model.attach(encoder, is_default=True)
        opened.append(project)
        return project

    yield make
    for project in opened:
        project.close()


@pytest.fixture
def open_questions(new_project, data_dir):
    """An open project holding tests/data/questions.csv (ids from its qid column), encoded:
    the project most engine tests start from. (The window's tests use a closed file of the
    same rows, `questions_project` in tests/desktop_app/conftest.py.)"""
    project = new_project()
    project.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
    project.vectors.encode()
    return project


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray for the whole test session (starting one takes seconds), started by the
    engine's own code: 2 CPUs, no dashboard, usage stats off, its files in a /tmp folder
    removed at the end. Executors made in tests (`executor_for("ray")`) join it, and
    subprocesses join it at `ray_session.gcs_address`."""
    from engine.encoding.ray_cluster import connect

    session = connect(None, num_cpus=2)
    import ray  # after connect: Ray reads how it authenticates when it is first imported

    session.gcs_address = ray.get_runtime_context().gcs_address
    yield session
    session.close()


# -- projects on PostgreSQL (team projects) ---------------------------------------------------
@pytest.fixture(scope="session")
def postgres_server():
    """A private PostgreSQL server on 127.0.0.1 for the session (`devtools/postgres_server.py`).

    Skipped, with the reason, where none can start (no PostgreSQL binaries, no psycopg);
    with DUPLENS_REQUIRE_POSTGRES=1 (CI sets it) that is a failure instead."""
    import importlib.util

    from devtools.postgres_server import NoServer, PostgresServer

    def unavailable(why: str):
        if os.environ.get("DUPLENS_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"PostgreSQL tests required but {why}")
        pytest.skip(why)

    if importlib.util.find_spec("psycopg") is None:
        unavailable('psycopg is not installed (pip install -e ".[test]")')
    try:
        server = PostgresServer().start()
    except NoServer as exc:
        unavailable(f"no PostgreSQL server can start here: {exc}")
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server):
    """The URL of a fresh, empty database owned by the `analyst` role (password in the
    URL), dropped after the test."""
    from devtools.postgres_server import ANALYST_PASSWORD

    name = postgres_server.create_database()
    yield postgres_server.url(name, password=ANALYST_PASSWORD)
    postgres_server.drop_database(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_location(request, tmp_path):
    """Where a new project goes, once per dialect: a .duplens path, then a PostgreSQL URL
    of an empty database. Tests that take it run against both stores."""
    if request.param == "sqlite":
        return tmp_path / "project.duplens"
    return request.getfixturevalue("postgres_url")
