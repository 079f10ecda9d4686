"""A full disk in the window: the export's job ends in the error dialog's one line naming
the file, and leaves no half-written file behind (a real 20 MB tmpfs, filled up)."""

from __future__ import annotations

import shutil

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


def test_the_window_opens_reviews_searches_and_exports_on_a_full_disk(qtbot, window,
                                                                      questions_project,
                                                                      tmp_path):
    """The project is closed, then its disk fills to the last block: the window still opens
    it (as last saved, read-only), cuts the review's clusters, answers a search and exports
    every row to another disk."""
    from tests.desktop_app.test_review import open_review
    from tests.engine.store.project_checks import fill_completely

    with small_disk(tmp_path / "disk") as disk:
        path = disk / questions_project.name
        shutil.copy2(questions_project, path)
        fill_completely(disk)
        open_review(qtbot, window, path)          # waits for the clusters
        assert any(len(c.members) > 1 for c in window.review.clusters)
        with qtbot.waitSignal(window.bridge.searchResults, timeout=SIGNAL_TIMEOUT_MS,
                              check_params_cb=lambda _seq, text, hits: bool(hits)) as found:
            window.bridge.search("How do I learn Python quickly?", k=3)
        assert "Python" in found.args[2][0].text
        out = tmp_path / "reviewed.csv"
        with qtbot.waitSignal(window.review.exported, timeout=SIGNAL_TIMEOUT_MS) as blocker:
            window.review.export(str(out))
        assert blocker.args[1] == 48 and out.is_file()
