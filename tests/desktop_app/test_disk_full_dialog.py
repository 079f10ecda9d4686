"""A full disk in the window: the export's job ends in the error dialog's one line naming
the file, and leaves no half-written file behind (a real 20 MB tmpfs, filled up)."""

from __future__ import annotations

from tests.desktop_app.conftest import SIGNAL_TIMEOUT_MS
from tests.engine.store.project_checks import fill, small_disk


def test_an_export_onto_a_full_disk_says_so_in_one_line(qtbot, window, questions_project,
                                                        tmp_path, monkeypatch):
    with qtbot.waitSignal(window.bridge.projectOpened, timeout=SIGNAL_TIMEOUT_MS):
        window.open_project(str(questions_project))
    with small_disk(tmp_path / "disk") as disk:
        fill(disk)
        out = disk / "everything.csv"
        monkeypatch.setattr(window, "ask_export_form", lambda: "all")
        monkeypatch.setattr(window, "ask_export_path", lambda: str(out))
        window.export_action.trigger()
        qtbot.waitUntil(lambda: window.error_box is not None, timeout=SIGNAL_TIMEOUT_MS)
        message = window.error_box.text()
        assert "disk is full" in message and "\n" not in message, message
        assert window.error_box.detailedText() == ""     # the user's limit, not our bug
        assert sorted(p.name for p in disk.iterdir()) == ["filler"]
