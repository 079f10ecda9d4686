"""Checking a file against a project, and the export choice, from a real window under Xvfb.

    xvfb-run -s "-screen 0 1600x1000x24" python docs/screenshots/take_check_screenshots.py \
        [--out docs/screenshots]

Builds a project of the shipped sample questions in a temporary folder, writes a "this
week's questions" file (a few sample questions reworded, a few new ones, one repeated),
checks it through File → Check a file against this project, answers two rows, and saves
`check_file.png`; then opens the export choice (Review → Export) and saves `export.png`.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("QT_QPA_PLATFORM", "xcb")

NEW_QUESTIONS = [
    ("w01", "Is swimming a good workout for the whole body?"),
    ("w02", "Should I take a counter offer from my employer?"),
    ("w03", "What is the best way to keep basil alive indoors?"),
    ("w04", "How do I ask my manager for a raise?"),
    ("w05", "Which programming language should a beginner learn first?"),
    ("w06", "Is swimming a good workout for the whole body?"),
    ("w07", "How long does it take to run a marathon for the first time?"),
    ("w08", "Can I grow tomatoes on a balcony?"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=str(Path(__file__).parent))
    args = ap.parse_args()

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from desktop_app.bridge import EngineBridge
    from desktop_app.main_window import MainWindow
    from desktop_app.resources import sample_questions_path
    from desktop_app.views.export_form import ExportFormDialog
    from engine.add_file import ImportChoices
    from engine.project import Project

    app = QApplication.instance() or QApplication(sys.argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        project_path = folder / "support.duplens"
        with Project.open(project_path, create=True) as project:
            project.rows.import_table(sample_questions_path(), ["question"], id_column="id")
            project.vectors.encode()
        new = folder / "this-week.csv"
        with new.open("w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([("ref", "question"), *NEW_QUESTIONS])

        window = MainWindow(EngineBridge(), QSettings(str(folder / "s.ini"),
                                                     QSettings.Format.IniFormat))
        window.resize(1400, 860)
        window.show()
        window.open_project(str(project_path))
        _wait(app, lambda: window.bridge.has_project and window.check_action.isEnabled())
        window.ask_spreadsheet = lambda: str(new)
        window.ask_import_choices = lambda p: ImportChoices(p, ["question"], id_column="ref")
        window.check_action.trigger()
        _wait(app, lambda: window.match_dialog is not None)
        dialog = window.match_dialog
        dialog.resize(1300, 520)
        dialog.table.resizeRowsToContents()
        dialog.table.selectRow(0)
        dialog.duplicate_button.click()
        dialog.table.selectRow(dialog.model.rowCount() - 1)
        dialog.new_button.click()
        _pause(app, 1.0)
        dialog.grab().save(str(Path(args.out) / "check_file.png"))
        dialog.close()

        form = ExportFormDialog(window)
        form.show()
        _pause(app, 0.5)
        form.grab().save(str(Path(args.out) / "export.png"))
        form.close()
        window.close()


def _wait(app, condition, timeout: float = 300.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise TimeoutError("the window did not get there in time")
        app.processEvents()
        time.sleep(0.02)


def _pause(app, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.02)


if __name__ == "__main__":
    main()
