"""EngineBridge and the import controller: engine calls off the GUI thread, reported on it,
stale searches dropped."""

from __future__ import annotations

import functools
import gc
import threading
import time

from PySide6.QtCore import QElapsedTimer, QThread, QTimer
from PySide6.QtWidgets import QApplication

from desktop_app.controllers.import_controller import ImportController
from desktop_app.job_runner import UNEXPECTED
from desktop_app.views.search_panel import SearchPanel
from engine.add_file import ImportChoices
from engine.keystroke_search import SearchHit
from tests.desktop_app.conftest import (
    QUESTIONS_ITEMS,
    SIGNAL_TIMEOUT_MS,
    open_in,
    write_questions,
)


def _hit(item_id: int, text: str, score: float = 0.9) -> SearchHit:
    return SearchHit(f"x{item_id}", item_id, text, score, item_id, 1, 1)


def test_import_end_to_end_reports_progress_on_the_gui_thread(qtbot, bridge, tmp_path,
                                                              questions_csv):
    open_in(qtbot, bridge, tmp_path / "new.duplens", create=True)
    imports = ImportController(bridge)
    seen: list[tuple[str, int, int, bool]] = []
    gui = QApplication.instance().thread()
    imports.progressed.connect(
        lambda p: seen.append((p.stage, p.done, p.total, QThread.currentThread() is gui)))
    with qtbot.waitSignal(imports.finished, timeout=SIGNAL_TIMEOUT_MS) as blocker:
        imports.start(ImportChoices(str(questions_csv), ["question"], id_column="qid"))
    result, = blocker.args
    assert result["info"]["items"] == QUESTIONS_ITEMS
    assert result["import"].rows_imported == QUESTIONS_ITEMS and not result["cancelled"]
    assert seen and all(on_gui for *_, on_gui in seen)
    assert seen[-1][:3] == ("encoding", 46, 46)          # the final report is never dropped
    assert bridge.model_ready and bridge.current_project().rows.count() == QUESTIONS_ITEMS


def test_typing_shows_the_near_duplicates_first(qtbot, bridge, questions_project):
    open_in(qtbot, bridge, questions_project)
    panel = SearchPanel(bridge)
    qtbot.addWidget(panel)
    qtbot.keyClicks(panel.query, "which city is australia's capital")
    qtbot.waitUntil(lambda: panel.results.count() > 0, timeout=10_000)
    first_two = {label.split(" · ")[0] for label in panel.texts()[:2]}
    assert first_two == {"q6", "q7"}


def test_a_stale_result_never_overwrites_a_newer_one(qtbot, bridge):
    panel = SearchPanel(bridge)
    qtbot.addWidget(panel)
    assert bridge.deliver_search(2, "newer", [_hit(2, "the newer answer")])
    assert not bridge.deliver_search(1, "older", [_hit(1, "the older answer")])
    assert panel.shown_seq == 2
    assert panel.texts() == ["x2 · the newer answer"]


def test_a_slow_search_is_overtaken_not_replayed(qtbot, bridge, questions_project,
                                                 monkeypatch):
    """A slow first request, then two more: the middle one is skipped, order is kept."""
    open_in(qtbot, bridge, questions_project)
    project = bridge._current()
    release = threading.Event()
    calls: list[str] = []

    def search(text: str, k: int = 10) -> list[SearchHit]:
        calls.append(text)
        if text == "slow":
            release.wait(5)
        return [_hit(len(calls), text)]

    monkeypatch.setattr(project, "search", search)
    delivered: list[tuple[int, str]] = []
    bridge.searchResults.connect(lambda seq, text, _hits: delivered.append((seq, text)))
    bridge.search("slow")
    qtbot.waitUntil(lambda: calls == ["slow"], timeout=5_000)
    bridge.search("middle")
    last = bridge.search("final")
    release.set()
    qtbot.waitUntil(lambda: bool(delivered) and delivered[-1][0] == last, timeout=5_000)
    assert calls == ["slow", "final"]                  # "middle" was superseded, not run
    seqs = [seq for seq, _ in delivered]
    assert seqs == sorted(seqs) and delivered[-1] == (last, "final")


def test_the_event_loop_keeps_turning_during_an_import(qtbot, bridge, tmp_path):
    rows = 2000
    source = write_questions(tmp_path / "many.csv", rows)
    open_in(qtbot, bridge, tmp_path / "big.duplens", create=True)
    imports = ImportController(bridge)
    clock = QElapsedTimer()
    ticks: list[int] = []
    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(lambda: ticks.append(clock.elapsed()))
    clock.start()
    timer.start()
    started = time.perf_counter()
    with qtbot.waitSignal(imports.finished, timeout=SIGNAL_TIMEOUT_MS) as blocker:
        imports.start(ImportChoices(str(source), ["question"], id_column="qid"))
    timer.stop()
    took = time.perf_counter() - started
    assert blocker.args[0]["info"]["items"] == rows
    gaps = [b - a for a, b in zip(ticks, ticks[1:], strict=False)]
    longest = max(gaps)
    print(f"\nimport of {rows} rows took {took:.1f} s; {len(ticks)} ticks; "
          f"longest event-loop gap {longest} ms")
    assert longest < 500


def test_cancel_stops_the_import(qtbot, bridge, tmp_path):
    source = write_questions(tmp_path / "many.csv", 3000)
    open_in(qtbot, bridge, tmp_path / "c.duplens", create=True)
    imports = ImportController(bridge)
    outcome: list[str] = []
    imports.stopped.connect(lambda: outcome.append("cancelled import"))
    imports.finished.connect(lambda result: outcome.append(
        f"import cancelled={result['cancelled']} left={result['encode'].remaining}"))
    with qtbot.waitSignal(imports.progressed, timeout=SIGNAL_TIMEOUT_MS):
        handle = imports.start(ImportChoices(str(source), ["question"]))
    handle.cancel()
    qtbot.waitUntil(lambda: bool(outcome), timeout=SIGNAL_TIMEOUT_MS)
    assert outcome[0] == "cancelled import" or outcome[0].startswith("import cancelled=True")


def test_engine_errors_and_bugs_come_back_as_failed(qtbot, bridge, questions_project,
                                                   questions_csv, monkeypatch):
    open_in(qtbot, bridge, questions_project)
    imports = ImportController(bridge)
    with qtbot.waitSignal(imports.failed, timeout=SIGNAL_TIMEOUT_MS) as blocker:
        imports.start(ImportChoices(str(questions_csv), ["no_such_column"]))
    message, details = blocker.args
    assert "no_such_column" in message and details == ""

    def broken(*_args, **_kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(bridge._current().rows, "import_table", broken)
    with qtbot.waitSignal(imports.failed, timeout=SIGNAL_TIMEOUT_MS) as blocker:
        imports.start(ImportChoices(str(questions_csv), ["question"]))
    message, details = blocker.args
    assert message == UNEXPECTED and "RuntimeError: boom" in details


def test_opening_a_missing_project_fails_politely(qtbot, bridge, tmp_path):
    with qtbot.waitSignal(bridge.failed, timeout=SIGNAL_TIMEOUT_MS) as blocker:
        bridge.open_project(tmp_path / "nowhere" / "missing.duplens")
    message, _details = blocker.args
    assert "missing.duplens" in message and not bridge.has_project


def test_resume_encodes_what_a_stopped_import_left(qtbot, bridge, tmp_path):
    source = write_questions(tmp_path / "many.csv", 3000)
    open_in(qtbot, bridge, tmp_path / "r.duplens", create=True)
    imports = ImportController(bridge)
    running = []
    imports.progressed.connect(lambda p: running[-1].cancel()
                               if p.stage == "encoding" and p.done > 0 else None)
    with qtbot.waitSignal(imports.finished, timeout=SIGNAL_TIMEOUT_MS) as stopped:
        running.append(imports.start(ImportChoices(str(source), ["question"], "qid")))
    assert stopped.args[0]["cancelled"] and stopped.args[0]["encode"].remaining > 0
    imports.progressed.disconnect()
    with qtbot.waitSignal(imports.finished, timeout=SIGNAL_TIMEOUT_MS) as resumed:
        imports.resume()
    result = resumed.args[0]
    assert not result["cancelled"] and result["encode"].remaining == 0
    assert result["encode"].encoded == stopped.args[0]["encode"].remaining
    assert result["info"]["encoded"] == result["info"]["texts"] == 3000


def test_the_loaded_model_is_kept_out_of_full_collections(qtbot, bridge, questions_project):
    """Once the model is ready its objects are frozen out of the collector's view, so a full
    collection (in any thread, holding the GIL) no longer walks them: milliseconds, where it
    took about 300 ms and froze the window as an import began to encode."""
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    open_in(qtbot, bridge, questions_project)
    bridge.warm_up()
    qtbot.waitUntil(lambda: bridge.model_ready, timeout=SIGNAL_TIMEOUT_MS)
    assert gc.get_freeze_count() > 100_000          # torch, transformers, the tokenizer
    started = time.perf_counter()
    gc.collect()
    assert time.perf_counter() - started < 0.1


def test_opening_a_project_asks_openvino_about_the_cpu_so_the_window_never_waits_for_it(
        qtbot, bridge, questions_project, monkeypatch):
    """Without Linux's CPU flags (Windows, macOS) whether the CPU has bf16 units is
    OpenVINO's word, about 0.2 s the first time: opening a project asks it on its job
    thread, so Settings reads the cached answer on the GUI thread."""
    from engine.encoding import cpu_features

    monkeypatch.setattr(cpu_features, "cpu_flags", set)
    cpu_features.openvino_capabilities.cache_clear()
    asked_on: list[threading.Thread] = []
    real = cpu_features.openvino_capabilities.__wrapped__

    def noted() -> frozenset[str]:
        asked_on.append(threading.current_thread())
        return real()
    monkeypatch.setattr(cpu_features, "openvino_capabilities", functools.cache(noted))
    open_in(qtbot, bridge, questions_project)
    assert asked_on and threading.main_thread() not in asked_on
    cpu_features.has_bf16_units()                      # as Settings asks, on this thread
    assert threading.main_thread() not in asked_on     # answered from the cache
    cpu_features.openvino_capabilities.cache_clear()
