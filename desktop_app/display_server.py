"""Whether the window has a display to open on (Linux), checked before Qt starts.

Without one, Qt aborts the whole process (exit 134) with a paragraph about platform plugins
that names no cause a user would recognise: over ssh, in a container, from a cron job, or
with a DISPLAY left over from a session that has ended. The launcher says it in one line and
exits 2 instead (`problem`), as it does for missing X11 libraries (`xcb_libraries`).

Which displays Qt will try is read as Qt decides it (QGuiApplication's platform choice, Qt
6.5 and later): QT_QPA_PLATFORM when it is set (a list, tried in order), else Wayland first
when WAYLAND_DISPLAY is set or XDG_SESSION_TYPE is wayland, then X11. Qt goes down that list
until one connects, so the check refuses only when none of them can be reached: it must
never stop a window that Qt would have shown. Each display is tried the way Qt connects to
it: an X display with libxcb's own `xcb_connect` (its authority cookie included), a Wayland
display by connecting to its socket. A platform that needs no display server (offscreen,
which the tests and CI use, minimal, eglfs, vnc…) is not judged at all.
"""

from __future__ import annotations

import ctypes
import os
import socket
import sys
import threading
from collections.abc import Callable, Mapping

X11, WAYLAND = "x11", "wayland"
# An X server on another machine (ssh -X) may be slow to answer, never this slow; one that
# never answers would hang Qt the same way, so after this long it counts as unreachable.
CONNECT_TIMEOUT_S = 15.0
_ADVICE = "run it in a desktop session, or use the command line (duplens --help)"


def platforms(environ: Mapping[str, str] | None = None) -> list[str] | None:
    """The display servers Qt will try, in order (X11, WAYLAND), or None when it may use a
    platform that needs none (then nothing is checked)."""
    env = os.environ if environ is None else environ
    chosen = env.get("QT_QPA_PLATFORM", "").strip()
    if chosen:
        tried = []
        for entry in chosen.split(";"):
            name = entry.split(":")[0].strip()
            if name == "xcb":
                tried.append(X11)
            elif name.startswith("wayland"):       # wayland, wayland-egl, wayland-brcm
                tried.append(WAYLAND)
            elif name:
                return None
        return list(dict.fromkeys(tried)) or None
    wayland_first = bool(env.get("WAYLAND_DISPLAY")) or \
        env.get("XDG_SESSION_TYPE", "").strip().lower() == WAYLAND
    return [WAYLAND, X11] if wayland_first else [X11]


def x11_answers(display: str) -> bool:
    """Whether the X display `display` accepts a connection (libxcb, as Qt connects)."""
    try:
        xcb = ctypes.CDLL("libxcb.so.1")
    except OSError:
        return False
    xcb.xcb_connect.restype = ctypes.c_void_p
    xcb.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    xcb.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    xcb.xcb_disconnect.argtypes = [ctypes.c_void_p]
    connection = xcb.xcb_connect(display.encode(), None)
    try:
        return xcb.xcb_connection_has_error(connection) == 0
    finally:
        xcb.xcb_disconnect(connection)      # safe on the error connection too


def wayland_answers(environ: Mapping[str, str] | None = None) -> bool:
    """Whether a Wayland compositor listens where libwayland-client would connect:
    WAYLAND_DISPLAY (default wayland-0), a path or a name in XDG_RUNTIME_DIR."""
    env = os.environ if environ is None else environ
    if env.get("WAYLAND_SOCKET"):            # a socket handed over already connected
        return True
    name = env.get("WAYLAND_DISPLAY") or "wayland-0"
    if not os.path.isabs(name):
        runtime = env.get("XDG_RUNTIME_DIR")
        if not runtime:
            return False
        name = os.path.join(runtime, name)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(CONNECT_TIMEOUT_S)
        try:
            sock.connect(name)
        except OSError:
            return False
    return True


def _within_timeout(probe: Callable[[], bool]) -> bool:
    """`probe()`, or False when it has not answered within `CONNECT_TIMEOUT_S` (the thread
    is a daemon: an exit does not wait for it)."""
    answer: list[bool] = []
    thread = threading.Thread(target=lambda: answer.append(probe()), daemon=True)
    thread.start()
    thread.join(CONNECT_TIMEOUT_S)
    return bool(answer and answer[0])


def problem(environ: Mapping[str, str] | None = None, platform: str | None = None,
            x11: Callable[[str], bool] | None = None,
            wayland: Callable[[Mapping[str, str]], bool] | None = None) -> str | None:
    """One line saying why the window has no display to open on, or None when one of the
    displays Qt will try answers (or it will use no display, or this is not Linux).
    `x11` and `wayland` are how a display is tried (`x11_answers`, `wayland_answers`)."""
    env = os.environ if environ is None else environ
    if not (platform or sys.platform).startswith("linux"):
        return None
    tried = platforms(env)
    if tried is None:
        return None
    x11 = x11 or x11_answers
    wayland = wayland or wayland_answers
    display, wayland_display = env.get("DISPLAY", ""), env.get("WAYLAND_DISPLAY", "")
    reasons = []
    for kind in tried:
        if kind == X11:
            if not display:
                reasons.append("DISPLAY is not set")
                continue
            if _within_timeout(lambda: x11(display)):
                return None
            reasons.append(f"the X display {display} (DISPLAY) cannot be reached")
        else:
            if _within_timeout(lambda: wayland(env)):
                return None
            reasons.append(f"the Wayland display {wayland_display} (WAYLAND_DISPLAY) cannot "
                           f"be reached" if wayland_display else
                           "no Wayland display answers (WAYLAND_DISPLAY is not set)")
    if not display and not wayland_display:
        reasons = ["neither DISPLAY nor WAYLAND_DISPLAY is set"]
    return f"duplens: no display to open the window on ({'; '.join(reasons)}); {_ADVICE}"
