"""The second opinion in the window (issue 45): once the active model's judge is offered,
Review, Ask me and Check a file show its suggestion on the pair on screen, A accepts it as D
or N would, and Ask me can ask first where the model and the judge disagree. Before, nothing
of it shows, and A does nothing.

The judge is a real cross-encoder on the bundled model's transformer, kept beside the active
model as a run keeps one (a `models` row naming it in `judge_of`, its folder among the
project's versions); its head is random (seeded) and scaled, so its answers are spread out
and both verdicts occur without minutes of training. What it says is beside the point: the
window must show exactly that, and write exactly that when asked to."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from desktop_app.main_window import MainWindow
from desktop_app.views.match_results import OPINION_WORDS, VERDICT_TEXT
from desktop_app.views.second_opinion_line import ACCEPT_KEY, opinion_words
from engine.review.disagreement import disagrees
from tests.desktop_app.conftest import SIGNAL_TIMEOUT_MS
from tests.desktop_app.test_match_window import _check
from tests.desktop_app.test_review import open_review, press
from tests.judges import keep_judge, make_judge_folder

pytestmark = pytest.mark.slow   # a judge is made and loaded: tens of seconds on a laptop

A_KEY = getattr(Qt.Key, f"Key_{ACCEPT_KEY}")


@pytest.fixture(scope="module")
def judge_folder(tmp_path_factory) -> Path:
    return make_judge_folder(tmp_path_factory.mktemp("judge") / "judge")


def stored_verdicts(window: MainWindow) -> dict[frozenset[int], tuple[int, str]]:
    project = window.bridge.current_project()
    return {frozenset((p["item_a"], p["item_b"])): (p["label"], p["origin"])
            for p in project.verdicts.pairs()}


def suggested(qtbot, line) -> int:
    qtbot.waitUntil(lambda: line.suggestion is not None, timeout=SIGNAL_TIMEOUT_MS)
    return line.suggestion


def scores_of(window: MainWindow, pairs: list[tuple[str, str]]) -> list[float]:
    return window.bridge.current_project().versions.second_opinion_scores(pairs)


def test_nothing_shows_and_A_does_nothing_before_the_judge_is_offered(
        qtbot, window: MainWindow, questions_project, judge_folder):
    keep_judge(questions_project, judge_folder, offered=False)   # no better than the model
    open_review(qtbot, window, questions_project)
    view = window.review_view
    qtbot.wait(500)   # the question "offered?" has long come back
    assert window.opinion.offered is None
    assert not view.pane.opinion.isVisible() and view.pane.opinion.suggestion is None
    assert not view.actions_by_name["accept_opinion"].isEnabled()
    assert view.current_pair() is not None
    view.members.setFocus()
    qtbot.keyClick(view.members, A_KEY)
    qtbot.wait(300)
    assert stored_verdicts(window) == {}
    view.ask_button.click()
    qtbot.waitUntil(lambda: window.review.ask.current is not None, timeout=SIGNAL_TIMEOUT_MS)
    assert not view.ask_view.opinion.isVisible()
    assert not view.ask_view.by_disagreement.isVisible()


def test_review_shows_the_suggestion_and_A_gives_exactly_that_verdict(
        qtbot, window: MainWindow, questions_project, judge_folder):
    keep_judge(questions_project, judge_folder, offered=True)
    open_review(qtbot, window, questions_project)
    view = window.review_view
    qtbot.waitUntil(lambda: view.pane.opinion.isVisible(), timeout=SIGNAL_TIMEOUT_MS)
    a, b = view.current_pair()
    verdict = suggested(qtbot, view.pane.opinion)
    [probability] = scores_of(window, [(a.text, b.text)])
    assert verdict == (1 if probability >= 0.5 else 0)
    model = int(b.score >= window.review.threshold)   # a: the canonical row
    assert view.pane.opinion.label.text() == opinion_words(probability, model)
    assert "% sure" in view.pane.opinion.label.text()
    qtbot.wait(300)
    assert stored_verdicts(window) == {}          # shown, never applied by itself

    press(qtbot, window, A_KEY)
    assert stored_verdicts(window) == {frozenset((a.item_id, b.item_id)): (verdict, "review")}
    # The next pair's suggestion is asked for; the one accepted is not carried over to it.
    assert view.current_pair() != (a, b)


def test_ask_me_shows_the_suggestion_A_judges_as_asked_and_can_order_by_disagreement(
        qtbot, window: MainWindow, questions_project, judge_folder):
    keep_judge(questions_project, judge_folder, offered=True)
    open_review(qtbot, window, questions_project)
    view, ask = window.review_view, window.review.ask
    qtbot.waitUntil(lambda: window.opinion.offered is not None, timeout=SIGNAL_TIMEOUT_MS)
    view.ask_button.click()
    qtbot.waitUntil(lambda: ask.current is not None, timeout=SIGNAL_TIMEOUT_MS)
    assert view.ask_view.opinion.isVisible() and view.ask_view.by_disagreement.isVisible()
    pair = ask.current
    verdict = suggested(qtbot, view.ask_view.opinion)
    [probability] = scores_of(window, [(pair.a.text, pair.b.text)])
    assert verdict == (1 if probability >= 0.5 else 0)
    qtbot.wait(300)
    assert stored_verdicts(window) == {}

    window.activateWindow()
    view.setFocus()
    with qtbot.waitSignal(ask.judged, timeout=SIGNAL_TIMEOUT_MS):
        qtbot.keyClick(view, A_KEY)
    key = frozenset((pair.a.item_id, pair.b.item_id))
    assert stored_verdicts(window) == {key: (verdict, "asked")}

    # Disagreements first: the batch fetched in that order carries the judge's answers,
    # and every pair the two disagree on comes before any they agree on.
    view.ask_view.by_disagreement.setChecked(True)
    qtbot.waitUntil(lambda: ask.current is not None and ask.current.opinion is not None,
                    timeout=SIGNAL_TIMEOUT_MS)
    shown = [ask.current, *ask.pair_queue.queue]
    assert all(p.opinion is not None for p in shown) and key not in {
        frozenset((p.a.item_id, p.b.item_id)) for p in shown}
    flags = [disagrees(p.score, p.threshold, p.opinion) for p in shown]
    assert any(flags) and flags == sorted(flags, reverse=True), flags
    first = shown[0]
    assert scores_of(window, [(first.a.text, first.b.text)]) == pytest.approx(
        [first.opinion], abs=1e-5)
    # Its suggestion is the one the batch brought, shown at once, the model's side beside it.
    assert view.ask_view.opinion.suggestion == (1 if first.opinion >= 0.5 else 0)
    assert "(the model says" in view.ask_view.opinion.label.text()

    view.ask_view.by_disagreement.setChecked(False)   # back to the model's doubt alone
    qtbot.waitUntil(lambda: ask.current is not None and ask.current.opinion is None,
                    timeout=SIGNAL_TIMEOUT_MS)


def test_check_a_file_shows_the_suggestion_on_the_selected_row_and_A_applies_it(
        qtbot, window: MainWindow, questions_project, judge_folder, tmp_path, monkeypatch):
    keep_judge(questions_project, judge_folder, offered=True)
    with qtbot.waitSignal(window.bridge.projectOpened, timeout=SIGNAL_TIMEOUT_MS):
        window.open_project(str(questions_project))
    qtbot.waitUntil(lambda: window.opinion.offered is not None, timeout=SIGNAL_TIMEOUT_MS)
    dialog = _check(qtbot, window, questions_project, tmp_path, monkeypatch, opened=True)
    assert dialog.opinion.isVisible()
    row = dialog.file_row(dialog.table.currentIndex().row())
    verdict = suggested(qtbot, dialog.opinion)
    checked = {r.row: r for r in dialog.result.rows}[row]
    [probability] = scores_of(window, [(checked.text, checked.matches[0].text)])
    assert verdict == (1 if probability >= 0.5 else 0)
    model = int(checked.matches[0].score >= dialog.result.threshold)
    assert dialog.opinion.label.text() == opinion_words(probability, model, OPINION_WORDS)
    qtbot.wait(300)
    assert dialog.verdict_of(row) == "" and window.matches.verdicts == {}

    qtbot.keyClick(dialog.table, A_KEY)
    assert dialog.verdict_of(row) == VERDICT_TEXT[verdict]
    assert window.matches.verdicts == {row: verdict}
    assert dialog.file_row(dialog.table.currentIndex().row()) != row   # on to the next
