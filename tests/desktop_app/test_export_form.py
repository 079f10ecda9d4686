"""Review → Export asks which form to write, then writes that form."""

from __future__ import annotations

import csv

from desktop_app.views.export_form import ExportFormDialog
from engine.project import Project
from engine.services.exports import ALL, DEDUPLICATED
from tests.desktop_app.conftest import SIGNAL_TIMEOUT_MS
from tests.desktop_app.test_review import open_review, set_threshold


def test_dialog_defaults_to_every_row_and_reports_the_choice(qtbot):
    dialog = ExportFormDialog()
    qtbot.addWidget(dialog)
    assert dialog.form() == ALL
    dialog.buttons[DEDUPLICATED].click()
    assert dialog.form() == DEDUPLICATED


def test_export_menu_writes_the_chosen_form(qtbot, window, questions_project, tmp_path):
    with Project.open(questions_project) as project:
        live = project.rows.count()
    open_review(qtbot, window, questions_project)
    set_threshold(qtbot, window, 0.75)
    clusters = window.review_view.clusters_model
    duplicates = sum(len(clusters.cluster(p).members) - 1 for p in range(clusters.rowCount()))
    assert duplicates > 0
    written = {}
    for form in (ALL, DEDUPLICATED):
        out = tmp_path / f"{form}.csv"
        window.ask_export_form = lambda form=form: form
        window.ask_export_path = lambda out=out: str(out)
        with qtbot.waitSignal(window.review.exported, timeout=SIGNAL_TIMEOUT_MS):
            window.export_clusters()
        with out.open(encoding="utf-8-sig", newline="") as fh:
            written[form] = list(csv.DictReader(fh))
    assert len(written[ALL]) == live
    assert len(written[DEDUPLICATED]) == live - duplicates
    assert all(r["duplicate_of"] == "" for r in written[DEDUPLICATED])
