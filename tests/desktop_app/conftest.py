"""Fixtures for the window tests: a bridge sharing the session's model, ready projects."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings

from desktop_app.app import garbage_collected_on_gui_thread
from desktop_app.bridge import EngineBridge

QUESTIONS_ITEMS = 48   # 50 rows, two empty (see tests/engine/test_project.py)
SIGNAL_TIMEOUT_MS = 60_000


@pytest.fixture(scope="package", autouse=True)
def garbage_on_the_gui_thread(qapp):
    """Collect cyclic garbage on the GUI thread only, as the app does (`run()`): Qt objects
    of one test must never be destroyed in a pool thread of the next."""
    with garbage_collected_on_gui_thread():
        yield


@pytest.fixture(autouse=True)
def collect_after_each_test():
    """What a test left in cycles is freed here, on the GUI thread, before the next starts."""
    yield
    gc.collect()


@pytest.fixture
def bridge(qtbot, encoder):
    """A bridge with the already loaded model, shut down (project closed) after the test."""
    b = EngineBridge(encoder=encoder)
    yield b
    b.shutdown()


@pytest.fixture
def bridge_without_model(qtbot):
    """A bridge that never loads a model, for jobs that need none (file previews)."""
    b = EngineBridge()
    yield b
    b.shutdown()


def shown_dialog(qtbot, dialog):
    """`dialog` once its first preview (read off the GUI thread) is shown."""
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: not dialog.loading, timeout=SIGNAL_TIMEOUT_MS)
    return dialog


@pytest.fixture
def questions_csv(data_dir) -> Path:
    return data_dir / "questions.csv"


@pytest.fixture
def questions_project(tmp_path, encoder, questions_csv) -> Path:
    """A closed project file holding tests/data/questions.csv, encoded."""
    from engine.project import Project

    path = tmp_path / "questions.duplens"
    with Project.open(path, create=True) as project:
        project.model.attach(encoder, is_default=True)
        project.rows.import_table(questions_csv, ["question"], id_column="qid")
        project.vectors.encode()
    return path


@pytest.fixture
def settings(tmp_path) -> QSettings:
    """Settings in a temporary file, so tests never touch the user's recent list."""
    return QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def window(qtbot, bridge, settings):
    """The main window over the test bridge, shown (closed by qtbot after the test)."""
    from desktop_app.main_window import MainWindow

    w = MainWindow(bridge, settings)
    qtbot.addWidget(w)
    w.show()
    return w


def import_sample(qtbot, window, target: Path, monkeypatch) -> dict:
    """Click "Try it with sample questions" (its project at `target`), wait for the import
    to finish, and check that it did: the import job's result."""
    monkeypatch.setattr(window, "sample_project_path", lambda: target)
    with qtbot.waitSignal(window.imports.finished, timeout=300_000) as blocker:
        window.start_page.sample_button.click()
    result = blocker.args[0]
    assert result["import"].rows_imported > 2000 and not result["cancelled"]
    return result


def search_until(qtbot, panel, query: str, word: str, timeout: int = 30_000) -> None:
    """Type `query` into the search box and wait until the top hit contains `word`."""
    panel.query.clear()
    qtbot.keyClicks(panel.query, query)
    qtbot.waitUntil(lambda: panel.results.count() > 0 and word in panel.texts()[0].lower(),
                    timeout=timeout)


def open_in(qtbot, bridge: EngineBridge, path: Path, create: bool = False) -> dict:
    """Open `path` through the bridge and wait for it; returns the project info."""
    with qtbot.waitSignal(bridge.projectOpened, timeout=SIGNAL_TIMEOUT_MS) as blocker:
        bridge.open_project(path, create=create)
    return blocker.args[0]


def table_column(qtbot, model, column: int) -> list:
    """What the table of rows shows in `column`, row by row, once every row's page has come
    (a worker reads them; a row shows a placeholder until then)."""
    from desktop_app.table_models.row_pages import PAGE_SIZE

    rows = model.rowCount()

    def loaded() -> bool:
        for first in range(0, rows, PAGE_SIZE):
            model.data(model.index(first, column))   # asks again for a page still missing
        return model.rows_loaded(0, rows - 1)

    if rows:
        qtbot.waitUntil(loaded, timeout=SIGNAL_TIMEOUT_MS)
    return [model.data(model.index(r, column)) for r in range(rows)]


def table_cell(qtbot, model, row: int, column: int) -> object:
    """What the table shows at (`row`, `column`) once the row's page has come."""
    model.data(model.index(row, column))
    qtbot.waitUntil(lambda: model.rows_loaded(row, row), timeout=SIGNAL_TIMEOUT_MS)
    return model.data(model.index(row, column))


def write_questions(path: Path, rows: int) -> Path:
    """A CSV of `rows` distinct, question-like texts (for long-running imports)."""
    subjects = ["python", "the sky", "a bicycle", "tax returns", "sourdough", "a laptop",
                "the moon", "a garden", "a violin", "an old car"]
    verbs = ["clean", "learn", "fix", "explain", "choose", "store", "paint", "sell"]
    lines = ["qid,question"]
    for i in range(rows):
        s, v = subjects[i % len(subjects)], verbs[(i // len(subjects)) % len(verbs)]
        lines.append(f"g{i},How do I {v} {s} in step {i} of my plan number {i * 7 % 1000}?")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
