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
    assert "48 rows imported" in proc.stdout
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


def test_finetune_and_models_on_a_server_project(team_project, encoder, tmp_path):
    from tests.engine.cli.test_cli_finetune import DATA, QUICK, make_project
    from tests.engine.training.test_project_versions import served_name

    make_project(team_project, encoder)
    proc = run("finetune", team_project, "--pairs", str(DATA / "labelled_pairs.csv"), *QUICK,
               "--json")
    report = json.loads(proc.stdout)
    version = report["version"]["id"]
    assert version == 2 and report["version"]["location"].endswith(".models/v2")
    out = tmp_path / "exported"
    proc = run("models", team_project, "--activate", str(version), "--export", str(version),
               str(out), "--json")
    versions = {v["id"]: v for v in json.loads(proc.stdout)}
    assert versions[2]["active"] and versions[2]["available"] and versions[2]["encoded"] == 46
    assert "version 2: active" in proc.stderr and "copied out to" in proc.stderr
    assert {"modules.json", "model.safetensors", "duplens_version.json"} <= {
        p.name for p in out.iterdir()}
    info = json.loads(run("info", team_project, "--json").stdout)
    assert info["model"] == served_name("all-MiniLM-L6-v2 v2") and info["index_items"] == 46

    proc = run("models", team_project, "--delete", "2", check_code=2)
    assert "is the active model" in proc.stderr and len(proc.stderr.splitlines()) == 1
    proc = run("models", team_project, "--activate", "1", "--delete", "2", "--json")
    assert [v["id"] for v in json.loads(proc.stdout)] == [1]
    assert "deleted all-MiniLM-L6-v2 v2" in proc.stderr
