"""The versions dialog renders what `ModelController` reads and does; it runs no job itself
(training a version to export or delete is `test_finetune_wizard.py`'s)."""

from __future__ import annotations

from desktop_app.controllers.model_controller import ModelController
from desktop_app.views.versions_dialog import VersionsDialog
from tests.desktop_app.conftest import SIGNAL_TIMEOUT_MS, open_in


def test_the_dialog_lists_through_the_controller_and_says_its_errors(qtbot, bridge,
                                                                     questions_project):
    open_in(qtbot, bridge, questions_project)
    models = ModelController(bridge)
    with qtbot.waitSignal(models.versionsListed, timeout=SIGNAL_TIMEOUT_MS):
        dialog = VersionsDialog(models)
        qtbot.addWidget(dialog)
    assert [(v["id"], v["active"]) for v in dialog.versions] == [(1, True)]
    assert dialog.table.rowCount() == 1 and dialog.table.item(0, 8).text() == "active"

    # The active model cannot be deleted: the engine's one line is said in the dialog.
    dialog.select_version(1)
    dialog.ask_delete = lambda _version: True
    with qtbot.waitSignal(models.versionsFailed, timeout=SIGNAL_TIMEOUT_MS):
        dialog.delete()
    assert "active model" in dialog.status.text()
    assert [v["id"] for v in bridge.current_project().versions.list()] == [1]
