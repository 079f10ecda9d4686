"""MainWindow: opening, browsing, search-to-row, import flow, and surviving a bug in a slot."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, Qt

from desktop_app.job_runner import UNEXPECTED
from desktop_app.main_window import MainWindow
from desktop_app.views.import_dialog import ImportChoices, ImportDialog
from tests.desktop_app.conftest import (
    QUESTIONS_ITEMS,
    SIGNAL_TIMEOUT_MS,
    shown_dialog,
    table_cell,
    table_column,
    write_questions,
)


def _open(qtbot, window: MainWindow, path: Path) -> None:
    """Open `path` and wait until the table shows its rows (they are ordered off-thread)
    and the status bar its counts (they are read after the project opens)."""
    with qtbot.waitSignals([window.bridge.projectOpened, window.items_view.rowsShown,
                            window.counts.counted], timeout=SIGNAL_TIMEOUT_MS):
        window.open_project(str(path))


def _search(qtbot, window: MainWindow, text: str) -> None:
    panel = window.search_panel
    panel.query.clear()
    qtbot.keyClicks(panel.query, text)
    qtbot.waitUntil(lambda: panel.results.count() > 0, timeout=10_000)


def _click_hit(qtbot, window: MainWindow, row: int) -> None:
    results = window.search_panel.results
    rect = results.visualItemRect(results.item(row))
    qtbot.mouseClick(results.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def _selected_id(qtbot, window: MainWindow) -> str:
    rows = window.table.selectionModel().selectedRows()
    assert len(rows) == 1
    return table_cell(qtbot, window.items_model, rows[0].row(), 0)


def test_opening_a_project_shows_its_rows(qtbot, window, questions_project, settings):
    assert window.pages.currentWidget() is window.start_page
    _open(qtbot, window, questions_project)
    assert window.pages.currentWidget() is window.project_page
    model = window.items_model
    assert model.rowCount() == QUESTIONS_ITEMS
    assert table_cell(qtbot, model, 0, 0) == "q1"
    assert model.data(model.index(0, 1)) == "How do I learn Python quickly?"
    assert "48 items" in window.status_label.text()
    assert "all-MiniLM-L6-v2 on cpu" in window.status_label.text()
    assert window.recent.paths() == [str(questions_project)]


def test_clicking_a_hit_selects_its_row(qtbot, window, questions_project):
    _open(qtbot, window, questions_project)
    _search(qtbot, window, "which city is australia's capital")
    top = window.search_panel.texts()[0].split(" · ")[0]
    _click_hit(qtbot, window, 0)
    assert _selected_id(qtbot, window) == top


def test_a_bug_in_a_slot_shows_an_error_and_the_window_carries_on(qtbot, window,
                                                                   questions_project,
                                                                   monkeypatch):
    _open(qtbot, window, questions_project)
    _search(qtbot, window, "why is the sky blue")

    def broken(_item_id: int) -> int:
        raise RuntimeError("row lookup exploded")

    monkeypatch.setattr(window.items_model, "row_of_item", broken)
    _click_hit(qtbot, window, 0)
    box = window.error_box
    assert box is not None and box.text() == UNEXPECTED
    assert "RuntimeError: row lookup exploded" in box.detailedText()
    box.close()
    monkeypatch.undo()
    _click_hit(qtbot, window, 0)                       # still alive and working
    assert _selected_id(qtbot, window) == window.search_panel.texts()[0].split(" · ")[0]


def test_new_project_from_a_spreadsheet(qtbot, window, tmp_path, questions_csv, monkeypatch):
    target = tmp_path / "fresh.duplens"
    monkeypatch.setattr(window, "ask_spreadsheet", lambda: str(questions_csv))
    monkeypatch.setattr(window, "ask_import_choices", lambda path: ImportChoices(
        path, ["question"], "qid"))
    monkeypatch.setattr(window, "ask_new_project_path", lambda _suggested: str(target))
    with qtbot.waitSignal(window.imports.finished, timeout=SIGNAL_TIMEOUT_MS):
        qtbot.mouseClick(window.start_page.new_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.items_model.rowCount() == QUESTIONS_ITEMS, timeout=10_000)
    assert not window.job_status.isVisible()
    assert "48 rows imported" in window.statusBar().currentMessage()
    assert window.recent.paths() == [str(target)]


def test_a_project_that_cannot_open_is_reported(qtbot, window, tmp_path):
    not_a_project = tmp_path / "notes.duplens"
    not_a_project.write_text("hello, I am not SQLite\n" * 100)
    window.open_project(str(not_a_project))
    qtbot.waitUntil(lambda: window.error_box is not None, timeout=SIGNAL_TIMEOUT_MS)
    assert window.error_box is not None
    assert "notes.duplens" in window.error_box.text()
    assert window.pages.currentWidget() is window.start_page


def test_an_import_whose_text_column_is_blank_is_reported_and_adds_nothing(
        qtbot, window, questions_project, tmp_path, monkeypatch):
    """The engine's one line, in the error box as any other file the import cannot use
    (before, the import "succeeded" with 0 rows imported)."""
    _open(qtbot, window, questions_project)
    blank = tmp_path / "blank.csv"
    blank.write_text("question,topic\n,a\n ,b\n", encoding="utf-8")
    monkeypatch.setattr(window, "ask_import_choices",
                        lambda path: ImportChoices(path, ["question"]))
    window.import_spreadsheet(str(blank))
    qtbot.waitUntil(lambda: window.error_box is not None, timeout=SIGNAL_TIMEOUT_MS)
    assert window.error_box.text() == ('blank.csv: column "question" has no text (its 2 '
                                       'rows are all blank); choose the column that holds '
                                       'the text')
    assert window.bridge.current_project().rows.count() == QUESTIONS_ITEMS


def test_import_dialog_previews_and_returns_choices(qtbot, bridge_without_model,
                                                    questions_csv):
    dialog = shown_dialog(qtbot, ImportDialog(questions_csv, bridge_without_model))
    assert dialog.format_label.text() == "CSV · encoding utf-8 · delimiter comma (,)"
    assert dialog.table.columnCount() == 3 and dialog.table.rowCount() == 20
    assert dialog.text_columns() == ["question"]         # the longest texts, pre-ticked
    dialog.id_combo.setCurrentText("qid")
    assert dialog.choices() == ImportChoices(str(questions_csv), ["question"], "qid", None)
    dialog.set_text_columns([])
    assert not dialog.buttons.buttons()[0].isEnabled()


def test_import_dialog_shows_a_bad_file_message(qtbot, bridge_without_model, tmp_path):
    bad = tmp_path / "photo.csv"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 20)
    dialog = shown_dialog(qtbot, ImportDialog(bad, bridge_without_model))
    assert not dialog.error_label.isHidden()
    assert "photo.csv" in dialog.error_label.text()
    assert dialog.text_columns() == []


def _csv_rows(questions_csv: Path) -> list[dict]:
    import csv

    with questions_csv.open(encoding="utf-8") as fh:
        return [r for r in csv.DictReader(fh) if r["question"].strip()]


def _click_header(qtbot, window: MainWindow, section: int) -> None:
    header = window.table.horizontalHeader()
    pos = header.sectionViewportPosition(section) + header.sectionSize(section) // 2
    with qtbot.waitSignal(window.items_view.rowsShown, timeout=SIGNAL_TIMEOUT_MS):
        qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton,
                         pos=QPoint(pos, header.height() // 2))


def _column(qtbot, window: MainWindow, column: int) -> list[str]:
    return table_column(qtbot, window.items_model, column)


def test_the_table_shows_the_files_columns_sorts_and_filters(qtbot, window, questions_project,
                                                             questions_csv):
    rows = _csv_rows(questions_csv)
    _open(qtbot, window, questions_project)
    model = window.items_model
    assert [model.headerData(c, Qt.Orientation.Horizontal) for c in range(5)] == \
        ["ID", "Text", "Cluster", "Verdict", "topic"]
    assert _column(qtbot, window, 4) == [r["topic"] for r in rows]
    assert window.items_view.count_label.text() == f"{QUESTIONS_ITEMS} rows"

    _click_header(qtbot, window, 1)                    # Text, ascending
    shown = [" ".join(r["question"].split()) for r in rows]   # one line, as the table shows
    assert _column(qtbot, window, 1) == sorted(shown, key=str.casefold)
    _click_header(qtbot, window, 1)                    # again: descending
    assert _column(qtbot, window, 1)[0] == max(shown, key=str.casefold)

    with qtbot.waitSignal(window.items_view.rowsShown, timeout=SIGNAL_TIMEOUT_MS):
        qtbot.keyClicks(window.items_view.filter_edit, "PYTHON")   # applied after a pause
    wanted = [q for q in shown if "python" in q.lower()]
    assert sorted(_column(qtbot, window, 1)) == sorted(wanted) and len(wanted) >= 2
    assert window.items_view.count_label.text() == f"{len(wanted)} of {QUESTIONS_ITEMS} rows"

    view = window.items_view
    view.filter_column.setCurrentIndex(view.filter_column.findText("topic"))
    with qtbot.waitSignal(view.rowsShown, timeout=SIGNAL_TIMEOUT_MS):
        view.set_filter("health")
    assert set(_column(qtbot, window, 4)) == {"health"}
    assert model.rowCount() == sum(r["topic"] == "health" for r in rows)

    _search(qtbot, window, "which city is australia's capital")   # not a health question
    _click_hit(qtbot, window, 0)
    assert "hidden by the filter" in window.statusBar().currentMessage()
    with qtbot.waitSignal(view.rowsShown, timeout=SIGNAL_TIMEOUT_MS):
        view.set_filter("")
    _click_hit(qtbot, window, 0)
    assert _selected_id(qtbot, window) == window.search_panel.texts()[0].split(" · ")[0]


def test_cancel_in_the_status_bar_stops_the_import_it_shows(qtbot, window, tmp_path):
    source = write_questions(tmp_path / "many.csv", 3000)
    with qtbot.waitSignal(window.bridge.projectOpened, timeout=SIGNAL_TIMEOUT_MS):
        window.open_project(str(tmp_path / "c.duplens"), create=True)
    ended: list[str] = []
    window.imports.stopped.connect(lambda: ended.append("stopped while reading"))
    window.imports.finished.connect(lambda r: ended.append(f"cancelled={r['cancelled']}"))
    with qtbot.waitSignal(window.imports.progressed, timeout=SIGNAL_TIMEOUT_MS):
        window.start_import(ImportChoices(str(source), ["question"], "qid"))
    assert window.job_status.isVisible() and not window.import_action.isEnabled()
    qtbot.mouseClick(window.job_status.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bool(ended), timeout=SIGNAL_TIMEOUT_MS)
    assert ended[0] in ("stopped while reading", "cancelled=True")
    assert not window.job_status.isVisible() and window.import_action.isEnabled()
    assert window.statusBar().currentMessage().startswith(("Stopped", "Import stopped"))


def _search_for(qtbot, window: MainWindow, text: str) -> list:
    """Type `text` and wait for its own answer (not the one before)."""
    panel = window.search_panel
    answered: list = []
    window.bridge.searchResults.connect(
        lambda _seq, query, hits: answered.append(hits) if query == text else None)
    panel.query.clear()
    qtbot.keyClicks(panel.query, text)
    qtbot.waitUntil(lambda: bool(answered), timeout=SIGNAL_TIMEOUT_MS)
    return answered[-1]


def test_may_already_exist_is_said_only_when_the_best_hit_reaches_the_threshold(
        qtbot, window, questions_project):
    from engine.project import Project
    from engine.review.calibration import format_threshold

    with Project.open(questions_project, read_only=True) as project:
        threshold = project.threshold.current().value   # the model's default: no verdicts
    _open(qtbot, window, questions_project)
    # the search's threshold is the project's, read as the project opens
    qtbot.waitUntil(lambda: window.search_panel.threshold == threshold,
                    timeout=SIGNAL_TIMEOUT_MS)
    shown = format_threshold(threshold)
    title = window.search_panel.title
    hits = _search_for(qtbot, window, "How do I learn Python quickly?")
    assert hits[0].score >= threshold
    assert title.text() == f"This may already exist (similarity ≥ {shown}):"
    hits = _search_for(qtbot, window, "Which tyres are best for winter cycling?")
    assert hits and hits[0].score < threshold
    # its best, 0.34, is under the similar band's floor too (tests/desktop_app/
    # test_search_panel.py has the band itself)
    assert title.text() == f"Nothing close (none reaches {shown}, none similar from 0.65)"
    window.review.set_threshold(round(hits[0].score - 0.01, 2))  # the window's threshold
    assert title.text().startswith("This may already exist (similarity ≥ ")
    panel = window.search_panel
    panel.query.clear()
    qtbot.waitUntil(lambda: not title.isVisible(), timeout=SIGNAL_TIMEOUT_MS)


def test_the_tables_cluster_and_verdict_columns_are_filled_on_opening(qtbot, window,
                                                                        questions_project):
    """Before, they stayed blank after reopening until the Review tab had been visited."""
    from desktop_app.table_models.items_model import CLUSTER_COLUMN, VERDICT_COLUMN
    from engine.project import Project

    with Project.open(questions_project) as project:
        threshold = project.threshold.current().value   # the model's default: no verdicts
        cluster = project.clusters.cut(threshold)[0]
        a, b = cluster.members[0].item_id, cluster.members[1].item_id
        project.verdicts.set_verdict(a, b, 1)
    _open(qtbot, window, questions_project)
    model = window.items_model
    qtbot.waitUntil(lambda: bool(model.notes(CLUSTER_COLUMN)), timeout=SIGNAL_TIMEOUT_MS)
    assert window.tabs.currentWidget() is window.search_page    # Review never shown
    assert model.notes(VERDICT_COLUMN)[b] == "duplicate"
    assert model.notes(CLUSTER_COLUMN)[a] == model.notes(CLUSTER_COLUMN)[b]
    assert window.review.threshold == threshold                  # the project threshold


def test_help_has_a_guide_to_the_keys_and_opens_the_log_folder(qtbot, window, monkeypatch):
    from engine.logfile import log_path

    window.guide_action.trigger()
    guide = window.guide_dialog
    qtbot.waitUntil(guide.isVisible)
    text = guide.text.toPlainText()
    for words in ("Duplicate", "Not duplicate", "Next cluster", "Leave Ask me", "Check a file",
                  "project threshold"):
        assert words in text
    guide.close()
    opened: list[Path] = []
    monkeypatch.setattr(window, "open_folder", lambda folder: opened.append(folder) or True)
    window.logs_action.trigger()
    assert opened == [log_path().parent] and opened[0].is_dir()
    assert [a.text() for a in window.menuBar().actions()[-1].menu().actions()
            if a.text()] == ["&Keys and workflow", "Open the &log folder", "&About Duplens"]


@pytest.mark.slow
def test_search_answers_during_the_first_encode_of_a_new_project(qtbot, window, tmp_path):
    """Before, a new project answered nothing until 2,048 of its texts were encoded, and the
    status line said "index: empty" meanwhile. 4,000 rows: a new project encodes with the
    default backend (OpenVINO bf16 without torch here, about 900 texts/s), which finished
    700 rows before the first answer once its export was cached."""
    source = write_questions(tmp_path / "many.csv", 4000)
    with qtbot.waitSignal(window.bridge.projectOpened, timeout=SIGNAL_TIMEOUT_MS):
        window.open_project(str(tmp_path / "new.duplens"), create=True)
    finished: list = []
    window.imports.finished.connect(finished.append)
    window.start_import(ImportChoices(str(source), ["question"], "qid"))
    panel = window.search_panel
    qtbot.keyClicks(panel.query, "How do I fix a bicycle?")
    qtbot.waitUntil(lambda: panel.results.count() > 0, timeout=SIGNAL_TIMEOUT_MS)
    assert not finished, "the import ended before any answer: the test shows nothing"
    assert panel.indexing and "still encoding" in panel.status.text()
    line = window.status_label.text()
    assert "search covers those done so far" in line and "index: empty" not in line
    assert "4,000 items" in line
    qtbot.waitUntil(lambda: window.items_model.rowCount() == 4000, timeout=SIGNAL_TIMEOUT_MS)
    qtbot.waitUntil(lambda: bool(finished), timeout=SIGNAL_TIMEOUT_MS * 5)
    assert not panel.indexing and "still encoding" not in panel.status.text()


def test_the_window_still_fits_its_own_default_size(window):
    """The review's new checkbox and the longer threshold line once made the window's
    minimum width 1,317 pixels: wider than a 1,280-pixel screen, its right edge cut off."""
    window.pages.setCurrentWidget(window.project_page)
    window.tabs.setCurrentWidget(window.review_view)
    assert window.minimumSizeHint().width() <= 1180


def test_the_search_on_screen_is_asked_of_the_project_opened_next(qtbot, window,
                                                                  questions_project, encoder,
                                                                  tmp_path):
    """After switching projects the hits shown were the last project's: the query still typed
    is now asked of the new project, and its own rows answer it."""
    from engine.project import Project

    other = tmp_path / "other.duplens"
    source = tmp_path / "other.csv"
    source.write_text("qid,question\nz1,How do I grow tomatoes on a balcony?\n"
                      "z2,What is the capital of Peru?\n", encoding="utf-8")
    with Project.open(other, create=True) as project:
        project.model.attach(encoder, is_default=True)
        project.rows.import_table(source, ["question"], id_column="qid")
        project.vectors.encode()
    _open(qtbot, window, questions_project)
    panel = window.search_panel
    panel.similar_floor.spin.setValue(0.0)    # every hit listed, the far ones of `other` too
    qtbot.keyClicks(panel.query, "How can I learn Python quickly?")
    qtbot.waitUntil(lambda: panel.results.count() > 0, timeout=SIGNAL_TIMEOUT_MS)
    assert any("Python" in t for t in panel.texts())

    _open(qtbot, window, other)
    qtbot.waitUntil(lambda: panel.results.count() == 2, timeout=SIGNAL_TIMEOUT_MS)
    assert not any("Python" in t for t in panel.texts())
    assert {t.split(" · ")[0] for t in panel.texts()} == {"z1", "z2"}


def test_a_new_project_from_a_blank_text_column_is_refused_and_creates_nothing(
        qtbot, window, questions_project, tmp_path, monkeypatch):
    """`duplens import` refuses such a file and creates nothing; the window made the project,
    said the import's error and left the new, empty project open. Now it says the one line
    and makes nothing: from the start page the window stays there, with a project open that
    project stays open, and no project file is left on disk either way."""
    blank = tmp_path / "blank.csv"
    blank.write_text("question,topic\n,a\n ,b\n", encoding="utf-8")
    target = tmp_path / "blank.duplens"
    monkeypatch.setattr(window, "ask_import_choices",
                        lambda path: ImportChoices(path, ["question"]))
    monkeypatch.setattr(window, "ask_new_project_path", lambda _suggested: str(target))
    opened: list[dict] = []
    window.bridge.projectOpened.connect(opened.append)
    said = ('blank.csv: column "question" has no text (its 2 rows are all blank); choose '
            'the column that holds the text')

    window.new_project_from_file(str(blank))            # from the start page
    qtbot.waitUntil(lambda: window.error_box is not None and window.error_box.text() == said,
                    timeout=SIGNAL_TIMEOUT_MS)
    assert not opened and not window.bridge.has_project
    assert window.pages.currentWidget() is window.start_page
    assert window.start_page.isEnabled()
    assert list(tmp_path.glob("blank.duplens*")) == []

    window.error_box.close()
    window.error_box = None
    _open(qtbot, window, questions_project)
    opened.clear()
    window.new_project_from_file(str(blank))            # with a project open
    qtbot.waitUntil(lambda: window.error_box is not None and window.error_box.text() == said,
                    timeout=SIGNAL_TIMEOUT_MS)
    assert not opened and window._info["project"] == str(questions_project)
    assert window.bridge.current_project().rows.count() == QUESTIONS_ITEMS
    assert window.pages.currentWidget() is window.project_page
    assert window.import_action.isEnabled()            # not left busy
    assert list(tmp_path.glob("blank.duplens*")) == []
    assert window.recent.paths() == [str(questions_project)]


def test_an_old_project_says_it_is_upgraded_while_it_opens(qtbot, window, questions_project):
    """Opening a project saved by an older Duplens runs its schema steps in the open's job;
    the status bar says so while they run, then shows the project as usual."""
    from tests.engine.store.stored_texts import saved_at_schema

    saved_at_schema(questions_project, 10)
    shown: list[tuple] = []
    window.bridge.projectUpgrading.connect(lambda *args: shown.append(
        (*args, window.status.project.text())))
    with qtbot.waitSignals([window.bridge.projectUpgrading, window.bridge.projectOpened],
                           timeout=SIGNAL_TIMEOUT_MS, order="strict"):
        window.open_project(str(questions_project))
    assert shown == [("questions.duplens", 10,
                      "Upgrading questions.duplens, saved by an older Duplens…")]
    qtbot.waitUntil(lambda: "Upgrading" not in window.status.project.text())
    window.bridge.projectUpgrading.disconnect()
    with qtbot.assertNotEmitted(window.bridge.projectUpgrading), qtbot.waitSignal(
            window.bridge.projectOpened, timeout=SIGNAL_TIMEOUT_MS):
        window.open_project(str(questions_project))      # now current: nothing to upgrade
