"""The "Ask me" mode of the review, from a real window under Xvfb, for README.

    python docs/screenshots/take_ask_screenshot.py --project P.duplens --pairs pairs.tsv.gz \
        [--labels 60] [--out docs/screenshots]

Works on a copy of P. The first LABELS gold Quora pairs whose two questions are in the
project are stored as review verdicts first (as `take_screenshots.py` does), so the
calibrated threshold above the review has labels to rest on; then Review → Ask me shows the
first pair the model asks about. Run it with
`xvfb-run -s "-screen 0 1600x1000x24" python docs/screenshots/take_ask_screenshot.py …`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("QT_QPA_PLATFORM", "xcb")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--project", required=True)
    ap.add_argument("--pairs", required=True)
    ap.add_argument("--labels", type=int, default=60)
    ap.add_argument("--out", default=str(Path(__file__).parent))
    args = ap.parse_args()

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from desktop_app.bridge import EngineBridge
    from desktop_app.main_window import MainWindow
    from docs.screenshots.take_screenshots import label_gold_pairs

    app = QApplication.instance() or QApplication([])
    app.setStyle("Fusion")

    def wait_for(predicate, timeout: float = 600) -> None:
        end = time.perf_counter() + timeout
        while not predicate():
            if time.perf_counter() > end:
                raise SystemExit("timed out")
            app.processEvents()
            time.sleep(0.01)

    tmp = Path(tempfile.mkdtemp())
    project = tmp / Path(args.project).name
    shutil.copy(args.project, project)
    print("labelled pairs:", label_gold_pairs(project, Path(args.pairs), args.labels))
    bridge = EngineBridge()
    window = MainWindow(bridge, QSettings(str(tmp / "settings.ini"),
                                          QSettings.Format.IniFormat))
    window.resize(1280, 800)
    window.show()
    window.open_project(str(project))
    wait_for(lambda: window._info is not None)
    window.tabs.setCurrentWidget(window.review_view)
    wait_for(lambda: window.review.clusters)
    view = window.review_view
    view.ask_button.click()
    wait_for(lambda: window.review.ask.current is not None)
    end = time.perf_counter() + 0.6
    while time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.01)
    path = Path(args.out) / "review_ask.png"
    window.grab().save(str(path))
    print("wrote", path)
    window.close()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
