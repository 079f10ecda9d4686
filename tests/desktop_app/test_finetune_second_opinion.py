"""The fine-tuning wizard's second opinion, end to end with the real models: the option on
the objective page (on by default only with enough answers of both kinds) reaches the
engine; the run lists the judge's stages before the model's, each with its progress and its
own loss curve; stopping while the judge trains saves nothing; a training side of one
verdict is one line, not a crash; the results page shows the judge's held-out AP beside the
model in use's."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QWizard

from desktop_app.controllers.finetune_controller import (
    JUDGE_STAGE,
    SECOND_OPINION_PAIRS,
    RunState,
)
from engine.training.ap_change import claim
from engine.training.second_opinion import SECOND_OPINION_STAGES, STAGE_JUDGE
from engine.training.session import finetune_stages
from tests.desktop_app.test_finetune_wizard import (
    NEXT,
    TRAIN_TIMEOUT_MS,
    add_file,
    go_to_objectives,
    judged_project,
    open_wizard,
)
from tests.engine.training.test_project_versions import NOT_DUPLICATES

CANCEL = QWizard.WizardButton.CancelButton


def short_run(wizard, *, steps: int, silver: int | None = None, band: float = 0.45) -> None:
    """Few steps under Advanced; `silver`: the second opinion's pairs (None: as offered).
    A wide band: on these 48 questions few unjudged pairs lie near the threshold."""
    page = wizard.objective_page
    page.advanced_button.click()
    page.batch_size.setValue(4)
    page.max_steps.setValue(steps)
    page.silver_band.setValue(band)
    if silver is not None:
        page.second_opinion.check.setChecked(True)
        page.second_opinion.count.setValue(silver)


def test_judge_stage_names_match_the_engine():
    """The controller keeps the judge's stage name as a string (the GUI imports the
    engine's training modules only off its thread); it must be the engine's."""
    assert JUDGE_STAGE == STAGE_JUDGE


@pytest.mark.slow
def test_the_second_opinion_runs_in_the_wizard_and_the_results_show_the_judge(
        qtbot, window, tmp_path, encoder, data_dir):
    path = judged_project(tmp_path / "q.duplens", encoder, data_dir)
    wizard = open_wizard(qtbot, window, path)
    add_file(qtbot, wizard, data_dir / "labelled_pairs.csv")  # enough of each kind now
    go_to_objectives(qtbot, wizard)
    option = wizard.objective_page.second_opinion
    # Enough answers of each kind, but off by default until it is measured to help.
    assert not option.check.isChecked() and option.pairs() == 0
    assert option.note.text().startswith("Off by default: measured on Quora")
    option.check.setChecked(True)
    assert option.pairs() == SECOND_OPINION_PAIRS
    assert "Use a second opinion" in option.check.text()

    short_run(wizard, steps=3, silver=40)
    assert wizard.objective_page.options().second_opinion == 40
    controller, train_page = wizard.controller, wizard.train_page
    details: list[tuple[str, str, int]] = []  # stage, the page's line, the bar's maximum
    controller.progressed.connect(lambda p: details.append(
        (p.stage, train_page.detail.text(), train_page.bar.maximum())))
    with qtbot.waitSignal(controller.reportReady, timeout=TRAIN_TIMEOUT_MS) as blocker:
        wizard.button(NEXT).click()
        # The stages listed when the page opens: the judge's three before the model's.
        listed = list(train_page.stage_labels)
        assert listed[:len(SECOND_OPINION_STAGES) + 1] == [
            "measuring before", *SECOND_OPINION_STAGES]
        assert "Second opinion: train a judge" in train_page.stage_labels[STAGE_JUDGE].text()
        assert "up to 40 pairs" in train_page.stage_labels["labelling silver"].text()
        assert "judge's" in train_page.stage_labels["training"].text()
    report = blocker.args[0]
    qtbot.waitUntil(lambda: wizard.currentPage() is wizard.results_page, timeout=5000)

    # The option reached the engine, which trained a judge and labelled silver with it.
    assert report.options.second_opinion == 40 and report.options.silver_band == 0.45
    opinion = report.second_opinion
    assert opinion is not None and opinion.limit == 40 and opinion.judge_steps == 3
    assert list(train_page.stage_labels)[:5] == list(
        finetune_stages(report.objective, report.options))[:5]

    # Both steps had their own progress and loss: the judge's 3 steps, then the model's.
    seen = [stage for stage, _line, _max in details]
    assert seen.index(STAGE_JUDGE) < seen.index("measuring second opinion") < \
        seen.index("labelling silver") < seen.index("training")
    judge_lines = [line for stage, line, top in details if stage == STAGE_JUDGE and top == 3]
    assert any(line.startswith("Training the judge: ") and "of 3 steps" in line
               and "loss " in line for line in judge_lines)
    assert any(line.startswith("Measuring the judge") for stage, line, _ in details
               if stage == "measuring second opinion")
    assert any(line.startswith("Training: ") and "of 3 steps" in line
               for stage, line, _ in details if stage == "training")
    assert controller.judge_steps == [1, 2, 3] and controller.steps == [1, 2, 3]
    assert train_page.loss_plot.judge_points() == 3 and train_page.loss_plot.points() == 3
    assert train_page.loss_plot.legend.isVisible()
    assert all(label.text().startswith("✓") for label in train_page.stage_labels.values())

    # The results: the model's change with its interval, as without a judge, and the
    # judge's AP beside the model in use's, its interval and the silver it made.
    results = wizard.results_page
    assert results.summary.text().startswith(f"<b>{claim(report.ap_change)}</b>: ")
    change = controller.judge_change
    assert change is not None and change.pairs == len(report.split.held_out)
    assert change.before == pytest.approx(report.before.average_precision, abs=1e-6)
    assert change.after == pytest.approx(opinion.judge.average_precision, abs=1e-6)
    text = results.opinion.text()
    assert results.opinion.isVisible() and text.startswith("<b>Second opinion</b>")
    assert f"average precision <b>{opinion.judge.average_precision:.2f}</b> for the judge, " \
           f"{opinion.bi_encoder_ap:.2f} for the model in use" in text
    assert f"{change.change:+.2f} points, 95% interval {change.low:+.2f} to " \
           f"{change.high:+.2f}" in text
    assert f"trained on your {opinion.judge_pairs:,} training answers" in text
    if opinion.silver:
        assert f"labelled <b>{len(opinion.silver):,} pairs</b>" in text
        assert f"{opinion.silver_duplicates:,} duplicate" in text
    assert opinion.note not in results.notes.text()  # said once, in the paragraph
    xs, _ = results.pr_plot.judge.getData()
    assert xs is not None and len(xs) == len(opinion.judge.curve)
    assert wizard.button(QWizard.WizardButton.FinishButton).isEnabled()


def test_stopping_while_the_judge_trains_saves_nothing(qtbot, window, tmp_path, encoder,
                                                       data_dir):
    path = judged_project(tmp_path / "q.duplens", encoder, data_dir)
    wizard = open_wizard(qtbot, window, path)
    project = window.bridge.current_project()
    go_to_objectives(qtbot, wizard)
    option = wizard.objective_page.second_opinion
    # 17 duplicate and 16 not: about eight of each on the training side, too few to offer
    # it on by default; the analyst may still turn it on.
    assert not option.check.isChecked() and option.pairs() == 0
    assert option.note.text().startswith("Off by default: your answers hold 17 duplicate "
                                         "and 16 not duplicate pairs")
    short_run(wizard, steps=500, silver=100)  # far more steps than this test waits for
    controller = wizard.controller
    with qtbot.waitSignal(controller.judgeLossChanged, timeout=TRAIN_TIMEOUT_MS,
                          check_params_cb=lambda steps, _l: len(steps) > 0):
        wizard.button(NEXT).click()
    cancel = wizard.button(CANCEL)
    assert cancel.text() == "Stop training"
    assert "<b>" in wizard.train_page.stage_labels[STAGE_JUDGE].text()  # the current one
    with qtbot.waitSignal(controller.stateChanged, timeout=TRAIN_TIMEOUT_MS,
                          check_params_cb=lambda state, _m: state is RunState.CANCELLED):
        cancel.click()
    assert controller.steps == []  # the model's training never started
    assert 0 < len(controller.judge_steps) < 500
    assert "Nothing was saved" in wizard.train_page.message.text()
    assert [v["id"] for v in project.versions.list()] == [1]
    assert project.model.row()["id"] == 1 and project.model.encoder() is encoder
    assert not any((tmp_path / "q.duplens.models").glob("v*"))
    assert wizard.button(QWizard.WizardButton.BackButton).isEnabled()
    assert cancel.text() == "Close"


def test_a_training_side_of_one_verdict_is_one_line_not_a_crash(qtbot, window, tmp_path,
                                                               encoder, data_dir):
    """Four duplicate pairs in two groups of questions; with 90% held out the two training
    pairs are both "not duplicate" (the split is seeded): the engine refuses the judge
    before any model loads, and the page says why in one line."""
    duplicates = [("q1", "q2"), ("q2", "q3"), ("q4", "q5"), ("q5", "q6")]
    path = judged_project(tmp_path / "q.duplens", encoder, data_dir, duplicates,
                          NOT_DUPLICATES)
    wizard = open_wizard(qtbot, window, path)
    project = window.bridge.current_project()
    go_to_objectives(qtbot, wizard)
    assert not wizard.objective_page.second_opinion.check.isChecked()
    wizard.objective_page.held_out.setValue(90)
    short_run(wizard, steps=2, silver=100)
    controller = wizard.controller
    with qtbot.waitSignal(controller.stateChanged, timeout=TRAIN_TIMEOUT_MS,
                          check_params_cb=lambda state, _m: state is RunState.FAILED):
        wizard.button(NEXT).click()
    message = wizard.train_page.message.text()
    assert message.startswith("A second opinion learns from the training pairs, and all 2 "
                              "of them are labelled not duplicate; label more pairs of both "
                              "kinds, or train without a second opinion. Nothing was saved")
    assert "\n" not in message and window.error_box is None
    assert [v["id"] for v in project.versions.list()] == [1]
    assert not any(Path(tmp_path / "q.duplens.models").glob("v*"))
