"""The table's rows come from a worker a page at a time: a placeholder until a page lands,
the pages a fast scroll left are never read, and a reload keeps the pages it still shows."""

from __future__ import annotations

import threading

import pytest

from desktop_app.job_runner import Pool
from desktop_app.main_window import MainWindow
from desktop_app.table_models.items_model import PLACEHOLDER
from desktop_app.table_models.row_pages import PAGE_SIZE
from engine.services.rows import Rows
from tests.desktop_app.conftest import SIGNAL_TIMEOUT_MS, table_cell, write_questions

ROWS = 1_000   # five pages


@pytest.fixture
def big_project(tmp_path):
    """A project of `ROWS` distinct questions, not encoded (the table needs no vectors)."""
    from engine.project import Project

    path = tmp_path / "thousand.duplens"
    with Project.open(path, create=True) as project:
        project.rows.import_table(write_questions(tmp_path / "rows.csv", ROWS), ["question"],
                                  id_column="qid")
    return path


@pytest.fixture
def pages_read(monkeypatch) -> list[tuple[int, bool]]:
    """(the first id of each page the table reads, whether it was read on the GUI thread)."""
    seen: list[tuple[int, bool]] = []
    by_ids = Rows.by_ids
    gui = threading.get_ident()

    def recording(self, item_ids):
        seen.append((int(item_ids[0]), threading.get_ident() == gui))
        return by_ids(self, item_ids)

    monkeypatch.setattr(Rows, "by_ids", recording)
    return seen


def _open(qtbot, window: MainWindow, path) -> None:
    with qtbot.waitSignals([window.bridge.projectOpened, window.items_view.rowsShown],
                           timeout=SIGNAL_TIMEOUT_MS):
        window.open_project(str(path))
    qtbot.waitUntil(lambda: not window.items_view.reading, timeout=SIGNAL_TIMEOUT_MS)


def _hold(bridge) -> threading.Event:
    """Keep the pages' worker busy until the event is set."""
    gate = threading.Event()
    bridge.run(lambda _job: gate.wait(SIGNAL_TIMEOUT_MS / 1000), pool=Pool.PAGES)
    return gate


def test_a_row_shows_a_placeholder_until_its_page_lands(qtbot, window, big_project,
                                                        pages_read):
    _open(qtbot, window, big_project)
    model = window.items_model
    changed: list[tuple[int, int, int]] = []
    model.dataChanged.connect(lambda a, b, _roles=(): changed.append((a.row(), b.row(),
                                                                      b.column())))
    gate = _hold(window.bridge)
    try:
        window.table.scrollToBottom()
        window.table.viewport().grab()                 # a paint asks for the last page
        last = model.rowCount() - 1
        assert model.data(model.index(last, 1)) == PLACEHOLDER   # at once: nothing read
        assert model.data(model.index(last, 0)) == PLACEHOLDER
        assert not model.rows_loaded(last, last)
    finally:
        gate.set()
    qtbot.waitUntil(lambda: model.rows_loaded(last, last), timeout=SIGNAL_TIMEOUT_MS)
    assert (last - last % PAGE_SIZE, last, model.columnCount() - 1) in changed
    assert model.data(model.index(last, 0)) == f"g{ROWS - 1}"
    assert pages_read and not any(on_gui for _, on_gui in pages_read)


def test_a_fast_scroll_never_reads_the_pages_it_left(qtbot, window, big_project, pages_read):
    _open(qtbot, window, big_project)
    model, table = window.items_model, window.table
    table_cell(qtbot, model, 0, 1)                     # the first page, as opened
    pages_read.clear()
    gate = _hold(window.bridge)
    try:
        for row in (250, 450, 650, ROWS - 1):          # through pages 1, 2 and 3 to 4
            table.scrollTo(model.index(row, 1))
            table.viewport().grab()
            qtbot.wait(1)                              # each paint's pages are asked for
    finally:
        gate.set()
    table_cell(qtbot, model, ROWS - 1, 1)
    qtbot.wait(200)                                    # a stale read would come meanwhile
    read_pages = {(first_id - 1) // PAGE_SIZE for first_id, _ in pages_read}
    assert read_pages == {4}, f"read pages {sorted(read_pages)}; the screen is on page 4"


def test_a_reload_of_the_same_order_keeps_its_rows_on_screen(qtbot, window, big_project,
                                                             pages_read):
    """An import's end or a relabel reloads the order: rows still in the same places show
    their text at once, without waiting for the worker (no flash of placeholders)."""
    _open(qtbot, window, big_project)
    model = window.items_model
    text = table_cell(qtbot, model, 0, 1)
    gate = _hold(window.bridge)
    try:
        with qtbot.waitSignal(window.items_view.rowsShown, timeout=SIGNAL_TIMEOUT_MS):
            window.items_view.reload()
        assert model.data(model.index(0, 1)) == text != PLACEHOLDER
    finally:
        gate.set()


def test_another_project_with_the_same_row_ids_shows_its_own_rows(qtbot, window, tmp_path,
                                                                  questions_project):
    """Row ids start at 1 in every project: the pages kept from the last one must go."""
    from engine.project import Project
    from tests.desktop_app.conftest import QUESTIONS_ITEMS, table_column

    other = tmp_path / "other.duplens"
    with Project.open(other, create=True) as project:
        project.rows.import_table(write_questions(tmp_path / "other.csv", QUESTIONS_ITEMS),
                                  ["question"], id_column="qid")
    _open(qtbot, window, questions_project)
    before = table_column(qtbot, window.items_model, 1)
    _open(qtbot, window, other)
    after = table_column(qtbot, window.items_model, 1)
    assert len(after) == QUESTIONS_ITEMS and not set(after) & set(before)
    assert after[0].startswith("How do I clean python")
