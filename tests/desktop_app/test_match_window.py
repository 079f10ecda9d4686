"""File → Check a file against this project, used as an analyst would: the check with its
progress, the table of new rows beside their best matches, verdicts, Export, and adding."""

from __future__ import annotations

import csv

from PySide6.QtCore import Qt

from desktop_app.controllers.import_controller import ImportChoices
from desktop_app.views.match_results import MATCH, OVERLAP, SCORE, SORT_ROLE, TEXT
from tests.desktop_app.conftest import QUESTIONS_ITEMS, SIGNAL_TIMEOUT_MS

NEW_ROWS = [("n1", "How do I learn Python quickly?"),          # an existing question, word for word
            ("n2", "Which tyres are best for winter cycling?"),  # nothing like it there
            ("n3", "How do I learn Python quickly?")]           # repeats n1 within the file


def _check(qtbot, window, questions_project, tmp_path, monkeypatch):
    new = tmp_path / "this-week.csv"
    with new.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([("ref", "question"), *NEW_ROWS])
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

    with qtbot.waitSignal(window.matches.added, timeout=SIGNAL_TIMEOUT_MS) as added:
        dialog.add_button.click()
    assert added.args[0]["verdicts_stored"] == 2
    project = window.bridge.current_project()
    assert project.rows.count() == QUESTIONS_ITEMS + 3
    stored = {(p["text_a"], p["text_b"], p["label"]) for p in project.labels.pairs()
              if p["origin"] == "match"}
    new_question = NEW_ROWS[1][1]
    assert any(new_question in (a, b) and label == 0 for a, b, label in stored)
    assert any(a == b == "How do I learn Python quickly?" and label == 1
               for a, b, label in stored)
    assert not dialog.add_button.isEnabled()
