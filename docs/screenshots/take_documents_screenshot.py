"""Two documents in Review, the passage they share coloured on both sides, under Xvfb.

    xvfb-run -s "-screen 0 1400x900x24" python docs/screenshots/take_documents_screenshot.py \
        [--out docs/screenshots]

Cuts 24 documents of 1,000-2,000 words from the licences in /usr/share/common-licenses
(Debian's base-files): a few originals, the Apache licence under a new introduction of some
300 words, a near copy, a decoy sharing only an opening, and parts of other licences;
imports them into a project in a temporary folder, opens Review on the licence and its copy
under the introduction, scrolls the left side up to where the introduction ends and the
shared passage begins, and saves `review_documents.png` (1280 x 800).
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("QT_QPA_PLATFORM", "xcb")

LICENCES = Path("/usr/share/common-licenses")
INTRODUCTION = (
    "Before you sign the vendor agreement, read this note from the procurement office. Our "
    "team reviewed the software package offered by the supplier and found that it is "
    "distributed under a well known open source licence, reproduced in full below. The "
    "supplier asked us to confirm that the licence terms were read by the department and "
    "that nothing in our intended use of the package conflicts with them. In particular, the "
    "office wants to know whether we plan to modify the source code, whether we will "
    "redistribute the package to partner agencies, and whether any of our own code will be "
    "combined with it in a single program. Please answer those three questions in the form "
    "attached to this message, and return it to the procurement office by the end of the "
    "month. If the answer to any of them is yes, the legal team will contact you to arrange "
    "a short meeting, usually within a week. The meeting covers attribution, notices that "
    "must be kept in copies, patent grants and what happens if the terms are broken. You do "
    "not need to prepare anything for it beyond a short description of the project and the "
    "names of the people who will maintain it. Thank you for your patience with this "
    "process; it protects both the department and the supplier, and it has saved us from "
    "costly mistakes more than once in the past few years.")


def words(name: str, first: int = 0, last: int | None = None) -> str:
    """Words `first` to `last` of a licence, with its own line breaks."""
    text = (LICENCES / name).read_text(encoding="utf-8")
    spans = [m.span() for m in re.finditer(r"\S+", text)][first:last]
    return text[spans[0][0]:spans[-1][1]]


def documents() -> list[tuple[str, str]]:
    near = f"{words('MPL-2.0', 0, 600)} {words('MPL-2.0', 640, 1800)}"
    found = [("apache", words("Apache-2.0")),
             ("apache-with-intro", f"{INTRODUCTION} {words('Apache-2.0')}"),
             ("mpl2", words("MPL-2.0", 0, 1800)),
             ("mpl2-near-copy", near.replace("Contributor", "Author")),
             ("gpl2", words("GPL-2", 0, 2000)),
             ("gpl2-decoy", f"{words('GPL-2', 0, 300)}\n\n{words('CC0-1.0')}")]
    for name, file, step in (("gpl3", "GPL-3", 1100), ("lgpl21", "LGPL-2.1", 1100),
                             ("gfdl", "GFDL-1.3", 1200), ("mpl11", "MPL-1.1", 1200),
                             ("gpl1", "GPL-1", 1000)):
        total = len((LICENCES / file).read_text(encoding="utf-8").split())
        for n, start in enumerate(range(0, total - 500, step)):
            found.append((f"{name}-part{n + 1}", words(file, start, start + step)))
    return [*found, ("artistic", words("Artistic"))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=str(Path(__file__).parent))
    args = ap.parse_args()

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from desktop_app.bridge import EngineBridge
    from desktop_app.main_window import MainWindow
    from engine.project import Project

    app = QApplication.instance() or QApplication(sys.argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        source = folder / "licences.csv"
        with source.open("w", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows([("id", "text"), *documents()])
        project_path = folder / "licences.duplens"
        with Project.open(project_path, create=True) as project:
            project.rows.import_table(source, ["text"], id_column="id")
            project.vectors.encode()

        window = MainWindow(EngineBridge(), QSettings(str(folder / "s.ini"),
                                                     QSettings.Format.IniFormat))
        window.resize(1280, 800)
        window.show()
        window.open_project(str(project_path))
        view = window.review_view
        _wait(app, lambda: window.pages.currentWidget() is window.tabs)   # opened
        window.tabs.setCurrentWidget(view)
        _wait(app, lambda: view.clusters_model.rowCount() > 0)
        for pos in range(view.clusters_model.rowCount()):
            if "apache" in {m.id for m in view.clusters_model.cluster(pos).members}:
                view.select_cluster(pos)
        _wait(app, lambda: view.compare.documents is not None)
        split = view.members.parentWidget()
        split.setSizes([120, split.height() - 120])          # the texts get the room
        _pause(app, 0.5)
        view.compare.show_documents(view.compare.rows[0].item_id,
                                    view.compare.rows[1].item_id, view.compare.documents)
        bar = view.compare.left.verticalScrollBar()
        bar.setValue(bar.value() - 8 * view.compare.left.fontMetrics().lineSpacing())
        _pause(app, 1.0)
        window.grab().save(str(Path(args.out) / "review_documents.png"))
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
