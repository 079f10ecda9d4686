"""The window on a slow team server: how long the GUI thread stalls while scrolling and typing.

    python -m benchmarks --only gui_stalls [--quick]
    python -m benchmarks.gui_stalls [--quick] [--rows N]     (prints the JSON, saves nothing)

README promises that the window never reads the database on the GUI thread. On a team
project every read is a network round trip, so one read there freezes the window for as
long as the server takes to answer. This measures what the user feels, on the same project
twice:

- **file**: a `.duplens` file of --rows rows (100,000; `--quick`: 3,000): Quora questions
  (the first 5,000 distinct ones, `--quick` 1,000, repeated), a topic and a number column,
  encoded by the bundled model;
- **server, 50 ms each way**: the same project copied (`engine.copy_project`, what
  `duplens copy` runs) into a private PostgreSQL server on 127.0.0.1
  (`devtools/postgres_server.py`), reached through a relay started here (an asyncio TCP
  proxy on loopback that holds every chunk 50 ms in each direction: 100 ms a round trip).

In a real window (under a private Xvfb when there is one, else Qt's offscreen platform),
for each: open the project; page down 40 times (`--quick`: 10) from the top, each time until
the rows on screen have arrived; drag the table's scroll bar from the first row to the last
in 300 steps (`--quick`: 60), one every 16 ms (a 60 Hz drag); type 20 queries (`--quick`: 2;
Quora questions
not in the project) key by key, 40 ms apart, each until its results show. Meanwhile a 5 ms
timer records the gaps between its ticks: a gap is how long the event loop could not run,
i.e. a stall of the GUI thread.
Reported per phase: the longest gap, the 99th percentile, how many exceeded 50 ms. Goal: no
stall over 50 ms while scrolling and typing. Every database statement run on the GUI thread
is counted as well (`devtools.gui_thread_guard`; it must be 0).

Stalls are sensitive to other work on the machine (2 shared cores here): take figures on a
quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROWS_FULL, ROWS_QUICK = 100_000, 3_000
TEXTS_FULL, TEXTS_QUICK = 5_000, 1_000
DELAY_S = 0.050           # each way
TICK_MS = 5               # the stall timer's interval
STALL_GOAL_MS = 50
DRAG_STEPS, DRAG_STEP_MS = 300, 16
PAGE_DOWNS = 40
QUERIES, KEY_DELAY_MS = 20, 40
QUICK_QUERIES, QUICK_PAGE_DOWNS, QUICK_DRAG_STEPS = 2, 10, 60
TOPICS = ["billing", "shipping", "account", "science", "travel", "health", "career", "code"]


def run(quick: bool) -> dict:
    """The suite's entry point (`benchmarks.run`)."""
    return measure(ROWS_QUICK if quick else ROWS_FULL, TEXTS_QUICK if quick else TEXTS_FULL,
                   QUICK_DRAG_STEPS if quick else DRAG_STEPS,
                   QUICK_QUERIES if quick else QUERIES,
                   QUICK_PAGE_DOWNS if quick else PAGE_DOWNS)


# -- a slow link: an asyncio relay that delays every chunk ------------------------------------
class DelayProxy:
    """A TCP relay on 127.0.0.1 to `target_port` that holds every chunk `delay` seconds in
    each direction, in order: latency without a bandwidth limit, as a distant server has.
    It runs its own event loop in a daemon thread; `port` is where to connect."""

    def __init__(self, target_port: int, delay: float) -> None:
        self.target_port, self.delay = target_port, delay
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="delay-proxy")

    def start(self) -> DelayProxy:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._relay, "127.0.0.1", 0), self._loop).result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
            relays = asyncio.all_tasks() - {asyncio.current_task()}
            for task in relays:
                task.cancel()
            await asyncio.gather(*relays, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _relay(self, client_in: asyncio.StreamReader,
                     client_out: asyncio.StreamWriter) -> None:
        writers = [client_out]
        try:
            server_in, server_out = await asyncio.open_connection("127.0.0.1",
                                                                  self.target_port)
            writers.append(server_out)
            await asyncio.gather(self._pipe(client_in, server_out),
                                 self._pipe(server_in, client_out), return_exceptions=True)
        except (OSError, asyncio.CancelledError):
            pass   # no server, or `stop()`: the connection simply ends
        finally:
            for writer in writers:
                writer.close()

    async def _pipe(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def receive() -> None:
            try:
                while data := await source.read(65536):
                    queue.put_nowait((loop.time() + self.delay, data))
            finally:
                queue.put_nowait((loop.time() + self.delay, b""))

        async def send() -> None:
            while True:
                due, data = await queue.get()
                await asyncio.sleep(max(0.0, due - loop.time()))
                if not data:
                    with contextlib.suppress(OSError):
                        sink.write_eof()
                    return
                sink.write(data)
                await sink.drain()

        await asyncio.gather(receive(), send())


# -- the project ---------------------------------------------------------------------------------
def build_project(path: Path, rows: int, texts: int, queries: int = QUERIES) -> dict:
    """A project of `rows` rows repeating `texts` distinct Quora questions, encoded."""
    from benchmarks.data import quora_questions
    from engine.encoding.loading import load_encoder
    from engine.project import Project

    questions = quora_questions(texts + queries * 5)
    rng = random.Random(0)
    csv_path = path.with_suffix(".csv")
    with csv_path.open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(["qid", "question", "topic", "views"])
        for i in range(rows):
            out.writerow([f"Q{i}", questions[i % texts], rng.choice(TOPICS),
                          rng.randint(0, 100_000)])
    t0 = time.perf_counter()
    encoder = load_encoder(None, device="cpu")
    with Project.open(path, create=True) as project:
        project.model.attach(encoder, is_default=True)
        project.rows.import_table(csv_path, ["question"], id_column="qid")
        project.vectors.encode()
    csv_path.unlink()
    asked = [q for q in questions[texts:] if q.isascii()][:queries]
    return {"encoder": encoder, "queries": asked, "build_s": time.perf_counter() - t0}


# -- the window ----------------------------------------------------------------------------------
class StallTimer:
    """A `TICK_MS` timer on the GUI thread; the gaps between its ticks, per phase."""

    def __init__(self) -> None:
        from PySide6.QtCore import QElapsedTimer, QTimer

        self._clock = QElapsedTimer()
        self._timer = QTimer()
        self._timer.setInterval(TICK_MS)
        self._timer.timeout.connect(self._tick)
        self._last = 0.0
        self.gaps: list[float] = []

    def _tick(self) -> None:
        now = self._clock.nsecsElapsed() / 1e6
        self.gaps.append(now - self._last)
        self._last = now

    def start(self) -> None:
        self.gaps = []
        self._clock.start()
        self._last = 0.0
        self._timer.start()

    def stop(self) -> dict:
        self._timer.stop()
        gaps = sorted(self.gaps) or [0.0]
        return {"longest_ms": round(gaps[-1], 1),
                "p99_ms": round(gaps[min(len(gaps) - 1, int(0.99 * len(gaps)))], 1),
                "over_goal": sum(g > STALL_GOAL_MS for g in gaps), "ticks": len(self.gaps)}


def in_window(targets: list[tuple[str, str]], encoder, queries: list[str],
              drag_steps: int, page_downs: int = PAGE_DOWNS) -> dict:
    from PySide6.QtCore import QSettings
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from desktop_app.bridge import EngineBridge
    from desktop_app.main_window import MainWindow
    from devtools.gui_thread_guard import gui_thread_statements

    app = QApplication.instance() or QApplication([])
    folder = Path(tempfile.mkdtemp(prefix="duplens-stalls-"))
    bridge = EngineBridge(encoder=encoder)
    window = MainWindow(bridge, QSettings(str(folder / "settings.ini"),
                                          QSettings.Format.IniFormat))
    window.resize(1280, 860)
    window.show()
    view, model, table = window.items_view, window.items_model, window.table
    bar = table.verticalScrollBar()
    shown: dict[str, float] = {}
    bridge.searchResults.connect(
        lambda _seq, text, _hits: shown.setdefault(text, time.perf_counter()))
    stalls = StallTimer()

    def wait_for(what: str, predicate: Callable[[], bool], timeout: float = 600.0) -> None:
        end = time.perf_counter() + timeout
        while not predicate():
            if time.perf_counter() > end:
                raise SystemExit(f"timed out waiting for {what}")
            QTest.qWait(1)

    def on_screen() -> bool:
        first = max(table.rowAt(0), 0)
        last = table.rowAt(table.viewport().height() - 1)
        return model.rows_loaded(first, model.rowCount() - 1 if last < 0 else last)

    results: dict = {}
    try:
        for name, location in targets:
            _say(f"  {name}: open, scroll, type…")
            out: dict = {}
            shown.clear()
            with gui_thread_statements() as reads:
                stalls.start()
                opened: list[dict] = []
                counted: list[dict] = []
                bridge.projectOpened.connect(opened.append)
                window.counts.counted.connect(counted.append)
                t0 = time.perf_counter()
                window.open_project(location)
                wait_for("the project's rows", lambda o=opened, c=counted: bool(o and c)
                         and model.rowCount() > 0 and not view.reading and on_screen())
                bridge.projectOpened.disconnect(opened.append)
                window.counts.counted.disconnect(counted.append)
                out["open"] = {"seconds": round(time.perf_counter() - t0, 2), **stalls.stop()}

                stalls.start()
                waits = []
                for _ in range(page_downs):
                    t0 = time.perf_counter()
                    bar.setValue(bar.value() + bar.pageStep())
                    table.viewport().repaint()        # the frame the user sees first
                    wait_for("a page's rows", on_screen, 120)
                    waits.append((time.perf_counter() - t0) * 1000)
                    QTest.qWait(DRAG_STEP_MS)         # and the frame with the rows
                out["page_down"] = {"steps": page_downs,
                                    "rows_shown_p50_ms": round(statistics.median(waits), 1),
                                    "rows_shown_max_ms": round(max(waits), 1),
                                    **stalls.stop()}

                stalls.start()
                t0 = time.perf_counter()
                for step in range(1, drag_steps + 1):
                    bar.setValue(round(bar.maximum() * step / drag_steps))
                    QTest.qWait(DRAG_STEP_MS)
                dragged = time.perf_counter()
                wait_for("the last rows", on_screen, 120)
                out["drag"] = {"seconds": round(dragged - t0, 2), "steps": drag_steps,
                               "last_rows_after_s": round(time.perf_counter() - dragged, 3),
                               **stalls.stop()}

                box = window.search_panel.query
                box.setFocus()
                stalls.start()
                latencies = []
                for query in queries:
                    box.clear()
                    for ch in query:
                        QTest.keyClicks(box, ch)
                        QTest.qWait(KEY_DELAY_MS)
                    last_key = time.perf_counter() - KEY_DELAY_MS / 1000
                    wait_for("search results", lambda q=query: q in shown, 60)
                    latencies.append((shown[query] - last_key) * 1000)
                out["typing"] = {"queries": len(queries), "keys": sum(map(len, queries)),
                                 "results_p50_ms": round(statistics.median(latencies), 1),
                                 "results_max_ms": round(max(latencies), 1),
                                 **stalls.stop()}
            out["gui_thread_statements"] = len(reads)
            out["rows"] = model.rowCount()
            results[name] = out
    finally:
        window.close()
        bridge.shutdown()
        app.processEvents()
        shutil.rmtree(folder, ignore_errors=True)
    return results


# -- the run ---------------------------------------------------------------------------------
def measure(rows: int, texts: int, drag_steps: int, queries: int = QUERIES,
            page_downs: int = PAGE_DOWNS) -> dict:
    from devtools.postgres_server import ANALYST_PASSWORD, NoServer, PostgresServer
    from engine.copy_project import copy_project

    display, platform_name = _start_display()
    try:
        server = PostgresServer().start()
    except NoServer as exc:
        _stop(display)
        return {"skipped": f"no PostgreSQL server can start here: {exc}"}
    folder = Path(tempfile.mkdtemp(prefix="duplens-stalls-"))
    proxy = None
    version = server.sql("SHOW server_version")[0][0]
    try:
        _say(f"  building a {rows:,}-row project ({texts:,} distinct texts), encoded…")
        path = folder / "stalls.duplens"
        built = build_project(path, rows, texts, queries)
        database = server.create_database()
        _say("  copying it to the server…")
        t0 = time.perf_counter()
        copy_project(path, server.url(database, password=ANALYST_PASSWORD))
        copy_s = time.perf_counter() - t0
        proxy = DelayProxy(server.port, DELAY_S).start()
        slow = server.url(database, password=ANALYST_PASSWORD).replace(
            f":{server.port}/", f":{proxy.port}/")
        measured = in_window([("file", str(path)), ("server_50ms", slow)],
                             built["encoder"], built["queries"], drag_steps, page_downs)
    finally:
        if proxy is not None:
            proxy.stop()
        server.stop()
        _stop(display)
        shutil.rmtree(folder, ignore_errors=True)
    result = {"rows": rows, "distinct_texts": texts, "delay_each_way_ms": DELAY_S * 1000,
              "platform": platform_name, "build_seconds": round(built["build_s"], 1),
              "copy_to_server_seconds": round(copy_s, 1), "server": f"PostgreSQL {version}",
              "load_average_after": [round(x, 2) for x in os.getloadavg()], **measured}
    result.update(_presentation(result))
    return result


def _presentation(r: dict) -> dict:
    file, slow = r["file"], r["server_50ms"]
    n = f"{r['rows']:,}"
    worst = max(slow[p]["longest_ms"] for p in ("drag", "page_down", "typing"))
    worst_file = max(file[p]["longest_ms"] for p in ("drag", "page_down", "typing"))
    headline = [{
        "figure": f"longest GUI-thread stall while scrolling and typing, {n} rows, team "
                  f"project behind {r['delay_each_way_ms']:g} ms each way",
        "duplens": f"{worst:.0f} ms", "baseline": f"{worst_file:.0f} ms (file project)",
        "baseline_is": "the same rows as a SQLite file project, the same steps, same run",
        "ratio": f"{worst / worst_file:.1f}× the file's" if worst_file else "–",
        "goal": f"≤ {STALL_GOAL_MS} ms", "met": worst <= STALL_GOAL_MS,
    }]
    phases = [("open", "open until the rows on screen show"),
              ("page_down", f"page down {PAGE_DOWNS} times, each until its rows show"),
              ("drag", f"drag the scroll bar from the first row to the last "
                       f"({file['drag']['steps']} steps, 16 ms apart)"),
              ("typing", f"type {file['typing']['queries']} queries key by key "
                         f"({file['typing']['keys']} keys, {KEY_DELAY_MS} ms apart)")]

    def cell(d: dict) -> str:
        return f"{d['longest_ms']:.0f} / {d['p99_ms']:.0f} / {d['over_goal']}"

    rows = [[what, cell(file[key]), cell(slow[key])] for key, what in phases]
    waits = [["open: seconds until the rows show", f"{file['open']['seconds']:.2f} s",
              f"{slow['open']['seconds']:.2f} s"],
             ["page down: rows show after (p50 / max)",
              f"{file['page_down']['rows_shown_p50_ms']:.0f} / "
              f"{file['page_down']['rows_shown_max_ms']:.0f} ms",
              f"{slow['page_down']['rows_shown_p50_ms']:.0f} / "
              f"{slow['page_down']['rows_shown_max_ms']:.0f} ms"],
             ["drag: the last rows show after the drag ends",
              f"{file['drag']['last_rows_after_s'] * 1000:.0f} ms",
              f"{slow['drag']['last_rows_after_s'] * 1000:.0f} ms"],
             ["typing: last key to results (p50 / max)",
              f"{file['typing']['results_p50_ms']:.0f} / "
              f"{file['typing']['results_max_ms']:.0f} ms",
              f"{slow['typing']['results_p50_ms']:.0f} / "
              f"{slow['typing']['results_max_ms']:.0f} ms"],
             ["database statements run on the GUI thread",
              str(file["gui_thread_statements"]), str(slow["gui_thread_statements"])]]
    columns = ["phase", "file project", f"server, {r['delay_each_way_ms']:g} ms each way"]
    return {
        "headline": headline,
        "tables": [{"title": f"GUI-thread stalls, {n} rows ({r['distinct_texts']:,} distinct "
                             f"texts): longest gap / 99th percentile (ms) / gaps over "
                             f"{STALL_GOAL_MS} ms, from a {TICK_MS} ms timer",
                    "columns": columns, "rows": rows},
                   {"title": "What the user waits for (off the GUI thread)",
                    "columns": columns, "rows": waits}],
        "notes": [f"Window on Qt's `{r['platform']}` platform. Load average after the run: "
                  f"{r['load_average_after']}; stalls count any work on the machine."],
    }


def _start_display() -> tuple[subprocess.Popen | None, str]:
    """A private Xvfb (a free display number, `-displayfd`) for a real X window, else Qt's
    offscreen platform."""
    if shutil.which("Xvfb") is None or os.environ.get("QT_QPA_PLATFORM") == "offscreen":
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
        return None, "offscreen"
    read, write = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1600x1000x24",
                             "-nolisten", "tcp"], pass_fds=(write,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as fh:
        number = fh.readline().strip()
    if not number:
        xvfb.terminate()
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
        return None, "offscreen"
    os.environ["DISPLAY"] = f":{number}"
    os.environ["QT_QPA_PLATFORM"] = "xcb"
    return xvfb, f"xcb (Xvfb :{number})"


def _stop(display: subprocess.Popen | None) -> None:
    if display is not None:
        display.terminate()
        display.wait(10)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"{ROWS_QUICK:,} rows")
    ap.add_argument("--rows", type=int, help="rows in the project (overrides --quick)")
    args = ap.parse_args()
    if args.rows:
        result = measure(args.rows, min(TEXTS_FULL, args.rows), DRAG_STEPS)
    else:
        result = run(args.quick)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
