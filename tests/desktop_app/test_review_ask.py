"""The review's calibrated threshold (shown, the slider's default, updated after every
verdict) and its "Ask me" mode (one uncertain pair at a time, D / N / S, stored as asked)."""

from __future__ import annotations

import sqlite3

import pytest
from PySide6.QtCore import Qt

from desktop_app.main_window import MainWindow
from engine.project import Project
from engine.review.calibration import (
    BY_HAND,
    CALIBRATED,
    DEFAULT_THRESHOLD,
    ENOUGH_OF_EACH,
    format_threshold,
)
from tests.desktop_app.conftest import SIGNAL_TIMEOUT_MS
from tests.desktop_app.test_review import open_review, press, select_cluster_of
from tests.engine.cli.test_cli_ask import DUPLICATES, NOT_DUPLICATES


def judge_pairs(path, pairs_and_verdicts) -> Project:
    project = Project.open(path)
    for (a, b), label in pairs_and_verdicts:
        project.verdicts.set_verdict(project.rows.by_public_id(a)["item_id"],
                                     project.rows.by_public_id(b)["item_id"], label)
    return project


def test_calibrated_threshold_is_shown_is_the_slider_default_and_follows_verdicts(
        qtbot, window: MainWindow, questions_project, encoder):
    labelled = [(p, 1) for p in DUPLICATES] + [(p, 0) for p in NOT_DUPLICATES]
    with judge_pairs(questions_project, labelled) as project:
        project.model.attach(encoder, is_default=True)
        calibration = project.verdicts.calibration()
    assert calibration.enough and calibration.verdicts == len(labelled)
    expected = round(calibration.threshold, 3)
    assert expected != pytest.approx(0.8)   # else the test could not tell the two apart

    open_review(qtbot, window, questions_project)
    view = window.review_view
    assert window.review.threshold == pytest.approx(expected)
    assert view.spin.value() == pytest.approx(round(expected, 2))
    text = view.calibration_label.text()
    assert f"Calibrated threshold {calibration.threshold:.3f}" in text
    assert f"on {len(labelled)} verdicts" in text
    assert f"precision {calibration.precision:.0%}" in text
    assert "among your verdicts (Measure quality estimates the whole file's)" in text
    assert f"Project threshold {format_threshold(round(calibration.threshold, 4))} " \
           f"(calibrated on {len(labelled)} verdicts" in text
    assert not view.use_calibrated_button.isEnabled()   # nothing set by hand to reset
    assert window.status.threshold.text() == (f"Threshold {format_threshold(expected)} · "
                                              f"calibrated from {len(labelled)} verdicts")

    # One more verdict: the label says so at once, and the window's threshold is still the
    # project's (calibrated on every verdict), never one of its own.
    select_cluster_of(window, "q2")
    with qtbot.waitSignal(window.review.projectThresholdReady, timeout=SIGNAL_TIMEOUT_MS,
                          check_params_cb=lambda t: f"on {len(labelled) + 1} verdicts"
                          in t.reason):
        press(qtbot, window, Qt.Key.Key_N)
    assert f"on {len(labelled) + 1} verdicts" in view.calibration_label.text()
    with Project.open(questions_project, read_only=True) as project:
        now = project.threshold.current()
    assert now.source == CALIBRATED
    qtbot.waitUntil(lambda: window.review.threshold == pytest.approx(round(now.value, 3)),
                    timeout=SIGNAL_TIMEOUT_MS)


def test_too_few_verdicts_keep_the_model_s_default_and_say_what_is_needed(
        qtbot, window, questions_project):
    with judge_pairs(questions_project, [(DUPLICATES[0], 1), (NOT_DUPLICATES[0], 0)]) as p:
        default = p.threshold.model_default()
    assert default.recorded and default.value != DEFAULT_THRESHOLD   # chosen on data
    open_review(qtbot, window, questions_project)
    view = window.review_view
    assert window.review.threshold == pytest.approx(default.value)
    text = view.calibration_label.text()
    assert f"the model's default, {default.chosen_on}" in text
    assert f"used from {ENOUGH_OF_EACH} of each" in text
    assert not view.use_calibrated_button.isEnabled()
    assert window.status.threshold.text() == \
        f"Threshold {format_threshold(default.value)} · model default"


def test_moving_the_slider_sets_the_project_threshold_by_hand_and_reset_hands_it_back(
        qtbot, window, questions_project):
    """The window's threshold is the project's: moved, it is saved as set by hand (so the
    command line cuts there too), the status bar says so, and Reset gives it back."""
    open_review(qtbot, window, questions_project)
    view = window.review_view
    with Project.open(questions_project, read_only=True) as project:
        default = project.threshold.current()
    with qtbot.waitSignal(window.review.projectThresholdReady, timeout=SIGNAL_TIMEOUT_MS,
                          check_params_cb=lambda t: t.source == BY_HAND):
        view.spin.setValue(0.7)
    assert window.status.threshold.text() == "Threshold 0.70 · set by hand"
    assert view.use_calibrated_button.isEnabled()
    with Project.open(questions_project, read_only=True) as project:
        assert project.threshold.current().value == pytest.approx(0.7)
        assert project.threshold.by_hand() == pytest.approx(0.7)

    with qtbot.waitSignal(window.review.projectThresholdReady, timeout=SIGNAL_TIMEOUT_MS,
                          check_params_cb=lambda t: t.source != BY_HAND):
        view.use_calibrated_button.click()
    qtbot.waitUntil(lambda: window.review.threshold == pytest.approx(default.value),
                    timeout=SIGNAL_TIMEOUT_MS)
    assert view.spin.value() == pytest.approx(round(default.value, 2))
    assert window.status.threshold.text().endswith("· model default")
    with Project.open(questions_project, read_only=True) as project:
        assert project.threshold.by_hand() is None


def test_ask_me_shows_a_pair_judged_with_keys_and_the_next_follows(qtbot, window,
                                                                   questions_project):
    open_review(qtbot, window, questions_project)
    view = window.review_view
    ask = window.review.ask
    with qtbot.waitSignal(ask.pairChanged, timeout=SIGNAL_TIMEOUT_MS):
        view.ask_button.click()
    assert view.asking and view.stack.currentWidget() is view.ask_view
    first = ask.current
    panel = view.ask_view.compare
    assert first.a.text in panel.left.toPlainText() and first.b.text in panel.right.toPlainText()
    default = window.review.threshold          # no verdicts: the model's default threshold
    assert (f"Similarity {first.score:.3f} (threshold {format_threshold(default)}) · overlap "
            in view.ask_view.score_label.text())
    assert abs(first.score - default) < 0.05  # nearest the project threshold

    target = view.ask_view.compare.left      # keys work with focus anywhere in the mode
    window.activateWindow()
    target.setFocus()
    qtbot.waitUntil(target.hasFocus, timeout=5_000)
    with qtbot.waitSignal(ask.judged, timeout=SIGNAL_TIMEOUT_MS):
        qtbot.keyClick(target, Qt.Key.Key_D)
        second = ask.current            # shown at once, before the verdict is written
    assert second is not None and second != first
    qtbot.keyClick(target, Qt.Key.Key_S)  # skip: nothing stored, the next one shown
    third = ask.current
    assert third is not None and third not in (first, second)
    with qtbot.waitSignal(ask.judged, timeout=SIGNAL_TIMEOUT_MS):
        qtbot.keyClick(target, Qt.Key.Key_N)
    assert ask.pair_queue.given == 2
    con = sqlite3.connect(f"file:{questions_project}?mode=ro", uri=True)
    stored = set(con.execute("SELECT item_a, item_b, label, origin FROM pair_labels"))
    con.close()
    assert stored == {(*_ordered(first), 1, "asked"), (*_ordered(third), 0, "asked")}

    view.ask_button.click()              # back to the clusters
    assert not view.asking and view.actions_by_name["next"].isEnabled()


def _stored(path) -> set[tuple[int, int, int]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {tuple(r) for r in con.execute("SELECT item_a, item_b, label FROM pair_labels")}
    finally:
        con.close()


def _start_asking(qtbot, window, path):
    open_review(qtbot, window, path)
    view = window.review_view
    with qtbot.waitSignal(window.review.ask.pairChanged, timeout=SIGNAL_TIMEOUT_MS):
        view.ask_button.click()
    target = view.ask_view.compare.left
    window.activateWindow()
    target.setFocus()
    qtbot.waitUntil(target.hasFocus, timeout=5_000)
    return view, window.review.ask, target


def test_ctrl_z_in_ask_me_takes_verdicts_back_last_first(qtbot, window, questions_project):
    view, ask, target = _start_asking(qtbot, window, questions_project)
    assert not view.undo_button.isEnabled()
    first = ask.current
    with qtbot.waitSignal(ask.judged, timeout=SIGNAL_TIMEOUT_MS):
        qtbot.keyClick(target, Qt.Key.Key_D)
    second = ask.current
    with qtbot.waitSignal(ask.judged, timeout=SIGNAL_TIMEOUT_MS):
        qtbot.keyClick(target, Qt.Key.Key_N)
    third = ask.current
    assert view.undo_button.isEnabled() and not view.redo_button.isEnabled()
    assert second.b.public_id in view.undo_button.toolTip()
    assert _stored(questions_project) == {(*_ordered(first), 1), (*_ordered(second), 0)}

    # Ctrl+Z: the last answer's pair is back on screen and its verdict gone.
    with qtbot.waitSignal(ask.judged, timeout=SIGNAL_TIMEOUT_MS,
                          check_params_cb=lambda given: given == 1):
        qtbot.keyClick(target, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert ask.current == second
    assert second.a.text in view.ask_view.compare.left.toPlainText()
    assert _stored(questions_project) == {(*_ordered(first), 1)}
    with qtbot.waitSignal(ask.judged, timeout=SIGNAL_TIMEOUT_MS,
                          check_params_cb=lambda given: given == 0):
        view.undo_button.click()
    assert ask.current == first and _stored(questions_project) == set()
    assert not view.undo_button.isEnabled()

    # Judged again, differently; the pair that was on screen comes after it, as before.
    with qtbot.waitSignal(ask.judged, timeout=SIGNAL_TIMEOUT_MS):
        qtbot.keyClick(target, Qt.Key.Key_N)
    assert ask.current == second
    assert _stored(questions_project) == {(*_ordered(first), 0)}
    qtbot.keyClick(target, Qt.Key.Key_S)
    assert ask.current == third

    # Back to the clusters: Undo is the clusters' own again (nothing done there yet).
    view.ask_button.click()
    assert not view.undo_button.isEnabled()


def test_undo_leaves_a_verdict_another_analyst_gave_since(qtbot, window, questions_project):
    view, ask, target = _start_asking(qtbot, window, questions_project)
    first = ask.current
    with qtbot.waitSignal(ask.judged, timeout=SIGNAL_TIMEOUT_MS):
        qtbot.keyClick(target, Qt.Key.Key_D)
    with Project.open(questions_project) as other:     # another analyst, another connection
        other.verdicts.set_verdict(first.a.item_id, first.b.item_id, 0)
    with qtbot.waitSignal(ask.busy, timeout=SIGNAL_TIMEOUT_MS):
        qtbot.keyClick(target, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert "it stays theirs" in view.ask_view.score_label.text()
    assert ask.pair_queue.given == 1
    assert _stored(questions_project) == {(*_ordered(first), 0)}


def _ordered(pair) -> tuple[int, int]:
    a, b = pair.a.item_id, pair.b.item_id
    return (min(a, b), max(a, b))


def test_search_hits_and_the_review_pair_show_the_words_overlap(qtbot, window,
                                                                questions_project):
    from desktop_app.views.score_delegate import OVERLAP_ROLE

    open_review(qtbot, window, questions_project)
    select_cluster_of(window, "q7")
    assert " · overlap " in window.review_view.pair_label.text()
    window.tabs.setCurrentWidget(window.search_page)
    panel = window.search_panel
    qtbot.keyClicks(panel.query, "Which city is the capital of Austria?")
    qtbot.waitUntil(lambda: panel.results.count() > 0, timeout=10_000)
    top = panel.results.item(0)
    assert top.text().startswith("q7 · ")
    assert top.data(OVERLAP_ROLE) == "∩ 0.75"     # similarity 0.67: not close enough to mark
    assert "overlap 0.75, differs: austria / australia" in top.toolTip()


def test_ask_me_marks_a_close_pair_whose_meaning_flips_as_review_does(qtbot, bridge):
    """Review's rule (at or above the threshold, a word that flips the meaning differs: ⚠)
    in Ask me, which never showed it; a plain content word that differs is named unmarked."""
    from desktop_app.controllers.ask_controller import AskController
    from desktop_app.views.ask_view import AskView
    from engine.services.asking import AskedPair, AskedRow

    view = AskView(AskController(bridge))
    qtbot.addWidget(view)
    a = AskedRow(1, "q1", "Which drill bit do I need for a 6 mm wall plug?")
    b = AskedRow(2, "q2", "Which drill bit do I need for an 8 mm wall plug?")
    view.show_pair(AskedPair(a, b, 0.83, 0.8))
    assert view.score_label.text().startswith("⚠ Similarity 0.830 (threshold 0.80)")
    assert view.score_label.text().endswith("differs: 6 / 8 (number: 6 / 8)")
    view.show_pair(AskedPair(a, b, 0.79, 0.8))     # not called a duplicate: no mark
    assert view.score_label.text().startswith("Similarity 0.790")
    screw = AskedRow(3, "q3", "Which screw do I need for a plasterboard wall?")
    drill = AskedRow(4, "q4", "Which drill bit do I need for a plasterboard wall?")
    view.show_pair(AskedPair(screw, drill, 0.83, 0.8))
    assert view.score_label.text().startswith("Similarity 0.830")
    assert view.score_label.text().endswith("differs: screw / drill bit")


def test_ask_me_is_left_with_its_back_button_or_esc(qtbot, window, questions_project):
    open_review(qtbot, window, questions_project)
    view = window.review_view
    for leave in ("button", "esc"):
        view.ask_button.click()
        qtbot.waitUntil(lambda: window.review.ask.current is not None,
                        timeout=SIGNAL_TIMEOUT_MS)
        assert view.asking and view.ask_view.back_button.isVisible()
        if leave == "button":
            view.ask_view.back_button.click()
        else:
            window.activateWindow()
            view.ask_view.compare.left.setFocus()
            qtbot.waitUntil(view.ask_view.compare.left.hasFocus, timeout=5_000)
            qtbot.keyClick(view.ask_view.compare.left, Qt.Key.Key_Escape)
        assert not view.asking and not view.ask_button.isChecked()
        assert view.stack.currentIndex() == 0


def test_while_pairs_are_found_the_comparison_says_so(qtbot, window, questions_project):
    """Before, the empty comparison asked to "Select a member to compare it with the
    canonical row" while Ask me found its first pairs; and once none was left it still did."""
    open_review(qtbot, window, questions_project)
    view, ask = window.review_view, window.review.ask
    mode = view.ask_view
    with qtbot.waitSignal(ask.pairChanged, timeout=SIGNAL_TIMEOUT_MS):
        view.ask_button.click()
        # The pairs come through the event loop: what shows until then.
        assert mode.compare.left_title.text() == "Finding pairs the model is unsure of…"
        assert not any(button.isEnabled() for button in mode.buttons.values())
    assert ask.current is not None and mode.buttons[1].isEnabled()
    assert mode.compare.left_title.text() == ask.current.a.public_id
    mode.show_pair(None)                      # every pair judged
    assert mode.compare.left_title.text() == ""
    assert mode.score_label.text().startswith("Nothing left to ask")
