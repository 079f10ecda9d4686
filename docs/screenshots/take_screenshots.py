"""Screenshots of each screen, from a real window under Xvfb, for README and docs.

    python docs/screenshots/take_screenshots.py --project P.duplens --csv SOURCE.csv \
        [--pairs pairs.tsv.gz] [--out docs/screenshots]

Works on a copy of P. With --pairs (the Quora pairs file), gold labels of pairs whose two
questions are in the project are stored as review decisions first, so the precision/recall
plot has something to show, as it would after an analyst's review; the fine-tuning wizard is
then run on those labels with its defaults (objective and results pages; the trained version
is left inactive in the copy). Run it with
`xvfb-run -s "-screen 0 1600x1000x24" python docs/screenshots/take_screenshots.py …`.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("QT_QPA_PLATFORM", "xcb")

SEARCH = "How can I improve my English speaking skills?"
LABELS = 400


def dark_palette():
    from PySide6.QtGui import QColor, QPalette

    p = QPalette()
    roles = QPalette.ColorRole
    for role, colour in ((roles.Window, "#2b2b2b"), (roles.WindowText, "#e6e6e6"),
                         (roles.Base, "#1e1e1e"), (roles.AlternateBase, "#262626"),
                         (roles.Text, "#e6e6e6"), (roles.Button, "#353535"),
                         (roles.ButtonText, "#e6e6e6"), (roles.Highlight, "#3d6fb4"),
                         (roles.HighlightedText, "#ffffff"), (roles.ToolTipBase, "#353535"),
                         (roles.ToolTipText, "#e6e6e6"), (roles.PlaceholderText, "#9a9a9a"),
                         (roles.Midlight, "#454545"), (roles.Mid, "#3a3a3a"),
                         (roles.Light, "#505050"), (roles.Dark, "#202020")):
        p.setColor(role, QColor(colour))
    return p


def label_gold_pairs(project_path: Path, pairs_file: Path, limit: int) -> int:
    from engine.project import Project

    with Project.open(project_path) as project:
        by_text: dict[str, int] = {}
        offset = 0
        while True:
            page = project.rows.page(offset, 5000)
            if not page:
                break
            for row in page:
                by_text.setdefault(row["text"], row["item_id"])
            offset += len(page)
        added = 0
        with gzip.open(pairs_file, "rt", encoding="utf-8") as fh:
            next(fh)
            for line in fh:
                _, _, q1, q2, label = line.rstrip("\n").split("\t")
                a, b = by_text.get(q1), by_text.get(q2)
                if a and b and a != b:
                    project.verdicts.set_verdict(a, b, int(label))
                    added += 1
                    if added >= limit:
                        break
    return added


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--project", required=True)
    ap.add_argument("--csv", required=True, help="the spreadsheet shown in the import dialog")
    ap.add_argument("--pairs")
    ap.add_argument("--out", default=str(Path(__file__).parent))
    ap.add_argument("--dark", action="store_true", help="only the dark-theme shots")
    args = ap.parse_args()
    out = Path(args.out)

    from PySide6.QtCore import QSettings, Qt
    from PySide6.QtWidgets import QApplication

    from desktop_app.bridge import EngineBridge
    from desktop_app.main_window import MainWindow
    from desktop_app.views.import_dialog import ImportDialog
    from desktop_app.views.settings_dialog import SettingsDialog

    app = QApplication.instance() or QApplication([])
    app.setStyle("Fusion")
    if args.dark:
        # What a dark desktop theme hands Qt: the colour scheme and a dark palette (Xvfb has
        # no desktop to ask, so both are set here the way the platform theme would).
        app.styleHints().setColorScheme(Qt.ColorScheme.Dark)
        app.setPalette(dark_palette())
    suffix = "_dark" if args.dark else ""

    def settle(seconds: float = 0.5) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            app.processEvents()
            time.sleep(0.01)

    def wait_for(predicate, timeout: float = 300) -> None:
        end = time.perf_counter() + timeout
        while not predicate():
            if time.perf_counter() > end:
                raise SystemExit("timed out")
            app.processEvents()
            time.sleep(0.01)

    def shoot(widget, name: str) -> None:
        settle(0.4)
        path = out / f"{name}{suffix}.png"
        widget.grab().save(str(path))
        print("wrote", path)

    tmp = Path(tempfile.mkdtemp())
    project = tmp / Path(args.project).name
    shutil.copy(args.project, project)
    if args.pairs:
        print("labelled pairs:", label_gold_pairs(project, Path(args.pairs), LABELS))
    settings = QSettings(str(tmp / "settings.ini"), QSettings.Format.IniFormat)
    bridge = EngineBridge()
    window = MainWindow(bridge, settings)
    window.resize(1280, 800)
    window.show()
    window.recent.add(str(project))
    window.start_page.set_recent(window.recent.paths())
    shoot(window, "start")

    dialog = ImportDialog(args.csv, bridge, window)
    dialog.resize(900, 620)
    dialog.show()
    wait_for(lambda: not dialog.loading)
    shoot(dialog, "import")
    dialog.close()

    window.open_project(str(project))
    wait_for(lambda: window._info is not None)
    bridge.warm_up()
    wait_for(lambda: bridge.model_ready)
    window.search_panel.query.setText(SEARCH)
    wait_for(lambda: window.search_panel.results.count() > 0)
    window.search_panel.results.setCurrentRow(0)
    window.select_item(window.search_panel.results.item(0).data(
        Qt.ItemDataRole.UserRole + 11))
    shoot(window, "search")

    window.tabs.setCurrentWidget(window.review_view)
    wait_for(lambda: window.review.clusters)
    view = window.review_view
    view.select_cluster(3)
    view.select_member_row(1)
    shoot(window, "review")

    window.tabs.setCurrentWidget(window.plots_view)
    wait_for(lambda: window.plots_view.hist_curve.getData()[0] is not None)
    shoot(window, "plots_histogram")
    window.plots_view.tabs.setCurrentIndex(1)
    settle(1.0)
    shoot(window, "plots_precision_recall")
    window.plots_view.tabs.setCurrentIndex(2)
    wait_for(lambda: len(window.plots_view.map_points.data) > 0)
    shoot(window, "plots_map")

    if args.pairs and not args.dark:
        window.improve_action.trigger()
        wizard = window.finetune_wizard
        wait_for(lambda: wizard.controller.input is not None)
        wizard.next()
        wizard.objective_page.advanced_button.click()
        shoot(wizard, "finetune_objective")
        wizard.next()  # "Train", with the defaults
        wait_for(lambda: wizard.currentPage() is wizard.results_page, timeout=1800)
        shoot(wizard, "finetune_results")
        wizard.reject()

    if not args.dark:
        settings_dialog = SettingsDialog(window.preferences, "default", window)
        settings_dialog.show()
        shoot(settings_dialog, "settings")
        settings_dialog.close()
    window.close()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
