"""The "Improve the model…" wizard and the model versions dialog, end to end with the real
model: counts and refusals on the first page, training with a live loss curve, results,
activation and rollback, and cancelling (which saves nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QWizard

from desktop_app.controllers.finetune_controller import RunState
from desktop_app.main_window import MainWindow
from desktop_app.views.finetune_wizard import FinetuneWizard
from engine.project import Project
from engine.training import DEFAULT_OBJECTIVE, OBJECTIVES, TrainingOptions
from engine.training.ap_change import claim
from engine.training.pairs import MIN_PAIRS
from tests.desktop_app.conftest import SIGNAL_TIMEOUT_MS
from tests.engine.training.test_project_versions import (
    DUPLICATES,
    NOT_DUPLICATES,
    served_version,
)

pytestmark = pytest.mark.slow
QUERY = "which city is australia's capital"
TRAIN_TIMEOUT_MS = 180_000
NEXT = QWizard.WizardButton.NextButton
BACK = QWizard.WizardButton.BackButton


def judged_project(path: Path, encoder, data_dir: Path, duplicates=DUPLICATES,
                   not_duplicates=NOT_DUPLICATES) -> Path:
    """tests/data/questions.csv, encoded, with review verdicts stored as the review screen
    stores them (tests/desktop_app/test_review.py makes them with the keys)."""
    with Project.open(path, create=True) as project:
        project.model.attach(encoder, is_default=True)
        project.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
        project.vectors.encode()
        item = {r["id"]: r["item_id"] for r in project.rows.page(0, 100)}
        for label, pairs in ((1, duplicates), (0, not_duplicates)):
            for a, b in pairs:
                project.verdicts.set_verdict(item[a], item[b], label)
    return path


def open_wizard(qtbot, window: MainWindow, path: Path) -> FinetuneWizard:
    with qtbot.waitSignal(window.bridge.projectOpened, timeout=SIGNAL_TIMEOUT_MS):
        window.open_project(str(path))
    assert window.improve_action.isEnabled()
    window.improve_action.trigger()
    wizard = window.finetune_wizard
    qtbot.waitUntil(lambda: wizard.controller.input is not None, timeout=SIGNAL_TIMEOUT_MS)
    return wizard


def add_file(qtbot, wizard: FinetuneWizard, path: Path) -> None:
    controller = wizard.controller
    with qtbot.waitSignals([controller.inputLoading], timeout=1000):
        wizard.data_page.add_file(str(path))
    qtbot.waitUntil(lambda: not wizard.data_page._loading, timeout=SIGNAL_TIMEOUT_MS)


def write_pairs(path: Path, rows: list[tuple[str, str, int]]) -> Path:
    lines = ["question1,question2,is_duplicate", *(f"{a},{b},{label}" for a, b, label in rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def go_to_objectives(qtbot, wizard: FinetuneWizard) -> None:
    assert wizard.button(NEXT).isEnabled()
    wizard.next()
    assert wizard.currentPage() is wizard.objective_page


def train(qtbot, wizard: FinetuneWizard, objective: str, steps: int):
    """Choose `objective` and a few steps under Advanced, press Train, wait for the report."""
    page = wizard.objective_page
    page.choose(objective)
    page.advanced_button.click()
    page.batch_size.setValue(4)
    page.max_steps.setValue(steps)
    assert wizard.button(NEXT).text() == "Train"
    with qtbot.waitSignal(wizard.controller.reportReady, timeout=TRAIN_TIMEOUT_MS) as blocker:
        wizard.button(NEXT).click()
    qtbot.waitUntil(lambda: wizard.currentPage() is wizard.results_page, timeout=5000)
    return blocker.args[0]


def search_scores(qtbot, bridge, text: str) -> dict[str, float]:
    with qtbot.waitSignal(bridge.searchResults, timeout=SIGNAL_TIMEOUT_MS) as blocker:
        bridge.search(text, 5)
    return {hit.text: hit.score for hit in blocker.args[2]}


def activate_from(qtbot, window: MainWindow, start) -> dict:
    """Run `start()` (a button press that asks for activation) and wait for the switch."""
    with qtbot.waitSignal(window.models.activated, timeout=TRAIN_TIMEOUT_MS) as blocker:
        start()
    qtbot.waitUntil(lambda: not window.job_status.isVisible(), timeout=5000)
    return blocker.args[0]


def test_first_page_counts_and_refuses_too_few_or_one_sided_pairs(qtbot, window, tmp_path,
                                                                 encoder, data_dir):
    few = judged_project(tmp_path / "few.duplens", encoder, data_dir, DUPLICATES[:2],
                         NOT_DUPLICATES[:1])
    wizard = open_wizard(qtbot, window, few)
    page = wizard.data_page
    assert "From Review: 3 verdicts" in page.review_label.text()
    assert page.total_label.text() == "3"
    assert page.balance_label.text() == "2 duplicate (67%) · 1 not duplicate (33%)"
    assert not page.problem_label.isHidden()
    assert "Only 3 labelled pairs" in page.problem_label.text()
    assert f"fewer than {MIN_PAIRS}" in page.problem_label.text()
    assert not page.isComplete() and not wizard.button(NEXT).isEnabled()

    # A file that cannot be read: the engine's message, nothing added, no crash.
    bad = tmp_path / "bad.csv"
    bad.write_text("left,right,verdict\nA,B,1\n", encoding="utf-8")
    add_file(qtbot, wizard, bad)
    assert "The file was not added" in page.file_error.text()
    assert "cannot tell which columns" in page.file_error.text()
    assert page.total_label.text() == "3" and window.error_box is None

    # Enough pairs, but all of them duplicates: still refused, with the advice.
    same = [(f"How do I fix my bike part {i}?", f"Fixing my bike part {i}", 1)
            for i in range(MIN_PAIRS + 5)]
    wizard.reject()
    none = judged_project(tmp_path / "none.duplens", encoder, data_dir, [], [])
    wizard = open_wizard(qtbot, window, none)
    page = wizard.data_page
    assert "No verdicts in Review yet" in page.review_label.text()
    assert not wizard.button(NEXT).isEnabled()
    add_file(qtbot, wizard, write_pairs(tmp_path / "dups.csv", same))
    assert page.total_label.text() == str(len(same))
    assert page.balance_label.text().startswith(f"{len(same)} duplicate (100%)")
    assert "dups.csv" in page.file_label.text()
    assert "Every pair is labelled a duplicate" in page.warnings_label.text()
    assert f"Every one of the {len(same)} pairs is labelled duplicate" in \
        page.problem_label.text()
    assert not wizard.button(NEXT).isEnabled()


def test_wizard_trains_uses_the_model_and_the_versions_dialog_rolls_back(
        qtbot, window, tmp_path, encoder, data_dir):
    path = judged_project(tmp_path / "q.duplens", encoder, data_dir)
    wizard = open_wizard(qtbot, window, path)
    bridge, page = window.bridge, wizard.data_page
    assert page.total_label.text() == str(len(DUPLICATES) + len(NOT_DUPLICATES))
    add_file(qtbot, wizard, data_dir / "labelled_pairs.csv")
    project = bridge.current_project()
    expected = project.versions.training_pairs(data_dir / "labelled_pairs.csv")
    duplicates = sum(p.is_duplicate for p in expected)
    assert page.total_label.text() == str(len(expected))
    assert page.balance_label.text().startswith(f"{duplicates} duplicate")
    assert "labelled_pairs.csv" in page.file_label.text()
    assert page.problem_label.isHidden() and wizard.button(NEXT).isEnabled()

    go_to_objectives(qtbot, wizard)
    objectives = wizard.objective_page
    assert list(objectives.buttons) == list(OBJECTIVES)
    assert objectives.objective() == DEFAULT_OBJECTIVE
    assert "recommended" in objectives.buttons[DEFAULT_OBJECTIVE].text()
    assert all("recommended" not in b.text() for n, b in objectives.buttons.items()
               if n != DEFAULT_OBJECTIVE)
    defaults = TrainingOptions()
    # A second opinion is offered but off by default (test_finetune_second_opinion.py
    # trains with one).
    assert objectives.options().second_opinion == objectives.second_opinion.pairs() == 0
    assert objectives.options() == defaults  # the engine's defaults, not copies of them
    assert objectives.batch_size.value() == defaults.batch_size

    before_scores = search_scores(qtbot, bridge, QUERY)
    report = train(qtbot, wizard, "cosine", steps=3)
    assert report.objective == "cosine" and report.train.steps == 3
    assert wizard.train_page.loss_plot.points() == 3
    assert wizard.controller.steps == [1, 2, 3]
    assert wizard.controller.losses == [loss for _, loss in report.train.loss_history]

    results = wizard.results_page
    change = report.ap_change   # better or worse only when the held-out pairs show it
    assert results.summary.text().startswith(f"<b>{claim(change)}</b>: average precision "
                                             f"{change.before:.2f} → {change.after:.2f} (")
    assert ("better</b>" in results.summary.text()) == (change.low > 0)
    assert results.metrics.item(0, 0).text() == f"{report.before.average_precision:.2f}"
    assert results.metrics.item(0, 1).text() == f"{report.after.average_precision:.2f}"
    assert results.metrics.item(1, 1).text() == f"{report.after.f1:.2f}"
    assert results.metrics.item(2, 1).text() == f"{report.after.threshold:.3f}"
    xs, ys = results.pr_plot.after.getData()
    assert len(xs) == len(report.after.curve) > 1
    assert results.changes.rowCount() == len(report.changes)
    finish = wizard.button(QWizard.WizardButton.FinishButton)
    assert finish.text() == "Use this model" and finish.isEnabled()
    assert project.model.row()["id"] == 1  # saved, not in use yet

    result = activate_from(qtbot, window, finish.click)
    assert result["report"].activated
    assert served_version(project) == report.version_id
    new_scores = search_scores(qtbot, bridge, QUERY)
    assert new_scores != before_scores
    active = project.model.encoder()
    assert active is not encoder
    query, *texts = active.encode([QUERY, *new_scores])
    assert list(new_scores.values()) == pytest.approx([float(t @ query) for t in texts],
                                                      abs=1e-4)
    assert report.name in window.status_label.text()

    window.versions_action.trigger()
    dialog = window.versions_dialog
    qtbot.waitUntil(lambda: len(dialog.versions) == 2, timeout=SIGNAL_TIMEOUT_MS)
    assert [(v["id"], v["active"]) for v in dialog.versions] == [(1, False),
                                                                 (report.version_id, True)]
    assert dialog.table.item(1, 2).text() == "cosine"
    fast = report.fast_form
    assert dialog.table.item(1, 7).text() == (fast["backend"] if fast and fast["passed"]
                                              else "torch")
    assert dialog.table.item(1, 3).text() == (f"{report.before.average_precision:.2f} → "
                                              f"{report.after.average_precision:.2f}")
    dialog.select_version(1)
    assert dialog.activate_button.isEnabled()
    assert not dialog.delete_button.isEnabled()  # the bundled model is never deleted
    result = activate_from(qtbot, window, dialog.activate_button.click)
    assert result["report"].activated and result["report"].encoded == 0  # encoded before
    assert project.model.row()["id"] == 1 and project.model.encoder() is encoder
    assert search_scores(qtbot, bridge, QUERY) == pytest.approx(before_scores)
    qtbot.waitUntil(lambda: dialog.versions and dialog.versions[0]["active"], timeout=10_000)

    exported = tmp_path / "exported"
    exported.mkdir()
    dialog.select_version(report.version_id)
    dialog.ask_copy_out_folder = lambda _v: str(exported)
    with qtbot.waitSignal(dialog.copied_out, timeout=SIGNAL_TIMEOUT_MS):
        dialog.copy_out_button.click()
    assert (exported / "modules.json").is_file() and "Copied out to" in dialog.status.text()


def test_cancel_saves_nothing_and_discard_deletes_the_version(qtbot, window, tmp_path,
                                                              encoder, data_dir):
    path = judged_project(tmp_path / "q.duplens", encoder, data_dir)
    wizard = open_wizard(qtbot, window, path)
    project = window.bridge.current_project()
    go_to_objectives(qtbot, wizard)
    page = wizard.objective_page
    page.advanced_button.click()
    page.batch_size.setValue(4)
    page.max_steps.setValue(500)  # far more than this test waits for
    controller = wizard.controller
    with qtbot.waitSignal(controller.lossChanged, timeout=TRAIN_TIMEOUT_MS,
                          check_params_cb=lambda steps, _l: len(steps) > 0):
        wizard.button(NEXT).click()
    cancel = wizard.button(QWizard.WizardButton.CancelButton)
    assert cancel.text() == "Stop training"
    assert not wizard.button(BACK).isEnabled()  # no going back while it trains
    with qtbot.waitSignal(controller.stateChanged, timeout=TRAIN_TIMEOUT_MS,
                          check_params_cb=lambda state, _m: state is RunState.CANCELLED):
        cancel.click()
    assert controller.state is RunState.CANCELLED and wizard.isVisible()
    assert "Nothing was saved" in wizard.train_page.message.text()
    assert "unchanged" in wizard.train_page.message.text()
    assert wizard.train_page.loss_plot.points() < 500
    assert [v["id"] for v in project.versions.list()] == [1]
    assert project.model.row()["id"] == 1 and project.model.encoder() is encoder
    assert not any((tmp_path / "q.duplens.models").glob("v*"))
    assert wizard.button(BACK).isEnabled() and cancel.text() == "Close"

    # Back to the options, a short run this time, then Discard.
    wizard.back()
    assert wizard.currentPage() is page
    report = train(qtbot, wizard, DEFAULT_OBJECTIVE, steps=2)
    assert [v["id"] for v in project.versions.list()] == [1, report.version_id]
    discard = wizard.button(QWizard.WizardButton.CustomButton1)
    assert discard.isVisible() and discard.text() == "Discard"
    with qtbot.waitSignal(controller.discarded, timeout=SIGNAL_TIMEOUT_MS):
        discard.click()
    qtbot.waitUntil(lambda: not wizard.isVisible(), timeout=5000)
    assert [v["id"] for v in project.versions.list()] == [1]
    assert not report.folder.exists()
    assert project.model.row()["id"] == 1
    assert "Deleted" in window.statusBar().currentMessage()


def test_the_wizard_and_versions_dialog_on_a_server_project(qtbot, window, postgres_url,
                                                            tmp_path, encoder, data_dir):
    """A team project has no folder beside it: the version goes into the database, the
    window uses it, and the versions dialog exports it from this computer's copy."""
    judged_project(postgres_url, encoder, data_dir)
    wizard = open_wizard(qtbot, window, postgres_url)
    bridge = window.bridge
    project = bridge.current_project()
    assert project.path is None
    go_to_objectives(qtbot, wizard)
    before_scores = search_scores(qtbot, bridge, QUERY)
    report = train(qtbot, wizard, DEFAULT_OBJECTIVE, steps=2)
    assert [v["id"] for v in project.versions.list()] == [1, report.version_id]
    finish = wizard.button(QWizard.WizardButton.FinishButton)
    result = activate_from(qtbot, window, finish.click)
    assert result["report"].activated and served_version(project) == report.version_id
    assert search_scores(qtbot, bridge, QUERY) != before_scores

    window.versions_action.trigger()
    dialog = window.versions_dialog
    qtbot.waitUntil(lambda: len(dialog.versions) == 2, timeout=SIGNAL_TIMEOUT_MS)
    assert dialog.versions[1]["available"]
    exported = tmp_path / "exported"
    exported.mkdir()
    dialog.select_version(report.version_id)
    assert dialog.copy_out_button.isEnabled()
    dialog.ask_copy_out_folder = lambda _v: str(exported)
    with qtbot.waitSignal(dialog.copied_out, timeout=SIGNAL_TIMEOUT_MS):
        dialog.copy_out_button.click()
    assert (exported / "model.safetensors").is_file() and "Copied out to" in dialog.status.text()


def test_first_page_counts_the_verdicts_of_a_checked_file_not_added_yet(qtbot, window,
                                                                        tmp_path, encoder,
                                                                        data_dir):
    """Verdicts given while checking a file are pairs of known texts: the wizard learns
    from them and says how many, before the file's rows are added."""
    from engine.store.pending_verdicts import PendingVerdict

    path = judged_project(tmp_path / "few.duplens", encoder, data_dir, DUPLICATES[:2],
                          NOT_DUPLICATES[:1])
    with Project.open(path) as project:
        item = project.rows.by_public_id("q1")["item_id"]
        project.matching.keep_verdicts("0" * 64, "new.csv", [
            PendingVerdict(1, "Is there a quick way to pick up Python?", item, 1)])
    wizard = open_wizard(qtbot, window, path)
    page = wizard.data_page
    assert "From checking files: 1 verdicts on rows not added yet." in page.review_label.text()
    assert page.total_label.text() == "4"
