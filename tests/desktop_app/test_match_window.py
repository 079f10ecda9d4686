"""File → Check a file against this project, used as an analyst would: the check with its
progress, the table of new rows beside their best matches, verdicts, Export, and adding."""

from __future__ import annotations

import csv

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox

from desktop_app.views.import_dialog import ImportDialog
from desktop_app.views.match_results import (
    ADD,
    CANCEL,
    KEEP,
    MATCH,
    OVERLAP,
    SCORE,
    SORT_ROLE,
    TEXT,
)
from engine.add_file import ImportChoices
from tests.desktop_app.conftest import QUESTIONS_ITEMS, SIGNAL_TIMEOUT_MS

NEW_ROWS = [("n1", "How do I learn Python quickly?"),          # an existing question, word for word
            ("n2", "Which tyres are best for winter cycling?"),  # nothing like it there
            ("n3", "How do I learn Python quickly?")]           # repeats n1 within the file


def _check(qtbot, window, questions_project, tmp_path, monkeypatch, opened=False):
    new = tmp_path / "this-week.csv"
    with new.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([("ref", "question"), *NEW_ROWS])
    if not opened:
        with qtbot.waitSignal(window.bridge.projectOpened, timeout=SIGNAL_TIMEOUT_MS):
            window.open_project(str(questions_project))
    monkeypatch.setattr(window, "ask_spreadsheet", lambda: str(new))
    monkeypatch.setattr(window, "ask_check_choices",
                        lambda path: ImportChoices(path, ["question"], id_column="ref"))
    assert window.check_action.isEnabled()
    with qtbot.waitSignal(window.matches.checked, timeout=SIGNAL_TIMEOUT_MS):
        window.check_action.trigger()
    qtbot.waitUntil(lambda: window.match_dialog is not None)
    return window.match_dialog


def test_checking_a_file_shows_each_row_beside_its_best_match_and_adds_nothing(
        qtbot, window, questions_project, tmp_path, monkeypatch):
    dialog = _check(qtbot, window, questions_project, tmp_path, monkeypatch)
    assert dialog.model.rowCount() == 3
    assert "1 repeat an earlier row of the file" in dialog.summary.text()
    assert "Nothing was added" in dialog.summary.text()
    # sorted by score, best first: the word-for-word copies lead, the new question is last
    scores = [dialog.model.item(i, SCORE).data(SORT_ROLE) for i in range(3)]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0.99 > scores[2]
    assert dialog.model.item(0, SCORE).text() == f"{scores[0]:.3f}"
    assert dialog.model.item(0, MATCH).text() == "How do I learn Python quickly?"
    assert dialog.model.item(0, OVERLAP).data(SORT_ROLE) == 1.0     # the same words
    assert dialog.model.item(2, OVERLAP).data(SORT_ROLE) < 0.5
    assert dialog.model.item(2, TEXT).text() == NEW_ROWS[1][1]
    assert window.bridge.current_project().rows.count() == QUESTIONS_ITEMS


def test_verdicts_are_stored_as_pairs_when_the_rows_are_added(qtbot, window, questions_project,
                                                              tmp_path, monkeypatch):
    dialog = _check(qtbot, window, questions_project, tmp_path, monkeypatch)
    by_text = {dialog.model.item(i, TEXT).text(): i for i in range(3)}
    dialog.table.selectRow(by_text[NEW_ROWS[1][1]])
    qtbot.keyClick(dialog.table, Qt.Key.Key_N)
    dialog.table.selectRow(0)
    qtbot.keyClick(dialog.table, Qt.Key.Key_D)
    assert dialog.verdict_of(2) == "New"
    assert sorted(window.matches.verdicts.values()) == [0, 1]

    out = tmp_path / "matches.csv"
    monkeypatch.setattr(dialog, "ask_export_path", lambda: str(out))
    with qtbot.waitSignal(window.matches.exported, timeout=SIGNAL_TIMEOUT_MS):
        dialog.export_button.click()
    with out.open(encoding="utf-8-sig", newline="") as f:
        exported = list(csv.DictReader(f))
    assert [r["ref"] for r in exported] == ["n1", "n2", "n3"]
    assert exported[2]["duplicate_in_file_of"] == "n1"
    # Each row's verdict, in a last column (before, the export had none).
    assert {r["ref"]: r["verdict"] for r in exported}["n2"] == "new"
    assert sorted(r["verdict"] for r in exported) == ["", "duplicate", "new"]

    with qtbot.waitSignal(window.matches.added, timeout=SIGNAL_TIMEOUT_MS) as added:
        dialog.add_button.click()
    assert added.args[0]["verdicts_stored"] == 2
    project = window.bridge.current_project()
    assert project.rows.count() == QUESTIONS_ITEMS + 3
    stored = {(p["text_a"], p["text_b"], p["label"]) for p in project.verdicts.pairs()
              if p["origin"] == "match"}
    new_question = NEW_ROWS[1][1]
    assert any(new_question in (a, b) and label == 0 for a, b, label in stored)
    assert any(a == b == "How do I learn Python quickly?" and label == 1
               for a, b, label in stored)
    assert not dialog.add_button.isEnabled()
    # The dialog says what adding did, not the check's "Nothing was added" any more.
    qtbot.waitUntil(lambda: "Added to the project: " in dialog.summary.text())
    assert "Nothing was added" not in dialog.summary.text()
    assert "3 rows imported" in dialog.summary.text()
    assert "2 verdicts stored on its rows" in dialog.summary.text()


def _answer(qtbot, dialog, text: str, key) -> None:
    by_text = {dialog.model.item(i, TEXT).text(): i for i in range(dialog.model.rowCount())}
    dialog.table.selectRow(by_text[text])
    qtbot.keyClick(dialog.table, key)


def test_the_checks_options_dialog_says_check_not_import(qtbot, window, questions_project,
                                                         questions_csv, monkeypatch):
    """Nothing is added by a check, so its options dialog's button says "Check"."""
    with qtbot.waitSignal(window.bridge.projectOpened, timeout=SIGNAL_TIMEOUT_MS):
        window.open_project(str(questions_project))
    shown: list[tuple[str, str]] = []

    def look(dialog: ImportDialog) -> int:
        shown.append((dialog.windowTitle(),
                      dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).text()))
        return QDialog.DialogCode.Rejected

    monkeypatch.setattr(ImportDialog, "exec", look)
    window.check_file(str(questions_csv))
    window.import_spreadsheet(str(questions_csv))
    assert shown == [("Check questions.csv against the project", "Check"),
                     ("Import questions.csv", "Import")]


def test_closing_with_verdicts_asks_and_a_new_check_of_the_file_shows_them_again(
        qtbot, window, questions_project, tmp_path, monkeypatch):
    """Before, Close dropped the verdicts without a word: now it asks, Cancel stays, and
    the verdicts are kept with the project, so checking the same file again shows them."""
    dialog = _check(qtbot, window, questions_project, tmp_path, monkeypatch)
    asked: list[int] = []
    answers = iter([CANCEL, KEEP])
    monkeypatch.setattr(dialog, "ask_on_close", lambda n: (asked.append(n), next(answers))[1])
    _answer(qtbot, dialog, NEW_ROWS[1][1], Qt.Key.Key_N)
    _answer(qtbot, dialog, NEW_ROWS[0][1], Qt.Key.Key_D)
    given = dict(window.matches.verdicts)
    assert sorted(given.values()) == [0, 1]

    dialog.close_button.click()                      # Cancel: still open
    assert asked == [2] and window.match_dialog is dialog and dialog.isVisible()
    qtbot.keyClick(dialog, Qt.Key.Key_Escape)        # Esc asks too; "keep" closes
    assert asked == [2, 2]
    qtbot.waitUntil(lambda: window.match_dialog is None, timeout=SIGNAL_TIMEOUT_MS)
    project = window.bridge.current_project()
    assert project.rows.count() == QUESTIONS_ITEMS     # nothing was added
    qtbot.waitUntil(lambda: len(project.matching.pending_pairs()) == 2,
                    timeout=SIGNAL_TIMEOUT_MS)

    again = _check(qtbot, window, questions_project, tmp_path, monkeypatch, opened=True)
    assert window.matches.verdicts == given
    assert again.verdict_of(2) == "New"
    assert sorted(again.verdict_of(row) for row in given) == ["Duplicate", "New"]
    assert "2 verdicts from an earlier check of this file" in again.summary.text()
    assert "score ≥ 0.80, the default, until 10 verdicts" in again.summary.text()

    # Closing again offers to add the rows; doing so stores the verdicts as pairs.
    monkeypatch.setattr(again, "ask_on_close", lambda n: ADD)
    with qtbot.waitSignal(window.matches.added, timeout=SIGNAL_TIMEOUT_MS) as added:
        again.close_button.click()
    assert added.args[0]["verdicts_stored"] == 2
    assert project.matching.pending_pairs() == []
    assert again.waiting() == 0
    again.close_button.click()                       # nothing waits now: closes unasked
    qtbot.waitUntil(lambda: window.match_dialog is None, timeout=SIGNAL_TIMEOUT_MS)
