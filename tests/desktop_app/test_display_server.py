"""`duplens` where no display can be opened (no DISPLAY nor WAYLAND_DISPLAY, or one that
does not answer): one line saying so and exit 2, before Qt aborts the process (exit 134
with its paragraph about platform plugins, before this check)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from desktop_app import display_server

ROOT = Path(__file__).resolve().parents[2]
ADVICE = "run it in a desktop session, or use the command line (duplens --help)"
DISPLAYS = ("DISPLAY", "WAYLAND_DISPLAY", "WAYLAND_SOCKET", "QT_QPA_PLATFORM",
            "XDG_SESSION_TYPE")


def _launch(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """The launcher in a process of its own, with no display but those in `env`."""
    clean = {k: v for k, v in os.environ.items() if k not in DISPLAYS}
    clean.update(PYTHONPATH=str(ROOT), XDG_RUNTIME_DIR=str(tmp_path), **env)
    code = "import sys; from desktop_app.launcher import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, env=clean, timeout=120)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")
@pytest.mark.parametrize(("env", "said"), [
    ({}, "neither DISPLAY nor WAYLAND_DISPLAY is set"),
    ({"DISPLAY": ":12345"}, "the X display :12345 (DISPLAY) cannot be reached"),
    ({"WAYLAND_DISPLAY": "wayland-77"},
     "the Wayland display wayland-77 (WAYLAND_DISPLAY) cannot be reached; DISPLAY is not set"),
    ({"QT_QPA_PLATFORM": "xcb"}, "neither DISPLAY nor WAYLAND_DISPLAY is set"),
])
def test_no_display_is_one_line_and_exit_2(tmp_path, env, said):
    proc = _launch(tmp_path, "gui", **env)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [f"duplens: no display to open the window on "
                                        f"({said}); {ADVICE}"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")
def test_selfcheck_without_the_window_needs_no_display(tmp_path):
    """Only the window needs a display: the command line works without one (the help here;
    `selfcheck --no-window` is run by tests/test_install_check.py)."""
    proc = _launch(tmp_path, "--help")
    assert proc.returncode == 0 and "selfcheck" in proc.stdout


@pytest.mark.parametrize(("env", "expected"), [
    ({}, ["x11"]),
    ({"DISPLAY": ":0"}, ["x11"]),
    ({"WAYLAND_DISPLAY": "wayland-0"}, ["wayland", "x11"]),
    ({"XDG_SESSION_TYPE": "wayland"}, ["wayland", "x11"]),
    ({"QT_QPA_PLATFORM": "xcb"}, ["x11"]),
    ({"QT_QPA_PLATFORM": "xcb:nograb", "WAYLAND_DISPLAY": "w"}, ["x11"]),
    ({"QT_QPA_PLATFORM": "wayland-egl;xcb"}, ["wayland", "x11"]),
    ({"QT_QPA_PLATFORM": "offscreen"}, None),        # the tests' and CI's: no display
    ({"QT_QPA_PLATFORM": "wayland;offscreen"}, None),
    ({"QT_QPA_PLATFORM": "minimal"}, None),
])
def test_the_displays_qt_will_try(env, expected):
    assert display_server.platforms(env) == expected


def test_the_window_opens_when_any_display_qt_tries_answers():
    def check(env, x11=False, wayland=False, platform="linux"):
        return display_server.problem(env, platform, x11=lambda _d: x11,
                                      wayland=lambda _e: wayland)

    both = {"DISPLAY": ":1", "WAYLAND_DISPLAY": "wayland-1"}
    assert check(both, x11=True) is None           # Wayland fails, Qt falls back to X11
    assert check(both, wayland=True) is None
    assert check({"DISPLAY": ":1"}, x11=True) is None
    assert check({"XDG_SESSION_TYPE": "wayland"}, wayland=True) is None   # wayland-0
    assert check(both) == ("duplens: no display to open the window on (the Wayland display "
                           "wayland-1 (WAYLAND_DISPLAY) cannot be reached; the X display :1 "
                           f"(DISPLAY) cannot be reached); {ADVICE}")
    assert check({"QT_QPA_PLATFORM": "offscreen"}) is None
    assert check({}, platform="darwin") is None and check({}, platform="win32") is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")
def test_the_real_probes(tmp_path):
    """An X display nobody serves does not answer; a Wayland socket answers once something
    listens on it, by name in XDG_RUNTIME_DIR or by path."""
    assert display_server.x11_answers(":12345") is False
    env = {"XDG_RUNTIME_DIR": str(tmp_path), "WAYLAND_DISPLAY": "wayland-9"}
    assert display_server.wayland_answers(env) is False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(tmp_path / "wayland-9"))
        server.listen(1)
        assert display_server.wayland_answers(env) is True
        assert display_server.wayland_answers(
            {"WAYLAND_DISPLAY": str(tmp_path / "wayland-9")}) is True
    assert display_server.wayland_answers({"WAYLAND_DISPLAY": "wayland-9"}) is False
