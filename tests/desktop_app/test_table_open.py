"""Opening a project shows its rows first: the counts come after, and the ids in slices."""

from __future__ import annotations

import csv
import threading

from PySide6.QtCore import Qt

from desktop_app.controllers.counts_controller import with_counts
from desktop_app.job_runner import Pool
from desktop_app.main_window import MainWindow
from desktop_app.table_models.items_model import ITEM_ID_ROLE
from desktop_app.views.status_bar import COUNTING
from engine.store import items as item_store
from tests.desktop_app.conftest import (
    QUESTIONS_ITEMS,
    SIGNAL_TIMEOUT_MS,
    table_cell,
    table_column,
)

SLICE = 5   # ids per slice in these tests, so 48 rows come in ten slices


def _column(qtbot, window: MainWindow, column: int) -> list[str]:
    return table_column(qtbot, window.items_model, column)


def _questions(questions_csv) -> list[str]:
    with questions_csv.open(encoding="utf-8") as fh:
        return [" ".join(r["question"].split()) for r in csv.DictReader(fh)
                if r["question"].strip()]


def test_the_table_shows_rows_before_the_counts_come(qtbot, window, questions_project):
    """The counts scan every row and vector (seconds at a million rows); the table and the
    search must not wait for them. The counts' pool is held busy here, so they cannot
    come before the rows whatever the machine's speed; then they fill the status bar."""
    events: list[str] = []
    window.bridge.projectOpened.connect(lambda _info: events.append("opened"))
    window.items_view.rowsShown.connect(lambda *_: events.append("rows"))
    window.counts.counted.connect(lambda _info: events.append("counted"))
    gate = threading.Event()
    window.bridge.run(lambda _job: gate.wait(SIGNAL_TIMEOUT_MS / 1000), pool=Pool.REVIEW)
    try:
        with qtbot.waitSignals([window.bridge.projectOpened, window.items_view.rowsShown],
                               timeout=SIGNAL_TIMEOUT_MS):
            window.open_project(str(questions_project))
        assert window.items_model.rowCount() == QUESTIONS_ITEMS
        assert table_cell(qtbot, window.items_model, 0, 0) == "q1"
        assert window.status_label.text().startswith(COUNTING)
        assert "all-MiniLM-L6-v2" in window.status_label.text()
        assert "items" not in window._info and "counted" not in events
    finally:
        gate.set()
    with qtbot.waitSignal(window.counts.counted, timeout=SIGNAL_TIMEOUT_MS):
        pass
    assert events == ["opened", "rows", "counted"]
    text = window.status_label.text()
    assert text.startswith("48 items") and COUNTING not in text
    assert (window._info["items"], window._info["texts"], window._info["encoded"]) == \
        (QUESTIONS_ITEMS, 46, 46)
    assert window._info["truncated"] == 0


def test_rows_show_a_slice_at_a_time_and_still_sort_and_filter(qtbot, window,
                                                               questions_project,
                                                               questions_csv, monkeypatch):
    """The first slice of ids is on screen before the others are read (the first partial
    result is sent at once); the rest are added below it without resetting the table."""
    monkeypatch.setattr(item_store, "_ID_SLICE", SLICE)
    model = window.items_model
    seen: list[tuple[str, int]] = []
    model.modelReset.connect(lambda: seen.append(("reset", model.rowCount())))
    model.rowsInserted.connect(lambda *_: seen.append(("added", model.rowCount())))
    with qtbot.waitSignals([window.bridge.projectOpened, window.items_view.rowsShown],
                           timeout=SIGNAL_TIMEOUT_MS):
        window.open_project(str(questions_project))
    if seen[0] == ("reset", 0):
        seen.pop(0)    # the table emptied as the project opened (no project's rows stay)
    assert seen[0] == ("reset", SLICE)
    assert [kind for kind, _ in seen[1:]] == ["added"] * (len(seen) - 1) and len(seen) > 1
    assert seen[-1] == ("added", QUESTIONS_ITEMS)
    questions = _questions(questions_csv)
    assert _column(qtbot, window, 1) == questions                  # import order, every row once
    assert window.items_view.count_label.text() == f"{QUESTIONS_ITEMS} rows"

    view = window.items_view
    with qtbot.waitSignal(view.rowsShown, timeout=SIGNAL_TIMEOUT_MS):
        model.sort(1, Qt.SortOrder.DescendingOrder)        # as a header click asks
    assert _column(qtbot, window, 1) == sorted(questions, key=str.casefold, reverse=True)
    with qtbot.waitSignal(view.rowsShown, timeout=SIGNAL_TIMEOUT_MS):
        model.sort(0, Qt.SortOrder.AscendingOrder)
    ids = _column(qtbot, window, 0)
    assert ids == sorted(ids) and len(ids) == QUESTIONS_ITEMS
    with qtbot.waitSignal(view.rowsShown, timeout=SIGNAL_TIMEOUT_MS):
        view.set_filter("how")
    wanted = [q for q in questions if "how" in q.lower()]
    assert len(wanted) > SLICE and sorted(_column(qtbot, window, 1)) == sorted(wanted)
    assert view.count_label.text() == f"{len(wanted)} of {QUESTIONS_ITEMS} rows"


def test_a_hit_whose_row_is_not_read_yet_says_so(qtbot, window, questions_project):
    """While the table's ids are still being read (seconds at a million rows), a search
    hit whose row has not come yet is not called gone."""
    with qtbot.waitSignals([window.bridge.projectOpened, window.items_view.rowsShown],
                           timeout=SIGNAL_TIMEOUT_MS):
        window.open_project(str(questions_project))
    last = int(window.items_model.order[-1])   # not a question about python
    view = window.items_view
    with qtbot.waitSignal(view.rowsShown, timeout=SIGNAL_TIMEOUT_MS):
        view.set_filter("python")
    gate = threading.Event()
    window.bridge.run(lambda _job: gate.wait(SIGNAL_TIMEOUT_MS / 1000), pool=Pool.TABLE)
    try:
        view.set_filter("")   # queued behind the gate: every row, still being read
        window.select_item(last)
        assert "still being read" in window.statusBar().currentMessage()
    finally:
        gate.set()
    with qtbot.waitSignal(view.rowsShown, timeout=SIGNAL_TIMEOUT_MS):
        pass
    window.select_item(last)
    selected = window.table.selectionModel().selectedRows()
    assert [window.items_model.data(i, ITEM_ID_ROLE) for i in selected] == [last]


def test_counts_fill_in_only_the_project_they_were_read_from():
    shown = {"project": "/a.duplens", "model": "m"}
    counted = {"project": "/a.duplens", "model": "m", "items": 3, "texts": 2, "encoded": 2,
               "truncated": 0, "device": "cuda"}
    assert with_counts(shown, counted) == {"project": "/a.duplens", "model": "m", "items": 3,
                                           "texts": 2, "encoded": 2, "truncated": 0}
    assert with_counts({**shown, "project": "/b.duplens"}, counted) is None   # another one
    assert with_counts({**shown, "items": 4}, counted) is None   # newer, from an import
    assert with_counts(None, counted) is None


def test_a_project_with_no_columns_of_its_own_gets_the_table_layout(qtbot, window, tmp_path,
                                                                     encoder, questions_csv):
    """A file with just the text column gives the table only its fixed columns, which exist
    before any rows; the text must still take the width left (it kept Qt's 100 px)."""
    from PySide6.QtWidgets import QHeaderView

    from engine.project import Project

    only_text = tmp_path / "only_text.csv"
    with only_text.open("w", encoding="utf-8", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["question"])
        out.writerows([q] for q in _questions(questions_csv))
    path = tmp_path / "only_text.duplens"
    with Project.open(path, create=True) as project:
        project.model.attach(encoder, is_default=True)
        project.rows.import_table(only_text, ["question"])
    with qtbot.waitSignal(window.items_view.rowsShown, timeout=SIGNAL_TIMEOUT_MS):
        window.open_project(str(path))
    header = window.items_view.table.horizontalHeader()
    assert window.items_model.original_columns == []
    assert header.sectionResizeMode(1) == QHeaderView.ResizeMode.Stretch
    assert header.sectionSize(0) == 110
