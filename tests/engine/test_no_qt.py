"""The engine must stay usable headless: no module of it may import Qt or the GUI."""

from __future__ import annotations

import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import engine

ROOT = Path(__file__).resolve().parents[2]
GUI_MODULES = ("PySide6", "PyQt5", "PyQt6", "shiboken6", "pyqtgraph", "desktop_app")


def test_importing_every_engine_module_loads_no_qt():
    names = [m.name for m in pkgutil.walk_packages(engine.__path__, "engine.")]
    assert "engine.project" in names and "engine.cli" in names
    code = ("import importlib, sys\n"
            f"for n in {names!r}: importlib.import_module(n)\n"
            f"bad = [m for m in sys.modules if m.split('.')[0] in {GUI_MODULES!r}]\n"
            "print(bad)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
