"""`duplens` on a Linux without Qt's X11 libraries: one line naming the packages, exit 2,
before Qt loads its xcb plugin (it would abort the process with exit 134)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from contextlib import redirect_stderr
from pathlib import Path

import pytest

from desktop_app import launcher, xcb_libraries

ROOT = Path(__file__).resolve().parents[2]
X11 = {"DISPLAY": ":0"}


@pytest.mark.parametrize(("env", "platform", "expected"), [
    (X11, "linux", True),
    ({**X11, "QT_QPA_PLATFORM": "xcb"}, "linux", True),
    ({**X11, "QT_QPA_PLATFORM": "xcb:nograb"}, "linux", True),
    ({**X11, "QT_QPA_PLATFORM": "offscreen"}, "linux", False),
    ({**X11, "QT_QPA_PLATFORM": "wayland;xcb"}, "linux", False),
    ({**X11, "WAYLAND_DISPLAY": "wayland-0"}, "linux", False),
    ({**X11, "WAYLAND_DISPLAY": "wayland-0", "QT_QPA_PLATFORM": "xcb"}, "linux", True),
    ({}, "linux", False),                       # no X display: Qt has nothing to show on
    (X11, "darwin", False),
    (X11, "win32", False),
])
def test_only_where_qt_will_load_xcb(env, platform, expected):
    assert xcb_libraries.uses_xcb(env, platform) is expected


def test_a_missing_library_is_one_line_naming_both_package_families():
    line = xcb_libraries.problem(X11, "linux", loads=lambda s: s not in (
        "libxcb-cursor.so.0", "libxcb-shape.so.0"))
    assert line is not None and "\n" not in line
    assert "libxcb-cursor.so.0, libxcb-shape.so.0" in line
    assert "sudo apt install libxcb-cursor0 libxcb-shape0 (Debian, Ubuntu)" in line
    assert "sudo dnf install xcb-util-cursor libxcb (Fedora)" in line
    assert xcb_libraries.problem(X11, "linux", loads=lambda s: True) is None
    assert xcb_libraries.problem({**X11, "QT_QPA_PLATFORM": "offscreen"}, "linux",
                                 loads=lambda s: False) is None


def test_the_window_is_not_started_without_them(monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.setenv("QT_QPA_PLATFORM", "xcb")
    monkeypatch.setattr(xcb_libraries, "_loads", lambda s: s != "libxcb-cursor.so.0")
    import desktop_app.app

    monkeypatch.setattr(desktop_app.app, "run", lambda *_: pytest.fail("Qt was started"))
    err = io.StringIO()
    with redirect_stderr(err):
        assert launcher.main([]) == 2
    assert err.getvalue().splitlines() == [
        "duplens: the window needs system libraries that are missing (libxcb-cursor.so.0); "
        "install them with: sudo apt install libxcb-cursor0 (Debian, Ubuntu) or sudo dnf "
        "install xcb-util-cursor (Fedora)"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")
def test_in_a_real_process_it_exits_2_before_qt():
    code = ("import sys; from desktop_app import xcb_libraries as x\n"
            "x._loads = lambda s: s != 'libxcb-icccm.so.4'  # as if it were not installed\n"
            "from desktop_app.launcher import main; sys.exit(main(['gui']))")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DISPLAY": ":99", "QT_QPA_PLATFORM": "xcb"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        "duplens: the window needs system libraries that are missing (libxcb-icccm.so.4); "
        "install them with: sudo apt install libxcb-icccm4 (Debian, Ubuntu) or sudo dnf "
        "install xcb-util-wm (Fedora)"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")
def test_the_real_loader_finds_what_this_machines_qt_links_to():
    """Every library PySide6's xcb plugin needs here is one the check knows, and the check
    finds those that are installed (this machine runs the window under Xvfb)."""
    import PySide6

    plugin = Path(PySide6.__file__).parent / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    qpa = next((Path(PySide6.__file__).parent / "Qt" / "lib").glob("libQt6XcbQpa.so*"))
    found, not_found = set(), set()
    for binary in (plugin, qpa):
        out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if "=>" in line:
                (not_found if "not found" in line else found).add(line.split()[0])
    system = {s for s in found | not_found
              if s.startswith(("libxcb", "libxkbcommon", "libX11-xcb"))}
    assert system <= set(xcb_libraries.LIBRARIES)
    missing = set(xcb_libraries.missing())
    assert not missing & found and not_found & system <= missing
