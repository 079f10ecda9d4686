"""The window as a new analyst first meets it: no model handed in by a test, so the bridge
loads the default model with the default backend (`default_backend`: OpenVINO in bf16 on a
CPU with bf16 units, else PyTorch), as `duplens` does.

Most window tests share the session's PyTorch encoder (`bridge` in conftest.py), which never
runs the default backend on Qt's threads. This one does: OpenVINO's infer requests once
lived in thread-locals of Qt's pooled threads, and PySide freeing those thread states after
a task crashed the process on the first import of a new project (a segfault, seen under
Xvfb; `engine.encoding.openvino_runner.RequestPool` since)."""

from __future__ import annotations

import pytest

from desktop_app.bridge import EngineBridge
from engine.encoding.backend_choice import default_backend
from engine.project import Project
from tests.desktop_app.conftest import import_sample, search_until


@pytest.mark.slow
def test_sample_questions_at_the_default_settings_import_search_and_reopen(
        qtbot, settings, tmp_path, monkeypatch):
    from desktop_app.main_window import MainWindow

    bridge = EngineBridge()
    try:
        window = MainWindow(bridge, settings)
        qtbot.addWidget(window)
        window.show()
        bridge.warm_up()
        target = tmp_path / "sample.duplens"
        import_sample(qtbot, window, target, monkeypatch)
        for query, word in (("what can I use instead of eggs when baking a cake", "egg"),
                            ("how do I become fluent in English", "english")):
            search_until(qtbot, window.search_panel, query, word)
        window.close()
    finally:
        bridge.shutdown()
    expected = default_backend("cpu")
    with Project.open(target, read_only=True) as project:
        row = project.model.row()
        assert row["fingerprint"].endswith(f"+{expected}") or expected == "torch"
        assert project.info()["encoded"] == project.info()["texts"]
