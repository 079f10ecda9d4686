"""File → Check a file against this project, used as an analyst would: the check with its
progress, the table of new rows beside their best matches, verdicts, Export, and adding."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
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
from engine.review.calibration import format_threshold
from tests.desktop_app.conftest import QUESTIONS_ITEMS, SIGNAL_TIMEOUT_MS
from tests.required import unavailable

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
    default = project.threshold.current().value      # the model's own, no verdicts here
    assert (f"score ≥ {format_threshold(default)}, the model's default, best F1 on"
            in again.summary.text())

    # Closing again offers to add the rows; doing so stores the verdicts as pairs.
    monkeypatch.setattr(again, "ask_on_close", lambda n: ADD)
    with qtbot.waitSignal(window.matches.added, timeout=SIGNAL_TIMEOUT_MS) as added:
        again.close_button.click()
    assert added.args[0]["verdicts_stored"] == 2
    assert project.matching.pending_pairs() == []
    assert again.waiting() == 0
    again.close_button.click()                       # nothing waits now: closes unasked
    qtbot.waitUntil(lambda: window.match_dialog is None, timeout=SIGNAL_TIMEOUT_MS)


def test_d_gives_the_first_row_its_verdict_as_soon_as_the_results_open(
        qtbot, window, questions_project, tmp_path, monkeypatch):
    """Before, D and N did nothing until a row was clicked: the dialog was shown without
    the keyboard (seen on an X server without a window manager; offscreen gives a new window
    the keyboard anyway). It takes it as it opens, the first row current and selected, so
    the analyst's first key press judges that row."""
    dialog = _check(qtbot, window, questions_project, tmp_path, monkeypatch)
    qtbot.waitUntil(lambda: dialog.isActiveWindow() and dialog.table.hasFocus(),
                    timeout=5_000)
    assert [i.row() for i in dialog.table.selectionModel().selectedRows()] == [0]
    assert dialog.table.currentIndex().row() == 0
    first = dialog.file_row(0)
    qtbot.keyClick(dialog.table, Qt.Key.Key_D)
    assert dialog.verdict_of(first) == "Duplicate"
    assert window.matches.verdicts == {first: 1}
    assert dialog.table.currentIndex().row() == 1     # and the next row waits for its verdict


# The results dialog on a real X server without a window manager (Xvfb), in a process of its
# own: there, unlike offscreen, a new window gets the keyboard only if it asks for it.
_ON_X11 = """
import json, time
from types import SimpleNamespace as NS
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from desktop_app.views.match_results import MatchResultsDialog

app = QApplication([])
rows = [NS(row=row, id=f"n{row}", text=f"new question {row}", overlaps=[],
           matches=[NS(text=f"old question {row}", score=score, passage=None)],
           duplicate_in_file_of=None)
        for row, score in ((1, 0.93), (2, 0.85))]
result = NS(rows=rows, verdicts={}, threshold=0.8, threshold_reason="", file_name="w.csv",
            likely_duplicates=lambda: 2, can_keep=True)
dialog = MatchResultsDialog(result)
dialog.show()
deadline = time.monotonic() + 3
while time.monotonic() < deadline and not dialog.isActiveWindow():
    app.processEvents()
    time.sleep(0.01)
QTest.keyClick(dialog.table, Qt.Key.Key_D)
print(json.dumps(dialog.verdicts))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11: Linux only")
def test_d_judges_the_first_row_at_once_on_an_x_server(tmp_path):
    """Where the bug showed: on X11 the dialog opened without the keyboard, so D did
    nothing until a row was clicked."""
    if shutil.which("Xvfb") is None:
        unavailable("XVFB", "Xvfb is not installed (Debian: xvfb)")
    read, write = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x800x24",
                             "-nolisten", "tcp"], pass_fds=(write,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    try:
        with os.fdopen(read) as displays:
            number = displays.readline().strip()
        assert number, "Xvfb did not start"
        root = Path(__file__).resolve().parents[2]
        env = {**os.environ, "DISPLAY": f":{number}", "QT_QPA_PLATFORM": "xcb",
               "PYTHONPATH": str(root), "XDG_RUNTIME_DIR": str(tmp_path)}
        proc = subprocess.run([sys.executable, "-c", _ON_X11], capture_output=True,
                              text=True, env=env, timeout=120)
    finally:
        xvfb.terminate()
        xvfb.wait(timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == '{"1": 1}'


def test_a_document_match_is_shown_by_its_passage(qtbot):
    """A long text's first lines are seldom what the row resembles: the table shows the
    passage that matched, as the search does, and keeps the whole text for sorting."""
    from types import SimpleNamespace as NS

    from desktop_app.views.match_results import MATCH, SORT_ROLE, MatchResultsDialog

    document = "An opening about other things. " * 20 + "The tide came in at dawn. " + \
        "A closing about other things. " * 20
    start = document.index("The tide")
    hit = NS(text=document, score=0.91, passage=(start, start + len("The tide came in at dawn.")))
    row = NS(row=1, id="r1", text="the tide came in at dawn", overlaps=[], matches=[hit],
             duplicate_in_file_of=None)
    result = NS(rows=[row], verdicts={}, threshold=0.8, threshold_reason="", file_name="w.csv",
                likely_duplicates=lambda: 1, can_keep=True)
    dialog = MatchResultsDialog(result)
    qtbot.addWidget(dialog)
    cell = dialog.model.item(0, MATCH)
    assert cell.text() == "…The tide came in at dawn.…"
    assert cell.toolTip() == cell.text()
    assert cell.data(SORT_ROLE) == document
