"""README's promise: the window never reads the database on the GUI thread.

On a team project every read is a network round trip, so one on the GUI thread freezes
scrolling and typing while the server answers. `devtools.gui_thread_guard` records every
connection and statement any engine runs on the GUI thread; the window is driven through
its main flows inside it (open, scroll, sort and filter, search and a hit's row, the
review with a decision and its undo, Ask me, Measure quality, the plots, a file's check,
the fine-tuning wizard, the model versions), and the record must stay empty.
"""

from __future__ import annotations

import csv

import pytest
from PySide6.QtCore import Qt

from desktop_app.job_runner import Pool
from desktop_app.main_window import MainWindow
from desktop_app.table_models.items_model import PLACEHOLDER
from devtools.gui_thread_guard import describe, gui_thread_statements
from engine.add_file import ImportChoices
from tests.desktop_app.conftest import QUESTIONS_ITEMS, SIGNAL_TIMEOUT_MS, open_in
from tests.desktop_app.test_review import press, select_cluster_of


def _visible_rows_shown(qtbot, window: MainWindow) -> None:
    """Paint the table (as the screen would) until its visible rows show their text."""
    table, model = window.table, window.items_model

    def shown() -> bool:
        table.viewport().grab()    # a paint: every visible cell's data() is asked for
        first = max(table.rowAt(0), 0)
        last = table.rowAt(table.viewport().height() - 1)
        last = model.rowCount() - 1 if last < 0 else last
        return all(model.data(model.index(r, 1)) != PLACEHOLDER
                   for r in range(first, last + 1))

    qtbot.waitUntil(shown, timeout=SIGNAL_TIMEOUT_MS)


@pytest.mark.parametrize("where", ["file", pytest.param("server", marks=pytest.mark.slow)])
def test_the_window_never_reads_the_database_on_the_gui_thread(qtbot, window, where, request,
                                                               questions_project, tmp_path,
                                                               monkeypatch):
    location = str(questions_project)
    if where == "server":   # a team project: there every read is a network round trip
        from engine.copy_project import copy_project

        location = request.getfixturevalue("postgres_url")
        copy_project(questions_project, location)
    new = tmp_path / "this-week.csv"
    with new.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([("ref", "question"), ("n1", "How do I learn Python?")])
    monkeypatch.setattr(window, "ask_spreadsheet", lambda: str(new))
    monkeypatch.setattr(window, "ask_check_choices",
                        lambda path: ImportChoices(path, ["question"], id_column="ref"))
    table, model, view = window.table, window.items_model, window.items_view

    with gui_thread_statements() as reads:
        # open: the rows, then the counts
        with qtbot.waitSignals([window.bridge.projectOpened, view.rowsShown,
                                window.counts.counted], timeout=SIGNAL_TIMEOUT_MS):
            window.open_project(location)
        assert model.rowCount() == QUESTIONS_ITEMS
        _visible_rows_shown(qtbot, window)
        # scroll to the end, sort, filter
        table.scrollToBottom()
        _visible_rows_shown(qtbot, window)
        with qtbot.waitSignal(view.rowsShown, timeout=SIGNAL_TIMEOUT_MS):
            table.horizontalHeader().setSortIndicator(1, Qt.SortOrder.DescendingOrder)
        _visible_rows_shown(qtbot, window)
        with qtbot.waitSignal(view.rowsShown, timeout=SIGNAL_TIMEOUT_MS):
            view.set_filter("python")
        _visible_rows_shown(qtbot, window)
        with qtbot.waitSignal(view.rowsShown, timeout=SIGNAL_TIMEOUT_MS):
            view.set_filter("")
        # search, and a hit's row in the table
        with qtbot.waitSignal(window.bridge.searchResults, timeout=SIGNAL_TIMEOUT_MS):
            window.search_panel.query.setText("how do i learn python")
        results = window.search_panel.results
        results.itemClicked.emit(results.item(results.count() - 1))
        _visible_rows_shown(qtbot, window)
        assert table.selectionModel().selectedRows()
        # review: clusters, a cluster's members, a decision and its undo, Ask me
        window.tabs.setCurrentWidget(window.review_view)
        with qtbot.waitSignal(window.review.clustersChanged, timeout=SIGNAL_TIMEOUT_MS):
            window.review_view.spin.setValue(0.7)   # (0.75 is the model's default)
        select_cluster_of(window, "q2")
        window.grab()
        press(qtbot, window, Qt.Key.Key_D)
        press(qtbot, window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
        window.review_view.set_asking(True)
        qtbot.waitUntil(lambda: window.review.ask.current is not None,
                        timeout=SIGNAL_TIMEOUT_MS)
        window.grab()
        window.review_view.set_asking(False)
        # Measure quality: a drawn pair, an answer, the estimates above it
        measure = window.review.measure
        with qtbot.waitSignals([measure.pairChanged, measure.measured],
                               timeout=SIGNAL_TIMEOUT_MS):
            window.review_view.measure_button.click()
        target = window.review_view.measure_view.compare.left
        window.activateWindow()
        target.setFocus()
        qtbot.waitUntil(target.hasFocus, timeout=5_000)
        with qtbot.waitSignal(measure.measured, timeout=SIGNAL_TIMEOUT_MS,
                              check_params_cb=lambda m: m.verdicts == 1):
            qtbot.keyClick(target, Qt.Key.Key_N)
        window.grab()
        window.review_view.measure_button.click()
        # the plots
        with qtbot.waitSignal(window.review.mapReady, timeout=SIGNAL_TIMEOUT_MS):
            window.tabs.setCurrentWidget(window.plots_view)
        window.grab()
        window.tabs.setCurrentWidget(window.search_page)
        # a file's check
        with qtbot.waitSignal(window.matches.checked, timeout=SIGNAL_TIMEOUT_MS):
            window.check_action.trigger()
        qtbot.waitUntil(lambda: window.match_dialog is not None)
        window.match_dialog.grab()
        window.match_dialog.close()
        # the fine-tuning wizard and the model versions
        window.improve_action.trigger()
        wizard = window.finetune_wizard
        qtbot.waitUntil(lambda: wizard.controller.input is not None, timeout=SIGNAL_TIMEOUT_MS)
        wizard.grab()
        wizard.reject()
        window.versions_action.trigger()
        dialog = window.versions_dialog
        qtbot.waitUntil(lambda: bool(dialog.versions), timeout=SIGNAL_TIMEOUT_MS)
        dialog.grab()
        dialog.reject()
        window.grab()

    assert not reads, "database reads on the GUI thread:\n" + describe(reads)


def test_the_guard_sees_a_read_on_the_gui_thread_and_none_in_a_worker(qtbot, bridge,
                                                                      questions_project):
    """Else the test above could pass by seeing nothing at all."""
    open_in(qtbot, bridge, questions_project)
    with gui_thread_statements() as reads:
        with qtbot.waitCallback(timeout=SIGNAL_TIMEOUT_MS) as counted:
            bridge.run(lambda job: job.project.rows.count(), pool=Pool.REVIEW,
                       on_done=counted)
        assert counted.args == [QUESTIONS_ITEMS] and reads == []
        assert bridge.current_project().rows.count() == QUESTIONS_ITEMS   # on this thread
    assert [r.statement for r in reads][0] == "connect"
    assert any(r.statement.lstrip().upper().startswith("SELECT") for r in reads)
    assert any(w.startswith("engine/services/rows.py") for r in reads for w in r.where)
