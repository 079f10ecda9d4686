"""The `duplens` command on a team project: a PostgreSQL URL wherever a project file goes,
the password from PGPASSWORD, as analysts would run it (real processes, real model)."""

from __future__ import annotations

import json

import pytest

from devtools.postgres_server import ANALYST_PASSWORD
from tests.engine.cli.test_cli import ROOT, run

pytestmark = pytest.mark.slow


@pytest.fixture
def team_project(postgres_server, monkeypatch):
    """The URL (no password: PGPASSWORD has it) of an empty team database."""
    name = postgres_server.create_database()
    monkeypatch.setenv("PGPASSWORD", ANALYST_PASSWORD)
    yield postgres_server.url(name)
    postgres_server.drop_database(name)


def test_import_search_and_info_on_a_server_project(team_project):
    data = ROOT / "tests" / "data" / "questions.csv"
    proc = run("import", team_project, str(data), "--column", "question", "--id-column", "qid")
    assert "48 rows imported" in proc.stderr
    proc = run("search", team_project, "what is australia's capital city", "-k", "3", "--json")
    assert json.loads(proc.stdout)[0]["id"] in {"q6", "q7"}
    info = json.loads(run("info", team_project, "--json").stdout)
    assert info["items"] == 48 and info["encoded"] == 46 and info["index_items"] == 46


def test_a_wrong_password_is_exit_2_with_one_line(team_project, monkeypatch):
    monkeypatch.setenv("PGPASSWORD", "not-the-password")
    proc = run("info", team_project, check_code=2)
    assert "password authentication failed" in proc.stderr
    assert "not-the-password" not in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
