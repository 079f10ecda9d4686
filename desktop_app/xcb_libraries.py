"""The system libraries Qt's X11 platform plugin (xcb) needs on Linux, checked before Qt
loads it, so that a missing one is one line naming what to install.

PySide6 brings Qt but not these: a desktop has them, a minimal or server install often lacks
some (libxcb-cursor0 most of all, since Qt 6.5), and Qt then aborts the process with a
paragraph about platform plugins (exit 134). Each library is opened by its soname
(`ctypes.CDLL`, the dynamic loader's own search, a few milliseconds in all) only where the
window will use xcb: Linux, an X display, and no other platform chosen in QT_QPA_PLATFORM
(nor a Wayland session without that choice, where Qt tries Wayland first).
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable, Mapping

# soname: (Debian/Ubuntu package, Fedora package). What PySide6's libqxcb.so and
# libQt6XcbQpa.so link to besides Qt and the C library (ldd on PySide6 6.12).
LIBRARIES: dict[str, tuple[str, str]] = {
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb"),
    "libxcb-randr.so.0": ("libxcb-randr0", "libxcb"),
    "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb"),
    "libxcb-sync.so.1": ("libxcb-sync1", "libxcb"),
    "libxcb-shm.so.0": ("libxcb-shm0", "libxcb"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb"),
    "libxcb-render.so.0": ("libxcb-render0", "libxcb"),
    "libxcb.so.1": ("libxcb1", "libxcb"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb"),
}


def uses_xcb(environ: Mapping[str, str] | None = None, platform: str | None = None) -> bool:
    """Whether Qt will load its xcb plugin here: Linux with an X display, and xcb chosen
    in QT_QPA_PLATFORM or nothing chosen outside a Wayland session."""
    env = os.environ if environ is None else environ
    if not (platform or sys.platform).startswith("linux") or not env.get("DISPLAY"):
        return False
    chosen = env.get("QT_QPA_PLATFORM", "").strip()
    if chosen:
        # "xcb", "xcb:option=value" or a fallback list "wayland;xcb": the first one counts.
        return chosen.split(";")[0].split(":")[0].strip() == "xcb"
    return not env.get("WAYLAND_DISPLAY")


def _loads(soname: str) -> bool:
    try:
        ctypes.CDLL(soname)
    except OSError:
        return False
    return True


def missing(loads: Callable[[str], bool] | None = None) -> list[str]:
    """The sonames in `LIBRARIES` the dynamic loader cannot open (`loads`: how one is
    tried, the loader by default)."""
    loads = loads or _loads
    return [soname for soname in LIBRARIES if not loads(soname)]


def problem(environ: Mapping[str, str] | None = None, platform: str | None = None,
            loads: Callable[[str], bool] | None = None) -> str | None:
    """One line naming the missing libraries and the packages that bring them, or None when
    the window can start (or will not use xcb)."""
    if not uses_xcb(environ, platform):
        return None
    absent = missing(loads)
    if not absent:
        return None
    debian = " ".join(dict.fromkeys(LIBRARIES[s][0] for s in absent))
    fedora = " ".join(dict.fromkeys(LIBRARIES[s][1] for s in absent))
    return (f"duplens: the window needs system libraries that are missing "
            f"({', '.join(absent)}); install them with: sudo apt install {debian} "
            f"(Debian, Ubuntu) or sudo dnf install {fedora} (Fedora)")
