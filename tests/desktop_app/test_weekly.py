"""Next week's file in the window: stored cluster ids on screen, the review's "since import
N", and File → Imports… taking an import back out with a confirmation."""

from __future__ import annotations

from desktop_app.main_window import MainWindow
from engine.add_file import ImportChoices
from tests.desktop_app.conftest import SIGNAL_TIMEOUT_MS
from tests.desktop_app.test_review import open_review, set_threshold

SECOND = """qid,question
x1,What's the quickest way to learn Python?
x2,How do I tune a guitar?
x3,What is the best way to tune a guitar?
"""


def shown_ids(window: MainWindow) -> dict[str, str]:
    model = window.review_view.clusters_model
    return {m.id: model.cluster(p).cluster_id for p in range(model.rowCount())
            for m in model.cluster(p).members}


def import_second(qtbot, window: MainWindow, tmp_path) -> str:
    """Import the second week's file; what the status bar said when it was done."""
    path = tmp_path / "week2.csv"
    path.write_text(SECOND, encoding="utf-8")
    with qtbot.waitSignal(window.imports.finished, timeout=SIGNAL_TIMEOUT_MS):
        window.start_import(ImportChoices(str(path), ["question"], id_column="qid"))
    said = window.status.currentMessage()
    with qtbot.waitSignal(window.review.clustersChanged, timeout=SIGNAL_TIMEOUT_MS):
        window.review.refresh()
    return said


def test_the_review_shows_stored_ids_and_what_an_import_changed(qtbot, window,
                                                                 questions_project, tmp_path):
    open_review(qtbot, window, questions_project)
    set_threshold(qtbot, window, 0.8)
    before = shown_ids(window)
    assert before and all(i.startswith("C0") for i in before.values())
    line = window.review_view.clusters_model.data(window.review_view.clusters_model.index(0))
    assert line.startswith(window.review_view.clusters_model.cluster(0).cluster_id)

    said = import_second(qtbot, window, tmp_path)
    assert "1 rows joined existing clusters, 2 rows in new clusters" in said
    after = shown_ids(window)
    assert {k: after[k] for k in before} == before             # no old row's id moved
    assert after["x1"] == before["q1"]

    view = window.review_view
    qtbot.waitUntil(lambda: view.since.combo.count() == 3, timeout=SIGNAL_TIMEOUT_MS)
    with qtbot.waitSignal(window.review.clustersChanged, timeout=SIGNAL_TIMEOUT_MS):
        view.since.choose(2)
    shown = {view.clusters_model.cluster(p).cluster_id: view.clusters_model.cluster(p)
             for p in range(view.clusters_model.rowCount())}
    assert set(shown) == {after["x1"], after["x2"]}
    lines = [view.clusters_model.data(view.clusters_model.index(p))
             for p in range(view.clusters_model.rowCount())]
    assert any(" · joined · " in line for line in lines)
    assert any(" · new · " in line for line in lines)
    with qtbot.waitSignal(window.review.clustersChanged, timeout=SIGNAL_TIMEOUT_MS):
        view.since.choose(None)
    assert view.clusters_model.rowCount() == len(set(after.values()))


def test_an_import_is_taken_out_only_after_a_yes(qtbot, window, questions_project, tmp_path):
    open_review(qtbot, window, questions_project)
    set_threshold(qtbot, window, 0.8)
    before = shown_ids(window)
    import_second(qtbot, window, tmp_path)
    window.show_imports()
    dialog = window.imports_dialog
    qtbot.waitUntil(lambda: dialog.table.rowCount() == 2, timeout=SIGNAL_TIMEOUT_MS)
    assert dialog.table.item(1, 1).text() == "week2.csv"
    dialog.table.selectRow(1)
    assert dialog.remove_button.isEnabled()
    dialog.confirm = lambda batch: False                       # the user says Cancel
    dialog.remove_button.click()
    assert window.bridge.current_project().rows.imports()[1]["removed_at"] is None
    dialog.confirm = lambda batch: True
    with qtbot.waitSignal(window.imports.removed, timeout=SIGNAL_TIMEOUT_MS):
        dialog.remove_button.click()
    qtbot.waitUntil(lambda: dialog.table.rowCount() == 2
                    and dialog.table.item(1, 6).text().startswith("removed"),
                    timeout=SIGNAL_TIMEOUT_MS)
    assert "Import 2: 3 rows removed" in window.status.currentMessage()
    with qtbot.waitSignal(window.review.clustersChanged, timeout=SIGNAL_TIMEOUT_MS):
        window.review.refresh()
    assert shown_ids(window) == before
    dialog.table.selectRow(1)
    assert not dialog.remove_button.isEnabled()                # removed once is enough
