"""File → Open team project… and Settings → Encode on: servers remembered without
passwords, a real team project opened from the window, imports encoded where the
setting says."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QDialogButtonBox

from desktop_app.team_servers import Server, TeamServers
from desktop_app.views.settings_dialog import Preferences, SettingsDialog
from desktop_app.views.team_dialog import TeamProjectDialog
from devtools.postgres_server import ANALYST_PASSWORD
from engine.encoding.executors import ray_available
from engine.store.location import parse_location
from tests.desktop_app.conftest import SIGNAL_TIMEOUT_MS


@pytest.fixture
def no_known_password(monkeypatch, tmp_path):
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "no-pgpass"))


def fill(dialog: TeamProjectDialog, server: Server, password: str = "") -> None:
    dialog.known.setCurrentIndex(0)
    dialog.host.setText(server.host)
    dialog.port.setValue(server.port)
    dialog.database.setText(server.database)
    dialog.user.setText(server.user)
    dialog.password.setText(password)


def test_servers_are_remembered_and_passwords_never(qtbot, settings, no_known_password):
    server = Server("db.example.org", 6543, "support_faq", "ana")
    dialog = TeamProjectDialog([])
    qtbot.addWidget(dialog)
    dialog.show()
    fill(dialog, server, "s3cret-typed")
    assert dialog.password.isVisible()          # nothing else would give libpq one
    assert parse_location(dialog.url()).url.password == "s3cret-typed"
    TeamServers(settings).remember(dialog.server())
    settings.sync()
    assert "s3cret-typed" not in Path(settings.fileName()).read_text()
    again = TeamProjectDialog(TeamServers(settings).servers())
    qtbot.addWidget(again)
    assert again.server() == server              # the remembered one, picked at once
    assert parse_location(again.url()).url.password is None


def test_a_pgpass_line_for_the_server_means_no_password_is_asked(qtbot, tmp_path,
                                                                monkeypatch):
    monkeypatch.delenv("PGPASSWORD", raising=False)
    pgpass = tmp_path / "pgpass"
    pgpass.write_text("other:5432:*:ana:x\ndb.example.org:*:support_faq:ana:pw\n")
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    dialog = TeamProjectDialog([Server("db.example.org", 5432, "support_faq", "ana")])
    qtbot.addWidget(dialog)
    dialog.show()
    assert not dialog.password.isVisible()
    dialog.user.setText("bob")                   # no line for bob: asked
    assert dialog.password.isVisible()


def test_the_window_opens_a_team_project_typed_into_the_dialog(
        qtbot, window, settings, postgres_server, postgres_url, encoder, questions_csv,
        no_known_password):
    from engine.project import Project

    with Project.open(postgres_url, create=True) as project:
        project.model.attach(encoder, is_default=True)
        project.rows.import_table(questions_csv, ["question"], id_column="qid")
        project.vectors.encode()
    where = parse_location(postgres_url).url
    server = Server(where.host, where.port, where.database, where.username)

    def answer() -> None:
        dialog = window.findChild(TeamProjectDialog)
        fill(dialog, server, ANALYST_PASSWORD)
        dialog.buttons.button(QDialogButtonBox.StandardButton.Open).click()

    QTimer.singleShot(200, answer)
    with qtbot.waitSignal(window.counts.counted, timeout=SIGNAL_TIMEOUT_MS) as counted, \
            qtbot.waitSignal(window.bridge.projectOpened, timeout=SIGNAL_TIMEOUT_MS) as opened:
        window.team_action.trigger()
    assert counted.args[0]["items"] == 48   # counted after it opens: seconds at 1M rows
    assert opened.args[0]["project"] == server.url()          # shown without password
    settings.sync()
    stored = Path(settings.fileName()).read_text()
    assert ANALYST_PASSWORD not in stored
    assert TeamServers(settings).servers() == [server]
    assert window.recent.paths()[0] == server.url()


def test_encode_on_round_trips_and_offers_ray_as_installed(qtbot, settings, monkeypatch):
    assert Preferences.load(settings).encode_on == "local"
    Preferences(encode_on="ray=ray://head:10001").save(settings)
    assert Preferences.load(settings).encode_on == "ray=ray://head:10001"
    dialog = SettingsDialog(Preferences.load(settings))
    qtbot.addWidget(dialog)
    assert dialog.encode_on.model().item(1).isEnabled() == ray_available()
    if ray_available():
        assert dialog.preferences().encode_on == "ray=ray://head:10001"
        dialog.ray_address.setText("")
        assert dialog.preferences().encode_on == "ray"
    monkeypatch.setattr("engine.encoding.executors.ray_available", lambda: False)
    without = SettingsDialog(Preferences(encode_on="ray"))
    qtbot.addWidget(without)
    assert not without.encode_on.model().item(1).isEnabled()
    assert "needs duplens[ray]" in without.encode_on.itemText(1)
    assert without.preferences().encode_on == "local"


def test_the_windows_imports_encode_where_the_setting_says(qtbot, window, tmp_path,
                                                           questions_csv):
    """An unreachable cluster: the job says so in one line; the rows stay, unencoded."""
    from engine.add_file import ImportChoices
    from tests.desktop_app.conftest import open_in

    pytest.importorskip("ray")
    open_in(qtbot, window.bridge, tmp_path / "p.duplens", create=True)
    window.imports.encode_on = "ray=127.0.0.1:9"
    with qtbot.waitSignal(window.imports.failed, timeout=SIGNAL_TIMEOUT_MS) as failed:
        window.imports.start(ImportChoices(str(questions_csv), ["question"], "qid"))
    message, _details = failed.args
    assert "127.0.0.1:9" in message and "\n" not in message
