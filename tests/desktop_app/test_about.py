"""App identity: the About box, its licence list against the packages' own metadata, the icon,
and opening a project the way macOS hands one over (a file-open event)."""

from __future__ import annotations

import re
import struct
from importlib.metadata import PackageNotFoundError, distribution

import pytest
from PySide6.QtGui import QFileOpenEvent
from PySide6.QtWidgets import QApplication

from desktop_app.app import OpenFileEvents, apply_identity
from desktop_app.resources import icon_path, resources_dir
from desktop_app.views.about_dialog import COMPONENTS, about_html
from engine import __version__
from tests.desktop_app.conftest import QUESTIONS_ITEMS, SIGNAL_TIMEOUT_MS

# What each licence's text says, for packages whose metadata is prose rather than SPDX.
SIGNATURES = {
    "Apache-2.0": ("Apache License", "Version 2.0"),
    "MIT": ("Permission is hereby granted, free of charge",),
    "BSD-3-Clause": ("Redistribution and use in source and binary forms",
                     "Neither the name"),
}


# The trove classifier, the last resort for packages with neither (tokenizers).
CLASSIFIERS = {"Apache-2.0": "Apache Software License", "MIT": "MIT License",
               "BSD-3-Clause": "BSD License"}


def _licence_evidence(dist_name: str) -> str:
    """Everything the distribution says about its licence: the License-Expression and
    License fields, its licence files' text and its licence classifiers."""
    dist = distribution(dist_name)
    meta = dist.metadata
    parts = [meta.get("License-Expression") or "", meta.get("License") or ""]
    parts += [c for c in meta.get_all("Classifier") or [] if c.startswith("License")]
    parts += [dist.locate_file(f).read_text("utf-8", errors="replace") for f in dist.files or []
              if re.search(r"(LICEN[CS]E|COPYING)[^/]*$", str(f), re.I)]
    return "\n".join(parts)


@pytest.mark.parametrize("component", [c for c in COMPONENTS if c.distribution],
                         ids=lambda c: c.name)
def test_listed_licence_matches_the_installed_package(component):
    try:
        evidence = _licence_evidence(component.distribution)
    except PackageNotFoundError:
        pytest.fail(f"{component.distribution} is listed but not installed")
    for spdx in re.findall(r"[A-Za-z0-9.\-]+", component.licence.replace(" AND ", " ")):
        if spdx in evidence:
            continue
        phrases = SIGNATURES.get(spdx)
        if phrases and all(p in evidence for p in phrases):
            continue
        assert f":: {CLASSIFIERS.get(spdx)}" in evidence, (
            f"{component.name}: listed as {component.licence}, but its metadata says "
            f"{evidence[:200]!r}")


def test_every_runtime_dependency_is_listed():
    """A dependency added to pyproject.toml must be added to the About box too."""
    requires = distribution("duplens").requires or []
    direct = {re.split(r"[=<>!~; \[]", r, maxsplit=1)[0].lower() for r in requires
              if "extra ==" not in r}
    listed = {c.distribution.lower() for c in COMPONENTS if c.distribution}
    assert direct - listed == set()


def test_about_from_the_help_menu_shows_version_and_licences(qtbot, window):
    window.about_action.trigger()
    dialog = window.about_dialog
    qtbot.waitUntil(dialog.isVisible)
    assert __version__ in dialog.title.text()
    text = dialog.text.toPlainText()
    assert "all-MiniLM-L6-v2" in text and "LGPL-3.0-only" in text
    assert "_internal\\PySide6" in text          # how to replace Qt in the installed app
    dialog.reject()
    assert not dialog.isVisible()


def test_about_text_lists_each_component_once():
    html = about_html()
    for component in COMPONENTS:
        assert html.count(f"<tr><td>{component.name}</td>") == 1


def test_identity_sets_version_and_the_shipped_icon(qapp):
    apply_identity(qapp)
    assert qapp.applicationVersion() == __version__
    assert not qapp.windowIcon().isNull()
    assert icon_path().parent == resources_dir() / "icons"


def test_icon_containers_hold_png_images():
    icons = icon_path().parent
    ico = (icons / "duplens.ico").read_bytes()
    _, kind, count = struct.unpack("<HHH", ico[:6])
    assert kind == 1 and count >= 5
    for i in range(count):
        size, offset = struct.unpack("<II", ico[6 + 16 * i + 8:6 + 16 * i + 16])
        assert ico[offset:offset + 8] == b"\x89PNG\r\n\x1a\n"
    icns = (icons / "duplens.icns").read_bytes()
    assert icns[:4] == b"icns" and struct.unpack(">I", icns[4:8])[0] == len(icns)
    assert b"ic10" in icns and b"ic07" in icns  # 1024 and 128 pixels


def test_a_file_open_event_opens_the_project(qtbot, window, questions_project):
    """macOS sends a double-clicked .duplens file as an event, not as an argument."""
    QApplication.instance().installEventFilter(OpenFileEvents(window))
    with qtbot.waitSignal(window.bridge.projectOpened, timeout=SIGNAL_TIMEOUT_MS):
        QApplication.sendEvent(QApplication.instance(), QFileOpenEvent(str(questions_project)))
    qtbot.waitUntil(lambda: window.items_model.rowCount() == QUESTIONS_ITEMS,
                    timeout=SIGNAL_TIMEOUT_MS)


def test_about_says_which_backend_a_new_project_gets_here_and_why(monkeypatch):
    """The processor's class decides the default backend; About names it, in the words of
    `backend_choice.why_default`, so an analyst on a laptop sees why it is not bf16."""
    from engine.encoding import backend_choice, cpu_features

    monkeypatch.setattr(cpu_features, "cpu_class", lambda: "avx2")
    monkeypatch.setattr(backend_choice, "cpu_class", lambda: "avx2")
    html = about_html()
    chosen = backend_choice.default_backend("cpu")
    assert f"a new project encodes with {chosen}" in html
    assert "an AVX2 CPU" in html or "not installed" in html
