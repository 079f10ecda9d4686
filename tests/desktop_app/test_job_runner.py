"""The job runner: outcomes on the GUI thread, stale jobs dropped, one job cancelled at a
time, progress and partial results in order, failures to the right place."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import QObject, QThread
from PySide6.QtWidgets import QApplication

from desktop_app.job_runner import UNEXPECTED, Job, JobRunner, Pool, Throttle
from engine.errors import InputError
from engine.progress import Progress
from tests.desktop_app.conftest import SIGNAL_TIMEOUT_MS

WAIT_MS = 10_000


@pytest.fixture
def runner(qtbot):
    """A runner with no project (these jobs need none), its pools drained after the test."""
    r = JobRunner(lambda: None)
    yield r
    r.wait()


def on_gui_thread() -> bool:
    return QThread.currentThread() is QApplication.instance().thread()


def test_throttle_keeps_one_report_per_interval_and_the_last():
    now = [0.0]
    sent: list[Progress] = []
    throttle = Throttle(sent.append, interval=0.1, clock=lambda: now[0])
    for done in range(1, 101):                 # 100 reports in 0.5 s
        now[0] = done * 0.005
        throttle(Progress("encoding", done, 200))
    throttle.flush()
    assert 5 <= len(sent) <= 7
    assert sent[-1].done == 100
    throttle(Progress("encoding", 200, 200))   # the final one goes out at once
    assert sent[-1].done == 200


def test_a_newer_job_with_the_same_key_makes_older_ones_stale(qtbot, runner):
    """The first job is running when two more are asked: its result is dropped, the middle
    one never runs, and only the newest is delivered."""
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []
    delivered: list[str] = []

    def job(name: str, block: bool = False):
        def fn(_job: Job) -> str:
            ran.append(name)
            if block:
                started.set()
                release.wait(5)
            return name
        return fn

    runner.run(job("first", block=True), pool=Pool.TABLE, on_done=delivered.append,
               latest="sort")
    assert started.wait(5)
    runner.run(job("middle"), pool=Pool.TABLE, on_done=delivered.append, latest="sort")
    runner.run(job("newest"), pool=Pool.TABLE, on_done=delivered.append, latest="sort")
    other: list[str] = []
    runner.run(job("other key"), pool=Pool.TABLE, on_done=other.append, latest="filter")
    release.set()
    qtbot.waitUntil(lambda: bool(delivered and other), timeout=WAIT_MS)
    runner.wait(Pool.TABLE)
    qtbot.wait(50)                              # anything still queued would arrive now
    assert delivered == ["newest"] and other == ["other key"]
    assert ran == ["first", "newest", "other key"]


def test_a_stale_failure_is_dropped_too(qtbot, runner):
    release = threading.Event()
    failures: list[str] = []
    runner.failed.connect(lambda message, _details: failures.append(message))

    def fails(_job: Job) -> None:
        release.wait(5)
        raise InputError("the old preview failed")

    runner.run(fails, pool=Pool.TABLE, latest="preview")
    done: list[str] = []
    runner.run(lambda _job: "fine", pool=Pool.TABLE, on_done=done.append, latest="preview")
    release.set()
    qtbot.waitUntil(lambda: bool(done), timeout=WAIT_MS)
    assert done == ["fine"] and failures == []


def test_progress_and_partial_results_arrive_on_the_gui_thread_before_the_end(qtbot,
                                                                              runner):
    events: list[tuple[str, object, bool]] = []

    def work(job: Job) -> str:
        for step in range(1, 301):
            job.progress(Progress("training", step, 300, rate=1000.0))
            job.partial((step, 1.0 / step))
        return "report"

    with qtbot.waitSignal(runner.failed, timeout=1000, raising=False) as failed:
        runner.run(work, pool=Pool.CHANGES,
                   on_done=lambda r: events.append(("done", r, on_gui_thread())),
                   on_progress=lambda p: events.append(("progress", p, on_gui_thread())),
                   on_partial=lambda v: events.append(("partial", v, on_gui_thread())))
        qtbot.waitUntil(lambda: bool(events) and events[-1][0] == "done", timeout=WAIT_MS)
    assert not failed.signal_triggered
    assert all(gui for *_, gui in events)
    kinds = [kind for kind, *_ in events]
    assert kinds[-1] == "done" and kinds.count("done") == 1
    progress = [p for kind, p, _ in events if kind == "progress"]
    assert isinstance(progress[-1], Progress) and progress[-1].done == 300
    assert progress[-1].eta_seconds is None and progress[0].eta_seconds is not None
    assert len(progress) < 300                  # throttled: not one event per step
    batches = [v for kind, v, _ in events if kind == "partial"]
    assert [point for batch in batches for point in batch] == \
        [(step, 1.0 / step) for step in range(1, 301)]   # every value, in order
    assert len(batches) < 300                   # batched like progress


def test_cancel_stops_that_job_only(qtbot, runner):
    outcomes: list[str] = []
    ran: list[str] = []

    def polling(name: str, running: threading.Event, release: threading.Event):
        def fn(job: Job) -> str:
            ran.append(name)
            running.set()
            while not release.wait(0.01):
                job.token.raise_if_cancelled()   # a checkpoint, as the engine's jobs have
            return f"{name} finished"
        return fn

    def queued(_job: Job) -> str:
        ran.append("queued")
        return "queued finished"

    events = [threading.Event() for _ in range(4)]
    first = runner.run(polling("first", events[0], events[1]), pool=Pool.CHANGES,
                       on_done=outcomes.append,
                       on_cancelled=lambda: outcomes.append("first cancelled"))
    second = runner.run(queued, pool=Pool.CHANGES, on_done=outcomes.append,
                        on_cancelled=lambda: outcomes.append("second cancelled"))
    third = runner.run(polling("third", events[2], events[3]), pool=Pool.CHANGES,
                       on_done=outcomes.append,
                       on_cancelled=lambda: outcomes.append("third cancelled"))
    assert events[0].wait(5)
    second.cancel()                             # queued: it never starts
    events[1].set()                             # the first one ends on its own
    assert events[2].wait(5)                    # the third is running
    qtbot.waitUntil(lambda: len(outcomes) == 2, timeout=WAIT_MS)
    assert outcomes == ["first finished", "second cancelled"]
    assert not first.cancel_requested and second.cancel_requested
    third.cancel()                              # running: stops at its next checkpoint
    qtbot.waitUntil(lambda: len(outcomes) == 3, timeout=WAIT_MS)
    assert outcomes[-1] == "third cancelled" and ran == ["first", "third"]


def test_a_failure_without_on_failed_reaches_the_windows_error_dialog(qtbot, window):
    def bad_input(_job: Job) -> None:
        raise InputError("that file has no column named 'question'")

    window.bridge.run(bad_input, pool=Pool.CHANGES)
    qtbot.waitUntil(lambda: window.error_box is not None, timeout=SIGNAL_TIMEOUT_MS)
    assert window.error_box.text() == "that file has no column named 'question'"
    assert window.error_box.detailedText() == ""
    first = window.error_box
    first.close()                  # deleted on close: wait for the next box, not this one

    window.bridge.run(lambda _job: 1 / 0, pool=Pool.REVIEW)       # a bug
    qtbot.waitUntil(lambda: window.error_box is not first, timeout=SIGNAL_TIMEOUT_MS)
    assert window.error_box.text() == UNEXPECTED
    assert "ZeroDivisionError" in window.error_box.detailedText()


def test_a_failure_with_on_failed_goes_there_only(qtbot, window):
    said: list[tuple[str, str, bool]] = []

    def bad_input(_job: Job) -> None:
        raise InputError("not a spreadsheet")

    window.bridge.run(bad_input, pool=Pool.CHANGES,
                      on_failed=lambda m, d: said.append((m, d, on_gui_thread())))
    qtbot.waitUntil(lambda: bool(said), timeout=SIGNAL_TIMEOUT_MS)
    assert said == [("not a spreadsheet", "", True)]
    qtbot.wait(50)
    assert window.error_box is None


def test_a_bug_in_a_callback_reaches_the_error_dialog(qtbot, window):
    def broken(_result: object) -> None:
        raise RuntimeError("a view could not show it")

    window.bridge.run(lambda _job: "result", pool=Pool.REVIEW, on_done=broken)
    qtbot.waitUntil(lambda: window.error_box is not None, timeout=SIGNAL_TIMEOUT_MS)
    assert window.error_box.text() == UNEXPECTED
    assert "RuntimeError: a view could not show it" in window.error_box.detailedText()


class _Receiver(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.got: list[object] = []

    def show(self, value: object) -> None:
        self.setObjectName(str(value))          # raises once the C++ object is gone
        self.got.append(value)


def test_a_callback_of_a_deleted_qt_object_is_not_called(qtbot, runner):
    import shiboken6

    release = threading.Event()
    failures: list[str] = []
    runner.failed.connect(lambda message, _details: failures.append(message))
    gone, kept = _Receiver(), _Receiver()
    runner.run(lambda _job: release.wait(5) and "late", pool=Pool.REVIEW, on_done=gone.show)
    runner.run(lambda _job: "kept", pool=Pool.REVIEW, on_done=kept.show)
    shiboken6.delete(gone)                      # a dialog closed while its job ran
    release.set()
    qtbot.waitUntil(lambda: kept.got == ["kept"], timeout=WAIT_MS)
    assert failures == []
