"""The review's "Measure quality" mode and the quality report, for README.

    xvfb-run -s "-screen 0 1600x1000x24" python docs/screenshots/take_measure_screenshot.py \
        --pairs pairs.tsv.gz [--pairs-used 1500] [--answers 200] [--out docs/screenshots]

Builds a project of the questions of the first PAIRS_USED Quora pairs (about 3,000), and
answers ANSWERS of the pairs Duplens draws with the Quora labels (a pair no label joins is
"not duplicate"), as an analyst would in this mode; then opens the window, Review → Measure
quality, and grabs it once the estimate is on screen (review_measure.png). The same
project's report, `duplens estimate --report`, is written beside it (quality_report.html);
its screenshot comes from headless Chromium:
`chromium --headless --no-sandbox --disable-gpu --screenshot=docs/screenshots/quality_report.png
--window-size=1200,1700 file://$PWD/docs/screenshots/quality_report.html` (where no chromium
package can be had, Qt WebEngine, PyPI's PySide6_WebEngine, is the same engine: a
QWebEngineView 1200 wide and as tall as the page, under Xvfb, grabbed once loaded).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("QT_QPA_PLATFORM", "xcb")

THRESHOLD = 0.8


def build(folder: Path, pairs: Path, used: int, answers: int) -> Path:
    """The project, with `answers` drawn pairs answered from the labels."""
    from engine.project import Project

    questions, truth = {}, {}
    with gzip.open(pairs, "rt", encoding="utf-8") as fh:
        next(fh)
        for i, line in enumerate(fh):
            if i >= used:
                break
            q1, q2, t1, t2, label = line.rstrip("\n").split("\t")
            questions[q1], questions[q2] = t1, t2
            truth[frozenset((q1, q2))] = int(label)
    data = folder / "support_questions.csv"
    with data.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["qid", "question"])
        writer.writerows(questions.items())
    path = folder / "support_questions.duplens"
    with Project.open(path, create=True) as project:
        project.rows.import_table(data, ["question"], id_column="qid")
        project.vectors.encode()
        done = 0
        while done < answers:
            drawn = project.measuring.next_pairs(min(25, answers - done), threshold=THRESHOLD)
            if not drawn:
                break
            for p in drawn:
                verdict = truth.get(frozenset((p.a.public_id, p.b.public_id)), 0)
                project.measuring.judge(p.draw_id, verdict)
            done += len(drawn)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pairs", required=True)
    ap.add_argument("--pairs-used", type=int, default=1500)
    ap.add_argument("--answers", type=int, default=200)
    ap.add_argument("--out", default=str(Path(__file__).parent))
    args = ap.parse_args()

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from desktop_app.bridge import EngineBridge
    from desktop_app.main_window import MainWindow
    from engine.project import Project
    from engine.quality_report import write_report

    tmp = Path(tempfile.mkdtemp())
    project = build(tmp, Path(args.pairs), args.pairs_used, args.answers)
    with Project.open(project) as opened:
        measured = opened.measuring.measure(THRESHOLD, curve=True)
        write_report(Path(args.out) / "quality_report.html", measured, project.name)

    app = QApplication.instance() or QApplication([])
    app.setStyle("Fusion")

    def wait_for(predicate, timeout: float = 600) -> None:
        end = time.perf_counter() + timeout
        while not predicate():
            if time.perf_counter() > end:
                raise SystemExit("timed out")
            app.processEvents()
            time.sleep(0.01)

    bridge = EngineBridge()
    window = MainWindow(bridge, QSettings(str(tmp / "settings.ini"),
                                          QSettings.Format.IniFormat))
    window.resize(1280, 860)
    window.show()
    window.open_project(str(project))
    wait_for(lambda: window._info is not None)
    window.tabs.setCurrentWidget(window.review_view)
    wait_for(lambda: window.review.clusters)
    window.review.set_threshold(THRESHOLD)
    view = window.review_view
    view.measure_button.click()
    measure = window.review.measure
    wait_for(lambda: measure.current is not None and measure.measurement is not None
             and measure.measurement.estimate is not None)
    end = time.perf_counter() + 0.8
    while time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.01)
    path = Path(args.out) / "review_measure.png"
    window.grab().save(str(path))
    print("wrote", path)
    window.close()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
