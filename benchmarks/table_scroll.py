"""The table of rows on a big project: time until rows show, scrolling, sorting, filtering.

    python -m benchmarks.table_scroll [--rows 1000000] [--project P.duplens] [--steps 300]

Builds (once, cached at --project) a project of --rows rows: the distinct Quora questions
repeated with a "(copy N)" suffix, plus a topic and a number column, imported through the
engine but not encoded (the table needs no embeddings). Then, in a real window under Xvfb:

1. open: from `open_project` until the table shows its rows (ids ordered off-thread);
2. scrolling: the scroll bar is moved to --steps random positions, and then paged down
   --steps times; each step is timed from moving the bar until the viewport has repainted
   with its rows (the pages are read by id on the table's pages worker: a first repaint
   shows placeholders where a page is missing, the one after its arrival the rows);
3. sort by Text, sort by the number column, filter on a word, filter all columns: time
   until the rows show, and the longest gap between the ticks of a 10 ms timer meanwhile
   (the GUI freeze, if any: the work runs off the GUI thread).

Prints a JSON summary and writes benchmarks/results/table_scroll.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.window_latency import percentile, start_xvfb

RESULTS = Path(__file__).resolve().parent / "results" / "table_scroll.json"
TOPICS = ["billing", "shipping", "account", "science", "travel", "health", "career", "code"]


def build_project(path: Path, rows: int) -> float:
    """Import `rows` rows of real questions (with a row suffix past the first copy)."""
    from benchmarks.data import quora_questions
    from engine.project import Project

    questions = quora_questions()
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        csv_path = Path(tmp) / "rows.csv"
        with csv_path.open("w", newline="", encoding="utf-8") as fh:
            out = csv.writer(fh)
            out.writerow(["qid", "question", "topic", "views"])
            for i in range(rows):
                q = questions[i % len(questions)]
                if i >= len(questions):
                    q = f"{q} (copy {i // len(questions)})"
                out.writerow([f"Q{i}", q, rng.choice(TOPICS), rng.randint(0, 100_000)])
        started = time.perf_counter()
        with Project.open(path, create=True) as project:
            project.rows.import_table(csv_path, ["question"], id_column="qid")
        return time.perf_counter() - started


def measure(project: str, steps: int) -> dict:
    os.environ["QT_QPA_PLATFORM"] = "xcb"
    from PySide6.QtCore import QElapsedTimer, Qt, QTimer
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from desktop_app.bridge import EngineBridge
    from desktop_app.main_window import MainWindow
    from engine.browse import FILTER_ALL

    app = QApplication.instance() or QApplication([])
    bridge = EngineBridge()
    window = MainWindow(bridge)
    window.resize(1280, 860)
    window.show()
    view = window.items_view
    shown: list[float] = []
    view.rowsShown.connect(lambda _n, _t: shown.append(time.perf_counter()))

    def wait_for(predicate, timeout: float = 600.0) -> None:
        end = time.perf_counter() + timeout
        while not predicate():
            if time.perf_counter() > end:
                raise SystemExit("timed out")
            QTest.qWait(1)

    ready: list[str] = []                # the default model loads first: it would compete
    bridge.modelReady.connect(ready.append)
    bridge.warm_up()
    wait_for(lambda: bool(ready))

    def timed(start) -> dict:
        """Seconds from `start()` until rows show, and the longest timer gap meanwhile."""
        timer, clock, gaps, last = QTimer(), QElapsedTimer(), [], [0]

        def tick() -> None:
            gaps.append(clock.elapsed() - last[0])
            last[0] = clock.elapsed()

        timer.setInterval(10)
        timer.timeout.connect(tick)
        before = len(shown)
        clock.start()
        timer.start()
        t0 = time.perf_counter()
        start()
        wait_for(lambda: len(shown) > before)
        timer.stop()
        return {"seconds": round(shown[-1] - t0, 2), "longest_gap_ms": max(gaps, default=0),
                "rows": window.items_model.rowCount()}

    result: dict = {"open": timed(lambda: window.open_project(project))}
    bar = window.table.verticalScrollBar()
    viewport = window.table.viewport()
    rng = random.Random(1)

    model = window.items_model

    def on_screen() -> bool:
        first = max(window.table.rowAt(0), 0)
        last = window.table.rowAt(viewport.height() - 1)
        return model.rows_loaded(first, model.rowCount() - 1 if last < 0 else last)

    def scroll(positions) -> dict:
        times = []
        for value in positions:
            t0 = time.perf_counter()
            bar.setValue(value)
            viewport.repaint()
            app.processEvents()
            if not on_screen():
                wait_for(on_screen)
                viewport.repaint()
            times.append((time.perf_counter() - t0) * 1000)
        return {"steps": len(times), "p50_ms": round(statistics.median(times), 1),
                "p95_ms": round(percentile(times, 95), 1), "max_ms": round(max(times), 1)}

    result["scroll_random"] = scroll([rng.randint(0, bar.maximum()) for _ in range(steps)])
    page = bar.pageStep()
    result["scroll_page_down"] = scroll([min(bar.maximum(), i * page)
                                         for i in range(1, steps + 1)])
    header = window.table.horizontalHeader()
    result["sort_text"] = timed(lambda: header.setSortIndicator(1, Qt.SortOrder.AscendingOrder))
    result["sort_number_desc"] = timed(
        lambda: header.setSortIndicator(5, Qt.SortOrder.DescendingOrder))
    result["filter_text"] = timed(lambda: view.set_filter("python"))
    view.filter_column.setCurrentIndex(view.filter_column.findData(FILTER_ALL))
    result["filter_all_columns"] = timed(lambda: view.set_filter("travel"))
    result["scroll_random_sorted_filtered"] = scroll(
        [rng.randint(0, bar.maximum()) for _ in range(steps)])
    window.close()
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--project", type=Path,
                    default=Path(tempfile.gettempdir()) / "duplens-table-1m.duplens")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    built = None
    if not args.project.exists():
        built = round(build_project(args.project, args.rows), 1)
    xvfb = start_xvfb()
    try:
        measured = measure(str(args.project), args.steps)
    finally:
        xvfb.terminate()
    report = {
        "benchmark": "table_scroll",
        "command": " ".join(["python -m benchmarks.table_scroll", *sys.argv[1:]]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "project": {"rows": measured["open"]["rows"],
                    "file_mb": round(args.project.stat().st_size / 2**20),
                    "import_seconds": built},
        **measured,
    }
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
