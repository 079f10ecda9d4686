"""The review's "Measure quality" mode: drawn pairs one at a time, D / N / S and Ctrl+Z,
the estimates above updated after every verdict, when to stop, the calibrated threshold's
precision and recall from the estimate, and File → Export quality report."""

from __future__ import annotations

import sqlite3

import pytest
from PySide6.QtCore import Qt

from desktop_app.views.measure_view import MeasureView
from engine.estimation.estimators import Estimate, Figure, Floored
from engine.services.measuring import Measurement
from tests.desktop_app.conftest import SIGNAL_TIMEOUT_MS
from tests.desktop_app.test_review import open_review
from tests.desktop_app.test_review_ask import judge_pairs
from tests.engine.cli.test_cli_ask import DUPLICATES, NOT_DUPLICATES


def _judged_draws(path) -> int:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute("SELECT count(*) FROM quality_draws WHERE verdict IS NOT NULL"
                           ).fetchone()[0]
    finally:
        con.close()


def _start(qtbot, window, path):
    open_review(qtbot, window, path)
    view = window.review_view
    measure = window.review.measure
    with qtbot.waitSignals([measure.pairChanged, measure.measured], timeout=SIGNAL_TIMEOUT_MS):
        view.measure_button.click()
    target = view.measure_view.compare.left
    window.activateWindow()
    target.setFocus()
    qtbot.waitUntil(target.hasFocus, timeout=5_000)
    return view, measure, target


def _after_verdict(qtbot, measure, verdicts: int):
    return qtbot.waitSignal(measure.measured, timeout=SIGNAL_TIMEOUT_MS,
                            check_params_cb=lambda m: m.verdicts == verdicts)


@pytest.mark.slow
def test_drawn_pairs_are_judged_with_keys_and_the_estimates_follow(qtbot, window,
                                                                    questions_project):
    view, measure, target = _start(qtbot, window, questions_project)
    assert view.measuring and view.stack.currentWidget() is view.measure_view
    assert not view.ask_button.isChecked() and view.measure_button.isChecked()
    assert view.measure_view.values["precision"].text() == "—"
    first = measure.current
    panel = view.measure_view.compare
    assert first.a.text in panel.left.toPlainText() and first.b.text in panel.right.toPlainText()
    assert f"Similarity {first.similarity:.3f}" in view.measure_view.score_label.text()

    with _after_verdict(qtbot, measure, 1):
        qtbot.keyClick(target, Qt.Key.Key_N)
    second = measure.current
    assert second is not None and second.draw_id != first.draw_id
    qtbot.keyClick(target, Qt.Key.Key_S)                 # skipped: stays drawn, not counted
    third = measure.current
    assert third.draw_id not in (first.draw_id, second.draw_id)
    with _after_verdict(qtbot, measure, 2) as blocker:
        qtbot.keyClick(target, Qt.Key.Key_D)
    m = blocker.args[0]
    assert m.estimate is not None
    assert "from 2 verdicts" in view.measure_view.rests_on.text()
    assert view.measure_view.values["duplicates"].text() != "—"
    assert "%" in view.measure_view.values["precision"].text() or \
        view.measure_view.values["precision"].text() == "—"   # nothing flagged judged yet
    assert _judged_draws(questions_project) == 2

    # Ctrl+Z: the last verdict is taken back and its pair shown again.
    assert view.undo_button.isEnabled()
    with _after_verdict(qtbot, measure, 1):
        qtbot.keyClick(target, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert measure.current.draw_id == third.draw_id
    assert _judged_draws(questions_project) == 1

    # The estimate follows the slider.
    with qtbot.waitSignal(measure.measured, timeout=SIGNAL_TIMEOUT_MS,
                          check_params_cb=lambda m: m.threshold == pytest.approx(0.7)):
        view.spin.setValue(0.7)
    assert "At threshold 0.70" in view.measure_view.rests_on.text()

    view.measure_button.click()                          # back to the clusters
    assert not view.measuring and view.actions_by_name["next"].isEnabled()


def _figure(v: float) -> Figure:
    return Figure(v, v - 0.02, v + 0.02)


def test_the_mode_says_when_to_stop(qtbot, window):
    view = MeasureView(window.review.measure)
    qtbot.addWidget(view)
    tight = Estimate(0.85, _figure(0.9), _figure(0.8), _figure(0.85), Figure(100, 95, 105),
                     Figure(150, 140, 160), 90, 400, True)
    view.show_measurement(Measurement(tight, 0.85, 400, 0, {"ann": 400}, "recall", 1200,
                                      "m", None))
    assert "you can stop" in view.advice.text()
    assert view.values["precision"].text() == "90.0%  (88.0% – 92.0%)"
    wide = Estimate(0.85, _figure(0.9), Figure(0.8, 0.6, 0.95), _figure(0.85),
                    Figure(100, 95, 105), None, 90, 60, True)
    view.show_measurement(Measurement(wide, 0.85, 60, 3, {"ann": 60}, "recall", 180, "m",
                                      None))
    assert "you can stop" not in view.advice.text()
    assert "recall" in view.advice.text() and "180" in view.advice.text()
    assert "3 drawn pairs wait" in view.rests_on.text()


@pytest.mark.slow
def test_the_calibrated_line_shows_the_estimated_precision_and_recall(qtbot, window,
                                                                      questions_project):
    labelled = [(p, 1) for p in DUPLICATES] + [(p, 0) for p in NOT_DUPLICATES]
    with judge_pairs(questions_project, labelled) as project:
        for p in project.measuring.next_pairs(12):
            project.measuring.judge(p.draw_id, int(p.similarity > 0.8))
    with qtbot.waitSignal(window.review.measure.calibratedEstimate,
                          timeout=SIGNAL_TIMEOUT_MS,
                          check_params_cb=lambda m: m is not None) as blocker:
        open_review(qtbot, window, questions_project)
    text = window.review_view.calibration_label.text()
    assert "estimated precision" in text and "estimated recall" in text
    assert "random pairs" in text
    # Recall as the Measure quality mode quotes it: down to the floor where there is one.
    e = blocker.args[0].estimate
    r = e.quoted("recall")
    which = "" if e.floored is None else f" of pairs scoring ≥ {e.floored.floor:.2f}:"
    assert f"estimated recall{which} {r.value:.0%} ({r.low:.0%}–{r.high:.0%})" in text


@pytest.mark.slow
def test_file_export_quality_report_writes_the_page(qtbot, window, questions_project,
                                                    tmp_path, monkeypatch):
    with judge_pairs(questions_project, []) as project:
        for p in project.measuring.next_pairs(8):
            project.measuring.judge(p.draw_id, int(p.similarity > 0.8))
    open_review(qtbot, window, questions_project)
    target = tmp_path / "quality.html"
    monkeypatch.setattr(window, "ask_report_path", lambda: str(target))
    with qtbot.waitSignal(window.review.measure.reportWritten, timeout=SIGNAL_TIMEOUT_MS):
        window.menu.actions["quality_report"].trigger()
    page = target.read_text(encoding="utf-8")
    assert "How right are the duplicates in questions.duplens?" in page
    assert "<svg" in page and "8</b> pairs drawn at random" in page


@pytest.mark.slow
def test_while_pairs_are_drawn_the_comparison_says_so(qtbot, window, questions_project):
    """Before, the empty comparison said "Select a member to compare it with the canonical
    row" while the first pairs were drawn (this mode has no members), and when the queued
    pairs ran out before the next batch came, the pair judged last stayed on screen with
    keys that judged nothing. Now the comparison says that pairs are being drawn, the
    verdict buttons off, until a pair comes."""
    open_review(qtbot, window, questions_project)
    view, measure = window.review_view, window.review.measure
    mode = view.measure_view
    with qtbot.waitSignal(measure.pairChanged, timeout=SIGNAL_TIMEOUT_MS):
        view.measure_button.click()
        # The draw's answer comes through the event loop: what shows until then.
        assert mode.compare.left_title.text() == "Drawing pairs at random…"
        assert not any(button.isEnabled() for button in mode.buttons.values())
    assert measure.current is not None
    assert all(button.isEnabled() for button in mode.buttons.values())
    while measure.current is not None:    # skipped faster than the next batch is drawn
        measure.judge(None)
    assert mode.compare.left_title.text() == "Drawing pairs at random…"
    assert mode.compare.left.toPlainText() == "" and not mode.buttons[1].isEnabled()
    with qtbot.waitSignal(measure.pairChanged, timeout=SIGNAL_TIMEOUT_MS) as shown:
        pass
    assert shown.args[0] is not None and mode.buttons[1].isEnabled()
    assert shown.args[0].a.text in mode.compare.left.toPlainText()


def _floored_estimate() -> Estimate:
    """Recall 80% down to 0.50 and 40% over the whole file, with 5,670,123 pairs below
    0.50, 30 of them judged, none a duplicate, and up to 697,843.2 duplicates there."""
    below = {"pairs": 5_670_123, "answered": 30, "duplicates_found": 0, "estimate": 0.0,
             "at_most": 697_843.2}
    floored = Floored(0.5, Figure(0.8, 0.7, 0.9), Figure(120, 110, 135), below,
                      Figure(0.7, 0.6, 0.8))
    return Estimate(0.85, _figure(0.9), Figure(0.4, 0.05, 0.95), _figure(0.55),
                    Figure(240, 110, 700_000), None, 96, 400, True, [], floored)


def test_recall_is_quoted_down_to_the_floor_with_the_whole_file_beside_it(qtbot, window):
    view = MeasureView(window.review.measure)
    qtbot.addWidget(view)
    view.show()
    plain = Estimate(0.85, _figure(0.9), _figure(0.8), _figure(0.85), Figure(100, 95, 105),
                     None, 90, 400, True)
    view.show_measurement(Measurement(plain, 0.85, 400, 0, {"ann": 400}, "recall", 50,
                                      "m", None))
    # Without a floor: the rows and hints as they always were, nothing more.
    assert view.values["recall"].text() == "80.0%  (78.0% – 82.0%)"
    assert view.hints["recall"].text() == "of all duplicate pairs are flagged"
    assert view.values["duplicates"].text() == "100  (95 – 105)"
    assert view.hints["duplicates"].text() == "in the whole project"
    assert view.hints["f1"].text() == "precision and recall in one"
    for key in ("recall_all", "duplicates_all"):
        assert not view.values[key].isVisible() and not view.titles[key].isVisible()
    assert not view.below_floor.isVisible()

    view.show_measurement(Measurement(_floored_estimate(), 0.85, 400, 0, {"ann": 400},
                                      "recall", 50, "m", None))
    assert view.values["recall"].text() == "80.0%  (70.0% – 90.0%)"
    assert view.hints["recall"].text() == ("of the duplicate pairs scoring 0.50 or more are "
                                           "flagged")
    assert view.titles["recall_all"].text() == "<b>Recall, whole file</b>"
    assert view.values["recall_all"].isVisible()
    assert view.values["recall_all"].text() == "40.0%  (5.0% – 95.0%)"
    assert view.values["duplicates"].text() == "120  (110 – 135)"
    assert view.hints["duplicates"].text() == "scoring 0.50 or more"
    assert view.values["duplicates_all"].text() == "240  (110 – 700,000)"
    assert view.values["f1"].text() == "70.0%  (60.0% – 80.0%)"        # down to 0.50 too
    assert view.hints["f1"].text() == "precision and recall scoring 0.50 or more in one"
    assert view.below_floor.isVisible()
    assert view.below_floor.text() == (
        "Pairs scoring below 0.50, which no threshold setting can flag: 5,670,123. 30 of "
        "them were checked, no duplicate found; at most 698,000 duplicates could be among "
        "them (95% sure).")

    # Back to an estimate without a floor: the extra rows go, the hints come back.
    view.show_measurement(Measurement(plain, 0.85, 400, 0, {"ann": 400}, "recall", 50,
                                      "m", None))
    assert not view.values["recall_all"].isVisible() and not view.below_floor.isVisible()
    assert view.hints["recall"].text() == "of all duplicate pairs are flagged"
    assert view.values["duplicates"].text() == "100  (95 – 105)"
