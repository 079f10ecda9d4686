"""The Duplens desktop window (PySide6).

Engine work runs only through the job runner (`job_runner.py`, `EngineBridge.run`): the
controllers (`*_controller.py`) and a few views submit plain functions that run in a pool
thread and get their outcome back on the GUI thread, so the engine stays Qt-free and the
window never blocks on engine work. Everything else is widgets and Qt models.
"""

# Before PySide6 or anything else: no telemetry, the Hub offline (see engine.offline).
from engine import offline  # noqa: F401
